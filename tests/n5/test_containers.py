"""Groups, datasets and metadata as h5py/zarr/z5py users know them (n5.open, Group, DatasetMetadata)."""

import pickle

import numpy as np
import pytest

from n5mscodecs import LabelMultisetArray, n5
from n5mscodecs.errors import ConfigurationError, IncompleteError, ReadOnlyError
from n5mscodecs.n5.metadata import DatasetMetadata
from n5mscodecs.n5.writing import INCOMPLETE_KEY

LABELS = (np.arange(6 * 5, dtype=np.uint64).reshape(6, 5) // 4) % 5


def test_metadata_round_trips_and_keeps_other_attributes():
    document = {"dataType": "uint8", "compression": {"type": "gzip", "level": -1, "useZlib": False},
                "blockSize": [2, 2], "dimensions": [6, 5], "isLabelMultiset": True, "maxId": 4,
                "maxNumEntries": -1, "downsamplingFactors": [2.0, 2.0], "unit": "pixel"}
    meta = DatasetMetadata.from_json(document, "d")
    assert meta.shape == (6, 5) and meta.chunks == (2, 2) and meta.label_multiset and meta.max_id == 4
    assert meta.max_num_entries == -1 and dict(meta.extra) == {"downsamplingFactors": [2.0, 2.0], "unit": "pixel"}
    assert meta.to_json() == document and DatasetMetadata.from_json(meta.to_json()) == meta
    assert pickle.loads(pickle.dumps(meta)) == meta
    with pytest.raises(AttributeError):
        meta.shape = (1, 1)  # frozen
    with pytest.raises(TypeError):
        meta.extra["unit"] = "nm"  # read-only view


def test_metadata_is_validated_naming_the_dataset_and_field():
    good = {"dataType": "uint16", "blockSize": [2], "dimensions": [4]}
    with pytest.raises(ConfigurationError, match=r"^d: attributes.json: blockSize"):
        DatasetMetadata.from_json({**good, "blockSize": [0]}, "d")
    with pytest.raises(ConfigurationError, match="unsupported dataType 'complex64'"):
        DatasetMetadata.from_json({**good, "dataType": "complex64"}, "d")
    with pytest.raises(ConfigurationError, match="compression"):
        DatasetMetadata.from_json({**good, "compression": {"type": "nope"}}, "d")
    assert DatasetMetadata.from_json(good).compressor is None


def test_the_label_multiset_document_is_built_in_one_place(tmp_path):
    written = n5.write(tmp_path / "c.n5" / "l", LABELS, chunks=2, attributes={"unit": "nm"})
    expected = DatasetMetadata.label_multisets((6, 5), (2, 2), "gzip", max_id=4, attributes={"unit": "nm"})
    assert written.metadata == expected
    assert n5.read_attributes(tmp_path / "c.n5" / "l") == expected.to_json()


def test_open_gives_groups_with_nested_keys_attrs_and_a_tree(tmp_path):
    root = n5.open(tmp_path / "c.n5", mode="w")
    assert isinstance(root, n5.Group) and n5.read_attributes(tmp_path / "c.n5") == {"n5": n5.N5_VERSION}
    volumes = root.require_group("volumes")
    labels = volumes.create_label_multiset_dataset("labels", LABELS, chunks=(4, 4))
    raw = root.create_dataset("volumes/raw", data=LABELS.astype(np.uint16), chunks=3)
    assert root.require_group("volumes").path == volumes.path
    assert sorted(root) == ["volumes"] and list(volumes) == ["labels", "raw"] and len(volumes) == 2
    assert "volumes/labels" in root and "volumes/nothing" not in root and "../c.n5" not in root
    assert np.array_equal(root["volumes/labels"][:].argmax(), LABELS) and labels.shape == raw.shape
    assert [name for name, _ in volumes.datasets()] == ["labels", "raw"] and not list(volumes.groups())
    with pytest.raises(KeyError):
        root["volumes/nothing"]
    with pytest.raises(KeyError):
        root["volumes/../.."]
    assert "volumes/labels/0" not in root  # a dataset's blocks are not children
    with pytest.raises(KeyError):
        root["volumes/labels/0/0"]
    with pytest.raises(TypeError, match="a dataset, not a group"):
        root.require_group("volumes/raw")
    with pytest.raises(FileExistsError):
        root.create_group("volumes")
    with pytest.raises(ConfigurationError, match="is a dataset: nothing is created inside it"):
        root.create_group("volumes/raw/inner")
    with pytest.raises(ConfigurationError, match="is a dataset"):
        root.create_dataset("volumes/labels/x", shape=(2,), dtype="uint8")
    root.attrs["resolution"] = [4, 4]
    root.attrs.update(offset=[0, 0])
    assert dict(n5.open(tmp_path / "c.n5").attrs) == {"n5": n5.N5_VERSION, "resolution": [4, 4], "offset": [0, 0]}
    del root.attrs["offset"]
    assert "offset" not in root.attrs
    assert root.tree() == ("/\n└── volumes\n    ├── labels  (6, 5) label multisets, chunks (4, 4), gzip\n"
                           "    └── raw  (6, 5) uint16, chunks (3, 3), gzip")


def test_modes(tmp_path):
    with pytest.raises(ConfigurationError, match="not an N5 dataset or group"):
        n5.open(tmp_path / "missing.n5")
    with pytest.raises(ConfigurationError, match="not an N5 dataset or group"):
        n5.open(tmp_path / "missing.n5", mode="r+")
    created = n5.open(tmp_path / "a.n5", mode="a")
    created.create_dataset("x", shape=(4,), dtype="int32", chunks=2)
    assert list(n5.open(tmp_path / "a.n5", mode="a")) == ["x"]
    with pytest.raises(FileExistsError, match="w-"):
        n5.open(tmp_path / "a.n5", mode="w-")
    read_only = n5.open(tmp_path / "a.n5")
    with pytest.raises(ConfigurationError, match="read-only"):
        read_only.create_group("g")
    with pytest.raises(ReadOnlyError, match="read-only"):
        read_only.attrs["a"] = 1
    with pytest.raises(ReadOnlyError, match="read-only"):
        read_only["x"][0:2] = 1
    n5.open(tmp_path / "a.n5", mode="r+")["x"][0:2] = 1
    assert n5.open(tmp_path / "a.n5/x")[:].tolist() == [1, 1, 0, 0]
    emptied = n5.open(tmp_path / "a.n5", mode="w")
    assert list(emptied) == [] and n5.read_attributes(tmp_path / "a.n5") == {"n5": n5.N5_VERSION}
    with pytest.raises(ConfigurationError, match="mode must be one of"):
        n5.open(tmp_path / "a.n5", mode="x")


def test_mode_w_refuses_what_is_not_n5(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "thesis.tex").write_text("years of work")
    with pytest.raises(ConfigurationError, match="not N5"):
        n5.open(tmp_path / "home", mode="w")
    assert (tmp_path / "home" / "thesis.tex").read_text() == "years of work"
    (tmp_path / "busy.n5").mkdir()
    (tmp_path / "busy.n5" / ".n5ms-lock").write_text("")
    with pytest.raises(ConfigurationError, match="lock"):
        n5.open(tmp_path / "busy.n5", mode="w")



def test_mode_w_marks_every_dataset_below_before_it_removes_anything(tmp_path, monkeypatch):
    """Issue 42: an emptying interrupted while it removes leaves no dataset that reads as complete
    with part of its blocks gone: each is marked (as paintera.convert's overwrite marks them) first."""
    from n5mscodecs.n5 import DiskStore

    root = n5.open(tmp_path / "c.n5", mode="w")
    root.require_group("g").create_dataset("a", data=np.arange(16, dtype=np.uint16).reshape(4, 4), chunks=2)
    root.create_dataset("b", data=np.ones((4, 4), np.uint8), chunks=2)
    removed = []

    def interrupted(self, key):  # the first block file goes, then the process dies
        if removed:
            raise KeyboardInterrupt("killed while emptying (injected)")
        removed.append(key)
        DiskStore.delete(self, key)

    real_delete_tree = DiskStore.delete_tree
    monkeypatch.setattr(DiskStore, "delete_tree", lambda self, key: interrupted(self, key + "/0/0")
                        if key in ("b", "g") else real_delete_tree(self, key))
    with pytest.raises(KeyboardInterrupt):
        n5.open(tmp_path / "c.n5", mode="w")
    monkeypatch.undo()
    assert removed == ["b/0/0"] and not (tmp_path / "c.n5" / "b" / "0" / "0").exists()
    for name in ("b", "g/a"):  # marked before the first byte went: refused, not read as fill values
        assert INCOMPLETE_KEY in n5.read_attributes(tmp_path / "c.n5" / name)
        with pytest.raises(IncompleteError, match="INCOMPLETE"):
            n5.open(tmp_path / "c.n5" / name)
    assert list(n5.open(tmp_path / "c.n5", mode="w")) == []  # emptying again finishes it

def test_datasets_look_like_arrays(tmp_path):
    plain = n5.write_array(tmp_path / "c.n5" / "p", LABELS.astype(np.int16), chunks=4)
    opened = n5.open(tmp_path / "c.n5" / "p")
    assert (opened.shape, opened.dtype, opened.chunks, opened.ndim, opened.size, len(opened)) == (
        (6, 5), np.dtype("int16"), (4, 4), 2, 30, 6)
    assert repr(opened) == (f"<ArrayDataset {str(tmp_path / 'c.n5' / 'p')!r} shape=(6, 5) dtype=int16 "
                            "chunks=(4, 4) compression=gzip>")
    assert np.array_equal(np.asarray(opened, np.float64), LABELS) and plain.attrs.asdict() == {}
    plain.attrs["unit"] = "nm"
    assert dict(n5.open(tmp_path / "c.n5" / "p").attrs) == {"unit": "nm"}
    with pytest.raises(ConfigurationError, match="N5 field"):
        plain.attrs["dimensions"] = [1, 1]
    assert "dimensions" not in plain.attrs and n5.open(tmp_path / "c.n5" / "p").shape == (6, 5)
    written = n5.open(tmp_path / "c.n5" / "p", mode="r+")
    written[1:5, 2] = [7, 8, 9, 10]  # crosses a block boundary, partial blocks
    written[4:, 4:] = -1  # one whole boundary block
    expected = LABELS.astype(np.int16)
    expected[1:5, 2] = [7, 8, 9, 10]
    expected[4:, 4:] = -1
    assert np.array_equal(opened[:], expected)
    with pytest.raises(IndexError, match="steps"):
        written[::2] = 0
    # indexing errors in numpy's words; a bool is a mask to numpy, never index 1
    for key, message in [((6, 0), "index 6 is out of bounds for axis 0 with size 6"),
                         ((True,), "slices, ints and Ellipsis only"), ((..., 0, ...), "at most one Ellipsis"),
                         ((0, 0, 0), "too many indices: 3 for 2"), ((slice(None, None, -1),), "positive step")]:
        with pytest.raises(IndexError, match=message.replace("(", r"\(")):
            opened[key]


def test_label_multiset_views_are_chosen_at_open(tmp_path):
    n5.write(tmp_path / "c.n5" / "l", LABELS, chunks=(4, 4))
    multisets = n5.open(tmp_path / "c.n5" / "l")
    labels = n5.open(tmp_path / "c.n5" / "l", multisets="labels")
    assert multisets.dtype == np.dtype(object) and labels.dtype == np.uint64
    assert "view=elements" in repr(multisets) and "view=labels" in repr(labels)
    assert isinstance(multisets[1:3], LabelMultisetArray) and multisets.read_block((0, 0)).shape == (4, 4)
    assert np.array_equal(labels[1:5, ::2], LABELS[1:5, ::2]) and labels[5, 4] == LABELS[5, 4]
    assert np.array_equal(np.asarray(labels), LABELS) and labels.read_block((1, 1)).dtype == np.uint64
    assert np.array_equal(multisets.read_labels(), LABELS) and multisets.labels_view() is multisets.labels_view()
    with pytest.raises(ReadOnlyError, match="labels view is read-only"):
        labels[0, 0] = 1
    with pytest.raises(ConfigurationError, match="multisets must be one of"):
        n5.open(tmp_path / "c.n5" / "l", multisets="argmax")


def test_label_multiset_assignment_rewrites_blocks_and_max_id(tmp_path):
    n5.write(tmp_path / "c.n5" / "l", LABELS, chunks=(4, 4))
    dataset = n5.open(tmp_path / "c.n5" / "l", mode="r+")
    dataset[3:5, 3:5] = 42  # four blocks, each partly
    dataset[0:1, 0:1] = LabelMultisetArray.from_elements([{9: 2, 3: 1}], (1, 1))
    expected = LABELS.copy()
    expected[3:5, 3:5] = 42
    expected[0, 0] = 9
    reopened = n5.open(tmp_path / "c.n5" / "l")
    assert np.array_equal(reopened.read_labels(), expected) and reopened.max_id == 42 == dataset.metadata.max_id
    assert reopened[0, 0].as_dict() == {9: 2, 3: 1}


def test_open_dataset_and_incomplete_datasets_in_groups(tmp_path):
    n5.write(tmp_path / "c.n5" / "l", LABELS, chunks=4)
    with pytest.raises(ConfigurationError, match="not an N5 dataset"):
        n5.open_dataset(tmp_path / "c.n5")
    n5.write_attributes(tmp_path / "c.n5" / "l", {**n5.read_attributes(tmp_path / "c.n5" / "l"),
                                                  INCOMPLETE_KEY: {"writer": "w", "finish": "f"}})
    with pytest.raises(IncompleteError):
        n5.open(tmp_path / "c.n5")["l"]
    assert "l" in n5.open(tmp_path / "c.n5")  # there, though it does not open
    assert n5.open(tmp_path / "c.n5", allow_incomplete=True)["l"].shape == (6, 5)
