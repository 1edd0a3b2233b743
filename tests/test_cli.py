import subprocess
import sys

import numpy as np
import pytest
from support import n5_data

from n5mscodecs import n5
from n5mscodecs.cli import main
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.preview import label_colours


def test_convert_npy_with_progress_and_summary(tmp_path, capsys):
    zyx = voronoi_labels((20, 24, 28), 12, seed=1)
    np.save(tmp_path / "l.npy", zyx)
    code = main(["convert", str(tmp_path / "l.npy"), str(tmp_path / "o.n5/labels"), "--block-size", "8",
                 "--scale", "2", "--scale", "2,2,1", "--resolution", "4,4,40"])
    out = capsys.readouterr()
    assert code == 0
    assert "3 levels s0=[28, 24, 20] s1=[14, 12, 10] s2=[7, 6, 10]" in out.out
    assert "Mvoxel/s" in out.out and "s1" in out.err  # progress on stderr
    assert n5.read_attributes(tmp_path / "o.n5/labels/data")["resolution"] == [4.0, 4.0, 40.0]
    assert np.array_equal(n5.open(tmp_path / "o.n5/labels/data/s0")[:].argmax(), zyx.T)


def test_convert_refuses_existing_target_and_bad_sources(tmp_path, capsys):
    np.save(tmp_path / "l.npy", np.ones((4, 4, 4), np.uint16))
    np.save(tmp_path / "f.npy", np.ones((4, 4, 4), np.float64))
    assert main(["convert", str(tmp_path / "l.npy"), str(tmp_path / "o.n5"), "--quiet"]) == 0
    assert main(["convert", str(tmp_path / "l.npy"), str(tmp_path / "o.n5"), "--quiet"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "l.npy"), str(tmp_path / "o.n5"), "--quiet", "--overwrite"]) == 0
    assert main(["convert", str(tmp_path / "missing.npy"), str(tmp_path / "m.n5")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "f.npy"), str(tmp_path / "f.n5")]) == 2
    assert "integer labels" in capsys.readouterr().err


def test_argmax_to_n5_and_zarr_equals_paintera_export(tmp_path):
    source = n5_data("paintera_export_test.n5/paintera_labels/data/s2")
    export = n5.open(n5_data("paintera_export_test.n5/scalar_export_s2/s2"))[:]
    assert main(["argmax", str(source), str(tmp_path / "a.n5/s2")]) == 0
    argmax = n5.open(tmp_path / "a.n5/s2")
    assert argmax.dtype == np.uint64
    assert np.array_equal(argmax[:], export.astype(np.uint64))
    assert main(["argmax", str(source), str(tmp_path / "a.n5/s2")]) == 2
    zarr = pytest.importorskip("zarr")
    assert main(["argmax", str(source), str(tmp_path / "a.zarr")]) == 0
    assert np.array_equal(zarr.open_array(tmp_path / "a.zarr")[...], export.T.astype(np.uint64))


def test_preview_png_shows_argmax_and_entries(tmp_path):
    image = pytest.importorskip("PIL.Image")
    source = n5_data("paintera_export_test.n5/paintera_labels")
    assert main(["preview", str(source), "--out", str(tmp_path / "p.png"), "--level", "s1", "--axis", "z",
                 "--index", "20"]) == 0
    picture = np.asarray(image.open(tmp_path / "p.png"))
    assert picture.shape == (50, 50 + 4 + 50, 3)
    s1 = n5.open(source / "data/s1")[:, :, 20]
    assert np.array_equal(picture[:, :50], label_colours(s1.argmax().T))
    entries = s1.entries_per_voxel().T
    grey = picture[:, 54:, 0]
    assert (grey[entries == entries.max()] == 255).all() and (grey[entries < entries.max()] < 255).all()
    assert main(["preview", str(source), "--out", str(tmp_path / "q.png"), "--index", "99"]) == 0
    assert main(["preview", str(source), "--out", str(tmp_path / "q.png"), "--index", "100"]) == 2


def test_label_colours_are_distinct_and_background_black():
    colours = label_colours(np.arange(300, dtype=np.uint64))
    assert (colours[0] == 0).all()
    assert len({tuple(c) for c in colours.tolist()}) == 300


def test_demo_small_and_module_entry_point(tmp_path):
    result = subprocess.run([sys.executable, "-m", "n5mscodecs", "demo", "--size", "96", "--labels", "40",
                             "--out", str(tmp_path), "--quiet"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "verified by reading back" in result.stdout and "OK" in result.stdout
    assert n5.read_attributes(tmp_path / "demo.n5/labels")["painteraData"] == {"type": "label"}


def test_info_lists_pyramid(tmp_path, capsys):
    assert main(["info", str(n5_data("paintera_export_test.n5/paintera_labels"))]) == 0
    out = capsys.readouterr().out
    assert "data/s2: label multiset, shape [25, 25, 25]" in out
    assert "unique-labels/s0: uint64" in out
    assert main(["info", str(tmp_path / "nothing")]) == 2
