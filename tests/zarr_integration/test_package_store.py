"""zarr's local path goes through the package's store (issue 42, item 9): ``open_n5_store(dir)``
and ``N5Store(zarr.storage.LocalStore(dir))`` read only regular files (a FIFO or a device where a
block should be is a StorageError, never a hang or an endless read), follow links inside the
container root and refuse links out of it, and read a block up to its dataset's bound."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", minversion="3")

from n5mscodecs import LabelMultisetArray, StorageError, n5  # noqa: E402
from n5mscodecs.zarr import N5Store, open_labels, open_n5_store  # noqa: E402
from n5mscodecs.zarr.store import PackageStore  # noqa: E402

LABELS = (np.arange(8 * 6 * 4, dtype=np.uint64).reshape(8, 6, 4) // 5) % 9
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, /dev/zero and symbolic links")


@pytest.fixture
def container(tmp_path):
    root = tmp_path / "c.n5"
    n5.write(root / "labels", LABELS, chunks=(4, 4, 4), compression="raw")
    n5.write_array(root / "raw", LABELS.astype(np.uint16), chunks=(4, 4, 4), compression="raw")
    return root


def _read_in_child(root, opener, path, timeout=60):
    """Read the whole array ``path`` through ``opener`` in a child process with a memory limit
    (none under AddressSanitizer, whose shadow memory needs the address space) and a time-out:
    a read that hangs or grows without end cannot take the test run with it. Returns what the
    child printed: ``OK`` or the error's type and message."""
    code = textwrap.dedent(f"""
        import os, resource, sys
        if "libasan" not in os.environ.get("LD_PRELOAD", ""):   # ASan maps terabytes of shadow
            resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        import zarr
        from n5mscodecs.zarr import N5Store, open_n5_store
        store = {opener}
        try:
            zarr.open_array(store, path={path!r}, mode="r")[:]
            print("OK")
        except Exception as error:
            print(type(error).__name__ + ": " + str(error))
    """)
    try:
        done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "TIMEOUT"
    return done.stdout.strip() + done.stderr.strip()[-300:]


OPENERS = {"open_n5_store": "open_n5_store(sys.argv[1], read_only=True)",
           "N5Store(LocalStore)": "N5Store(zarr.storage.LocalStore(sys.argv[1], read_only=True))",
           "labels view": "open_n5_store(sys.argv[1], multisets='labels')"}


@pytest.mark.parametrize("opener", OPENERS)
def test_a_fifo_block_is_a_storage_error_not_a_hang(container, opener):
    block = container / "labels" / "0" / "0" / "0"
    block.unlink()
    os.mkfifo(block)
    out = _read_in_child(container, OPENERS[opener], "labels", timeout=60)
    assert out.startswith("StorageError") and "a FIFO, not a regular file" in out and "labels/0/0/0" in out, out


@pytest.mark.parametrize("opener", OPENERS)
def test_a_block_linked_to_dev_zero_is_a_storage_error_not_an_endless_read(container, opener):
    block = container / "raw" / "1" / "0" / "0"
    block.unlink()
    block.symlink_to("/dev/zero")
    out = _read_in_child(container, OPENERS[opener], "raw", timeout=60)
    # refused as a link out of the container root (and, were links out allowed, as a device)
    assert out.startswith("StorageError") and "raw/1/0/0: read: resolves to /dev/zero, outside" in out, out


def test_links_inside_the_container_are_followed_and_out_of_it_refused(container, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    n5.write(elsewhere / "labels", LABELS[::-1].copy(), chunks=(4, 4, 4), compression="raw")
    inside = container / "labels" / "1" / "0" / "0"  # a link to the block beside it: followed
    os.replace(container / "labels" / "1" / "0" / "0", container / "labels" / "moved")
    inside.symlink_to(container / "labels" / "moved")
    array = zarr.open_array(open_n5_store(container, read_only=True), path="labels", mode="r")
    assert np.array_equal(LabelMultisetArray.from_elements(array[:]).argmax(), LABELS)
    outside = container / "labels" / "0" / "1" / "0"
    outside.unlink()
    outside.symlink_to(elsewhere / "labels" / "0" / "1" / "0")
    for store in (open_n5_store(container, read_only=True), N5Store(zarr.storage.LocalStore(container)),
                  open_n5_store(container, multisets="labels")):
        with pytest.raises(StorageError, match=r"labels/0/1/0: read: resolves to .*outside the container root"):
            zarr.open_array(store, path="labels", mode="r")[:]
    with pytest.raises(StorageError, match="outside the container root"):
        open_labels(container, "labels")[:]
    # a link out of the container where attributes.json should be is refused the same way
    os.replace(container / "raw" / "attributes.json", tmp_path / "attributes.json")
    (container / "raw" / "attributes.json").symlink_to(tmp_path / "attributes.json")
    with pytest.raises(StorageError, match=r"raw/attributes.json: read: resolves to .*outside"):
        zarr.open_array(open_n5_store(container, read_only=True), path="raw", mode="r")


def test_a_block_is_read_up_to_its_datasets_bound(container):
    dataset = n5.open(container / "labels")
    block = container / "labels" / "0" / "0" / "0"
    with open(block, "r+b") as f:  # a sparse file far larger than any block of 4^3 voxels can be
        f.truncate(dataset.max_block_bytes() + 1)
    for store in (open_n5_store(container, read_only=True), open_n5_store(container, multisets="labels")):
        with pytest.raises(StorageError, match=r"labels/0/0/0: read: \d+ bytes, more than the \d+ it can need"):
            zarr.open_array(store, path="labels", mode="r")[:]


def test_the_package_store_reads_writes_and_lists_like_zarrs(tmp_path):
    root = tmp_path / "w.n5"
    group = zarr.open_group(open_n5_store(root), mode="w")
    from n5mscodecs.zarr import N5DefaultZarrCodec

    plain = group.create_array("plain", shape=(5, 3), chunks=(2, 2), dtype="uint16", fill_value=0, compressors=None,
                               serializer=N5DefaultZarrCodec.from_compression(2, "gzip", "uint16"),
                               chunk_key_encoding={"name": "v2", "separator": "/"})
    plain[:] = np.arange(15, dtype=np.uint16).reshape(5, 3)
    assert np.array_equal(n5.open(root / "plain")[:], np.arange(15).reshape(5, 3))
    store = open_n5_store(root)
    assert isinstance(store._store, PackageStore) and store._store == PackageStore.from_location(root)
    assert sorted(zarr.open_group(store, mode="r").array_keys()) == ["plain"]
    wrapped = store._store
    keys = sorted(zarr.core.sync.sync(_collect(wrapped.list())))
    assert "plain/attributes.json" in keys and "plain/0/0" in keys and not any(".tmp-" in k for k in keys)
    assert zarr.core.sync.sync(wrapped.exists("plain/0/0")) and not zarr.core.sync.sync(wrapped.exists("plain"))
    with pytest.raises(ValueError, match="read-only"):
        zarr.open_array(open_n5_store(root, read_only=True), path="plain", mode="r+")[:] = 1


async def _collect(iterator):
    return [item async for item in iterator]
