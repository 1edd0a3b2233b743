"""Nothing lost, round three (issue 51, items 3-10, 19 and the stale s3 lock): commits never
leave a source worse than they found it, killed commits re-run to the uninterrupted result,
id allocation never hands out a taken id, a killed OME-Zarr overwrite is recognizably
incomplete."""

import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
from support import lock_held_elsewhere, n5_data

from n5mscodecs import ArgumentError, ConfigurationError, IncompleteError, N5msCodecsError, n5, paintera
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.n5 import DiskStore
from n5mscodecs.n5.writing import INCOMPLETE_KEY, incomplete_marker, write_marked
from n5mscodecs.paintera.sources import first_multiscale

pytestmark = pytest.mark.slow  # run once per CI run: see pyproject's markers

LABELS = voronoi_labels((24, 20, 16), 12, seed=4).astype(np.uint64)


def files(root):
    """{relative path: bytes} of every file below ``root``."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            found[os.path.relpath(path, root)] = open(path, "rb").read()
    return found


@pytest.fixture()
def source(tmp_path):
    """A finished Paintera source C.n5/labels."""
    target = tmp_path / "C.n5" / "labels"
    paintera.convert(LABELS, target, block_size=8, factors=[2], lookup_block_size=3)
    return target


# A call in a child process, killed (SIGKILL) at the Nth call of MODULE.NAME (NAME may be
# CLASS.METHOD); the call is the rest of the arguments' CODE, run with them as ``args``.
KILLED_AT = """
import importlib, os, signal, sys
import numpy as np
from n5mscodecs import paintera
module, name, when, code, *args = sys.argv[1:]
owner = importlib.import_module(module)
*path, name = name.split(".")
for part in path:
    owner = getattr(owner, part)
real, calls = getattr(owner, name), [0]
def dying(*a, **kw):
    calls[0] += 1
    if calls[0] == int(when):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*a, **kw)
setattr(owner, name, dying)
exec(code)
"""


def killed_at(module, name, when, code, *args):
    done = subprocess.run([sys.executable, "-c", KILLED_AT, module, name, str(when), code, *map(str, args)],
                          capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr


def killed_commit(source, edit_file, offset, module, name, when):
    killed_at(module, name, when, "paintera.commit(args[0], np.load(args[1]), tuple(int(o) for o in "
              "args[2].split(',')), threads=1)", source, edit_file, ",".join(map(str, offset)))


# ---------------------------------------------------------------------------------------------
# 10. the offset: integers only

@pytest.mark.parametrize("offset", [(1.7, 0, 0), ("3", 0, 0), (True, 0, 0), (np.float64(2.0), 0, 0), (1, None, 0)])
def test_a_commit_offset_that_is_not_integers_is_refused(source, offset):
    before = files(source)
    with pytest.raises(ArgumentError, match="^offset: ") as refused:
        paintera.commit(source, np.full((2, 2, 2), 7, np.uint64), offset)
    assert refused.value.argument == "offset"
    assert files(source) == before


def test_a_commit_offset_of_numpy_integers_is_taken(source):
    paintera.commit(source, np.full((2, 2, 2), 7, np.uint64), (np.int64(1), np.uint8(2), 3))
    assert (n5.open(source / "data" / "s0").read_labels()[1:3, 2:4, 3:5] == 7).all()


# ---------------------------------------------------------------------------------------------
# 19. an np.memmap of a file inside the source

@pytest.mark.parametrize("view", ["memmap", "slice", "asarray"])
def test_a_commit_of_a_memmap_inside_its_source_is_refused(source, view):
    np.save(source / "edit.npy", np.full((2, 2, 2), 7, np.uint64))
    mapped = np.load(source / "edit.npy", mmap_mode="r")
    edit = {"memmap": mapped, "slice": mapped[:, :, :], "asarray": np.asarray(mapped)}[view]
    before = files(source)
    with pytest.raises(ConfigurationError, match="overlaps the source"):
        paintera.commit(source, edit, (0, 0, 0))
    assert files(source) == before


# ---------------------------------------------------------------------------------------------
# 9. a missing label-to-block-mapping level

@pytest.mark.parametrize("missing", ["label-to-block-mapping/s1", "label-to-block-mapping"])
def test_a_commit_without_a_label_to_block_mapping_is_refused(source, missing):
    shutil.rmtree(source / missing)
    before = files(source)
    with pytest.raises(ConfigurationError, match=r"label-to-block-mapping/s\d is missing"):
        paintera.commit(source, np.full((2, 2, 2), 7, np.uint64), (0, 0, 0))
    assert files(source) == before


# ---------------------------------------------------------------------------------------------
# 8. a dataset another job flagged incomplete

@pytest.mark.parametrize("flagged", ["data/s1", "unique-labels/s0", "label-to-block-mapping/s0"])
def test_a_commit_refuses_a_source_another_job_flagged(source, flagged):
    # what an interrupted n5ms convert leaves on a level it was writing
    store = DiskStore(source / flagged)
    write_marked(store, store.get_attributes(), incomplete_marker("n5ms convert", "run it again with --resume"))
    before = files(source)
    with pytest.raises(IncompleteError, match=rf"{flagged}: INCOMPLETE: n5ms convert was interrupted"):
        paintera.commit(source, np.full((2, 2, 2), 7, np.uint64), (0, 0, 0))
    assert files(source) == before
    assert INCOMPLETE_KEY in n5.read_attributes(source / flagged)


# ---------------------------------------------------------------------------------------------
# 5. a killed commit's temporary files are removed by the run that finishes it

def without_lock(found):
    return {key: value for key, value in found.items() if not key.endswith(".n5ms-lock")}


def test_a_rerun_commit_removes_the_temporary_files_of_the_killed_one(source, tmp_path):
    edit = np.full((12, 12, 6), 9, np.uint64)
    np.save(tmp_path / "edit.npy", edit)
    expected = tmp_path / "E.n5" / "labels"
    shutil.copytree(source, expected)
    paintera.commit(expected, edit, (3, 3, 3), threads=1)
    # killed at its 32nd file rename: a placed block's temporary file written, not yet renamed
    # (renames 1-18 stage the blocks, 19 the journal, 20-26 the marks, 27-44 place the blocks)
    killed_commit(source, tmp_path / "edit.npy", (3, 3, 3), "os", "replace", 32)
    assert [name for name in files(source) if os.path.basename(name).startswith(".tmp-")]
    assert paintera.commit(source, edit, (3, 3, 3), threads=1).finished_interrupted
    ours, theirs = without_lock(files(source)), without_lock(files(expected))
    assert sorted(ours) == sorted(theirs)
    assert [key for key in ours if ours[key] != theirs[key]] == []


def test_a_commit_killed_while_staging_changed_nothing_and_the_next_one_goes_through(source, tmp_path):
    """Killed while it stages the blocks it made (before its journal and marks): every file of
    the source is as it was (only the staged blocks and the dead writer's lock are new), and
    the next commit, which clears the staged blocks, writes what an uninterrupted one writes."""
    edit = np.full((12, 12, 6), 9, np.uint64)
    np.save(tmp_path / "edit.npy", edit)
    expected = tmp_path / "E.n5" / "labels"
    shutil.copytree(source, expected)
    paintera.commit(expected, edit, (3, 3, 3), threads=1)
    before = without_lock(files(source))
    killed_commit(source, tmp_path / "edit.npy", (3, 3, 3), "os", "replace", 10)
    after = without_lock(files(source))
    assert [key for key in after if ".tmp-commit/" in key]
    assert {key: value for key, value in after.items() if ".tmp-commit/" not in key} == before
    assert not paintera.commit(source, edit, (3, 3, 3), threads=1).finished_interrupted
    ours, theirs = without_lock(files(source)), without_lock(files(expected))
    assert sorted(ours) == sorted(theirs)
    assert [key for key in ours if ours[key] != theirs[key]] == []


# ---------------------------------------------------------------------------------------------
# 4. a killed commit into a Java-written source, run again, equals the uninterrupted commit
# byte for byte (the lookups too)

def java_source(tmp_path, name):
    """A copy of the Java-written (Paintera's) label source of the shared data."""
    container = tmp_path / f"{name}.n5"
    shutil.copytree(n5_data("paintera_export_test.n5"), container)
    return container / "paintera_labels"


# renames 1-20 stage the blocks, 21 the journal, 22-31 the marks, 32-51 place the blocks,
# 52-55 patch the lookups, 56 raises maxId, 57-66 unmark
KILLS = [("n5mscodecs.paintera.commit_blocks", "patch_label_to_block_mapping", 1),  # every block placed, no lookup
         ("os", "replace", 34),   # mid-blocks: s0 block (0, 0, 1) half placed (its unique-labels)
         ("os", "replace", 53),   # mid-lookups: one lookup file patched
         ("os", "replace", 58)]   # maxId raised, unmarking


@pytest.mark.parametrize(("module", "name", "when"), KILLS)
def test_a_killed_commit_into_a_java_source_reruns_to_the_uninterrupted_result(tmp_path, module, name, when):
    edit = np.full((40, 30, 20), 77, np.uint64)
    edit[:, :5] = 2**64 - 2   # INVALID: not painted
    np.save(tmp_path / "edit.npy", edit)
    offset = (10, 20, 30)
    expected = java_source(tmp_path, "expected")
    paintera.commit(expected, edit, offset, threads=1)
    killed = java_source(tmp_path, "killed")
    killed_commit(killed, tmp_path / "edit.npy", offset, module, name, when)
    assert "n5mscodecs:commit" in n5.read_attributes(killed)
    summary = paintera.commit(killed, edit, offset, threads=1)
    assert summary.finished_interrupted
    ours, theirs = without_lock(files(killed)), without_lock(files(expected))
    assert sorted(ours) == sorted(theirs)
    assert [key for key in ours if ours[key] != theirs[key]] == []


# ---------------------------------------------------------------------------------------------
# 7. a corrupt block the commit reads is found before anything is marked or written

def plain_source(tmp_path):
    """A label source of plain uint64 levels (s1 the argmax of s0's downsampling)."""
    target = tmp_path / "P.n5" / "labels"
    paintera.convert(LABELS, target, block_size=8, factors=[2], lookup_block_size=3, rule="java")
    s1 = n5.open(target / "data" / "s1").read_labels(rule="java")
    for level, data in enumerate([LABELS, s1]):
        attributes = n5.read_attributes(target / "data" / f"s{level}")
        n5.write_array(target / "data" / f"s{level}", data, chunks=8, overwrite=True)
        extra = {"downsamplingFactors": attributes["downsamplingFactors"]} if level else {}
        n5.write_attributes(target / "data" / f"s{level}", {**n5.read_attributes(target / "data" / f"s{level}"),
                                                             **extra})
    return target


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("corrupt", ["data/s0/0/0/0", "data/s1/0/0/0", "data/s0/1/0/0", "unique-labels/s0/0/0/0",
                                     "unique-labels/s1/0/0/0", "label-to-block-mapping/s0/4",
                                     "label-to-block-mapping/s1/4"])
def test_a_commit_reading_a_corrupt_block_changes_nothing(source, tmp_path, plain, corrupt):
    target = plain_source(tmp_path) if plain else source
    (target / corrupt).write_bytes(b"garbage!")
    before = files(target)
    # s0 blocks (0, 0, 0) and (1, 0, 0), s1 block (0, 0, 0); id 13 is new (lookup file 13 // 3 = 4)
    edit = np.full((10, 2, 2), 13, np.uint64)
    if plain and corrupt == "data/s1/0/0/0":   # a plain level's block is made from s0 alone: replaced unread
        paintera.commit(target, edit, (0, 0, 0))
        assert (n5.open(target / "data" / "s1")[:5, :1, :1] == 13).all()
        return
    with pytest.raises(N5msCodecsError) as refused:
        paintera.commit(target, edit, (0, 0, 0))
    assert corrupt.rsplit("/", 1)[0] in str(refused.value)   # names the block
    assert files(target) == before   # nothing marked, nothing written, no journal
    (target / corrupt).unlink()   # the user removes the bad block: the commit goes through
    paintera.commit(target, edit, (0, 0, 0))
    s0 = n5.open(target / "data" / "s0")
    assert ((s0[:] if plain else s0.read_labels())[:10, :2, :2] == 13).all()


# ---------------------------------------------------------------------------------------------
# 6. new segment ids: never one that is taken

ALLOCATE = """
import sys
from n5mscodecs.paintera import IdAllocator
allocator = IdAllocator(sys.argv[1])
print(" ".join(str(allocator.next()) for _ in range(int(sys.argv[2]))))
"""


def test_two_processes_allocating_ids_never_get_the_same_one(source):
    start = n5.read_attributes(source)["maxId"]
    runs = [subprocess.Popen([sys.executable, "-c", ALLOCATE, str(source), "150"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    ids = [int(i) for out, _ in outputs for i in out.split()]
    assert len(ids) == 300 and len(set(ids)) == 300
    assert sorted(ids) == list(range(start + 1, start + 301))
    assert n5.read_attributes(source)["maxId"] == start + 300


def test_an_allocator_made_before_a_merge_never_returns_the_merges_id(source):
    allocator = paintera.IdAllocator(source)
    merged = paintera.merge_fragments(source, [1, 2])
    segment = merged.apply(np.array([1], np.uint64)).tolist()[0]
    assert segment == n5.read_attributes(source)["maxId"]   # the merge allocated it
    assert allocator.next() == segment + 1


# ---------------------------------------------------------------------------------------------
# 3. a killed OME-Zarr overwrite is recognizably incomplete

def group_attributes(target):
    """The attributes of the zarr group ``target`` as each metadata file there holds them."""
    found = {}
    if (target / "zarr.json").exists():
        found["zarr.json"] = json.loads((target / "zarr.json").read_text()).get("attributes", {})
    if (target / ".zattrs").exists():
        found[".zattrs"] = json.loads((target / ".zattrs").read_text())
    return found


@pytest.mark.parametrize("version", ["0.5", "0.4"])
@pytest.mark.parametrize(("module", "name", "when"), [
    ("n5mscodecs.n5.disk_store", "DiskStore._delete_tree", 1),   # the old s0 about to go
    ("n5mscodecs.n5.disk_store", "DiskStore._delete_tree", 2),   # s0 gone, s1 about to go
    ("os", "replace", 3),                                     # writing the new group
    ("os", "replace", 6)])                                    # writing chunks
def test_a_killed_ome_zarr_overwrite_is_recognizably_incomplete(source, tmp_path, version, module, name, when):
    pytest.importorskip("zarr")
    target = tmp_path / "out.zarr"
    paintera.to_ome_zarr(source, target, version=version)
    expected = files(target)
    killed_at(module, name, when,
              "paintera.to_ome_zarr(args[0], args[1], version=args[2], overwrite=True, threads=1)",
              source, target, version)
    assert first_multiscale(DiskStore(target)) is None   # no NGFF reader takes it for an image
    attributes = group_attributes(target)
    assert attributes and all(INCOMPLETE_KEY in a for a in attributes.values()), attributes
    paintera.to_ome_zarr(source, target, version=version, overwrite=True)
    assert files(target) == expected


# ---------------------------------------------------------------------------------------------
# Also: breaking a writer lock deliberately (the s3 case is in tests/n5/test_remote.py)

def test_unlock_never_breaks_a_local_lock_a_running_process_holds(source, capsys):
    from n5mscodecs.cli import main
    from n5mscodecs.n5.writing import LOCK_NAME

    with lock_held_elsewhere(source) as holder:
        assert main(["unlock", str(source), "--force"]) == 2
        assert f"being written by process {holder.pid} on " in capsys.readouterr().err
        assert (source / LOCK_NAME).exists()
    assert (source / LOCK_NAME).exists()   # a killed holder's file, which nobody holds: removed
    assert main(["unlock", str(source)]) == 0
    assert not (source / LOCK_NAME).exists()
    assert main(["unlock", str(source)]) == 0 and "no writer lock" in capsys.readouterr().out


def test_a_killed_commit_without_a_journal_is_finished_by_rebuilding_the_lookups(source, tmp_path):
    """A commit interrupted by a version without journals: the lookups are made again from
    unique-labels; that rebuild killed in turn (its mapping marked by the lookup writer) is
    finished too, not refused as another job's."""
    from n5mscodecs.paintera.commit_journal import JOURNAL_NAME

    edit = np.full((12, 12, 6), 9, np.uint64)
    np.save(tmp_path / "edit.npy", edit)
    expected = tmp_path / "E.n5" / "labels"
    shutil.copytree(source, expected)
    paintera.commit(expected, edit, (3, 3, 3), threads=1)
    killed_commit(source, tmp_path / "edit.npy", (3, 3, 3), "n5mscodecs.paintera.commit_blocks",
                  "patch_label_to_block_mapping", 1)
    (source / JOURNAL_NAME).unlink()
    killed_commit(source, tmp_path / "edit.npy", (3, 3, 3), "n5mscodecs.paintera.mapping_build", "mark_complete", 1)
    marker = n5.read_attributes(source / "label-to-block-mapping" / "s0")[INCOMPLETE_KEY]
    assert marker["writer"] == "the label-to-block-mapping writer"
    assert paintera.commit(source, edit, (3, 3, 3), threads=1).finished_interrupted
    ours, theirs = without_lock(files(source)), without_lock(files(expected))
    assert sorted(ours) == sorted(theirs)
    assert [key for key in ours if ours[key] != theirs[key]] == []
