"""Nothing lost, nothing silent (issue 25): no command or API call removes or rewrites its own
source, an interrupted write is recognizably incomplete to every reader, two writers never share
a target, and no label value silently becomes another."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from support import lock_held_elsewhere

from n5mscodecs import (
    INVALID,
    MAX_ID,
    TRANSPARENT,
    ConfigurationError,
    IncompleteError,
    LabelMultisetArray,
    N5msCodecsError,
    TargetInUseError,
    n5,
    paintera,
)
from n5mscodecs.cli import main
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.n5 import storage
from n5mscodecs.n5.writing import INCOMPLETE_KEY, LOCK_NAME, WriterLock
from n5mscodecs.paintera.sources import LabelSource, open_label_source

pytestmark = pytest.mark.slow  # run once per CI run: see pyproject's markers


def files_below(path):
    """{relative path: bytes} of every file below ``path`` (writer locks aside)."""
    return {os.path.relpath(os.path.join(d, f), path): open(os.path.join(d, f), "rb").read()
            for d, _, fs in os.walk(path) for f in fs if f != LOCK_NAME}


@pytest.fixture()
def container(tmp_path):
    """C.n5 with a Paintera source (labels) and a plain scalar dataset, as a user has them."""
    labels = voronoi_labels((24, 20, 16), 12, seed=4).astype(np.uint32)
    root = tmp_path / "C.n5"
    paintera.convert(labels, root / "labels", block_size=8, factors=[2])
    n5.write_array(root / "scalar" / "s0", labels, chunks=8)
    return root, labels


# ---------------------------------------------------------------------------------------------
# a target that is, contains or lies inside its source is refused before anything is touched

def test_argmax_onto_its_own_source_is_refused(container, capsys):
    root, _ = container
    source = root / "labels" / "data" / "s0"
    before = files_below(root)
    assert main(["argmax", str(source), str(source), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "overlaps the source" in err and str(source) in err
    assert main(["argmax", str(source), str(root), "--overwrite"]) == 2          # contains it
    assert main(["argmax", str(source), str(source / "0"), "--overwrite"]) == 2  # inside it
    assert files_below(root) == before


def test_convert_into_the_container_of_its_source_is_refused(container, capsys):
    root, _ = container
    before = files_below(root)
    assert main(["convert", str(root / "scalar" / "s0"), str(root), "--overwrite"]) == 2
    assert "overlaps the source" in capsys.readouterr().err
    with pytest.raises(ConfigurationError, match="overlaps the source"):
        paintera.convert(root / "scalar" / "s0", root / "scalar", overwrite=True)
    # the same place reached through a symlink
    os.symlink(root, root.parent / "link.n5")
    with pytest.raises(ConfigurationError, match="overlaps the source"):
        paintera.convert(root / "scalar" / "s0", root.parent / "link.n5", overwrite=True)
    assert files_below(root) == before


def test_resume_and_overwrite_together_are_an_argument_error(container, capsys):
    root, _ = container
    with pytest.raises(SystemExit) as exited:
        main(["convert", str(root / "scalar" / "s0"), str(root.parent / "o.n5"), "--resume", "--overwrite"])
    assert exited.value.code == 2 and "not allowed with" in capsys.readouterr().err
    with pytest.raises(ConfigurationError, match="overwrite and resume"):
        paintera.convert(np.zeros((4, 4), np.uint8), root.parent / "o.n5", overwrite=True, resume=True)
    assert not (root.parent / "o.n5").exists()


def test_write_array_over_the_file_it_reads_is_refused(tmp_path):
    target = tmp_path / "d.n5" / "x"
    target.mkdir(parents=True)
    np.save(target / "data.npy", np.arange(16, dtype=np.uint16).reshape(4, 4))
    mapped = np.load(target / "data.npy", mmap_mode="r")
    with pytest.raises(ConfigurationError, match="overlaps the source"):
        n5.write_array(target, mapped, chunks=2, overwrite=True)
    assert (target / "data.npy").exists()


def test_storage_overlap_rule():
    assert storage.overlaps("s3://b/c.n5/x", "S3://b/c.n5/x/")
    assert storage.overlaps("s3://b/c.n5", "s3://b/c.n5/x/s0")
    assert not storage.overlaps("s3://b/c.n5/x", "s3://b/c.n5/xy")
    assert not storage.overlaps("s3://b/c.n5/x", "/b/c.n5/x")
    assert storage.overlaps("/a/b", "/a/b/../b/c") and not storage.overlaps("/a/b", "/a/bc")


# ---------------------------------------------------------------------------------------------
# validation before the first write

class FailingSource(LabelSource):
    """Fails on one block, as a crashed worker or a dropped connection would."""

    def read(self, region):
        if region[0].start == 8 and region[1].start == 8:
            raise RuntimeError("disk on fire")
        return super().read(region)


def test_a_bad_label_found_while_scanning_writes_nothing(tmp_path):
    labels = np.ones((16, 16, 8), np.int64)
    labels[9, 9, 0] = -7
    labels[0, 0, 0] = -2
    with pytest.raises(ConfigurationError, match=r"2 voxels have a negative label \(smallest -7\)"):
        paintera.convert(labels, tmp_path / "o.n5" / "labels", block_size=8)
    assert not (tmp_path / "o.n5").exists()
    good = open_label_source(labels.astype(np.uint64) & 0xFF)
    failing = FailingSource("array", None, good.shape, good.dtype, good.array)
    with pytest.raises(RuntimeError, match="disk on fire"):  # the scan reads every region first
        paintera.convert(failing, tmp_path / "f.n5", block_size=8)
    assert not (tmp_path / "f.n5").exists()


def test_an_unreachable_scheduler_is_found_before_the_target_exists(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(sys.modules["n5mscodecs.paintera.cluster"], "SCHEDULER_TIMEOUT", "1s")
    np.save(tmp_path / "l.npy", np.ones((4, 4, 4), np.uint8))
    target = tmp_path / "o.n5" / "labels"
    assert main(["convert", str(tmp_path / "l.npy"), str(target), "--scheduler", "tcp://127.0.0.1:9",
                 "--quiet"]) == 2
    assert "scheduler: cannot reach" in capsys.readouterr().err
    assert not target.exists()


def test_a_missing_distributed_is_exit_3_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    np.save(tmp_path / "l.npy", np.ones((4, 4, 4), np.uint8))
    target = tmp_path / "o.n5" / "labels"
    assert main(["convert", str(tmp_path / "l.npy"), str(target), "--scheduler", "tcp://127.0.0.1:9"]) == 3
    assert "n5mscodecs[dask]" in capsys.readouterr().err
    assert not target.exists()


def test_a_zarr_source_without_zarr_is_exit_3(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.zarr").mkdir()
    (tmp_path / "a.zarr" / "zarr.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "zarr", None)
    assert main(["convert", str(tmp_path / "a.zarr"), str(tmp_path / "o.n5")]) == 3
    assert "n5mscodecs[zarr]" in capsys.readouterr().err


def test_object_npy_and_a_huge_demo_are_refused_before_allocating(tmp_path, capsys):
    np.save(tmp_path / "o.npy", np.array([{1: 2}, None], dtype=object))
    assert main(["convert", str(tmp_path / "o.npy"), str(tmp_path / "o.n5")]) == 2
    assert "integer labels required" in capsys.readouterr().err
    assert main(["demo", "--size", "20000"]) == 2
    assert "--size 20000: the demo needs about" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# interrupted writes are recognizably incomplete to every reader

def test_a_failed_conversion_is_incomplete_to_every_reader(tmp_path, capsys):
    labels = voronoi_labels((24, 24, 16), 20, seed=2).astype(np.uint32)
    good = open_label_source(labels)
    target = tmp_path / "r.n5" / "labels"
    with pytest.raises(RuntimeError, match="disk on fire"):
        paintera.convert(FailingSource("array", None, good.shape, good.dtype, labels), target, block_size=8,
                         factors=[2], threads=1)
    assert (target / "data" / "s0" / "0" / "0" / "0").exists()  # some blocks were written
    with pytest.raises(IncompleteError, match=r"s0: INCOMPLETE: n5ms convert .*--resume"):
        n5.open(target / "data" / "s0")
    with pytest.raises(IncompleteError, match="INCOMPLETE"):
        paintera.open_pyramid(target)
    assert main(["info", str(target.parent)]) == 1
    out = capsys.readouterr().out
    assert "INCOMPLETE" in out and "labels/data/s0: INCOMPLETE" in out
    zarr = pytest.importorskip("zarr")
    from n5mscodecs.zarr import N5Store

    store = N5Store(zarr.storage.LocalStore(str(target.parent)), multisets="labels")
    with pytest.raises(IncompleteError):
        zarr.open_array(store, path="labels/data/s0", mode="r")[...]
    # finished by resume: every reader accepts it, and the lock is gone
    paintera.convert(good, target, block_size=8, factors=[2], resume=True)
    assert np.array_equal(n5.open(target / "data" / "s0").read_labels(), labels)
    assert not (target / LOCK_NAME).exists()
    assert INCOMPLETE_KEY not in n5.read_attributes(target / "unique-labels" / "s1")


def test_an_overwrite_that_fails_leaves_a_dataset_readers_refuse(tmp_path, monkeypatch):
    path = tmp_path / "d.n5" / "labels"
    n5.write(path, np.ones((16, 16), np.uint64), chunks=4)
    calls = []
    real = n5.LabelMultisetDataset.write_block

    def dying_write_block(self, grid, data, **options):
        calls.append(grid)
        if len(calls) == 5:
            raise OSError("disk full")
        return real(self, grid, data, **options)

    monkeypatch.setattr(n5.LabelMultisetDataset, "write_block", dying_write_block)
    with pytest.raises(OSError, match="disk full"):
        n5.write(path, np.full((16, 16), 2, np.uint64), chunks=4, overwrite=True, threads=1)
    with pytest.raises(IncompleteError, match=r"labels: INCOMPLETE: n5mscodecs.n5.write .*overwrite=True"):
        n5.open(path)
    assert n5.open(path, allow_incomplete=True).attributes[INCOMPLETE_KEY]["writer"] == "n5mscodecs.n5.write"


KILLED_WRITE = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from n5mscodecs import n5
    real = n5.ArrayDataset.write_block
    count = [0]
    def write_block(self, grid, data):
        count[0] += 1
        if count[0] == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, grid, data)
    n5.ArrayDataset.write_block = write_block
    n5.write_array(sys.argv[1], np.full((64, 64), 7, np.uint16), chunks=8, overwrite=True, threads=1)
""")


@pytest.mark.parametrize("killed_at", [1, 30])
def test_a_killed_overwrite_never_reads_as_data(tmp_path, killed_at):
    path = tmp_path / "k.n5" / "x"
    n5.write_array(path, np.full((64, 64), 3, np.uint16), chunks=8)
    done = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(path), str(killed_at)])
    assert done.returncode == -signal.SIGKILL
    with pytest.raises(IncompleteError, match="INCOMPLETE"):
        n5.open(path)[:]


def test_a_second_writer_is_refused_naming_the_first(container):
    root, labels = container
    target = root / "labels"
    before = files_below(target)
    with lock_held_elsewhere(target) as holder:
        with pytest.raises(TargetInUseError, match=rf"being written by process {holder.pid} on "):
            paintera.convert(labels, target, block_size=8, factors=[2], overwrite=True)
        assert main(["convert", str(root / "scalar" / "s0"), str(target), "--overwrite", "--quiet"]) == 2
    assert files_below(target) == before
    with WriterLock(target):  # the killed holder's lock went with it
        pass


def test_resume_remakes_what_it_would_have_assumed(tmp_path):
    labels = voronoi_labels((24, 24, 16), 20, seed=2).astype(np.uint32)
    target = tmp_path / "r.n5"
    paintera.convert(labels, target, block_size=8, factors=[2])
    expected = {level: paintera.read_label_to_block_mapping(target, level) for level in (0, 1)}
    # another writer's damage: unique-labels blocks gone, a killed write's temporary file left
    attributes = n5.read_attributes(target)
    attributes[paintera.CONVERSION_KEY]["complete"] = False
    n5.write_attributes(target, attributes)
    for level, block in ((0, "1/2/1"), (1, "0/0/0")):
        os.unlink(target / "unique-labels" / f"s{level}" / block)
    (target / "data" / "s0" / ".tmp-killed").write_bytes(b"half a block")
    paintera.convert(labels, target, block_size=8, factors=[2], resume=True)
    assert {level: paintera.read_label_to_block_mapping(target, level) for level in (0, 1)} == expected
    assert not (target / "data" / "s0" / ".tmp-killed").exists()


# ---------------------------------------------------------------------------------------------
# label values: nothing silently becomes something else

@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_negative_labels_are_refused_by_default(tmp_path, dtype, capsys):
    labels = np.arange(-2, 6, dtype=dtype).reshape(2, 4)
    with pytest.raises(ConfigurationError, match=r"2 voxels have a negative label \(smallest -2\)"):
        LabelMultisetArray.from_labels(labels)
    with pytest.raises(ConfigurationError, match="negative label"):
        n5.write(tmp_path / "w.n5" / "x", labels, chunks=2)
    assert not (tmp_path / "w.n5" / "x").exists()
    np.save(tmp_path / "l.npy", labels.T)
    assert main(["convert", str(tmp_path / "l.npy"), str(tmp_path / "c.n5"), "--quiet"]) == 2
    assert "negative label (smallest -2)" in capsys.readouterr().err and not (tmp_path / "c.n5").exists()
    # the two's-complement meaning, asked for in so many words
    assert main(["convert", str(tmp_path / "l.npy"), str(tmp_path / "c.n5"), "--quiet", "--reserved", "accept"]) == 0
    ids = n5.open(tmp_path / "c.n5" / "data" / "s0").read_labels()
    assert ids[0, 0] == INVALID and ids[0, 1] == TRANSPARENT and ids[1, 0] == 2


def test_reserved_labels_above_max_id_are_refused_by_default(tmp_path):
    labels = np.array([[1, MAX_ID], [2**63 + 5, INVALID]], np.uint64)
    with pytest.raises(ConfigurationError, match=r"1 voxel has a reserved label above MAX_ID \(largest 0xff"):
        paintera.convert(labels, tmp_path / "c.n5", block_size=2)
    with pytest.raises(ConfigurationError, match="reserved label"):
        n5.write(tmp_path / "w.n5", labels, chunks=2)
    assert not (tmp_path / "c.n5").exists() and not (tmp_path / "w.n5").exists()
    written = n5.write(tmp_path / "w.n5", labels, chunks=2, reserved="accept")
    assert np.array_equal(written.read_labels(), labels)


def test_datasets_as_numpy_arrays(tmp_path):
    data = np.arange(60, dtype=np.int16).reshape(6, 10)
    plain = n5.write_array(tmp_path / "p.n5", data, chunks=4)
    assert np.array_equal(np.asarray(n5.open(tmp_path / "p.n5")), data) and len(plain) == 6
    n5.write(tmp_path / "l.n5", data.astype(np.uint64), chunks=4)
    with pytest.raises(TypeError, match=r"read_labels\(\)"):
        np.asarray(n5.open(tmp_path / "l.n5"))


# ---------------------------------------------------------------------------------------------
# errors a user can act on

def test_open_on_a_file_and_int_chunks(tmp_path):
    (tmp_path / "f.n5").write_text("not a directory")
    with pytest.raises(N5msCodecsError, match="a file, not an N5 dataset"):
        n5.open(tmp_path / "f.n5")
    dataset = n5.write(tmp_path / "i.n5", np.ones((5, 5, 5), np.uint64), chunks=2)
    assert dataset.chunks == (2, 2, 2)
    with pytest.raises(ConfigurationError, match=r"chunks: 3 integers >= 1"):
        n5.write(tmp_path / "j.n5", np.ones((5, 5, 5), np.uint64), chunks=(2, 0, 2))


def test_info_says_what_is_not_n5(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "a.zarr").mkdir()
    (tmp_path / "a.zarr" / "zarr.json").write_text("{}")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# hi")
    for name, said in (("empty", "an empty directory, not N5"), ("a.zarr", "zarr (v3) array or group, not N5"),
                       ("docs", "not an N5 container")):
        assert main(["info", str(tmp_path / name)]) == 2
        assert said in capsys.readouterr().err


@pytest.mark.parametrize("shape", [(40,), (30, 20)])
def test_preview_of_the_1d_and_2d_datasets_convert_writes(tmp_path, shape, capsys):
    image = pytest.importorskip("PIL.Image")
    labels = (np.arange(np.prod(shape)).reshape(shape) // 7).astype(np.uint16)
    paintera.convert(labels, tmp_path / "c.n5" / "labels", block_size=8)
    assert main(["preview", str(tmp_path / "c.n5" / "labels"), "--out", str(tmp_path / "p.png")]) == 0
    assert "whole" in capsys.readouterr().out
    assert main(["preview", str(tmp_path / "c.n5" / "labels"), "--out", str(tmp_path / "q.png"),
                 "--level", "s1"]) == 0
    assert image.open(tmp_path / "q.png").size[0] >= 420


def test_preview_width_smaller_than_the_slice_downscales_and_keeps_the_legend(tmp_path, capsys):
    image = pytest.importorskip("PIL.Image")
    from n5mscodecs.preview import render_slice

    n5.write(tmp_path / "w.n5", (np.arange(200 * 100 * 2).reshape(200, 100, 2) // 9).astype(np.uint64),
             chunks=64)
    dataset = n5.open(tmp_path / "w.n5")
    rendered = render_slice(dataset, 2, 0, width=50)
    assert rendered.description and "every 4th voxel" not in rendered.description
    picture = rendered.picture
    # the slice panel is 50 px wide (every 4th voxel of 200), the picture wide enough for the legend
    assert 380 < picture.shape[1] < 800
    assert main(["preview", str(tmp_path / "w.n5"), "--out", str(tmp_path / "p.png"), "--width", "50"]) == 0
    assert image.open(tmp_path / "p.png").size == (picture.shape[1], picture.shape[0])


# ---------------------------------------------------------------------------------------------
# work proportional to what is stored

def test_argmax_of_a_sparse_dataset_visits_only_its_blocks(tmp_path, capsys):
    attributes = {"dataType": "uint8", "compression": {"type": "gzip"}, "blockSize": [64, 64, 64],
                  "dimensions": [8192, 8192, 1024], "isLabelMultiset": True}
    path = tmp_path / "sparse.n5" / "s0"
    n5.write_attributes(path, attributes)
    dataset = n5.open(path, "r+")
    rng = np.random.default_rng(3)
    positions = {tuple(int(g) for g in rng.integers(0, (128, 128, 16))) for _ in range(27)}
    for k, position in enumerate(sorted(positions)):
        dataset.write_block(position, np.full((64, 64, 64), k + 1, np.uint64))
    assert main(["argmax", str(path), str(tmp_path / "a.n5" / "s0"), "--quiet"]) == 0
    assert f"{len(positions)} of 262144 blocks present" in capsys.readouterr().out
    written = n5.open(tmp_path / "a.n5" / "s0")
    assert set(written.present_blocks()) == positions
    first = sorted(positions)[0]
    assert (written.read_block(first) == 1).all()
