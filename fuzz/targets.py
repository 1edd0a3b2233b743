"""Fuzz targets: one function per decoder, each taking one input as bytes.

A target passes when the decoder either raises an ``N5msCodecsError`` or returns
a result that is internally consistent and survives a re-encode; anything else
(another exception type, a wrong result, a crash) is a finding. The first byte
of an input picks the target's options (inner codec chain, chunk shape,
thread count), the rest is the encoded data. This module has no atheris
dependency so that the regression tests can replay inputs with plain pytest.
"""

from __future__ import annotations

import numpy as np

from n5mscodecs import LabelMultisetArray, LabelMultisetVLen, N5msCodecsError, chunked_decode, chunked_info
from n5mscodecs.czi import backends
from n5mscodecs.n5 import ArrayDataset, LabelMultisetDataset, N5BlockHeader, n5_varlen_decode, n5_varlen_encode
from n5mscodecs.paintera.lookup import parse_mapping_file
from n5mscodecs.payload import (
    N5_LAYOUT,
    ZARR_LAYOUT,
    decode_payload_labels,
    label_multiset_decode,
    label_multiset_encode,
    n5_label_multiset_decode,
    n5_label_multiset_encode,
)

VARLEN_CHAINS = [
    ["n5_label_multiset"],
    ["n5_label_multiset", "gzip"],
    ["n5_label_multiset", "zstd"],
    ["n5_label_multiset", {"type": "lz4"}],
    ["n5_label_multiset", {"type": "xz"}],
    ["n5_label_multiset", {"type": "bzip2"}],
    ["n5_label_multiset", {"type": "blosc", "cname": "lz4"}],
    ["label_multiset"],
    ["label_multiset", "gzip"],
]


def split_shape(data):
    """(shape, rest): byte 0 picks 1-3 dimensions, the next bytes their sizes (0..5)."""
    ndim = 1 + data[0] % 3 if data else 1
    dims = data[1:1 + ndim]
    return tuple(d % 6 for d in dims) + (1,) * (ndim - len(dims)), data[1 + ndim:]


def shape_prefix(shape):
    """The bytes split_shape() reads back as ``shape``."""
    return bytes([len(shape) - 1, *shape])


def check_multisets(result, shape=None):
    """Invariants every decoded LabelMultisetArray must satisfy."""
    assert isinstance(result, LabelMultisetArray)
    if shape is not None:
        assert result.shape == shape
    if result.index.size:
        assert 0 <= result.index.min() and result.index.max() < result.n_lists
    result.argmax()
    result.canonical()


def fuzz_n5_varlen(data):
    chain = VARLEN_CHAINS[data[0] % len(VARLEN_CHAINS)] if data else VARLEN_CHAINS[0]
    try:
        result = n5_varlen_decode(data[1:], chain)
    except N5msCodecsError:
        return
    check_multisets(result)
    assert n5_varlen_decode(n5_varlen_encode(result, chain), chain) == result


def _payload_target(decode, encode, layout, data):
    shape, payload = split_shape(data)
    try:
        result = decode(payload, shape)
    except N5msCodecsError as exc:
        # the labels-only decoder rejects exactly the same payloads, with the same message
        try:
            decode_payload_labels(payload, shape, layout)
        except N5msCodecsError as labels_exc:
            assert str(labels_exc) == str(exc), (labels_exc, exc)
            return
        raise AssertionError(f"decode_payload_labels accepted a payload decode rejects: {exc}") from None
    check_multisets(result, shape)
    assert np.array_equal(decode_payload_labels(payload, shape, layout), result.argmax())
    assert decode(encode(result), shape) == result


def fuzz_n5_label_multiset(data):
    _payload_target(n5_label_multiset_decode, n5_label_multiset_encode, N5_LAYOUT, data)


def fuzz_label_multiset(data):
    _payload_target(label_multiset_decode, label_multiset_encode, ZARR_LAYOUT, data)


def fuzz_label_multiset_vlen(data):
    try:
        result = LabelMultisetVLen().decode(data)
    except N5msCodecsError:
        return
    assert result.dtype == object
    check_multisets(LabelMultisetArray.from_elements(result))


def chunked_decode_on_path(native, payload, out_size, **options):
    """Decoded bytes, or the error class, with the zstd/LZ4 calls made by the
    kernels (``native``) or through the packages' Python APIs."""
    out = None if out_size is None else np.full(out_size, 0x5A, np.uint8)
    try:
        with backends.use_backend("native" if native else "python"):
            return bytes(memoryview(chunked_decode(payload, out=out, **options)).cast("B"))
    except N5msCodecsError as error:
        return type(error)


def fuzz_czi_chunked(data):
    # option bits: 0 thread count, 1 decode into ``out``, 2 ``out`` of another size with
    # ``allow_size_mismatch``, 3-7 that size difference
    option, payload = (data[0], data[1:]) if data else (0, b"")
    threads = 1 + option % 2
    try:
        info = chunked_info(payload)
    except N5msCodecsError:
        info = None
    mismatch = bool(option & 4)
    out_size = None
    if option & 2 and info is not None:
        out_size = min(info.decompressed_size, 1 << 20) + (option >> 3 if mismatch else 0)
    options = dict(threads=threads, max_decompressed_size=1 << 22, allow_size_mismatch=mismatch)
    # Differential: both chunk paths must agree on every input.
    results = {native: chunked_decode_on_path(native, payload, out_size, **options)
               for native in ({True, False} if backends.NATIVE_AVAILABLE else {False})}
    assert len(set(results.values())) == 1, f"chunk paths disagree: {results}"
    result = results.popitem()[1]
    if isinstance(result, type):
        return
    assert info is not None, "decoded a payload whose header chunked_info rejects"
    assert len(result) == (info.decompressed_size if out_size is None else out_size)


def fuzz_n5_header(data):
    try:
        header = N5BlockHeader.from_bytes(data)
    except N5msCodecsError:
        return
    assert header.to_bytes() == bytes(data[: header.nbytes])


class _ZarrArrays:
    """One zarr v3 array per multiset codec over a dict store, made on first use."""

    def __init__(self):
        self.arrays = None

    def get(self):
        if self.arrays is None:
            import zarr
            from zarr.storage import MemoryStore

            from n5mscodecs import zarr as nz

            self.arrays = []
            for codec in (
                nz.N5VarlenZarrCodec(codecs=[{"name": "n5_label_multiset"}]),
                nz.N5VarlenZarrCodec(codecs=[{"name": "n5_label_multiset"}, {"name": "gzip"}]),
                nz.N5LabelMultisetZarrCodec(),
                nz.LabelMultisetZarrCodec(),
            ):
                store_dict = {}
                array = zarr.create_array(
                    MemoryStore(store_dict), shape=(6, 5, 4), chunks=(4, 4, 4),
                    dtype=nz.LabelMultisetDType(), serializer=codec, compressors=None,
                )
                self.arrays.append((array, store_dict))
        return self.arrays


_zarr_arrays = _ZarrArrays()


def fuzz_zarr_codecs(data):
    from zarr.core.buffer import cpu

    arrays = _zarr_arrays.get()
    array, store_dict = arrays[data[0] % len(arrays)] if data else arrays[0]
    store_dict["c/1/0/0"] = cpu.Buffer.from_bytes(data[1:])  # the boundary chunk (2 of 4 rows)
    try:
        result = array[4:, :4, :]
    except N5msCodecsError:
        return
    assert result.shape == (2, 4, 4) and result.dtype == object
    check_multisets(LabelMultisetArray.from_elements(result))


# the datasets of fuzz_n5_dataset_block: a 6 x 5 x 4 grid of 4^3 blocks, so block (1, 1, 0) is
# a boundary block of cropped shape (2, 1, 4); nothing is read from or written to storage
DATASET_SHAPE, DATASET_CHUNKS = (6, 5, 4), (4, 4, 4)
DATASET_COMPRESSIONS = [{"type": "raw"}, {"type": "gzip"}, {"type": "zstd"}, {"type": "bzip2"}]
DATASET_POSITIONS = [(0, 0, 0), (1, 1, 0)]


def _dataset(kind, compression):
    attributes = {"dimensions": list(DATASET_SHAPE), "blockSize": list(DATASET_CHUNKS),
                  "compression": DATASET_COMPRESSIONS[compression]}
    if kind == "labels":
        return LabelMultisetDataset("fuzz.n5/labels", {**attributes, "dataType": "uint8", "isLabelMultiset": True})
    return ArrayDataset("fuzz.n5/raw", {**attributes, "dataType": "uint16"})


def fuzz_n5_dataset_block(data):
    # option bits: 0 label multiset or uint16 dataset, 1-2 compression, 3 interior or boundary block
    option, block = (data[0], data[1:]) if data else (0, b"")
    kind = "labels" if option & 1 else "raw"
    dataset = _dataset(kind, (option >> 1) % len(DATASET_COMPRESSIONS))
    position = DATASET_POSITIONS[(option >> 3) % len(DATASET_POSITIONS)]
    cropped = dataset.block_shape(position)
    if kind == "raw":
        try:
            values = dataset.decode_block(block, position)
        except N5msCodecsError:
            return
        mode = N5BlockHeader.from_bytes(block).mode
        assert values.nbytes <= dataset.max_data_bytes(mode)  # the grid bounds every block
        return
    try:
        multisets = dataset.decode_block(block, position)
    except N5msCodecsError:
        multisets = None
    try:
        labels = dataset.decode_block_labels(block, position)
    except N5msCodecsError:
        labels = None
    # both decoders accept and reject the same blocks, and agree on what they accept
    assert (multisets is None) == (labels is None), (multisets, labels)
    if multisets is None:
        return
    check_multisets(multisets, cropped)
    assert np.array_equal(labels, multisets.argmax())
    assert N5BlockHeader.from_bytes(block).num_elements <= dataset.max_payload_bytes()


def fuzz_label_to_block_mapping(data):
    ndim = 1 + data[0] % 3 if data else 1
    try:
        mapping = parse_mapping_file(bytes(data[1:]), ndim, "fuzz")
    except N5msCodecsError:
        return
    for intervals in mapping.values():
        assert all(len(low) == len(high) == ndim for low, high in intervals)


# package modules on each target's decode path, for the line coverage of a finished corpus
DECODE_MODULES = {
    "n5_varlen": ["n5/varlen", "n5/header", "n5/compression", "payload/layout", "payload/n5_label_multiset",
                  "payload/label_multiset"],
    "n5_label_multiset": ["payload/layout", "payload/n5_label_multiset"],
    "label_multiset": ["payload/layout", "payload/label_multiset"],
    "label_multiset_vlen": ["payload/layout", "payload/label_multiset_vlen"],
    "czi_chunked": ["czi/chunked", "czi/header", "czi/backends", "czi/workers"],
    "n5_header": ["n5/header"],
    "zarr_codecs": ["zarr/codecs", "zarr/dtype", "n5/varlen", "payload/layout"],
    "n5_dataset_block": ["n5/dataset", "n5/grid", "n5/varlen", "n5/header", "n5/compression", "payload/layout"],
    "label_to_block_mapping": ["paintera/lookup"],
}

TARGETS = {
    "n5_varlen": fuzz_n5_varlen,
    "n5_label_multiset": fuzz_n5_label_multiset,
    "label_multiset": fuzz_label_multiset,
    "label_multiset_vlen": fuzz_label_multiset_vlen,
    "czi_chunked": fuzz_czi_chunked,
    "n5_header": fuzz_n5_header,
    "zarr_codecs": fuzz_zarr_codecs,
    "n5_dataset_block": fuzz_n5_dataset_block,
    "label_to_block_mapping": fuzz_label_to_block_mapping,
}
