import json
import shutil
import subprocess
import sys
import textwrap

import numcodecs
import numpy as np
import pytest
from support import n5_data

zarr = pytest.importorskip("zarr")
from zarr.storage import LocalStore  # noqa: E402

import n5mscodecs.zarr as nz  # noqa: E402
from n5mscodecs import (
    INVALID,
    ConfigurationError,
    LabelMultiset,
    LabelMultisetArray,
    LabelMultisetVLen,
    argmax_elements,
    n5,
)
from n5mscodecs.n5 import n5_block_header
from n5mscodecs.payload import label_multiset_decode

SPEC_ZARR_JSON = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [80, 64, 64],
    "data_type": "label_multiset",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32, 32, 32]}},
    "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
    "fill_value": "0xFFFFFFFFFFFFFFFE",
    "codecs": [{"name": "n5_varlen", "configuration": {"codecs": [{"name": "n5_label_multiset"}]}}],
}


def as_multisets(elements):
    return LabelMultisetArray.from_elements(elements)


def spec_array_dir(tmp_path, source, document):
    target = tmp_path / "array"
    shutil.copytree(source, target)
    (target / "zarr.json").write_text(json.dumps(document))
    return target


def test_spec_example_opens_java_blocks(tmp_path):
    source = n5_data("downscaleTest.n5/sourceImg")
    array = zarr.open_array(spec_array_dir(tmp_path, source, SPEC_ZARR_JSON))
    assert array.shape == (80, 64, 64) and array.dtype == object
    assert array.fill_value == LabelMultiset([INVALID], [1])
    data = array[:]
    assert as_multisets(data) == n5.open(source)[:]
    # a voxel of a truncated x=2 block
    assert data[79, 63, 63] == n5.open(source).read_block((2, 1, 1))[15, 31, 31]


def test_spec_example_with_gzip_on_paintera_blocks(tmp_path):
    source = n5_data("paintera_export_test.n5/paintera_labels/data/s0")
    document = dict(SPEC_ZARR_JSON, shape=[100, 100, 100])
    document["codecs"] = [{"name": "n5_varlen", "configuration": {"codecs": [
        {"name": "n5_label_multiset"}, {"name": "gzip", "configuration": {"level": 6}}]}}]
    array = zarr.open_array(spec_array_dir(tmp_path, source, document))
    data = array[:]
    expected = n5.open(source, fill_label=INVALID)[:]
    assert as_multisets(data) == expected
    # missing blocks read as the fill value
    assert data[0, 99, 99] == LabelMultiset([INVALID], [1])


@pytest.mark.parametrize("change, match", [
    ({"fill_value": "INVALID"}, "fill_value"),
    ({"fill_value": "0x1FFFFFFFFFFFFFFFFF"}, "fill_value"),
    ({"data_type": {"name": "label_multiset", "configuration": {"x": 1}}}, "no configuration"),
    ({"codecs": [{"name": "n5_varlen", "configuration": {"codecs": [{"name": "n5_label_multiset"}], "x": 1}}]},
     "exactly 'codecs'"),
    ({"codecs": [{"name": "n5_varlen", "configuration": {"codecs": [{"name": "gzip"}]}}]}, "first inner codec"),
    ({"codecs": [{"name": "label_multiset", "configuration": {"level": 1}}]}, "no configuration"),
    ({"data_type": "uint8", "fill_value": 0}, "label_multiset data type"),
])
def test_bad_metadata_fails_at_open(tmp_path, change, match):
    (tmp_path / "zarr.json").write_text(json.dumps({**SPEC_ZARR_JSON, **change}))
    with pytest.raises((ValueError, TypeError), match=match):
        zarr.open_array(tmp_path)


def make_array(path, serializer, compressors=None, shape=(10, 12), chunks=(4, 5), **kwargs):
    return zarr.create_array(path, shape=shape, chunks=chunks, dtype=nz.LabelMultisetDType(),
                             fill_value="0xFFFFFFFFFFFFFFFE", serializer=serializer,
                             compressors=compressors, **kwargs)


@pytest.mark.parametrize("serializer", [
    nz.LabelMultisetZarrCodec(),
    nz.N5LabelMultisetZarrCodec(),
    nz.N5VarlenZarrCodec(codecs=[{"name": "n5_label_multiset"}, {"name": "zstd", "configuration": {"level": 1}}]),
])
def test_write_read_elements_and_labels(tmp_path, serializer):
    array = make_array(tmp_path / "a", serializer)
    labels = np.arange(120).reshape(10, 12) // 7
    array[:] = labels
    array[3, 4] = {5: 2, 9: 1}                    # 0-d write of a mapping
    array[0:2, 0:2] = np.array([[LabelMultiset([1], [3])] * 2] * 2, dtype=object)
    back = zarr.open_array(tmp_path / "a")
    data = back[:]
    expected = labels.astype(np.uint64)
    expected[3, 4] = 5
    expected[0:2, 0:2] = 1
    assert np.array_equal(argmax_elements(data), expected)
    assert data[3, 4].as_dict() == {5: 2, 9: 1}
    assert data[1, 1] is data[0, 0]  # one element per distinct list


def test_label_multiset_chunk_bytes_are_the_zarr_native_layout(tmp_path):
    array = make_array(tmp_path / "a", nz.LabelMultisetZarrCodec(), shape=(4, 5), chunks=(4, 5))
    labels = np.arange(20, dtype=np.uint64).reshape(4, 5) % 3
    array[:] = labels
    chunk = (tmp_path / "a" / "c" / "0" / "0").read_bytes()
    # C order: the first four offsets are those of labels 0, 1, 2, 0
    assert np.frombuffer(chunk[:16], "<u4").tolist() == [0, 16, 32, 0]
    assert np.array_equal(label_multiset_decode(chunk, (4, 5)).argmax(), labels)


def test_missing_chunks_and_write_empty_chunks(tmp_path):
    array = make_array(tmp_path / "a", nz.LabelMultisetZarrCodec(), config={"write_empty_chunks": False})
    array[0:4, 0:5] = np.full((4, 5), LabelMultiset([INVALID], [1]), dtype=object)  # all fill
    array[4:8, 5:10] = 7
    stored = sorted(p.relative_to(tmp_path / "a").as_posix() for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert stored == ["c/1/1", "zarr.json"]
    data = array[:]
    assert data[0, 0] == LabelMultiset([INVALID], [1]) and data[9, 11] == LabelMultiset([INVALID], [1])
    assert data[5, 6].as_dict() == {7: 1}


def test_zarr_v2_format_round_trip_in_a_fresh_process(tmp_path):
    array = zarr.create_array(tmp_path / "v2", shape=(20, 10), chunks=(8, 8), dtype=nz.LabelMultisetDType(),
                              zarr_format=2, filters=[LabelMultisetVLen()],
                              compressors=[numcodecs.Zstd(level=1)], fill_value="0xFFFFFFFFFFFFFFFE")
    labels = np.arange(200).reshape(20, 10) // 3
    array[:] = labels
    array[0, 0] = {1: 5, 2: 7}
    metadata = json.loads((tmp_path / "v2" / ".zarray").read_text())
    assert metadata["dtype"] == "|O" and metadata["filters"] == [{"id": "label_multiset_vlen"}]
    script = textwrap.dedent(f"""
        import zarr, n5mscodecs.zarr
        from n5mscodecs import argmax_elements
        a = zarr.open_array({str(tmp_path / 'v2')!r})
        x = a[:]
        print(x[0, 0].as_dict(), argmax_elements(x)[1:].sum())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["{1:", "5,", "2:", "7}", str(int(labels[1:].sum()))]


def test_paintera_container_through_n5store():
    root = n5_data("paintera_export_test.n5")
    group = zarr.open_group(nz.N5Store(LocalStore(root, read_only=True)), mode="r")
    assert group.attrs["n5"] == "4.0.0"
    labels = group["paintera_labels"]
    assert labels.attrs["painteraData"] == {"type": "label"} and labels.attrs["maxId"] == 11
    assert sorted(group["paintera_labels/data"].array_keys()) == ["s0", "s1", "s2"]
    s0 = group["paintera_labels/data/s0"]
    assert s0.shape == (100, 100, 100) and s0.chunks == (32, 32, 32)
    assert s0.attrs["isLabelMultiset"] is True and s0.attrs["_n5"]["dataType"] == "uint8"
    argmax = argmax_elements(s0[:])
    argmax[argmax == INVALID] = 0
    assert np.array_equal(argmax, n5.open(root / "scalar_export_s0" / "s0")[:])


def test_n5store_reads_paintera_plain_datasets():
    root = n5_data("paintera_export_test.n5")
    group = zarr.open_group(nz.N5Store(LocalStore(root, read_only=True)), mode="r")
    for name in ("scalar_export_s0/s0", "scalar_export_s2/s2"):
        assert np.array_equal(group[name][:], n5.open(root / name)[:])


def test_n5store_implicit_groups(tmp_path):
    n5.write(tmp_path / "c.n5" / "a" / "b" / "labels", np.arange(6).reshape(2, 3), chunks=(2, 2))
    (tmp_path / "c.n5" / "attributes.json").write_text('{"n5": "4.0.0"}')
    group = zarr.open_group(nz.N5Store(LocalStore(tmp_path / "c.n5")), mode="r")
    assert list(group.group_keys()) == ["a"]
    assert argmax_elements(group["a/b/labels"][:]).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_n5store_writes_java_style_datasets(tmp_path):
    store = nz.N5Store(LocalStore(tmp_path / "c.n5"))
    root = zarr.open_group(store, mode="w")
    root.attrs["painteraData"] = {"type": "label"}
    array = root.create_array(
        "labels", shape=(40, 30), chunks=(16, 16), dtype=nz.LabelMultisetDType(),
        fill_value="0xFFFFFFFFFFFFFFFE", chunk_key_encoding={"name": "v2", "separator": "/"},
        serializer=nz.N5VarlenZarrCodec(codecs=["n5_label_multiset", {"name": "gzip", "configuration": {"level": 6}}]),
        compressors=None)
    labels = np.arange(1200).reshape(40, 30)
    array[:] = labels
    array[0:16, 0:16] = np.full((16, 16), LabelMultiset([3], [0]), dtype=object)  # zero counts only
    attributes = json.loads((tmp_path / "c.n5" / "labels" / "attributes.json").read_text())
    assert attributes == {"dataType": "uint8", "compression": {"type": "gzip", "level": 6, "useZlib": False},
                          "blockSize": [16, 16], "dimensions": [40, 30], "isLabelMultiset": True}
    # written by DatasetMetadata's builder, in the order N5Store has always written
    assert list(attributes) == ["blockSize", "dimensions", "dataType", "compression", "isLabelMultiset"]
    root_attributes = json.loads((tmp_path / "c.n5" / "attributes.json").read_text())
    assert root_attributes["n5"] == "4.0.0" and root_attributes["painteraData"] == {"type": "label"}
    assert not (tmp_path / "c.n5" / "zarr.json").exists()
    ds = n5.open(tmp_path / "c.n5" / "labels")
    assert n5_block_header(ds.read_block_bytes((2, 1))).shape == (8, 14)  # truncated like Java
    assert ds.read_block_bytes((0, 0)) is None  # Java writes no block without positive counts
    expected = labels.astype(np.uint64)
    expected[0:16, 0:16] = 0   # the missing block, read as Paintera does
    assert np.array_equal(ds[:].argmax(), expected)
    array[16:32, 16:30] = np.zeros((16, 14), np.uint64)   # all {0: 1}: removed, as n5.write skips it
    assert ds.read_block_bytes((1, 1)) is None
    expected[16:32, 16:30] = 0
    assert np.array_equal(ds.read_labels(), expected)


def test_n5store_serves_overstated_boundary_blocks_truncated(tmp_path):
    labels = np.arange(5 * 3, dtype=np.uint64).reshape(5, 3)
    n5.write(tmp_path / "d", labels, chunks=(4, 4), compression="raw")
    boundary = tmp_path / "d" / "1" / "0"
    data = boundary.read_bytes()
    boundary.write_bytes(data[:4] + np.array([4, 4], ">u4").tobytes() + data[12:])  # claims 4 x 4
    array = zarr.open_array(nz.N5Store(LocalStore(tmp_path)), path="d", mode="r")
    assert np.array_equal(argmax_elements(array[:]), labels)


def test_write_zarr_json_makes_a_dual_container(tmp_path):
    source = n5_data("paintera_export_test.n5")
    container = tmp_path / "both.n5"
    shutil.copytree(source, container)
    before = {p: p.read_bytes() for p in container.rglob("*") if p.is_file()}
    written, skipped = nz.write_zarr_json(container)
    assert container / "paintera_labels" / "data" / "s0" in map(type(container), written)
    for path, data in before.items():
        assert path.read_bytes() == data  # no block or attributes file touched
    s0 = zarr.open_array(container / "paintera_labels" / "data" / "s0")
    assert as_multisets(s0[:]) == n5.open(source / "paintera_labels" / "data" / "s0")[:]
    assert json.loads((container / "paintera_labels" / "zarr.json").read_text())["node_type"] == "group"


def test_dask_map_blocks_on_a_process_cluster(tmp_path):
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    source = n5_data("downscaleTest.n5/sourceImg")
    path = spec_array_dir(tmp_path, source, SPEC_ZARR_JSON)
    lazy = da.from_zarr(zarr.open_array(path))
    argmax = lazy.map_blocks(argmax_elements, dtype=np.uint64)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        result = argmax.compute()
    assert np.array_equal(result, n5.open(source)[:].argmax())


def test_concurrent_zarr_reads_and_writes(tmp_path):
    with nz.zarr_threads(4):
        array = make_array(tmp_path / "a", nz.LabelMultisetZarrCodec(), shape=(64, 64), chunks=(8, 8))
        labels = np.random.default_rng(0).integers(0, 20, (64, 64))
        array[:] = labels
        assert np.array_equal(argmax_elements(array[:]), labels)


def test_cli_zarr_json(tmp_path, capsys):
    from n5mscodecs.cli import main
    n5.write(tmp_path / "c.n5" / "labels", np.arange(12).reshape(3, 4), chunks=(2, 2))
    (tmp_path / "c.n5" / "attributes.json").write_text('{"n5": "4.0.0"}')
    assert main(["zarr-json", str(tmp_path / "c.n5")]) == 0
    out = capsys.readouterr().out
    assert "2 zarr.json written" in out
    assert argmax_elements(zarr.open_array(tmp_path / "c.n5" / "labels")[:]).tolist() == \
        np.arange(12).reshape(3, 4).tolist()
    assert main(["zarr-json", str(tmp_path / "missing")]) == 2
    # plain zarr in a new process, without import n5mscodecs.zarr: what the note says
    from n5mscodecs.zarr.dtype import UNKNOWN_DATA_TYPE_ERROR, zarr_finds_the_data_type

    script = f"import zarr; print(zarr.open_array({str(tmp_path / 'c.n5' / 'labels')!r})[0:1, 1][0])"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    if zarr_finds_the_data_type():
        assert result.stdout.strip() == "LabelMultiset({1: 1})" and "note:" not in out
    else:
        assert UNKNOWN_DATA_TYPE_ERROR in result.stderr and "import n5mscodecs`" in out


def test_zarr_threads_sizes_zarrs_pool():
    from zarr.core import sync
    for n in (1, 3):
        with nz.zarr_threads(n):
            zarr.create_array({}, shape=(4,), chunks=(2,), dtype="u1")[:] = 1
            assert sync._get_executor()._max_workers == n
    with pytest.raises(ConfigurationError, match="threads must be None or an int >= 1"):
        with nz.zarr_threads(0):
            pass


# --- zarr v2-format arrays in C and F order (numcodecs' memory-order rule) -----------

import zarr_v2_cases as v2_cases  # noqa: E402

from n5mscodecs import CziChunked  # noqa: E402


def create_v2(root, name):
    kind, order, fill = v2_cases.CASES[name]
    if kind == "czi":
        options = {"dtype": "<u2", "compressors": v2_cases.CZI}
    else:
        options = {"dtype": nz.LabelMultisetDType(), "filters": [LabelMultisetVLen()], "compressors": None}
    return zarr.create_array(root / name, shape=v2_cases.SHAPE, chunks=v2_cases.CHUNKS, order=order,
                             zarr_format=2, **options, **fill)


@pytest.mark.parametrize("name", list(v2_cases.CASES))
def test_v2_format_round_trip_in_both_orders(tmp_path, name):
    kind, _, _ = v2_cases.CASES[name]
    array = create_v2(tmp_path, name)
    v2_cases.write(array, kind)
    # zarr 3 fills with the data type's default ({INVALID: 1}) where zarr 2 would use None
    fill = nz.LabelMultisetDType().default_scalar() if array.fill_value is None else array.fill_value
    v2_cases.check_reads(array, kind, fill)


def test_v2_format_chunks_hold_memory_order(tmp_path):
    v2_cases.write_all(create_v2, tmp_path)
    v2_cases.check_chunks_in_memory_order(tmp_path)


def test_v2_format_writes_the_committed_fixture(tmp_path):
    v2_cases.write_all(create_v2, tmp_path)
    v2_cases.check_same_files(tmp_path, v2_cases.WRITTEN_BY_ZARR3)


@pytest.mark.parametrize("name", list(v2_cases.CASES))
def test_reads_what_zarr2_wrote(name):
    """zarr 2.18 writes fill_value 0 for object arrays: read as the label 0 ({0: 1}); with
    fill_value null, zarr 3 reads missing chunks as the data type's default ({INVALID: 1})."""
    kind, _, fill = v2_cases.CASES[name]
    array = zarr.open_array(v2_cases.WRITTEN_BY_ZARR2 / name, mode="r")
    got = array[:]
    if kind == "czi":
        np.testing.assert_array_equal(got, v2_cases.expected(kind, 0))
        return
    written = v2_cases.expected(kind, None)
    assert v2_cases.as_multisets(got[:4]) == v2_cases.as_multisets(written[:4])
    assert got[5, 8] == written[5, 8]
    if "fill_value" in fill:  # null
        assert array.fill_value is None
        assert got[5, 0] == LabelMultiset([INVALID], [1])  # chunk 1.0 was never written
        assert got[4, 8] == LabelMultiset()  # zarr 2 wrote None there: the empty multiset
    else:
        assert array.fill_value == LabelMultiset([0], [1])
        assert got[5, 0] == got[4, 8] == LabelMultiset([0], [1])


def test_v2_fill_value_spellings():
    dtype = nz.LabelMultisetDType()
    assert dtype.from_json_scalar(0, zarr_format=2) == LabelMultiset([0], [1])
    assert dtype.from_json_scalar(-2, zarr_format=2) == LabelMultiset([INVALID], [1])  # Java's signed view
    assert dtype.from_json_scalar("0x5", zarr_format=2) == LabelMultiset([5], [1])
    assert dtype.to_json_scalar(LabelMultiset([INVALID], [1]), zarr_format=2) == INVALID
    assert dtype.to_json_scalar(LabelMultiset([INVALID], [1]), zarr_format=3) == "0xFFFFFFFFFFFFFFFE"
    with pytest.raises(ConfigurationError, match="hex string"):
        dtype.from_json_scalar(0, zarr_format=3)


def test_numcodecs_adapter_name_in_a_fresh_process(tmp_path):
    """zarr 3 names numcodecs codecs in v3 metadata ``numcodecs.<id>``: found through the entry point."""
    array = zarr.create_array(tmp_path / "a", shape=(40, 30), chunks=(16, 16), dtype="uint16",
                              compressors=nz.NumcodecsCziChunkedZarrCodec(codec="lz4", hilo=True))
    data = np.arange(1200, dtype=np.uint16).reshape(40, 30)
    array[:] = data
    codecs = json.loads((tmp_path / "a" / "zarr.json").read_text())["codecs"]
    assert codecs[1] == {"name": "numcodecs.czi_chunked", "configuration": {
        "codec": "lz4", "level": None, "max_chunk_size": 65536, "hilo": True}}
    script = textwrap.dedent(f"""
        import zarr, numpy as np, sys
        a = zarr.open_array({str(tmp_path / 'a')!r}, mode="r")
        assert "n5mscodecs" in sys.modules  # loaded by the entry point, not imported here
        print(int(a[:].astype(np.int64).sum()), type(a.metadata.codecs[1]).__name__)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(int(data.astype(np.int64).sum())), "NumcodecsCziChunkedZarrCodec"]
    # the adapter's own spelling (the numcodecs config with its id) reads too
    config = {"name": "numcodecs.czi_chunked", "configuration": {"id": "czi_chunked", **CziChunked().get_config()}}
    assert nz.NumcodecsCziChunkedZarrCodec.from_dict(config) == nz.NumcodecsCziChunkedZarrCodec()


def test_label_multiset_codecs_have_no_adapter_route():
    """zarr's numcodecs array-to-bytes adapter calls ``codec.decode(bytes)`` and reshapes an ndarray:
    a label multiset payload needs the chunk shape and the label_multiset data type, which the
    package's own v3 codecs (``n5_varlen``, ``n5_label_multiset``, ``label_multiset``) have."""
    from n5mscodecs import N5LabelMultiset

    with pytest.raises(ConfigurationError, match="voxel count"):
        N5LabelMultiset().decode(N5LabelMultiset().encode(np.arange(6, dtype=np.uint64).reshape(2, 3)))
    for name in ("numcodecs.n5_varlen", "numcodecs.n5_label_multiset", "numcodecs.label_multiset"):
        with pytest.raises(Exception, match=name):  # KeyError (zarr 3.1), UnknownCodecError (3.4)
            zarr.registry.get_codec_class(name)
    for name in ("n5_varlen", "n5_label_multiset", "label_multiset"):
        assert zarr.registry.get_codec_class(name) is nz.ZARR_CODECS[name]


@pytest.mark.parametrize("serializer", [
    {"name": "n5_varlen", "configuration": {"codecs": [{"name": "n5_label_multiset"}]}},
    {"name": "label_multiset"},
    {"name": "n5_label_multiset"},
])
def test_v3_arrays_with_f_ordered_chunks(tmp_path, serializer):
    """zarr 3's ``order`` config hands codecs F-ordered chunk arrays: the payloads stay the format's."""
    labels = np.arange(54, dtype=np.uint64).reshape(6, 9)
    arrays = {}
    for order in "CF":
        arrays[order] = zarr.create_array(tmp_path / order, shape=(6, 9), chunks=(4, 4), dtype="label_multiset",
                                          serializer=serializer, compressors=None, config={"order": order})
        arrays[order][:] = labels
        assert np.array_equal(as_multisets(arrays[order][1:5, 2:7]).argmax(), labels[1:5, 2:7])
    assert arrays["F"][:].flags.f_contiguous
    for chunk in ("c/0/0", "c/1/2"):
        assert (tmp_path / "F" / chunk).read_bytes() == (tmp_path / "C" / chunk).read_bytes()
    image = labels.astype(np.uint16)
    czi = zarr.create_array(tmp_path / "czi", shape=(6, 9), chunks=(4, 4), dtype="uint16",
                            compressors=nz.CziChunkedZarrCodec(), config={"order": "F"})
    czi[:] = image
    assert np.array_equal(czi[1:5, 2:7], image[1:5, 2:7])
