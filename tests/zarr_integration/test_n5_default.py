"""The ``n5_default`` codec (plain N5 datasets through zarr): every N5 compression and data type,
hand-built blocks, N5Store reads and writes, zarr-n5 installed or not, and the real peers
(z5py, tensorstore) both ways."""

import json
import re
import struct
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
from zarr.storage import LocalStore  # noqa: E402

import n5mscodecs.zarr as nz  # noqa: E402
from n5mscodecs import ConfigurationError, N5HeaderError, n5  # noqa: E402
from n5mscodecs.cli import main as n5ms  # noqa: E402

# N5 axis order; every axis has a truncated boundary block
SHAPE, CHUNKS = (10, 7, 5), (4, 4, 3)
COMPRESSIONS = {
    "raw": {"type": "raw"},
    "gzip": {"type": "gzip", "level": -1, "useZlib": False},
    "zlib": {"type": "gzip", "level": 1, "useZlib": True},
    "bzip2": {"type": "bzip2", "blockSize": 9},
    "xz": {"type": "xz", "preset": 1},
    "zstd": {"type": "zstd", "level": 3},
    "lz4": {"type": "lz4", "blockSize": 65536},
    "blosc": {"type": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0, "nthreads": 1},
}
DTYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64")


def plain(dtype, seed=0):
    values = np.random.default_rng(seed).integers(0, 250, SHAPE)
    return (values - 100).astype(dtype) if np.dtype(dtype).kind != "u" else values.astype(dtype)


def open_root(path, mode="r"):
    return zarr.open_group(nz.N5Store(LocalStore(path, read_only=mode == "r")), mode=mode)


def header_dims(block_path):
    data = block_path.read_bytes()
    mode, ndim = struct.unpack_from(">HH", data)
    return mode, struct.unpack_from(f">{ndim}I", data, 4)


@pytest.mark.parametrize("name", COMPRESSIONS)
def test_every_compression_reads_and_writes_through_n5store(tmp_path, name):
    data = plain("uint16")
    n5.write_array(tmp_path / "c.n5" / "d", data, chunks=CHUNKS, compression=COMPRESSIONS[name])
    array = open_root(tmp_path / "c.n5", "r+")["d"]
    assert array.shape == SHAPE and array.chunks == CHUNKS and array.dtype == np.uint16
    assert np.array_equal(array[:], data)
    assert np.array_equal(array[3:9, 2, 1:], data[3:9, 2, 1:])
    array[7:10, 5:7, 2:5] = 9  # three boundary blocks, read, merged and written back
    data[7:10, 5:7, 2:5] = 9
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "d")[:], data)
    assert header_dims(tmp_path / "c.n5" / "d" / "2" / "1" / "1") == (0, (2, 3, 2))  # truncated, as Java writes


def test_every_data_type_through_n5store(tmp_path):
    for dtype in DTYPES:
        n5.write_array(tmp_path / "c.n5" / dtype, plain(dtype), chunks=CHUNKS, compression="raw")
    root = open_root(tmp_path / "c.n5")
    for dtype in DTYPES:
        assert root[dtype].dtype == np.dtype(dtype)
        assert np.array_equal(root[dtype][:], plain(dtype))


def hand_block(values, dims):
    """A raw default-mode block built with struct: big-endian header, then the values in F order."""
    flat = np.asarray(values, np.int16).reshape(-1, order="F")
    return struct.pack(f">HH{len(dims)}I", 0, len(dims), *dims) + struct.pack(f">{flat.size}h", *flat.tolist())


def test_hand_built_blocks_truncated_and_padded(tmp_path):
    data = plain("int16")[:6, :5, :1].reshape(6, 5)
    n5.create_array_dataset(tmp_path / "c.n5" / "d", (6, 5), (4, 4), "int16", compression="raw")
    (tmp_path / "c.n5" / "d" / "0").mkdir()
    (tmp_path / "c.n5" / "d" / "1").mkdir()
    (tmp_path / "c.n5" / "d" / "0" / "0").write_bytes(hand_block(data[:4, :4], (4, 4)))
    (tmp_path / "c.n5" / "d" / "1" / "0").write_bytes(hand_block(data[4:, :4], (2, 4)))  # truncated (Java)
    padded = np.zeros((4, 4), np.int16)
    padded[:2, :1] = data[4:, 4:]
    padded[3, 3] = 99  # outside the array: never shown
    (tmp_path / "c.n5" / "d" / "1" / "1").write_bytes(hand_block(padded, (4, 4)))  # padded (tensorstore)
    array = open_root(tmp_path / "c.n5")["d"]
    assert np.array_equal(array[:, :4], data[:, :4]) and np.array_equal(array[4:, 4:], data[4:, 4:])
    assert np.array_equal(array[:4, 4:], np.zeros((4, 1)))  # a missing block: N5's 0
    (tmp_path / "c.n5" / "d" / "0" / "1").write_bytes(hand_block(np.zeros((5, 1)), (5, 1)))
    with pytest.raises(N5HeaderError, match=r"header dims \[5, 1\] exceed blockSize \[4, 4\]"):
        array[:4, 4:]
    (tmp_path / "c.n5" / "d" / "0" / "1").write_bytes(struct.pack(">HHIII", 1, 2, 4, 1, 4))
    with pytest.raises(N5HeaderError, match="mode 0x0001 blocks are not supported"):
        array[:4, 4:]


def test_bytes_are_the_n5_layout():
    codec = nz.N5DefaultZarrCodec.from_compression(2, None, "uint16")
    stored = {}
    array = zarr.create_array(stored, shape=(2, 3), chunks=(2, 3), dtype="uint16", serializer=codec, compressors=None)
    array[:] = [[1, 2, 3], [4, 5, 6]]
    block = stored["c/0/0"].to_bytes()
    assert block == hand_block(np.array([[1, 2, 3], [4, 5, 6]]), (2, 3))  # int16 and uint16 pack alike here


def test_configuration_is_checked():
    good = [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration":
                                                                            {"endian": "big"}}]
    with pytest.raises(ConfigurationError, match="full transpose"):
        nz.N5DefaultZarrCodec(codecs=[{"name": "transpose", "configuration": {"order": [0, 1]}}, good[1]])
    with pytest.raises(ConfigurationError, match="endian 'big'"):
        nz.N5DefaultZarrCodec(codecs=[good[0], {"name": "bytes", "configuration": {"endian": "little"}}])
    with pytest.raises(ConfigurationError, match="unknown compressor 'lz5'"):
        nz.N5DefaultZarrCodec(codecs=[*good, {"name": "lz4"[:2] + "5"}])
    with pytest.raises(ConfigurationError, match="needs the bytes codec's endian 'big'"):
        zarr.create_array({}, shape=(2, 2), dtype="uint16", compressors=None,
                          serializer=nz.N5DefaultZarrCodec(codecs=[good[0], {"name": "bytes"}]))
    with pytest.raises(ConfigurationError, match="N5 has no data type"):
        zarr.create_array({}, shape=(2, 2), dtype="bool", serializer=nz.N5DefaultZarrCodec(codecs=good),
                          compressors=None)


def test_n5store_creates_plain_datasets(tmp_path):
    root = open_root(tmp_path / "new.n5", "w")
    array = root.create_array("raw", shape=(9, 5), chunks=(4, 4), dtype="float32", fill_value=0,
                              serializer=nz.N5DefaultZarrCodec.from_compression(2, "zstd", "float32"),
                              compressors=None, chunk_key_encoding={"name": "v2", "separator": "/"})
    data = np.arange(45, dtype=np.float32).reshape(9, 5)
    array[:] = data
    attributes = json.loads((tmp_path / "new.n5" / "raw" / "attributes.json").read_text())
    assert attributes == {"blockSize": [4, 4], "dimensions": [9, 5], "dataType": "float32",
                          "compression": {"type": "zstd", "level": 3}}
    assert np.array_equal(n5.open(tmp_path / "new.n5" / "raw")[:], data)
    assert header_dims(tmp_path / "new.n5" / "raw" / "2" / "1") == (0, (1, 1))
    with pytest.raises(ConfigurationError, match="inside the n5_default codec"):
        root.create_array("zarr_default", shape=(4,), dtype="uint8", chunk_key_encoding={"name": "v2",
                                                                                         "separator": "/"})
    with pytest.raises(ConfigurationError, match="N5 has no fill value"):
        root.create_array("filled", shape=(4,), dtype="uint8", fill_value=3, compressors=None,
                          serializer=nz.N5DefaultZarrCodec.from_compression(1), chunk_key_encoding={
                              "name": "v2", "separator": "/"})


def test_zarr_json_means_the_same_to_zarr_n5(tmp_path):
    zarr_n5 = pytest.importorskip("zarr_n5")
    if tuple(int(part) for part in re.findall(r"\d+", zarr.__version__)[:3]) < (3, 1, 5):
        pytest.skip("zarr-n5 needs zarr >= 3.1.5 (its chunk key encoding comes out wrong with older zarr)")
    from zarr_n5.metadata import N5ArrayMetadata, N5GroupMetadata

    data = plain("uint16")
    for name in ("raw", "gzip", "zlib", "bzip2", "xz", "zstd", "blosc"):
        n5.write_array(tmp_path / "c.n5" / name, data, chunks=CHUNKS, compression=COMPRESSIONS[name])
    n5.write_array(tmp_path / "c.n5" / "bytes", plain("uint8"), chunks=CHUNKS, compression=COMPRESSIONS["blosc"])
    assert n5ms(["zarr-json", str(tmp_path / "c.n5")]) == 0  # no zarr-n5 needed
    for name in ("raw", "zstd", "blosc", "bytes"):  # what zarr-n5 makes from the attributes
        ours = json.loads((tmp_path / "c.n5" / name / "zarr.json").read_text())
        group = N5GroupMetadata.from_jso(json.loads((tmp_path / "c.n5" / name / "attributes.json").read_text()))
        theirs = json.loads(json.dumps(N5ArrayMetadata.from_group(group).to_zarr().to_dict()))
        assert ours["codecs"] == theirs["codecs"]
        assert {k: ours[k] for k in ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value")} == \
            {k: theirs[k] for k in ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value")}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # two n5_default implementations, and no warning: the choice is made
        assert type(zarr.open_array(tmp_path / "c.n5" / "raw").metadata.codecs[0]) is nz.N5DefaultZarrCodec
    for name in ("raw", "gzip", "zlib", "bzip2", "xz", "zstd", "blosc"):
        with zarr.config.set({"codecs.n5_default": "zarr_n5.codec.default.N5DefaultCodec"}):
            theirs = zarr.open_array(tmp_path / "c.n5" / name, mode="r")
            assert type(theirs.metadata.codecs[0]) is zarr_n5.N5DefaultCodec
            assert np.array_equal(theirs[:], data), name
        assert np.array_equal(zarr.open_array(tmp_path / "c.n5" / name, mode="r")[:], data)


def run_python(script):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          check=True).stdout


def test_without_zarr_n5_in_a_fresh_process(tmp_path):
    """zarr-n5 uninstalled (its entry point hidden, its import refused): plain datasets read,
    write and get a zarr.json that plain zarr (with zarr-n5 absent) reads."""
    n5.write_array(tmp_path / "c.n5" / "d", plain("int32"), chunks=CHUNKS, compression="xz")
    out = run_python(f"""
        import importlib.metadata as md, sys, warnings
        sys.modules["zarr_n5"] = None
        kept = md.EntryPoints(e for d in md.distributions() for e in d.entry_points if "zarr_n5" not in e.value)
        md.entry_points = lambda **params: kept.select(**params) if params else kept
        warnings.simplefilter("error")
        import numpy as np, zarr
        from n5mscodecs import n5
        from n5mscodecs.cli import main
        from n5mscodecs.zarr import N5Store
        root = zarr.open_group(N5Store(zarr.storage.LocalStore({str(tmp_path / "c.n5")!r})), mode="r+")
        root["d"][0:4, 0:4, 0:3] = -5
        expected = n5.open({str(tmp_path / "c.n5" / "d")!r})[:]
        assert main(["zarr-json", {str(tmp_path / "c.n5")!r}]) == 0
        print(int(expected[0, 0, 0]), np.array_equal(zarr.open_array({str(tmp_path / "c.n5" / "d")!r})[:], expected))
    """)
    assert out.split()[-2:] == ["-5", "True"]


def test_zarr_config_choice_wins(tmp_path):
    """A class named in zarr's configuration (here by environment variable) is used, not ours."""
    pytest.importorskip("zarr_n5")
    n5.write_array(tmp_path / "c.n5" / "d", plain("uint8"), chunks=CHUNKS, compression="gzip")
    assert n5ms(["zarr-json", str(tmp_path / "c.n5")]) == 0
    script = f"""
        import zarr, n5mscodecs.zarr
        print(type(zarr.open_array({str(tmp_path / "c.n5" / "d")!r}).metadata.codecs[0]).__module__)
    """
    env_out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                             check=True, env={**__import__("os").environ,
                                              "ZARR_CODECS__N5_DEFAULT": "zarr_n5.codec.default.N5DefaultCodec"})
    assert env_out.stdout.strip() == "zarr_n5.codec.default"


def test_z5py_and_tensorstore_read_what_n5store_wrote(tmp_path):
    z5py = pytest.importorskip("z5py")
    tensorstore = pytest.importorskip("tensorstore")
    root = open_root(tmp_path / "w.n5", "w")
    data = plain("int16")
    for name in COMPRESSIONS:
        array = root.create_array(name, shape=SHAPE, chunks=CHUNKS, dtype="int16", fill_value=0, compressors=None,
                                  serializer=nz.N5DefaultZarrCodec.from_compression(3, COMPRESSIONS[name], "int16"),
                                  chunk_key_encoding={"name": "v2", "separator": "/"})
        array[:] = data
        if name != "lz4":  # z5py reads bare LZ4 blocks only (docs/format_notes.md)
            assert np.array_equal(z5py.File(str(tmp_path / "w.n5"), "r")[name][:], data.T), name  # C order
        if name not in ("lz4", "blosc"):  # tensorstore: no N5 lz4; blosc attributes with nthreads refused
            spec = {"driver": "n5", "kvstore": {"driver": "file", "path": str(tmp_path / "w.n5" / name)}}
            assert np.array_equal(tensorstore.open(spec).result().read().result(), data), name


def test_n5store_reads_what_z5py_and_tensorstore_wrote(tmp_path):
    z5py = pytest.importorskip("z5py")
    tensorstore = pytest.importorskip("tensorstore")
    data = plain("float32")
    container = z5py.File(str(tmp_path / "t.n5"), "a")
    for name in ("raw", "gzip", "bzip2", "xz", "lz4", "blosc"):  # z5py's lz4: a bare LZ4 block
        container.create_dataset(f"z5py-{name}", data=data.T, chunks=CHUNKS[::-1], compression=name)
    for name in ("raw", "gzip", "zlib", "bzip2", "xz", "zstd"):
        spec = {"driver": "n5", "kvstore": {"driver": "file", "path": str(tmp_path / "t.n5" / f"ts-{name}")},
                "metadata": {"dimensions": list(SHAPE), "blockSize": list(CHUNKS), "dataType": "float32",
                             "compression": COMPRESSIONS[name]}}
        tensorstore.open(spec, create=True).result()[...] = data
    assert header_dims(tmp_path / "t.n5" / "ts-raw" / "2" / "1" / "1") == (0, (4, 4, 3))  # padded
    root = open_root(tmp_path / "t.n5")
    names = sorted(root.array_keys())
    assert len(names) == 12
    for name in names:
        assert np.array_equal(root[name][:], data), name


def test_the_choice_survives_a_config_block_around_the_first_array(tmp_path):
    """Issue 42, item 13: the first n5_default array of a fresh process opened inside
    ``zarr.config.set({"codecs.n5_default": ...})`` (zarr loads this package from its entry point
    there): after the block the package's codec is still zarr's choice, and reads N5 lz4."""
    zarr_n5 = pytest.importorskip("zarr_n5")
    del zarr_n5
    data = plain("uint16")
    n5.write_array(tmp_path / "c.n5" / "lz4", data, chunks=CHUNKS, compression={"type": "lz4"})
    n5.write_array(tmp_path / "c.n5" / "gzip", data, chunks=CHUNKS, compression="gzip")
    assert n5ms(["zarr-json", str(tmp_path / "c.n5")]) == 0
    out = run_python(f"""
        import sys, warnings
        import numpy as np, zarr
        assert "n5mscodecs" not in sys.modules
        with zarr.config.set({{"codecs.n5_default": "zarr_n5.codec.default.N5DefaultCodec"}}):
            inside = zarr.open_array({str(tmp_path / "c.n5" / "gzip")!r}, mode="r")
            print(type(inside.metadata.codecs[0]).__module__)
        warnings.simplefilter("error")   # no "not configured" warning either
        after = zarr.open_array({str(tmp_path / "c.n5" / "lz4")!r}, mode="r")
        print(type(after.metadata.codecs[0]).__module__, int(after[...].sum()))
    """)
    assert out.split()[-3:] == ["zarr_n5.codec.default", "n5mscodecs.zarr.codecs", str(int(data.sum()))]
