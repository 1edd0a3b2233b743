"""One codec instance shared by 8 threads, mixed encode/decode, gives the serial bytes."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numcodecs
import numpy as np
import pytest

from n5mscodecs import LabelMultisetArray

N_THREADS = 8


def multiset_inputs():
    rng = np.random.default_rng(11)
    inputs = []
    for i in range(12):
        labels = rng.integers(0, 30 + 10 * i, (12, 10, 6)).astype(np.uint64)
        array = LabelMultisetArray.from_labels(labels)
        if i % 3 == 0:  # some blocks with several entries per voxel
            array = array.downsample((2, 2, 2), max_num_entries=-1)
        inputs.append(array)
    return inputs


def image_inputs():
    rng = np.random.default_rng(12)
    return [rng.poisson(200 + 50 * i, 40_000 + 999 * i).astype(np.uint16) for i in range(12)]


def as_comparable(decoded):
    if isinstance(decoded, LabelMultisetArray):
        return decoded
    if isinstance(decoded, np.ndarray) and decoded.dtype == object:
        return LabelMultisetArray.from_elements(decoded)
    return bytes(memoryview(decoded).cast("B"))


CONFIGS = [
    ({"id": "n5_varlen", "codecs": ["n5_label_multiset", "gzip"]}, multiset_inputs),
    ({"id": "n5_varlen", "codecs": ["label_multiset", {"type": "lz4"}]}, multiset_inputs),
    ({"id": "n5_label_multiset", "shape": [6, 5, 3]}, multiset_inputs),
    ({"id": "label_multiset", "shape": [6, 5, 3]}, multiset_inputs),
    ({"id": "label_multiset_vlen"}, multiset_inputs),
    ({"id": "czi_chunked", "codec": "zstd", "level": 1, "max_chunk_size": 4096, "hilo": True}, image_inputs),
    ({"id": "czi_chunked", "codec": "lz4", "max_chunk_size": 1000}, image_inputs),
]


@pytest.mark.parametrize(("config", "make_inputs"), CONFIGS, ids=[c["id"] + str(i) for i, (c, _) in enumerate(CONFIGS)])
def test_one_instance_eight_threads_mixed(config, make_inputs):
    codec = numcodecs.get_codec(dict(config))
    inputs = make_inputs()
    if "shape" in config:  # fixed-shape payload codecs: every input must have that shape
        inputs = [a[:6, :5, :3] for a in inputs]
    if config["id"] == "label_multiset_vlen":
        inputs = [a.to_elements() for a in inputs]
    serial_encoded = [bytes(codec.encode(x)) for x in inputs]
    serial_decoded = [as_comparable(codec.decode(b)) for b in serial_encoded]
    barrier = threading.Barrier(N_THREADS)

    def work(task):
        if task < N_THREADS:
            barrier.wait()  # all threads start together
        j = (task * 5) % len(inputs)
        if task % 2:
            return "encode", j, bytes(codec.encode(inputs[j]))
        return "decode", j, as_comparable(codec.decode(serial_encoded[j]))

    with ThreadPoolExecutor(N_THREADS) as pool:
        results = list(pool.map(work, range(8 * N_THREADS)))
    assert {kind for kind, _, _ in results} == {"encode", "decode"}
    for kind, j, value in results:
        expected = serial_encoded[j] if kind == "encode" else serial_decoded[j]
        assert value == expected, (kind, j)


@pytest.mark.parametrize("serializer", ["label_multiset", "n5_varlen"])
def test_zarr_with_many_workers_writes_the_serial_bytes(serializer):
    zarr = pytest.importorskip("zarr")
    from zarr.storage import MemoryStore

    import n5mscodecs.zarr as nz
    codec = (nz.LabelMultisetZarrCodec() if serializer == "label_multiset" else
             nz.N5VarlenZarrCodec(codecs=[{"name": "n5_label_multiset"}, {"name": "gzip"}]))
    labels = np.random.default_rng(5).integers(0, 40, (48, 40, 20)).astype(np.uint64)
    data = LabelMultisetArray.from_labels(labels).to_elements()
    data[::7, ::5, ::3] = LabelMultisetArray.from_elements([{1: 2, 3: 4}]).to_elements()[0]
    stores, reads = [], []
    for workers in (1, N_THREADS):
        store_dict = {}
        with nz.zarr_threads(workers), zarr.config.set({"async.concurrency": 64}):
            array = zarr.create_array(MemoryStore(store_dict), shape=labels.shape, chunks=(16, 16, 8),
                                      dtype=nz.LabelMultisetDType(), serializer=codec,
                                      compressors=[nz.CziChunkedZarrCodec(codec="lz4", max_chunk_size=512)])
            array[...] = data
            reads.append(LabelMultisetArray.from_elements(array[...]))
        stores.append({k: v.to_bytes() for k, v in store_dict.items() if k.startswith("c/")})
    assert len(stores[0]) == 3 * 3 * 3
    assert stores[0] == stores[1]
    assert reads[0] == reads[1] == LabelMultisetArray.from_elements(data)
