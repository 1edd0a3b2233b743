"""Interop with other N5 implementations: the container root's version attribute, z5py
(label multiset varlength blocks and plain datasets, both directions) and tensorstore's
N5 driver (plain datasets, both directions, every compression both support).

z5py and tensorstore are test dependencies; their tests skip where they are not installed.
"""

import json
import struct

import numpy as np
import pytest

from n5mscodecs import LabelMultisetArray, n5, paintera
from n5mscodecs.errors import CompressionError, ConfigurationError
from n5mscodecs.n5 import storage
from n5mscodecs.payload import N5LabelMultiset

# (N5 axis order) not a multiple of the block size on any axis: every axis has a boundary block
SHAPE, CHUNKS = (10, 7, 5), (4, 4, 3)


def labels(seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 6, SHAPE).astype(np.uint64) * 1000 + 1


def plain(dtype):
    values = np.arange(np.prod(SHAPE)).reshape(SHAPE) * 7919 % 251
    return (values - 100).astype(dtype) if np.dtype(dtype).kind != "u" else values.astype(dtype)


def root_attributes(root):
    return json.loads((root / "attributes.json").read_text())


@pytest.fixture
def z5py():
    return pytest.importorskip("z5py")


@pytest.fixture
def tensorstore():
    return pytest.importorskip("tensorstore")


# --- the container root's {"n5": "4.0.0"} ---

def test_root_version_in_nearest_n5_ancestor(tmp_path):
    n5.write(tmp_path / "out.n5" / "group" / "labels", labels(), chunks=CHUNKS)
    assert root_attributes(tmp_path / "out.n5") == {"n5": n5.N5_VERSION}
    assert not (tmp_path / "out.n5" / "group" / "attributes.json").exists()
    assert "n5" not in root_attributes(tmp_path / "out.n5" / "group" / "labels")
    n5.write_array(tmp_path / "Plain.N5" / "raw", plain("uint8"), chunks=CHUNKS)  # any case
    assert root_attributes(tmp_path / "Plain.N5") == {"n5": n5.N5_VERSION}


def test_root_version_keeps_existing_attributes_and_version(tmp_path):
    root = tmp_path / "c.n5"
    n5.write_attributes(root, {"resolution": [4, 4, 40]})
    n5.create_array_dataset(root / "a", SHAPE, CHUNKS, "uint16")
    assert root_attributes(root) == {"n5": n5.N5_VERSION, "resolution": [4, 4, 40]}
    n5.write_attributes(root, {"n5": "2.0.0", "other": 1})  # z5py writes 2.0.0
    n5.write_array(root / "b", plain("int16"), chunks=CHUNKS)
    n5.write(root / "a", labels(), chunks=CHUNKS, overwrite=True)
    assert root_attributes(root) == {"n5": "2.0.0", "other": 1}


def test_root_version_of_a_dataset_at_the_root(tmp_path):
    n5.write_array(tmp_path / "single.n5", plain("float32"), chunks=CHUNKS)
    attributes = root_attributes(tmp_path / "single.n5")
    assert attributes["n5"] == n5.N5_VERSION and attributes["dimensions"] == list(SHAPE)
    assert np.array_equal(n5.open(tmp_path / "single.n5")[:], plain("float32"))


def test_root_version_with_explicit_container(tmp_path):
    n5.write(tmp_path / "data" / "seg" / "labels", labels(), chunks=CHUNKS, container=tmp_path / "data")
    assert root_attributes(tmp_path / "data") == {"n5": n5.N5_VERSION}
    # an explicit container wins over a *.n5 parent
    n5.write_array(tmp_path / "x.n5" / "inner" / "a", plain("uint8"), chunks=CHUNKS,
                   container=tmp_path / "x.n5" / "inner")
    assert root_attributes(tmp_path / "x.n5" / "inner") == {"n5": n5.N5_VERSION}
    assert not (tmp_path / "x.n5" / "attributes.json").exists()


def test_no_root_version_without_n5_parent_or_container(tmp_path):
    n5.write(tmp_path / "data" / "labels", labels(), chunks=CHUNKS)
    assert not (tmp_path / "data" / "attributes.json").exists()
    assert "n5" not in root_attributes(tmp_path / "data" / "labels")


def test_container_must_hold_the_dataset(tmp_path):
    (tmp_path / "c.n5" / "a").mkdir(parents=True)
    (tmp_path / "c.n5" / "a" / "attributes.json").write_text('{"dimensions": [1], "dataType": "uint8"}')
    with pytest.raises(ConfigurationError, match="container"):
        n5.write_array(tmp_path / "c.n5" / "a", plain("uint8"), chunks=CHUNKS, overwrite=True,
                       container=tmp_path / "elsewhere.n5")
    assert (tmp_path / "c.n5" / "a" / "attributes.json").exists()  # checked before anything is removed
    with pytest.raises(ConfigurationError, match="container"):
        n5.create_array_dataset(tmp_path / "c.n5" / "b", SHAPE, CHUNKS, "uint8", container="s3://bucket/c.n5")


def test_container_root_rule_for_urls():
    assert storage.container_root("s3://bucket/c.n5/a/b") == "s3://bucket/c.n5"
    assert storage.container_root("s3://bucket.N5/a/") == "s3://bucket.N5"
    assert storage.container_root("gs://bucket/a/b") is None
    assert storage.container_root("s3://bucket/a/b", container="s3://bucket/a/") == "s3://bucket/a"
    with pytest.raises(ConfigurationError, match="container"):
        storage.container_root("s3://bucket/a/b", container="s3://other/a")


def test_root_version_through_fsspec_urls():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    try:
        n5.write("memory://interop/c.n5/g/labels", labels(), chunks=CHUNKS)
        assert json.loads(fs.cat_file("/interop/c.n5/attributes.json")) == {"n5": n5.N5_VERSION}
        n5.write_array("memory://interop/plain/a", plain("uint8"), chunks=CHUNKS, container="memory://interop/plain")
        assert json.loads(fs.cat_file("/interop/plain/attributes.json")) == {"n5": n5.N5_VERSION}
    finally:
        fs.rm("/interop", recursive=True)


def test_paintera_convert_writes_root_version(tmp_path):
    n5.write_attributes(tmp_path / "out.n5", {"note": "kept"})
    paintera.convert(labels(), tmp_path / "out.n5" / "seg", block_size=4, threads=1)
    assert root_attributes(tmp_path / "out.n5") == {"n5": n5.N5_VERSION, "note": "kept"}
    paintera.convert(labels(), tmp_path / "plain" / "seg", block_size=4, threads=1, container=tmp_path / "plain")
    assert root_attributes(tmp_path / "plain") == {"n5": n5.N5_VERSION}
    with pytest.raises(ConfigurationError, match="container"):
        paintera.convert(labels(), tmp_path / "other" / "seg", block_size=4, container=tmp_path / "plain")
    assert not (tmp_path / "other").exists()


# --- z5py ---

def block_regions(chunks=CHUNKS):
    grid = tuple(-(-n // c) for n, c in zip(SHAPE, chunks))
    for position in np.ndindex(*grid):
        yield position, tuple(slice(p * c, min((p + 1) * c, n)) for p, c, n in zip(position, chunks, SHAPE))


@pytest.mark.parametrize("compression", ["gzip", "raw"])
def test_z5py_reads_our_label_multiset_blocks(tmp_path, z5py, compression):
    data = labels()
    ds = n5.write(tmp_path / "c.n5" / "seg" / "labels", data, chunks=CHUNKS, compression=compression)
    theirs = z5py.File(str(tmp_path / "c.n5"), "r")["seg/labels"]
    assert theirs.shape == SHAPE[::-1] and theirs.chunks == CHUNKS[::-1]  # z5py: C order
    assert theirs.attrs["isLabelMultiset"] is True
    for position, region in block_regions():
        payload = theirs.read_chunk(position[::-1])
        block = N5LabelMultiset().decode(payload, shape=tuple(s.stop - s.start for s in region))
        assert block.equals(ds.read_block(position))
        assert np.array_equal(block.argmax(), data[region])


def test_z5py_reads_a_container_written_through_n5store(tmp_path, z5py):
    zarr = pytest.importorskip("zarr")
    import n5mscodecs.zarr as nz

    root = zarr.open_group(nz.N5Store(zarr.storage.LocalStore(tmp_path / "z.n5")), mode="w")
    array = root.create_array(
        "labels", shape=SHAPE, chunks=CHUNKS, dtype=nz.LabelMultisetDType(),
        fill_value="0xFFFFFFFFFFFFFFFE", chunk_key_encoding={"name": "v2", "separator": "/"},
        serializer=nz.N5VarlenZarrCodec(codecs=["n5_label_multiset", "gzip"]), compressors=None)
    array[:] = labels()
    assert root_attributes(tmp_path / "z.n5")["n5"] == n5.N5_VERSION
    theirs = z5py.File(str(tmp_path / "z.n5"), "r")["labels"]
    payload = theirs.read_chunk((1, 1, 2))
    assert np.array_equal(N5LabelMultiset().decode(payload, shape=(2, 3, 2)).argmax(), labels()[8:, 4:, 3:])


@pytest.mark.parametrize("compression", ["gzip", "raw"])
def test_we_read_varlength_chunks_z5py_writes(tmp_path, z5py, compression):
    data = labels(1)
    container = z5py.File(str(tmp_path / "z.n5"), "a")
    theirs = container.create_dataset("labels", shape=SHAPE[::-1], chunks=CHUNKS[::-1], dtype="uint8",
                                      compression=compression)
    theirs.attrs["isLabelMultiset"] = True
    theirs.attrs["maxId"] = int(data.max())
    for position, region in block_regions():
        payload = np.frombuffer(bytes(N5LabelMultiset().encode(data[region])), np.uint8)
        theirs.write_chunk(position[::-1], payload, True)  # varlen=True
    ours = n5.open(tmp_path / "z.n5" / "labels")
    assert isinstance(ours, n5.LabelMultisetDataset) and ours.shape == SHAPE
    assert ours[:].equals(LabelMultisetArray.coerce(data))
    assert np.array_equal(ours.read_labels(), data)


Z5PY_PLAIN = [("uint8", "gzip"), ("uint16", "raw"), ("int32", "gzip"), ("float64", "raw"), ("uint64", "gzip")]


@pytest.mark.parametrize(("dtype", "compression"), Z5PY_PLAIN)
def test_plain_datasets_both_ways_with_z5py(tmp_path, z5py, dtype, compression):
    data = plain(dtype)
    n5.write_array(tmp_path / "c.n5" / "ours", data, chunks=CHUNKS, compression=compression)
    container = z5py.File(str(tmp_path / "c.n5"), "a")
    assert np.array_equal(container["ours"][:], data.T)  # z5py: C order, N5 axes reversed
    theirs = container.create_dataset("theirs", shape=SHAPE[::-1], chunks=CHUNKS[::-1], dtype=dtype,
                                      compression=compression)
    theirs[:] = data.T
    ds = n5.open(tmp_path / "c.n5" / "theirs")
    assert ds.dtype == np.dtype(dtype) and ds.chunks == CHUNKS
    assert np.array_equal(ds[:], data)


def test_we_read_z5pys_bare_lz4_blocks(tmp_path, z5py):
    """z5py writes N5 lz4 as one bare LZ4 block (not Java's LZ4Block framing): read when the size is known."""
    import lz4.block

    data = plain("uint16")
    container = z5py.File(str(tmp_path / "z.n5"), "a")
    container.create_dataset("plain", data=data.T, chunks=CHUNKS[::-1], compression="lz4")
    assert np.array_equal(n5.open(tmp_path / "z.n5" / "plain")[:], data)
    theirs = container.create_dataset("labels", shape=SHAPE[::-1], chunks=CHUNKS[::-1], dtype="uint8",
                                      compression="lz4")
    theirs.attrs["isLabelMultiset"] = True
    for position, region in block_regions():
        payload = np.frombuffer(bytes(N5LabelMultiset().encode(labels()[region])), np.uint8)
        theirs.write_chunk(position[::-1], payload, True)
    assert np.array_equal(n5.open(tmp_path / "z.n5" / "labels").read_labels(), labels())
    # the bytes by hand: header, then lz4.block without its size prefix
    block = tmp_path / "z.n5" / "plain" / "0" / "0" / "0"
    values = data[:4, :4, :3].astype(">u2").tobytes(order="F")
    block.write_bytes(struct.pack(">HH3I", 0, 3, 4, 4, 3) + lz4.block.compress(values, store_size=False))
    assert np.array_equal(n5.open(tmp_path / "z.n5" / "plain")[:4, :4, :3], data[:4, :4, :3])
    block.write_bytes(struct.pack(">HH3I", 0, 3, 4, 4, 3) + lz4.block.compress(values[:-2], store_size=False))
    with pytest.raises(CompressionError, match="lz4: payload decompressed to 94 bytes, header expects 96"):
        n5.open(tmp_path / "z.n5" / "plain")[:4, :4, :3]
    block.write_bytes(struct.pack(">HH3I", 0, 3, 4, 4, 3) + b"\xf0" + bytes(20))
    with pytest.raises(CompressionError, match="no LZ4Block magic at byte 0, and not a bare LZ4 block of 96 bytes"):
        n5.open(tmp_path / "z.n5" / "plain")[:4, :4, :3]


# --- tensorstore's N5 driver ---

TENSORSTORE_COMPRESSIONS = {
    "raw": {"type": "raw"},
    "gzip": {"type": "gzip", "level": 6},
    "zlib": {"type": "gzip", "level": 1, "useZlib": True},
    "zstd": {"type": "zstd", "level": 3},
    "xz": {"type": "xz", "preset": 6},
    "bzip2": {"type": "bzip2", "blockSize": 9},
    "blosc": {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    # the attributes without nthreads, which tensorstore 0.1.86 refuses
    "blosc-tensorstore": {"type": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0,
                          "nthreads": None},
}
TENSORSTORE_DTYPES = ["uint8", "int16", "uint32", "int64", "float32", "float64"]


def tensorstore_spec(path, **metadata):
    return {"driver": "n5", "kvstore": {"driver": "file", "path": str(path)},
            **({"metadata": metadata} if metadata else {})}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(
        raises=ValueError, strict=True,
        reason="tensorstore's N5 driver refuses the blosc attribute nthreads, which n5-blosc (Java) and "
               "this package write")) if name == "blosc" else name
    for name in TENSORSTORE_COMPRESSIONS])
def test_tensorstore_reads_our_plain_datasets(tmp_path, tensorstore, name):
    for dtype in TENSORSTORE_DTYPES:
        data = plain(dtype)
        path = tmp_path / "c.n5" / dtype
        n5.write_array(path, data, chunks=CHUNKS, compression=TENSORSTORE_COMPRESSIONS[name])
        theirs = tensorstore.open(tensorstore_spec(path)).result()
        assert tuple(theirs.shape) == SHAPE and theirs.dtype.numpy_dtype == np.dtype(dtype)  # N5 order
        assert np.array_equal(theirs.read().result(), data)
        if name == "blosc-tensorstore":
            assert "nthreads" not in n5.read_attributes(path)["compression"]


@pytest.mark.parametrize("name", [name for name in TENSORSTORE_COMPRESSIONS if name != "blosc-tensorstore"])
def test_we_read_plain_datasets_tensorstore_writes(tmp_path, tensorstore, name):
    for dtype in TENSORSTORE_DTYPES:
        data = plain(dtype)
        path = tmp_path / "c.n5" / dtype
        theirs = tensorstore.open(tensorstore_spec(path, dimensions=list(SHAPE), blockSize=list(CHUNKS),
                                                   dataType=dtype, compression=TENSORSTORE_COMPRESSIONS[name]),
                                  create=True).result()
        theirs[...] = data
        ds = n5.open(path)
        assert ds.dtype == np.dtype(dtype) and ds.chunks == CHUNKS
        assert np.array_equal(ds[:], data)
        assert np.array_equal(ds[3:9, 2:, :4], data[3:9, 2:, :4])


def test_cli_container_option(tmp_path):
    from n5mscodecs.cli import main

    np.save(tmp_path / "l.npy", labels())
    assert main(["convert", str(tmp_path / "l.npy"), str(tmp_path / "c" / "seg"), "--block-size", "4",
                 "--container", str(tmp_path / "c"), "--quiet"]) == 0
    assert root_attributes(tmp_path / "c") == {"n5": n5.N5_VERSION}
    assert main(["argmax", str(tmp_path / "c" / "seg" / "data" / "s0"), str(tmp_path / "a" / "argmax"),
                 "--container", str(tmp_path / "a")]) == 0
    assert root_attributes(tmp_path / "a") == {"n5": n5.N5_VERSION}
    assert np.array_equal(n5.open(tmp_path / "a" / "argmax")[:], labels().T)  # .npy: C order, N5 axes reversed
