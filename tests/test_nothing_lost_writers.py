"""Nothing lost, round two (issue 42, items 1-5): the writer discipline on every write path.
The lock and marker files are never written through links; every dataset an overwrite or a
stage changes is marked before its first byte changes; the lookup reader refuses marked
datasets; the Python writers take the CLI's writer lock; a memory-mapped source inside the
target is refused."""

import os
import shutil
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from n5mscodecs import ConfigurationError, IncompleteError, TargetInUseError, n5, paintera
from n5mscodecs.cli import main
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.n5 import DiskStore
from n5mscodecs.n5.writing import INCOMPLETE_KEY, LOCK_NAME, WriterLock

pytestmark = pytest.mark.slow  # run once per CI run: see pyproject's markers

LABELS = voronoi_labels((24, 20, 16), 12, seed=4).astype(np.uint32)


def datasets_below(path):
    """Every N5 dataset (a directory whose attributes have dimensions) below ``path``."""
    found = []
    for directory, _, files in os.walk(path):
        if "attributes.json" in files and "dimensions" in n5.read_attributes(directory):
            found.append(directory)
    return sorted(found)


@pytest.fixture()
def source(tmp_path):
    """A finished Paintera source C.n5/labels, and its labels as a .npy file."""
    target = tmp_path / "C.n5" / "labels"
    paintera.convert(LABELS, target, block_size=8, factors=[2], lookup_block_size=3)
    np.save(tmp_path / "labels.npy", LABELS)
    return target


# ---------------------------------------------------------------------------------------------
# 1. a lock path that is a link is refused; what it points to is never written

@pytest.mark.parametrize("inside", [False, True])
@pytest.mark.parametrize("how", ["--overwrite", "--resume"])
def test_convert_never_writes_a_lock_through_a_link(source, tmp_path, capsys, inside, how):
    victim = source / "data" / "s0" / "0" / "0" / "0" if inside else tmp_path / "precious.txt"
    if not inside:
        victim.write_bytes(b"years of work")
    before = victim.read_bytes()
    os.symlink(victim, source / LOCK_NAME)
    assert main(["convert", str(tmp_path / "labels.npy"), str(source), how, "--quiet", "--block-size", "8",
                 "--scale", "2,2,2", "--lookup-block-size", "3"]) == 2
    err = capsys.readouterr().err
    assert "lock: a symbolic link" in err and "stopped" not in err
    assert victim.read_bytes() == before
    assert os.path.islink(source / LOCK_NAME)  # left for the user to look at
    with pytest.raises(ConfigurationError, match="lock: a symbolic link"):
        WriterLock(source).acquire()


def test_argmax_never_writes_a_lock_through_a_link(source, tmp_path, capsys):
    exported = tmp_path / "A.n5" / "argmax"
    assert main(["argmax", str(source / "data" / "s0"), str(exported), "--quiet"]) == 0
    victim = tmp_path / "precious.txt"
    victim.write_bytes(b"years of work")
    os.symlink(victim, exported / LOCK_NAME)
    assert main(["argmax", str(source / "data" / "s0"), str(exported), "--overwrite", "--quiet"]) == 2
    assert "lock: a symbolic link" in capsys.readouterr().err
    assert victim.read_bytes() == b"years of work"
    assert np.array_equal(n5.open(exported)[:], LABELS)  # the old export is still there


def test_a_lock_that_is_not_a_regular_file_or_a_hard_link_is_refused(tmp_path):
    target = tmp_path / "c.n5" / "x"
    target.mkdir(parents=True)
    os.mkfifo(target / LOCK_NAME)
    with pytest.raises(ConfigurationError, match="lock: not a regular file"):
        n5.write_array(target, np.ones((4, 4), np.uint8), chunks=2)
    os.unlink(target / LOCK_NAME)
    victim = tmp_path / "precious.txt"
    victim.write_bytes(b"years of work")
    os.link(victim, target / LOCK_NAME)
    with pytest.raises(ConfigurationError, match="other hard links"):
        n5.write_array(target, np.ones((4, 4), np.uint8), chunks=2)
    assert victim.read_bytes() == b"years of work"


def test_marker_writes_replace_a_link_never_write_through_it(tmp_path):
    path = tmp_path / "c.n5" / "x"
    n5.write_array(path, np.ones((4, 4), np.uint8), chunks=2)
    outside = tmp_path / "outside.json"
    outside.write_text('{"mine": true}')
    os.unlink(path / "attributes.json")
    os.symlink(outside, path / "attributes.json")
    with pytest.raises((ConfigurationError, OSError)):
        n5.write_array(path, np.ones((4, 4), np.uint8), chunks=2, overwrite=True)
    assert outside.read_text() == '{"mine": true}'


# ---------------------------------------------------------------------------------------------
# 2. an overwrite marks every dataset below the target before it removes anything

def test_an_overwrite_killed_while_removing_leaves_every_dataset_marked(source, monkeypatch):
    real = DiskStore.delete_tree
    s0 = source / "data" / "s0"

    def dying_delete_tree(self, key):
        if key == "data":  # half of s0's blocks gone, then the process dies
            blocks = sorted(p for p in s0.rglob("*") if p.is_file() and p.name != "attributes.json")
            for block in blocks[: len(blocks) // 2]:
                block.unlink()
            raise KeyboardInterrupt
        return real(self, key)

    monkeypatch.setattr(DiskStore, "delete_tree", dying_delete_tree)
    with pytest.raises(KeyboardInterrupt):
        paintera.convert(LABELS + 1, source, block_size=8, factors=[2], overwrite=True)
    monkeypatch.undo()
    remaining = datasets_below(source)
    assert str(s0) in remaining and len(remaining) == 6  # nothing was removed but half of s0
    for dataset in remaining:
        with pytest.raises(IncompleteError, match="INCOMPLETE: n5ms convert"):
            n5.open(dataset)
    with pytest.raises(IncompleteError):
        paintera.read_label_to_block_mapping(source, 0)
    # and --overwrite (or the same call) replaces it
    paintera.convert(LABELS + 1, source, block_size=8, factors=[2], overwrite=True)
    assert np.array_equal(n5.open(s0).read_labels(), LABELS + 1)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
@pytest.mark.parametrize("killed_at", [3, 12, 40])
def test_an_overwrite_killed_at_an_unlink_leaves_no_unmarked_partial_dataset(source, tmp_path, killed_at):
    """The kill of issue 42 (item 2), at a chosen system call: the killed run's removals are
    the old pyramid's (the first unlinks an overwrite makes)."""
    n5ms = [sys.executable, "-c", "import sys; from n5mscodecs.cli import main; sys.exit(main())"]
    done = subprocess.run(
        ["strace", "-f", "-qq", "-o", os.devnull, "-e", f"inject=unlink,unlinkat:signal=KILL:when={killed_at}",
         *n5ms, "convert", str(tmp_path / "labels.npy"), str(source), "--overwrite", "--quiet", "--block-size", "8",
         "--scale", "2,2,2"],
        capture_output=True, text=True)
    assert done.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), done.stderr
    for dataset in datasets_below(source):
        with pytest.raises(IncompleteError):
            n5.open(dataset)


# ---------------------------------------------------------------------------------------------
# 3. the label-to-block-mapping stage marks its datasets; the lookup reader refuses them

def test_a_kill_in_the_lookup_stage_leaves_a_mapping_the_lookup_reader_refuses(tmp_path, monkeypatch):
    target = tmp_path / "L.n5" / "labels"
    real = n5.ArrayDataset.write_varlength_block
    calls = []

    def dying(self, grid, data, **options):
        if "label-to-block-mapping" in str(self.path):
            calls.append(grid)
            if len(calls) == 3:
                raise KeyboardInterrupt
        return real(self, grid, data, **options)

    monkeypatch.setattr(n5.ArrayDataset, "write_varlength_block", dying)
    with pytest.raises(KeyboardInterrupt):
        paintera.convert(LABELS, target, block_size=8, factors=[2], lookup_block_size=2, threads=1)
    monkeypatch.undo()
    with pytest.raises(IncompleteError, match="label-to-block-mapping/s0: INCOMPLETE"):
        n5.open(target / "label-to-block-mapping" / "s0")
    with pytest.raises(IncompleteError, match="INCOMPLETE"):
        paintera.read_label_to_block_mapping(target, 0)
    paintera.convert(LABELS, target, block_size=8, factors=[2], lookup_block_size=2, resume=True)
    mapping = paintera.read_label_to_block_mapping(target, 0)
    assert sorted(mapping) == sorted(int(v) for v in np.unique(LABELS))
    assert INCOMPLETE_KEY not in n5.read_attributes(target / "label-to-block-mapping" / "s0")


def test_a_rewritten_mapping_is_marked_before_its_first_file_goes(source, monkeypatch):
    """write_label_to_block_mapping over a finished mapping (as a commit that finishes does)."""
    from n5mscodecs.paintera.mapping_build import write_label_to_block_mapping

    mapping = source / "label-to-block-mapping" / "s0"
    seen = []
    real_clear, real_delete_tree = DiskStore.clear, DiskStore.delete_tree

    def dies_on_the_mapping(self):
        if str(self.location).endswith("label-to-block-mapping/s0"):  # its first file is about to go
            seen.append(n5.read_attributes(mapping).get(INCOMPLETE_KEY))
            raise KeyboardInterrupt

    def dying_clear(self, key="", keep=()):
        dies_on_the_mapping(self)
        return real_clear(self, key, keep)

    def dying_delete_tree(self, key):
        dies_on_the_mapping(self)
        return real_delete_tree(self, key)

    monkeypatch.setattr(DiskStore, "clear", dying_clear)
    monkeypatch.setattr(DiskStore, "delete_tree", dying_delete_tree)
    with pytest.raises(KeyboardInterrupt):
        write_label_to_block_mapping(source, 0, 3, {"type": "gzip"})
    assert seen and seen[0] is not None
    with pytest.raises(IncompleteError):
        paintera.read_label_to_block_mapping(source, 0)


def test_the_lookup_reader_refuses_a_marked_data_level(source):
    attributes = n5.read_attributes(source / "data" / "s1")
    n5.write_attributes(source / "data" / "s1", {**attributes, INCOMPLETE_KEY: {"writer": "a test"}})
    with pytest.raises(IncompleteError, match="s1: INCOMPLETE: a test"):
        paintera.read_label_to_block_mapping(source, 1)
    assert paintera.read_label_to_block_mapping(source, 0)


# ---------------------------------------------------------------------------------------------
# 4. the Python writers take the writer lock

def hold_lock(path):
    """A process holding the writer lock of ``path`` (killed by the caller)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from n5mscodecs.n5.writing import WriterLock; "
         "lock = WriterLock(sys.argv[1]); lock.acquire(); print('held', flush=True); time.sleep(60)", str(path)],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_two_concurrent_n5_writes_of_one_dataset(tmp_path, monkeypatch):
    path = tmp_path / "w.n5" / "labels"
    n5.write(path, np.ones((16, 16), np.uint64), chunks=4)
    started, go = threading.Event(), threading.Event()
    real = n5.LabelMultisetDataset.write_block

    def slow_write_block(self, grid, data, **options):
        started.set()
        go.wait(10)
        return real(self, grid, data, **options)

    monkeypatch.setattr(n5.LabelMultisetDataset, "write_block", slow_write_block)
    errors = []
    first = threading.Thread(target=lambda: n5.write(path, np.full((16, 16), 2, np.uint64), chunks=4,
                                                        overwrite=True, threads=1))
    first.start()
    try:
        assert started.wait(10)
        with pytest.raises(TargetInUseError, match=rf"being written by process {os.getpid()} \(another thread\)"):
            n5.write(path, np.full((16, 16), 3, np.uint64), chunks=4, overwrite=True, threads=1)
        with pytest.raises(TargetInUseError):
            n5.write_array(path, np.full((16, 16), 3, np.uint64), chunks=4, overwrite=True)
    except BaseException as exc:
        errors.append(exc)
    finally:
        go.set()
        first.join()
    assert not errors, errors
    assert (n5.open(path).read_labels() == 2).all()
    assert not (path / LOCK_NAME).exists()


@pytest.mark.parametrize("writer", ["write", "write_array", "create_array_dataset", "create_dataset"])
def test_a_python_writer_is_refused_while_another_process_writes(tmp_path, writer):
    path = tmp_path / "w.n5" / "x"
    n5.write_array(path, np.ones((8, 8), np.uint64), chunks=4)
    before = sorted(os.listdir(path))
    holder = hold_lock(path)
    try:
        with pytest.raises(TargetInUseError, match=rf"being written by process {holder.pid} on "):
            if writer == "write":
                n5.write(path, np.full((8, 8), 5, np.uint64), chunks=4, overwrite=True)
            elif writer == "write_array":
                n5.write_array(path, np.full((8, 8), 5, np.uint64), chunks=4, overwrite=True)
            elif writer == "create_array_dataset":
                n5.create_array_dataset(path, (8, 8), 4, "uint8", overwrite=True)
            else:
                n5.open(tmp_path / "w.n5", mode="a").create_dataset("x", data=np.zeros((8, 8), np.uint8),
                                                                   overwrite=True)
    finally:
        holder.kill()
        holder.wait()
    assert sorted(set(os.listdir(path)) - {LOCK_NAME}) == before and (n5.open(path)[:] == 1).all()
    n5.write_array(path, np.full((8, 8), 5, np.uint64), chunks=4, overwrite=True)  # the killed lock went with it


def test_a_dataset_writer_is_refused_while_its_source_is_converted(source):
    s0 = source / "data" / "s0"
    holder = hold_lock(source)  # as n5ms convert / commit hold it
    try:
        with pytest.raises(TargetInUseError, match=rf"labels is being written by process {holder.pid}"):
            n5.write(s0, LABELS.astype(np.uint64), chunks=8, overwrite=True)
    finally:
        holder.kill()
        holder.wait()
    assert not (s0 / LOCK_NAME).exists()
    assert np.array_equal(n5.open(s0).read_labels(), LABELS)


def test_writers_that_call_writers_reuse_their_lock(source, tmp_path):
    # argmax holds its target's lock and creates the dataset there; the assignment writer holds the
    # source's and creates a dataset below it
    summary = paintera.export_argmax(source / "data" / "s0", tmp_path / "A.n5" / "a")
    assert summary.blocks_present > 0 and not (tmp_path / "A.n5" / "a" / LOCK_NAME).exists()
    paintera.write_assignment(source, {1: 2})
    assert paintera.read_assignment(source).apply(np.array([1, 3], np.uint64)).tolist() == [2, 3]
    # a user holding a dataset's lock may write it; a second lock in the same thread is refused
    path = tmp_path / "U.n5" / "x"
    with WriterLock(path):
        n5.write_array(path, np.ones((4, 4), np.uint8), chunks=2)
        with pytest.raises(TargetInUseError, match=r"\(this thread\)"):
            WriterLock(path).acquire()
    assert (n5.open(path)[:] == 1).all() and not (path / LOCK_NAME).exists()
    group = n5.open(tmp_path / "G.n5", mode="w")
    group.create_dataset("d", data=np.arange(12, dtype=np.uint16).reshape(3, 4))
    assert np.array_equal(n5.open(tmp_path / "G.n5" / "d")[:], np.arange(12).reshape(3, 4))
    assert LOCK_NAME not in os.listdir(tmp_path / "G.n5" / "d")


def test_a_refused_dataset_writer_leaves_no_directory(tmp_path):
    with pytest.raises(ConfigurationError, match="container"):
        n5.write_array(tmp_path / "a" / "x", np.ones((2, 2), np.uint8), chunks=2, container=tmp_path / "b")
    assert not (tmp_path / "a" / "x").exists()


# ---------------------------------------------------------------------------------------------
# 5. a memory-mapped source inside the target

@pytest.mark.parametrize("view", ["memmap", "slice", "asarray"])
def test_convert_of_a_memmap_inside_its_target_is_refused(source, view):
    np.save(source / "mine.npy", LABELS)
    mapped = np.load(source / "mine.npy", mmap_mode="r")
    data = {"memmap": mapped, "slice": mapped[2:], "asarray": np.asarray(mapped)}[view]
    with pytest.raises(ConfigurationError, match="overlaps the source"):
        paintera.convert(data, source, block_size=8, factors=[2], overwrite=True)
    assert np.array_equal(np.load(source / "mine.npy"), LABELS)
    if view != "memmap":  # n5.write refuses views of one too
        with pytest.raises(ConfigurationError, match="overlaps the source"):
            n5.write(source, data, chunks=8, overwrite=True)
