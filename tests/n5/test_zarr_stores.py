"""zarr-python's stores wherever this package takes a store (issue 53, item 3): N5 containers
and Paintera sources in a zarr LocalStore, MemoryStore, FsspecStore and (read-only) ZipStore."""

import shutil
import warnings

import numpy as np
import pytest

from n5mscodecs import InputTypeError, ReadOnlyError, n5, paintera
from n5mscodecs.n5 import DiskStore, ZarrBackedStore

zarr = pytest.importorskip("zarr", minversion="3")
from zarr import storage as zarr_storage  # noqa: E402

LABELS = (np.arange(40 * 30 * 20, dtype=np.uint64).reshape(40, 30, 20) // 97) % 13


def writable_stores(tmp_path):
    return {"LocalStore": lambda name: zarr_storage.LocalStore(tmp_path / f"{name}.n5"),
            "MemoryStore": lambda name: zarr_storage.MemoryStore(),
            "FsspecStore": lambda name: zarr_storage.FsspecStore.from_url(f"file://{tmp_path}/{name}-fs.n5")}


@pytest.mark.parametrize("kind", ["LocalStore", "MemoryStore", "FsspecStore"])
def test_write_open_convert_and_open_pyramid_take_zarr_stores(tmp_path, kind):
    make = writable_stores(tmp_path)[kind]
    plain = make("plain")
    n5.write(plain, LABELS, chunks=(16, 16, 16), compression="raw")
    dataset = n5.open(plain)
    assert dataset.shape == LABELS.shape and np.array_equal(dataset[...].argmax(), LABELS)
    source = make("source")
    summary = paintera.convert(LABELS, source, block_size=16)
    assert (summary.n_labels, summary.max_id) == (13, 12)
    pyramid = paintera.open_pyramid(source)
    assert np.array_equal(np.asarray(pyramid.levels[0]), LABELS)
    # the same bytes as a conversion into a directory
    paintera.convert(LABELS, str(tmp_path / "reference.n5"), block_size=16)
    reference = n5.open_store(str(tmp_path / "reference.n5"))
    stored = n5.open_store(source)
    for directory, _, files in reference.walk():
        for name in files:
            key = f"{directory}/{name}" if directory else name
            if name != "attributes.json" or directory:  # the root records the source's description
                assert stored.get(key) == reference.get(key), key


def test_zarr_local_and_file_fsspec_stores_become_disk_stores(tmp_path):
    for zarr_store in (zarr_storage.LocalStore(tmp_path / "a.n5"),
                       zarr_storage.FsspecStore.from_url(f"file://{tmp_path}/a.n5")):
        store = n5.open_store(zarr_store)
        assert isinstance(store, DiskStore) and store.location == str(tmp_path / "a.n5")
    read_only = n5.open_store(zarr_storage.LocalStore(tmp_path / "a.n5", read_only=True))
    with pytest.raises(ReadOnlyError):
        n5.write(read_only, LABELS, chunks=16)


def test_a_zipped_container_reads_and_refuses_writes_naming_the_store(tmp_path):
    paintera.convert(LABELS, str(tmp_path / "c.n5" / "source"), block_size=16)
    shutil.make_archive(str(tmp_path / "c"), "zip", tmp_path / "c.n5")
    archive = zarr_storage.ZipStore(tmp_path / "c.zip", mode="r")
    assert isinstance(n5.open_store(archive), ZarrBackedStore)
    pyramid = paintera.open_pyramid(n5.open_store(archive).child("source"))
    assert np.array_equal(np.asarray(pyramid.levels[0]), LABELS)
    assert sorted(n5.open(archive).keys()) == ["source"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile: duplicate names
        with pytest.raises(ReadOnlyError, match="ZipStore cannot remove keys"):
            n5.write(zarr_storage.ZipStore(tmp_path / "w.zip", mode="w"), LABELS, chunks=16)


def test_a_memory_store_walks_and_clears_like_a_directory():
    store = n5.open_store(zarr_storage.MemoryStore())
    store.set("a/b/0/0", b"x")
    store.set("a/attributes.json", b"{}")
    assert store.list_dir() == ["a"] and store.list_dir("a") == ["attributes.json", "b"]
    assert list(store.walk()) == [("", ["a"], []), ("a", ["b"], ["attributes.json"]), ("a/b", ["0"], []),
                                  ("a/b/0", [], ["0"])]
    assert store.child("a").get("b/0/0") == b"x" and store.child("a/b").parent().get("attributes.json") == b"{}"
    store.delete_tree("a/b")
    assert not store.exists("a/b/0/0") and store.exists("a/attributes.json")


def test_anything_else_is_refused_by_name():
    with pytest.raises(InputTypeError, match="location: expected a path, a URL or a store .* got builtins.dict"):
        n5.open({"a": 1})
    with pytest.raises(InputTypeError, match="got builtins.object"):
        paintera.convert(LABELS, object())
