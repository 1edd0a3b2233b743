"""The uint64 labels view of label multisets: N5Store(multisets="labels"), open_labels, and the
label multiset codecs in uint64 arrays. Expectations come from the element path
(``read().argmax()``), Paintera's own scalar export and hand-built bytes."""

import json

import numpy as np
import pytest
from support import hand_list, hand_n5_payload, hand_varlen_block, n5_data

zarr = pytest.importorskip("zarr")
from zarr.storage import LocalStore  # noqa: E402

import n5mscodecs.zarr as nz  # noqa: E402
from n5mscodecs import INVALID, LabelMultiset, LabelMultisetArray, n5  # noqa: E402
from n5mscodecs.errors import CompressionError, ConfigurationError, ReadOnlyError  # noqa: E402


def tree(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_paintera_levels_through_the_labels_view():
    root = n5_data("paintera_export_test.n5")
    group = zarr.open_group(nz.open_n5_store(root, multisets="labels"), mode="r")
    for level in ("s0", "s1", "s2"):
        array = group[f"paintera_labels/data/{level}"]
        dataset = n5.open(root / "paintera_labels" / "data" / level)
        assert array.dtype == np.uint64 and array.shape == dataset.shape and array.chunks == dataset.chunks
        assert array.fill_value == 0   # missing blocks read as {0: 1}, as in Paintera
        assert array.attrs["isLabelMultiset"] is True and array.attrs["_n5"]["compression"]["type"] == "gzip"
        labels = array[:]
        assert labels.dtype == np.uint64
        assert np.array_equal(labels, dataset.read().argmax())
    # Paintera's own export of the argmax (INVALID mapped to 0): an independent expectation, ties included
    for level in ("s0", "s2"):
        labels = group[f"paintera_labels/data/{level}"][:]
        labels[labels == INVALID] = 0
        assert np.array_equal(labels, n5.open(root / f"scalar_export_{level}" / level)[:])


def test_java_blocks_with_ties_zero_counts_and_truncated_boundaries():
    root = n5_data("downscaleTest.n5")
    array = nz.open_labels(root, "sourceImg")
    expected = n5.open(root / "sourceImg").read().argmax()
    assert np.array_equal(array[:], expected)
    assert np.array_equal(array[70:80, 5:60:3, 63], expected[70:80, 5:60:3, 63])  # the truncated x=2 blocks


def test_hand_built_block_decodes_to_the_documented_argmax(tmp_path):
    # ties go to the smaller id compared unsigned (INVALID loses to 5), duplicates are not merged,
    # an empty list is INVALID, zero counts compete with each other
    lists = [hand_list([(9, 2), (5, 2)]), hand_list([(INVALID, 3), (5, 3)]), hand_list([]),
             hand_list([(4, 1), (8, 1), (4, 1), (2, 0)]), hand_list([(7, 0), (3, 0)])]
    starts = np.cumsum([0] + [len(x) for x in lists[:-1]]).tolist()
    payload = hand_n5_payload(starts, lists)
    (tmp_path / "c.n5" / "d" / "0").mkdir(parents=True)
    (tmp_path / "c.n5" / "d" / "attributes.json").write_text(json.dumps(
        {"dimensions": [5, 1], "blockSize": [5, 1], "dataType": "uint8", "compression": {"type": "raw"},
         "isLabelMultiset": True}))
    (tmp_path / "c.n5" / "d" / "0" / "0").write_bytes(hand_varlen_block([5, 1], payload))
    labels = nz.open_labels(tmp_path / "c.n5", "d")[:, 0]
    assert labels.tolist() == [5, 5, INVALID, 4, 3]


def test_missing_blocks_fill_label_and_overstated_boundaries(tmp_path):
    labels = np.arange(5 * 3, dtype=np.uint64).reshape(5, 3)
    n5.write(tmp_path / "d", labels, chunks=(4, 4), compression="raw")
    boundary = tmp_path / "d" / "1" / "0"
    data = boundary.read_bytes()
    boundary.write_bytes(data[:4] + np.array([4, 4], ">u4").tobytes() + data[12:])  # claims 4 x 4
    assert np.array_equal(nz.open_labels(tmp_path, "d")[:], labels)
    (tmp_path / "d" / "0" / "0").unlink()
    expected = labels.copy()
    expected[:4] = 0
    assert np.array_equal(nz.open_labels(tmp_path, "d")[:], expected)
    expected[:4] = INVALID
    assert np.array_equal(nz.open_labels(tmp_path, "d", fill_label=INVALID)[:], expected)


def test_writes_through_the_view_raise_and_write_nothing(tmp_path):
    n5.write(tmp_path / "c.n5" / "labels", np.arange(12).reshape(4, 3), chunks=(2, 2))
    before = tree(tmp_path)
    array = nz.open_labels(tmp_path / "c.n5", "labels")
    with pytest.raises(ReadOnlyError, match="read-only labels view"):
        array[0, 0] = 7
    store = nz.N5Store(LocalStore(tmp_path / "c.n5"), multisets="labels")
    assert store.read_only
    with pytest.raises((ReadOnlyError, ValueError)):
        zarr.create_array(store, name="new", shape=(2,), chunks=(2,), dtype="uint8")
    assert tree(tmp_path) == before


def test_corrupt_block_names_the_block(tmp_path):
    n5.write(tmp_path / "c.n5" / "labels", np.arange(12).reshape(4, 3), chunks=(2, 2), compression="gzip")
    block = tmp_path / "c.n5" / "labels" / "1" / "0"
    block.write_bytes(block.read_bytes()[:-9])
    with pytest.raises(CompressionError, match=r"labels/1/0: gzip"):
        nz.open_labels(tmp_path / "c.n5", "labels")[:]
    with pytest.raises(CompressionError, match=r"labels/1/0: gzip"):
        n5.open(tmp_path / "c.n5" / "labels").read_labels()


def test_plain_datasets_pass_through(tmp_path):
    data = np.arange(24, dtype=np.uint16).reshape(4, 6)
    n5.write_array(tmp_path / "c.n5" / "plain", data, chunks=(3, 4))
    group = zarr.open_group(nz.open_n5_store(tmp_path / "c.n5", multisets="labels"), mode="r")
    assert np.array_equal(group["plain"][:], n5.open(tmp_path / "c.n5" / "plain")[:])


@pytest.mark.parametrize("serializer, compressors", [
    (nz.LabelMultisetZarrCodec(), None),
    (nz.LabelMultisetZarrCodec(), "auto"),  # zarr's zstd after the serializer
    (nz.N5LabelMultisetZarrCodec(), None),
    (nz.N5VarlenZarrCodec(codecs=["n5_label_multiset", {"name": "gzip", "configuration": {"level": 1}}]), None),
    (nz.N5VarlenZarrCodec(codecs=["label_multiset"]), None),
])
def test_zarr_json_arrays_open_as_labels(tmp_path, serializer, compressors):
    array = zarr.create_array(tmp_path / "a", shape=(10, 12), chunks=(4, 5), dtype=nz.LabelMultisetDType(),
                              fill_value="0x0000000000000007", serializer=serializer, compressors=compressors)
    labels = np.arange(120, dtype=np.uint64).reshape(10, 12) // 7
    array[:8] = labels[:8]
    array[3, 4] = {5: 2, 9: 2, 1: 1}  # a tie: 5 wins
    elements = zarr.open_array(tmp_path / "a")[:]
    view = nz.open_labels(tmp_path, "a")
    assert view.dtype == np.uint64 and view.fill_value == 7
    result = view[:]
    expected = labels.copy()
    expected[3, 4] = 5
    expected[8:] = 7  # never written: the fill value's id
    assert np.array_equal(result, expected)
    assert np.array_equal(result, LabelMultisetArray.from_elements(elements).argmax())
    with pytest.raises(ReadOnlyError):
        view[0, 0] = 1
    assert np.array_equal(nz.open_labels(str(tmp_path / "a"))[:], expected)


def test_open_labels_refuses_other_arrays(tmp_path):
    zarr.create_array(tmp_path / "u", shape=(2,), chunks=(2,), dtype="uint8")
    with pytest.raises(ConfigurationError, match="not a label multiset array"):
        nz.open_labels(tmp_path, "u")


def test_codec_labels_view_in_uint64_arrays(tmp_path):
    """The label multiset codecs in a uint64 array decode labels and refuse writes."""
    serializer = nz.N5VarlenZarrCodec(codecs=["n5_label_multiset"])
    array = zarr.create_array(tmp_path / "a", shape=(2, 3), chunks=(2, 3), dtype=nz.LabelMultisetDType(),
                              fill_value="0xFFFFFFFFFFFFFFFE", serializer=serializer, compressors=None)
    array[:] = np.array([[LabelMultiset([1, 2], [1, 3])] * 3] * 2, dtype=object)
    document = json.loads((tmp_path / "a" / "zarr.json").read_text())
    view_document = nz.labels_view_metadata(document)
    assert view_document["data_type"] == "uint64" and view_document["fill_value"] == INVALID
    assert view_document["codecs"] == document["codecs"]
    (tmp_path / "a" / "zarr.json").write_text(json.dumps(view_document))
    assert zarr.open_array(tmp_path / "a", mode="r")[:].tolist() == [[2, 2, 2], [2, 2, 2]]
    before = tree(tmp_path)
    with pytest.raises(ReadOnlyError, match="read-only labels view"):
        zarr.open_array(tmp_path / "a", mode="r+")[0, 0] = 5
    assert tree(tmp_path) == before


def test_hand_built_chunk_through_the_n5_label_multiset_codec(tmp_path):
    payload = hand_n5_payload([0, 16, 0, 16], [hand_list([(11, 1)]), hand_list([(12, 4), (13, 5)])])
    document = {"zarr_format": 3, "node_type": "array", "shape": [2, 2], "data_type": "label_multiset",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": "0xFFFFFFFFFFFFFFFE", "codecs": [{"name": "n5_label_multiset"}]}
    (tmp_path / "a" / "c" / "0").mkdir(parents=True)
    (tmp_path / "a" / "zarr.json").write_text(json.dumps(document))
    (tmp_path / "a" / "c" / "0" / "0").write_bytes(payload)
    # N5 voxel order: the first axis is fastest
    assert nz.open_labels(tmp_path, "a")[:].tolist() == [[11, 11], [13, 13]]


def test_v2_format_arrays_are_refused_saying_how_to_read_them(tmp_path):
    from n5mscodecs import LabelMultisetVLen, argmax_elements

    array = zarr.create_array(tmp_path / "v2.zarr", shape=(4, 5), chunks=(2, 3), zarr_format=2,
                              dtype=nz.LabelMultisetDType(), filters=[LabelMultisetVLen()],
                              fill_value="0xFFFFFFFFFFFFFFFE")
    array[:] = np.arange(20).reshape(4, 5)
    for store, path in ((tmp_path / "v2.zarr", ""), (tmp_path, "v2.zarr")):
        with pytest.raises(ConfigurationError, match=r"zarr v2-format array \(\.zarray\).*argmax_elements"):
            nz.open_labels(store, path)
    assert argmax_elements(zarr.open_array(tmp_path / "v2.zarr")[:]).tolist() == np.arange(20).reshape(4, 5).tolist()
