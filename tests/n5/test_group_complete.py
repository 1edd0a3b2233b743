"""Groups, datasets and attributes complete (issue 43): what h5py, zarr and z5py users reach for,
with their meaning, checked against the files on disk (json, struct), not only round trips."""

import json
import struct
import threading
import warnings

import numpy as np
import pytest

from n5mscodecs import LabelMultisetArray, n5
from n5mscodecs.cli import main
from n5mscodecs.errors import (
    ArgumentError,
    ConfigurationError,
    IncompleteError,
    InputTypeError,
    ReadOnlyError,
    StorageError,
    TargetInUseError,
)
from n5mscodecs.n5.group import UnreadableAttributesWarning
from n5mscodecs.n5.writing import INCOMPLETE_KEY, WriterLock

VALUES = np.arange(7 * 5, dtype=np.uint16).reshape(7, 5)


def document(path):
    """The attributes.json at ``path``, parsed here (not through the package)."""
    return json.loads((path / "attributes.json").read_text())


def header_dims(block_file):
    """The dims of a default-mode block header, read with struct."""
    mode, ndim = struct.unpack(">HH", block_file.read_bytes()[:4])
    return struct.unpack(f">{ndim}I", block_file.read_bytes()[4:4 + 4 * ndim])


def blocks(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and p.name.isdigit())


# -- open ---------------------------------------------------------------------------------------

def test_open_takes_groups_with_empty_or_absent_attributes_and_says_what_is_missing(tmp_path):
    root = n5.open(tmp_path / "c.n5", mode="w")
    root.create_group("sub")  # writes {}
    assert document(tmp_path / "c.n5" / "sub") == {}
    (tmp_path / "c.n5" / "plain" / "inner").mkdir(parents=True)  # z5py and Java: no attributes.json
    for path in ("c.n5/sub", "c.n5/plain", "c.n5/plain/inner"):
        for mode in ("r", "r+", "a"):
            group = n5.open(tmp_path / path, mode=mode)
            assert isinstance(group, n5.Group) and list(group) == (["inner"] if path == "c.n5/plain" else [])
    assert not (tmp_path / "c.n5" / "plain" / "attributes.json").exists()  # opening wrote nothing
    assert document(tmp_path / "c.n5" / "sub") == {}  # (mode 'a' made no container of it)
    with pytest.raises(ConfigurationError, match=r"missing: not an N5 dataset or group \(does not exist\)"):
        n5.open(tmp_path / "c.n5" / "missing")
    (tmp_path / "loose").mkdir()  # outside any container, without attributes: not N5
    with pytest.raises(ConfigurationError, match="no attributes.json, not inside an"):
        n5.open(tmp_path / "loose")
    root.create_dataset("d", data=VALUES, chunks=2)
    with pytest.raises(ConfigurationError, match="not an N5 dataset or group"):
        n5.open(tmp_path / "c.n5" / "d" / "0")  # a dataset's block directory is no group


# -- create_dataset arguments -------------------------------------------------------------------

def test_create_dataset_takes_h5py_zarr_and_z5py_spellings(tmp_path):
    root = n5.open(tmp_path / "c.n5", mode="w")
    assert root.create_dataset("ten", shape=10, dtype="uint8").shape == (10,)
    assert root.create_dataset("positional", (4, 3), "int16").dtype == np.int16  # h5py's order
    assert document(tmp_path / "c.n5" / "ten")["dimensions"] == [10]
    assert root.create_dataset("same", shape=(7, 5), data=VALUES).shape == (7, 5)
    with pytest.raises(ArgumentError, match=r"^shape: \(5, 7\) is not the shape of data") as refused:
        root.create_dataset("conflict", shape=(5, 7), data=VALUES)
    assert refused.value.argument == "shape" and "conflict" not in root
    big = np.zeros((100, 3), np.uint8)
    for chunks in (None, True):
        root.create_dataset(f"chosen{chunks}", data=big, chunks=chunks)
        assert document(tmp_path / "c.n5" / f"chosen{chunks}")["blockSize"] == [64, 3]
    with pytest.raises(ArgumentError, match="always chunked"):
        root.create_dataset("contiguous", data=big, chunks=False)
    root.create_dataset("raw", data=VALUES, compression=None)
    assert document(tmp_path / "c.n5" / "raw")["compression"] == {"type": "raw"}
    for name, options in [("z5py", {"compression": "gzip", "level": 9}), ("h5py", {"compression": "gzip",
                          "compression_opts": 9}), ("h5int", {"compression": 9})]:
        root.create_dataset(name, data=VALUES, **options)
        compression = document(tmp_path / "c.n5" / name)["compression"]
        assert compression["type"] == "gzip" and compression["level"] == 9, name
        assert np.array_equal(n5.open(tmp_path / "c.n5" / name)[:], VALUES)
    root.create_dataset("xz", data=VALUES, compression="xz", compression_opts=2)
    assert document(tmp_path / "c.n5" / "xz")["compression"] == {"type": "xz", "preset": 2}
    with pytest.raises(ArgumentError, match="^level: raw compression has no level"):
        root.create_dataset("nolevel", data=VALUES, compression="raw", level=3)
    with pytest.raises(ArgumentError, match="not both"):
        root.create_dataset("both", data=VALUES, level=3, compression_opts=3)
    root.create_dataset("zero", data=VALUES, fillvalue=0, fill_value=0)
    for keyword in ("fillvalue", "fill_value"):
        with pytest.raises(ArgumentError, match=f"^{keyword}: N5 has no fill value field"):
            root.create_dataset("filled", shape=(4,), dtype="uint8", **{keyword: 5})
    assert "filled" not in root and "nolevel" not in root and "contiguous" not in root


# -- attributes ---------------------------------------------------------------------------------

def test_attributes_take_numpy_values_and_refuse_what_json_cannot_hold(tmp_path):
    root = n5.open(tmp_path / "c.n5", mode="w")
    root.attrs["resolution"] = np.array([4.0, 4.0, 40.0], np.float32)
    root.attrs.update(count=np.int64(3), flag=np.bool_(True), nested={"offset": (np.uint8(1), 2)})
    assert document(tmp_path / "c.n5") == {"n5": n5.N5_VERSION, "resolution": [4.0, 4.0, 40.0], "count": 3,
                                           "flag": True, "nested": {"offset": [1, 2]}}
    before = (tmp_path / "c.n5" / "attributes.json").read_bytes()
    with pytest.raises(ConfigurationError, match=r"attribute scale\[1\]: nan is not a JSON number"):
        root.attrs["scale"] = [1.0, float("nan")]
    with pytest.raises(ConfigurationError, match="attribute m/limit: inf is not a JSON number"):
        root.attrs.update(m={"limit": np.float64("inf")}, ok=1)
    with pytest.raises(InputTypeError, match="attribute key 1 is a int"):
        root.attrs[1] = "one"
    with pytest.raises(TypeError, match="key 2 is a int"):
        root.attrs["map"] = {2: "two"}
    with pytest.raises(InputTypeError, match="a set is not JSON"):
        root.attrs["s"] = {1, 2}
    assert (tmp_path / "c.n5" / "attributes.json").read_bytes() == before  # nothing written
    dataset = root.create_dataset("d", data=VALUES, attributes={"resolution": np.array([4, 40])})
    dataset.attrs["unit"] = np.str_("nm")
    assert document(tmp_path / "c.n5" / "d")["unit"] == "nm"
    assert document(tmp_path / "c.n5" / "d")["resolution"] == [4, 40]  # the writers' attributes too
    with pytest.raises(ConfigurationError, match="attribute attributes/offset: nan"):
        root.create_label_multiset_dataset("l", np.ones((2, 2), np.uint64), 2, attributes={"offset": np.nan})
    assert "l" not in root


# -- groups ---------------------------------------------------------------------------------------

def make_tree(path):
    root = n5.open(path, mode="w")
    root.create_group("b").create_dataset("x", data=VALUES, chunks=4)
    root.create_group("a/inner")
    root.create_dataset("c", data=VALUES[:2], chunks=4)
    return root


def test_visit_walks_depth_first_sorted_and_stops_at_a_result(tmp_path):
    root = make_tree(tmp_path / "c.n5")
    seen = []
    assert root.visit(seen.append) is None
    assert seen == ["a", "a/inner", "b", "b/x", "c"]
    items = []
    root.visititems(lambda name, obj: items.append((name, type(obj).__name__)))
    assert items == [("a", "Group"), ("a/inner", "Group"), ("b", "Group"), ("b/x", "ArrayDataset"),
                     ("c", "ArrayDataset")]
    found = root.visititems(lambda name, obj: name if isinstance(obj, n5.ArrayDataset) else None)
    assert found == "b/x"
    relative = []
    root["b"].visit(relative.append)
    assert relative == ["x"]


def test_require_dataset_has_h5py_semantics(tmp_path):
    root = n5.open(tmp_path / "c.n5", mode="w")
    created = root.require_dataset("d", (7, 5), "int16", chunks=4)
    assert created.dtype == np.int16 and document(tmp_path / "c.n5" / "d")["blockSize"] == [4, 4]
    assert root.require_dataset("d", (7, 5), "int8").path == created.path  # int8 casts safely to int16
    with pytest.raises(InputTypeError, match=r"shape \(5, 7\) does not match the existing dataset's \(7, 5\)"):
        root.require_dataset("d", (5, 7), "int16")
    with pytest.raises(TypeError, match="dtype float64 does not cast safely to the existing dataset's int16"):
        root.require_dataset("d", (7, 5), "float64")
    with pytest.raises(TypeError, match="dtype int8 is not the existing dataset's int16"):
        root.require_dataset("d", (7, 5), "int8", exact=True)
    root.create_group("g")
    with pytest.raises(TypeError, match="is a group, not a dataset"):
        root.require_dataset("g", 3, "uint8")


def test_setitem_creates_and_delitem_removes_children(tmp_path):
    root = make_tree(tmp_path / "c.n5")
    root["new"] = VALUES
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "new")[:], VALUES)
    assert document(tmp_path / "c.n5" / "new")["dataType"] == "uint16"
    labels = LabelMultisetArray.from_labels(np.array([[1, 2], [3, 3]], np.uint64))
    root["labels"] = labels
    assert document(tmp_path / "c.n5" / "labels")["isLabelMultiset"] is True
    assert n5.open(tmp_path / "c.n5" / "labels").read_labels().tolist() == [[1, 2], [3, 3]]
    with pytest.raises(FileExistsError, match="del group"):
        root["new"] = VALUES
    del root["b"]  # a group with a dataset below
    del root["new"]
    assert not (tmp_path / "c.n5" / "b").exists() and not (tmp_path / "c.n5" / "new").exists()
    assert list(root) == ["a", "c", "labels"]
    with pytest.raises(KeyError):
        del root["b"]
    with pytest.raises(KeyError):
        del root["c/0"]  # a block directory is no child
    (tmp_path / "c.n5" / "alias").symlink_to(tmp_path / "c.n5" / "c")
    assert np.array_equal(root["alias"][:], VALUES[:2])
    del root["alias"]  # the link goes, as h5py's soft links; what it leads to stays
    assert not (tmp_path / "c.n5" / "alias").exists() and np.array_equal(root["c"][:], VALUES[:2])
    assert INCOMPLETE_KEY not in document(tmp_path / "c.n5" / "c")
    read_only = n5.open(tmp_path / "c.n5")
    with pytest.raises(ReadOnlyError):
        del read_only["c"]
    with pytest.raises(ReadOnlyError):
        read_only["other"] = VALUES
    assert (tmp_path / "c.n5" / "c" / "attributes.json").exists()


def test_delitem_takes_the_writer_lock_and_marks_before_removing(tmp_path, monkeypatch):
    from n5mscodecs.n5 import DiskStore

    root = make_tree(tmp_path / "c.n5")
    with WriterLock(tmp_path / "c.n5" / "b"):  # a writer of the group itself
        with pytest.raises(TargetInUseError):
            del root["b"]
    holding, release = threading.Event(), threading.Event()

    def writer_below():  # another writer, of a dataset below, that began first
        with WriterLock(tmp_path / "c.n5" / "b" / "x"):
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=writer_below)
    thread.start()
    try:
        assert holding.wait(30)
        with pytest.raises(TargetInUseError, match="another thread"):
            del root["b"]
    finally:
        release.set()
        thread.join()
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "b" / "x")[:], VALUES)  # nothing removed

    def killed(self, key):
        raise KeyboardInterrupt("killed while removing (injected)")

    monkeypatch.setattr(DiskStore, "delete_tree", killed)
    with pytest.raises(KeyboardInterrupt):
        del root["b"]
    monkeypatch.undo()
    assert INCOMPLETE_KEY in document(tmp_path / "c.n5" / "b" / "x")  # marked before anything went
    with pytest.raises(IncompleteError):
        n5.open(tmp_path / "c.n5" / "b" / "x")
    (tmp_path / "c.n5" / "b" / "x" / ".n5ms-lock").write_text("{}")  # a killed writer's: nobody holds it
    del root["b"]
    assert "b" not in root


def test_close_is_a_no_op_and_groups_are_context_managers(tmp_path):
    with n5.open(tmp_path / "c.n5", mode="w") as root:
        root.create_group("g")
    root.close()
    assert list(root) == ["g"]  # still usable: nothing was held open


def test_parents(tmp_path):
    root = make_tree(tmp_path / "c.n5")
    inner = root["a/inner"]
    assert inner.parent.path == root["a"].path and inner.parent.parent.path == root.path
    assert root.parent.path == root.path  # the root is its own parent, as h5py's
    dataset = root["b/x"]
    assert isinstance(dataset.parent, n5.Group) and dataset.parent.path == root["b"].path
    assert dataset.parent.read_only is False and n5.open(tmp_path / "c.n5" / "b" / "x").parent.read_only
    labels = n5.open(tmp_path / "c.n5", mode="r+")
    labels.create_label_multiset_dataset("l", np.ones((2, 2), np.uint64), 2)
    view = n5.open(tmp_path / "c.n5" / "l", multisets="labels")
    assert view.parent["l"].dtype == np.uint64  # the parent opens children with the same options
    lonely = n5.write_array(tmp_path / "lonely", VALUES, 4)
    with pytest.raises(StorageError, match="outside the container root"):
        _ = lonely.parent


# -- datasets ------------------------------------------------------------------------------------

def test_dataset_compression_fill_value_and_nbytes(tmp_path):
    root = n5.open(tmp_path / "c.n5", mode="w")
    plain = root.create_dataset("p", data=VALUES, compression="gzip", level=3)
    assert plain.compression == document(tmp_path / "c.n5" / "p")["compression"]
    assert plain.compression["level"] == 3 and plain.fill_value == 0
    assert plain.nbytes == 7 * 5 * 2
    labels = root.create_label_multiset_dataset("l", np.ones((3, 4), np.uint64), 2, compression="raw")
    assert labels.compression == {"type": "raw"} and labels.fill_value == 0 and labels.nbytes == 3 * 4 * 8
    assert n5.open(tmp_path / "c.n5" / "l", fill_label=9).fill_value == 9


def test_iter_chunks_and_chunk_exists_see_the_stored_blocks(tmp_path):
    root = n5.open(tmp_path / "c.n5", mode="w")
    sparse = root.create_dataset("s", shape=(7, 5), dtype="uint8", chunks=(3, 2))
    sparse[0:3, 0:2] = 1  # block (0, 0)
    sparse[6, 4] = 2  # block (2, 2), a boundary block
    assert blocks(tmp_path / "c.n5" / "s") == ["0/0", "2/2"]
    assert list(sparse.iter_chunks()) == [(slice(0, 3), slice(0, 2)), (slice(6, 7), slice(4, 5))]
    assert list(sparse.iter_chunks((slice(1, 7), slice(1, 5)))) == [(slice(1, 3), slice(1, 2)),
                                                                     (slice(6, 7), slice(4, 5))]
    assert list(sparse.iter_chunks((slice(3, 5),))) == []
    assert sparse.chunk_exists((2, 2)) and not sparse.chunk_exists((1, 1))
    with pytest.raises(ConfigurationError, match="outside the grid"):
        sparse.chunk_exists((3, 0))
    assert root.create_dataset("one", data=np.arange(5, dtype=np.uint8), chunks=2).chunk_exists(2)


def test_resize_follows_zarr_and_rewrites_boundary_blocks_as_java_writes_them(tmp_path):
    root = n5.open(tmp_path / "c.n5", mode="w")
    ds = root.create_dataset("d", data=VALUES, chunks=(3, 2))  # grid 3 x 3, boundary blocks (1, 2) / (3, 1)
    ds.resize((4, 3))
    assert ds.shape == (4, 3) and ds.grid_shape == (2, 2)
    assert document(tmp_path / "c.n5" / "d")["dimensions"] == [4, 3]
    assert blocks(tmp_path / "c.n5" / "d") == ["0/0", "0/1", "1/0", "1/1"]  # blocks outside removed
    assert header_dims(tmp_path / "c.n5" / "d" / "1" / "1") == (1, 1)  # cropped to the new boundary
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "d")[:], VALUES[:4, :3])
    ds.resize([8, 5])  # grow: what was cut off is gone, new voxels read as the fill value
    expected = np.zeros((8, 5), np.uint16)
    expected[:4, :3] = VALUES[:4, :3]
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "d")[:], expected)
    assert header_dims(tmp_path / "c.n5" / "d" / "1" / "1") == (3, 2)
    assert INCOMPLETE_KEY not in document(tmp_path / "c.n5" / "d")
    with pytest.raises(ArgumentError, match="^shape: 2 values required"):
        ds.resize(4)
    with pytest.raises(ReadOnlyError):
        n5.open(tmp_path / "c.n5" / "d").resize((2, 2))


def test_resize_of_label_multisets_keeps_every_block_readable(tmp_path):
    labels = (np.arange(7 * 5, dtype=np.uint64).reshape(7, 5) % 4) + 1
    ds = n5.write(tmp_path / "c.n5" / "l", labels, chunks=(3, 2))
    ds.resize((5, 4))
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "l").read_labels(), labels[:5, :4])
    ds.resize((9, 5))
    expected = np.zeros((9, 5), np.uint64)  # grown voxels are the background, as Java reads missing ones
    expected[:5, :4] = labels[:5, :4]
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "l").read_labels(), expected)
    assert np.array_equal(ds.read_labels(), expected)


def test_an_interrupted_resize_is_marked_and_finished_by_resizing_again(tmp_path, monkeypatch):
    from n5mscodecs.n5 import ArrayDataset

    ds = n5.write_array(tmp_path / "c.n5" / "d", VALUES, chunks=(3, 2))
    done = []
    real = ArrayDataset._refit_block

    def killed(self, before, position):
        if done:
            raise KeyboardInterrupt("killed while resizing (injected)")
        done.append(position)
        real(self, before, position)

    monkeypatch.setattr(ArrayDataset, "_refit_block", killed)
    with pytest.raises(KeyboardInterrupt):
        ds.resize((8, 6))
    monkeypatch.undo()
    assert document(tmp_path / "c.n5" / "d")[INCOMPLETE_KEY]["resize_from"] == [7, 5]
    with pytest.raises(IncompleteError, match="resize it again"):
        n5.open(tmp_path / "c.n5" / "d")
    n5.open(tmp_path / "c.n5" / "d", mode="r+", allow_incomplete=True).resize((8, 6))
    expected = np.zeros((8, 6), np.uint16)
    expected[:7, :5] = VALUES
    assert np.array_equal(n5.open(tmp_path / "c.n5" / "d")[:], expected)


# -- corrupt attributes --------------------------------------------------------------------------

def corrupt_container(path):
    root = make_tree(path)
    root.create_dataset("bad", data=VALUES, chunks=4)
    root["a/inner"].create_dataset("deep", data=VALUES, chunks=4)
    (path / "bad" / "attributes.json").write_text("{not json")
    (path / "a" / "attributes.json").write_text("[1, 2]")  # a group whose document is no object
    return root


def test_tree_and_dataset_paths_report_unreadable_attributes_and_go_on(tmp_path):
    root = corrupt_container(tmp_path / "c.n5")
    lines = root.tree().split("\n")
    assert lines[0] == "/" and lines[1].startswith("├── a  unreadable: ") and "expected a JSON object" in lines[1]
    assert lines[2].startswith("├── b") and lines[3] == "│   └── x  (7, 5) uint16, chunks (4, 4), gzip"
    assert lines[4].startswith("├── bad  unreadable: ") and "not valid JSON" in lines[4]
    assert lines[5] == "└── c  (2, 5) uint16, chunks (4, 4), gzip" and len(lines) == 6
    n5.create_array_dataset(tmp_path / "c.n5" / "c", (2, 5), 4, "uint16", overwrite=True, incomplete="a test")
    assert "└── c  unreadable: " in root.tree() and "INCOMPLETE: a test was interrupted" in root.tree()
    with pytest.raises(ConfigurationError, match="expected a JSON object"):
        root.visit(lambda name: None)  # visit raises what tree lists
    with pytest.warns(UnreadableAttributesWarning) as caught:
        found = [p.split("c.n5/")[-1] for p in n5.dataset_paths(tmp_path / "c.n5")]
    assert found == ["a", "a/inner/deep", "b/x", "bad", "c"]
    assert sorted("not valid JSON" in str(w.message) for w in caught) == [False, True]


def test_info_check_reports_every_bad_attributes_file(tmp_path, capsys):
    corrupt_container(tmp_path / "c.n5")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the command reports them itself
        assert main(["info", "--check", str(tmp_path / "c.n5")]) == 1
    out = capsys.readouterr().out
    assert "a: unreadable:" in out and "bad: unreadable:" in out and "not valid JSON" in out
    assert "a/inner/deep:" in out and "b/x:" in out and "c:" in out  # it went on
    assert main(["info", str(tmp_path / "c.n5")]) != 0


# -- real Java-written data -----------------------------------------------------------------------

def test_java_written_container_walks_and_opens_by_path(tmp_path):
    import shutil

    from support import n5_data

    source = n5_data("paintera_export_test.n5")
    expected = sorted(  # every directory with attributes, found by listing here
        str(p.parent.relative_to(source)) for p in source.rglob("attributes.json") if p.parent != source)
    root = n5.open(source)
    names = []
    root.visititems(lambda name, obj: names.append(name) if not isinstance(obj, n5.Group) or obj.attrs.asdict()
                    else None)
    assert names == expected
    labels = root["paintera_labels/data/s0"]
    assert labels.compression == document(source / "paintera_labels" / "data" / "s0")["compression"]
    assert labels.parent.path == root["paintera_labels/data"].path and labels.fill_value == 0
    copy = tmp_path / "copy.n5"
    shutil.copytree(source / "paintera_labels" / "data", copy / "labels" / "data")
    (copy / "attributes.json").write_text(json.dumps({"n5": "4.0.0"}))  # groups below without attributes
    group = n5.open(copy / "labels")  # as z5py and Java write plain groups
    assert list(group) == ["data"] and list(group["data"]) == ["s0", "s1", "s2"]
    assert np.array_equal(n5.open(copy / "labels" / "data" / "s0").read_labels(), labels.read_labels())
