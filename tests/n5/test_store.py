"""One conformance suite for both stores: DiskStore (a tmp directory) and UrlStore (fsspec's
memory:// file system), plus what only one of them does (confinement, read-only http)."""

import os
import uuid

import numpy as np
import pytest

from n5mscodecs import n5
from n5mscodecs.errors import ConfigurationError, ReadOnlyError, StorageError
from n5mscodecs.n5 import DiskStore, UrlStore, open_store


@pytest.fixture(params=["local", "memory"])
def store(request, tmp_path):
    if request.param == "local":
        return open_store(tmp_path / "c.n5")
    pytest.importorskip("fsspec")
    return open_store(f"memory://{uuid.uuid4().hex}/c.n5")


def test_open_store_picks_the_implementation_once(tmp_path):
    pytest.importorskip("fsspec")
    assert type(open_store(tmp_path)) is DiskStore and type(open_store(f"file://{tmp_path}")) is DiskStore
    memory = open_store("memory://bucket/c.n5")
    assert type(memory) is UrlStore and memory.child("a/b").fs is memory.fs


def test_get_set_delete_exists(store):
    assert store.get("a/0/0") is None and not store.exists("a/0/0")
    store.set("a/0/0", b"block")
    store.set("a/0/0", bytearray(b"again"))  # replaced whole
    assert store.get("a/0/0") == b"again" and store.exists("a/0/0") and store.exists("a")
    assert store.child("a").get("0/0") == b"again" and store.child("a/0").url() == store.url("a/0")
    store.delete("a/0/0")
    store.delete("a/0/0")  # nothing there: nothing to do
    assert store.get("a/0/0") is None


def test_bounded_reads(store):
    store.set("big", b"x" * 100)
    assert store.get("big", max_size=100) == b"x" * 100
    with pytest.raises(StorageError, match="more than the 99"):
        store.get("big", max_size=99)


def test_listing_walking_and_trees(store):
    for key in ("g/attributes.json", "g/d/0/0", "g/d/0/1", "g/d/1/0", "top"):
        store.set(key, b"{}")
    assert store.list_dir() == ["g", "top"] and store.list_dir("g/d") == ["0", "1"] and store.list_dir("nothing") == []
    assert store.is_directory("g/d") and not store.is_directory("top") and not store.is_directory("nothing")
    walked = {os.path.basename(d.rstrip("/")): files for d, _, files in store.walk("g/d")}
    assert walked == {"d": [], "0": ["0", "1"], "1": ["0"]}
    # keys of the store, never locations: what get/set/child take
    assert [(d, s, f) for d, s, f in store.walk("g")] == [
        ("g", ["d"], ["attributes.json"]), ("g/d", ["0", "1"], []), ("g/d/0", [], ["0", "1"]), ("g/d/1", [], ["0"])]
    assert [d for d, _, _ in store.walk()][:2] == ["", "g"] and [d for d, _, _ in store.child("g").walk()][0] == ""
    assert store.total_size("g/d") == 6
    store.clear("g", keep={"attributes.json"})
    assert store.list_dir("g") == ["attributes.json"]
    store.delete_tree("g")
    store.delete_tree("g")
    assert store.list_dir() == ["top"]


def test_json_and_attributes(store):
    assert store.get_attributes("g") == {} and store.get_json("x.json") is None
    store.set_attributes("g", {"n5": "4.0.0"})
    assert store.get_attributes("g") == {"n5": "4.0.0"} and store.child("g").get_attributes() == {"n5": "4.0.0"}
    store.set("bad/attributes.json", b"{trunc")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        store.get_attributes("bad")
    store.set("list/attributes.json", b"[1]")
    with pytest.raises(ConfigurationError, match="expected a JSON object"):
        store.get_attributes("list")


def test_update_attributes_adds_what_is_missing_and_drops_what_is_named(store, monkeypatch):
    store.set_attributes("d", {"a": 1, "n5mscodecs:incomplete": {"writer": "w"}})
    store.update_attributes("d", defaults={"n5": "4.0.0", "a": 2}, remove=["n5mscodecs:incomplete"])
    assert store.get_attributes("d") == {"n5": "4.0.0", "a": 1}
    writes = []
    monkeypatch.setattr(type(store), "_set", lambda self, key, data: writes.append(key))
    store.update_attributes("d", defaults={"n5": "9"}, remove=["absent"])  # nothing changes: nothing written
    assert writes == []


def test_mark_datasets_below_marks_every_dataset_once_and_skips_the_rest(store):
    for key in ("g/a", "g/h/b", "c"):
        store.set_attributes(key, {"dimensions": [1], "dataType": "uint8"})
    store.set_attributes("g/h", {})
    store.set("g/a/0", b"block")
    store.set("bad/attributes.json", b"{trunc")
    store.set_attributes("marked", {"dimensions": [1], "n5mscodecs:incomplete": {"writer": "earlier"}})
    assert store.mark_datasets_below({"writer": "w"}) == ["c", "g/a", "g/h/b", "marked"]  # not "bad": unreadable
    assert store.get_attributes("g/h/b")["n5mscodecs:incomplete"] == {"writer": "w"}
    assert store.get_attributes("marked")["n5mscodecs:incomplete"] == {"writer": "earlier"}
    assert "n5mscodecs:incomplete" not in store.get_attributes("g/h")


def test_a_writers_target_is_refused_where_it_overlaps_its_source(tmp_path):
    source = tmp_path / "c.n5" / "raw"
    with pytest.raises(ConfigurationError, match="overlaps the source"):
        n5.open_target(tmp_path / "c.n5", source=source)
    assert n5.open_target(tmp_path / "c.n5" / "labels", source=source).location == str(tmp_path / "c.n5" / "labels")


def test_keys_never_leave_the_store(store):
    with pytest.raises(ConfigurationError, match="'..' are not keys"):
        store.get("../outside")


def test_groups_and_datasets_run_on_both_stores(store):
    root = n5.open(store.url(), mode="w")
    labels = np.arange(12, dtype=np.uint64).reshape(3, 4) % 5
    root.require_group("volumes").create_label_multiset_dataset("labels", labels, chunks=2)
    opened = n5.open(store.url())
    assert list(opened) == ["volumes"] and np.array_equal(opened["volumes/labels"].read_labels(), labels)
    assert opened["volumes/labels"].store.url() == store.url("volumes/labels")


def test_local_writes_are_atomic_and_confined(tmp_path):
    store = open_store(tmp_path / "c.n5")
    store.set("d/0", b"data")
    assert sorted(os.listdir(tmp_path / "c.n5" / "d")) == ["0"]  # no temporary file left
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "c.n5" / "link")
    with pytest.raises(StorageError, match="outside the container root"):
        store.set("link/0", b"escape")
    with pytest.raises(StorageError, match="outside the container root"):
        store.get("link/0")
    assert DiskStore(tmp_path / "c.n5", read_outside=True).get("link/0") is None
    os.mkfifo(tmp_path / "c.n5" / "fifo")
    with pytest.raises(StorageError, match="a FIFO, not a regular file"):
        store.get("fifo")
    assert store.is_file("d/0") and not store.is_file("d")


def test_http_stores_are_read_only():
    pytest.importorskip("aiohttp")
    store = open_store("http://127.0.0.1:9/c.n5")
    with pytest.raises(ConfigurationError, match="read-only"):
        store.set("x", b"")
    with pytest.raises(ConfigurationError, match="read-only"):
        store.delete("x")
    assert store.read_only and not store.is_local and store.local_file("x") is None


def test_stores_never_show_credentials():
    pytest.importorskip("fsspec")
    store = open_store("memory://user:secret@bucket/c.n5")
    assert "secret" not in repr(store) and "secret" not in store.display("a/b")
    assert "secret" not in repr(store.child("a")) and store.child("a").display() == "memory://bucket/c.n5/a"


def test_names_and_local_files_without_looking_at_schemes(store, tmp_path):
    assert store.name == "c.n5" and store.child("labels/data/s0").name == "s0"
    block = store.child("labels").local_file("0/0")
    if store.is_local:
        assert block == os.path.join(str(tmp_path / "c.n5"), "labels", "0", "0")
    else:
        assert block is None and store.local_file() is None
    assert not store.read_only


def test_location_helpers_of_the_storage_layer(tmp_path):
    from n5mscodecs.n5 import storage

    assert storage.basename("s3://bucket/c.n5/data/s0/") == "s0" and storage.basename(tmp_path / "c.n5") == "c.n5"
    assert storage.parent("gs://bucket/c.n5/data") == "gs://bucket/c.n5"
    assert storage.parent(str(tmp_path / "c.n5") + "/") == str(tmp_path)
    assert storage.parent("c.n5") == os.getcwd()  # a relative name's parent is where it lies
    assert storage.local_file(f"file://{tmp_path}") == str(tmp_path) and storage.local_file("s3://b/c.n5") is None
    assert storage.read_only_location("HTTPS://host/c.n5") and not storage.read_only_location("s3://b/c.n5")
    assert not storage.read_only_location(tmp_path / "http:")


def test_nothing_above_the_storage_layer_looks_at_schemes():
    """Schemes are n5/storage.py's business (and open_store's choice, and a DiskStore's file:// URL): the rest
    asks a store (``is_local``, ``local_file``, ``name``) or a location helper."""
    from pathlib import Path

    import n5mscodecs

    package = Path(n5mscodecs.__file__).parent
    for module in package.rglob("*.py"):
        if module.relative_to(package).as_posix() not in ("n5/storage.py", "n5/stores.py", "n5/disk_store.py"):
            text = module.read_text()
            assert "is_url(" not in text and "local_path(" not in text and '"http://"' not in text, module


def test_writers_take_a_store_in_place_of_a_location_and_options(store):
    """A store opened once travels to the writers: the dataset writes through it."""
    labels = np.arange(12, dtype=np.uint64).reshape(3, 4) % 5
    multisets = n5.write(store.child("labels"), labels, 2)
    plain = n5.write_array(store.child("raw"), labels.astype(np.uint16), 3)
    assert multisets.store.location == store.url("labels") and plain.store.location == store.url("raw")
    assert multisets.storage_options is store.storage_options
    reopened = n5.open(store.location, storage_options=store.storage_options)
    assert np.array_equal(reopened["labels"][:].argmax(), labels) and np.array_equal(reopened["raw"][:], labels)
    assert store.get_attributes("labels")["isLabelMultiset"] is True
    group = n5.open(store.location, mode="a", storage_options=store.storage_options)
    made = group.create_dataset("g/made", data=labels.astype(np.int32), chunks=2)
    assert made.store.location == store.url("g/made") and np.array_equal(group["g/made"][:], labels)


def test_zarr_json_is_written_through_one_store_of_the_container(store):
    pytest.importorskip("zarr")
    from n5mscodecs.zarr import write_zarr_json

    n5.write_array(store.child("g/raw"), np.arange(6, dtype=np.uint8).reshape(2, 3), 2)
    written, skipped = write_zarr_json(store.location)
    assert len(written) == 2 and skipped == []  # the root (its n5 version) and the dataset
    assert store.get_json("zarr.json")["node_type"] == "group"
    assert store.get_json("g/raw/zarr.json")["shape"] == [2, 3]
    assert write_zarr_json(store.location) == ([], written)  # kept without overwrite


def test_parent_goes_up_within_the_container(store):
    """``parent()`` is the store of the location above (same file system), so a level finds its group."""
    store.child("labels/data").set_attributes("", {"multiScale": True})
    level = store.child("labels/data/s0")
    data = level.parent()
    assert data.url() == store.url("labels/data") and data.get_attributes() == {"multiScale": True}
    assert data.parent().parent().url() == store.url() and type(data) is type(store)
    if not store.is_local:
        assert data.fs is store.fs


def test_parent_stays_below_a_confinement_root(tmp_path):
    confined = DiskStore(tmp_path / "c.n5" / "labels", boundary=str(tmp_path / "c.n5"))
    root = confined.parent()
    assert root.local_file() == str(tmp_path / "c.n5")
    with pytest.raises(StorageError, match="outside the container root"):
        root.parent()
    assert DiskStore(tmp_path / "c.n5").parent().local_file() == str(tmp_path)  # unconfined: as storage.parent


def test_parent_of_a_bucket_is_refused():
    pytest.importorskip("fsspec")
    with pytest.raises(StorageError, match="no parent"):
        open_store(f"memory://{uuid.uuid4().hex}").parent()


def test_a_read_only_store_refuses_every_change(store):
    store.set("g/attributes.json", b'{"a": 1}')
    store.set("g/0/0", b"block")
    view = open_store(store, read_only=True)
    assert view.read_only and not store.read_only and open_store(view) is view
    writes = [
        lambda s: s.set("g/0/0", b"other"), lambda s: s.set("new", b"x"), lambda s: s.delete("g/0/0"),
        lambda s: s.delete_tree("g"), lambda s: s.make_directory("h"), lambda s: s.clear("g"),
        lambda s: s.set_attributes("g", {"b": 2}), lambda s: s.set_json("x.json", {}),
    ]
    # the view, its children and its parent's children all refuse, naming the key
    for target in (view, view.child("g").parent(), view.child("g")):
        for write in writes:
            with pytest.raises(ReadOnlyError, match="read-only"):
                write(target if target is not view.child("g") else view)
    with pytest.raises(ReadOnlyError, match=r"g/0/0: write: read-only"):
        view.child("g").set("0/0", b"x")
    assert store.get("g/0/0") == b"block" and store.get_attributes("g") == {"a": 1} and not store.exists("new")
    assert view.get("g/0/0") == b"block" and [d for d, _, _ in view.walk()] == ["", "g", "g/0"]


def test_a_block_that_is_a_link_loop_is_a_storage_error_naming_it_on_every_reader(tmp_path):
    """Issue 51, item 18: a bare OSError (ELOOP) came out of every reader."""
    zarr = pytest.importorskip("zarr", minversion="3")
    import n5mscodecs.zarr as nz

    plain = n5.write(tmp_path / "c.n5" / "plain", np.arange(16, dtype=np.uint16).reshape(4, 4), chunks=(2, 2))
    labels = n5.write(tmp_path / "c.n5" / "labels", np.arange(16, dtype=np.uint64).reshape(4, 4), chunks=(2, 2))
    for dataset in (plain, labels):
        block = tmp_path / "c.n5" / dataset.store.name / "1" / "1"
        block.unlink()
        os.symlink(block.parent / "loop", block.parent / "loop-back")
        os.symlink(block.parent / "loop-back", block.parent / "loop")
        os.symlink(block.parent / "loop", block)
    readers = {
        "plain[...]": lambda: n5.open(plain.path)[:],
        "plain.read_block": lambda: n5.open(plain.path).read_block((1, 1)),
        "labels[...]": lambda: n5.open(labels.path)[:],
        "read_labels": lambda: n5.open(labels.path).read_labels(),
        "read_block_labels": lambda: n5.open(labels.path).read_block_labels((1, 1)),
        "store.get": lambda: open_store(tmp_path / "c.n5").get("plain/1/1"),
        "zarr plain": lambda: zarr.open_array(nz.open_n5_store(tmp_path / "c.n5"), path="plain", mode="r")[:],
        "zarr labels": lambda: nz.open_labels(tmp_path / "c.n5", "labels")[:],
    }
    for name, read in readers.items():
        with pytest.raises(StorageError, match=r"1/1: read: .*(loop|levels)") as raised:
            read()
        assert "1/1" in str(raised.value), name
