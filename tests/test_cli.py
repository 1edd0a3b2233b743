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


def test_preview_is_readable(tmp_path, capsys):
    image = pytest.importorskip("PIL.Image")
    source = n5_data("paintera_export_test.n5/paintera_labels")
    assert main(["preview", str(source), "--out", str(tmp_path / "p.png"), "--level", "s1", "--axis", "z",
                 "--index", "20"]) == 0
    assert "entries per voxel (colour bar)" in capsys.readouterr().out
    picture = np.asarray(image.open(tmp_path / "p.png"))
    assert picture.shape[1] >= 800
    # the slice, upscaled nearest-neighbour, is in the picture as whole blocks of equal pixels
    s1 = n5.open(source / "data/s1")[:, :, 20]
    colours = label_colours(s1.argmax().T)
    matches = [(scale, top, left) for scale in range(1, 20) for top in range(0, 100) for left in range(0, 40)
               if np.array_equal(picture[top:top + 50 * scale:scale, left:left + 50 * scale:scale], colours)]
    assert matches and matches[0][0] >= 8
    scale, top, left = matches[0]
    block = picture[top:top + scale, left:left + scale]
    assert (block == block[0, 0]).all()
    assert main(["preview", str(source), "--out", str(tmp_path / "q.jpg"), "--index", "99", "--scale", "3"]) == 0
    assert image.open(tmp_path / "q.jpg").format == "JPEG"
    out = capsys.readouterr().out
    assert "no entries panel" in out and "hatched grey" in out   # s0: one entry per voxel, a missing corner
    assert main(["preview", str(source), "--out", str(tmp_path / "q.png"), "--index", "100"]) == 2


def test_slice_picture_hatches_voxels_without_entry(tmp_path):
    from n5mscodecs.multiset import INVALID
    from n5mscodecs.preview import HATCH, render_slice, slice_picture

    labels = np.ones((8, 8, 2), np.uint64)
    labels[:4, :4] = INVALID
    n5.write(tmp_path / "m.n5/s0", labels, chunks=(4, 4, 2), reserved="accept")
    (tmp_path / "m.n5/s0/1/1/0").unlink()                 # a missing block, read as INVALID as n5ms preview does
    dataset = n5.open(tmp_path / "m.n5/s0", fill_label=INVALID)
    picture, n_labels, most = slice_picture(dataset, 2, 0)
    assert n_labels == 1 and most == 1
    greys = {tuple(c) for c in picture[:4, :4].reshape(-1, 3).tolist()}
    assert greys <= set(HATCH) and len(greys) == 2
    assert {tuple(c) for c in picture[4:8, 16:20].reshape(-1, 3).tolist()} <= set(HATCH)   # right panel
    pytest.importorskip("PIL.Image")
    rendered = render_slice(dataset, 2, 0)
    assert rendered.picture.shape[1] >= 800 and "32 voxels without an entry" in rendered.description


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


# --- issue 19: the command line as a new user meets it --------------------------------------

def _small_source(tmp_path, size=20, labels=6, block=8):
    zyx = voronoi_labels((size, size, size), labels, seed=2)
    np.save(tmp_path / "l.npy", zyx)
    return tmp_path / "l.npy", zyx


@pytest.mark.parametrize("argv, words", [
    (["demo", "--labels", "0"], "--labels: must be >= 1"),
    (["demo", "--size", "0"], "--size: must be >= 1"),
    (["convert", "x.npy", "y.n5", "--max-num-entries", "0"], "0 would keep no entry"),
    (["convert", "x.npy", "y.n5", "--block-size", "0"], "--block-size: must be >= 1"),
    (["convert", "x.npy", "y.n5", "--resolution", "4,4"], "expected 3 values"),
    (["convert", "x.npy", "y.n5", "--resolution", "4,0,4"], "must be > 0"),
    (["convert", "x.npy", "y.n5", "--compression", "gzip:12"], "level must be in -1..9"),
    (["convert", "x.npy", "y.n5", "--compression", "snappy"], "unknown compressor 'snappy'"),
    (["convert", "x.npy", "y.n5", "--scale", "0"], "factors must be >= 1"),
    (["argmax", "x", "y", "--threads", "0"], "--threads: must be >= 1"),
])
def test_nonsense_arguments_are_usage_errors(argv, words, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_missing_extra_has_its_own_exit_code_and_names_the_extra(tmp_path, monkeypatch, capsys):
    from n5mscodecs.cli import EXIT_MISSING_EXTRA

    (tmp_path / "l.tif").write_bytes(b"II*\0")
    monkeypatch.setitem(sys.modules, "tifffile", None)   # import tifffile -> ImportError
    assert main(["convert", str(tmp_path / "l.tif"), str(tmp_path / "o.n5"), "--quiet"]) == EXIT_MISSING_EXTRA
    assert "pip install 'n5mscodecs[cli]'" in capsys.readouterr().err
    assert not (tmp_path / "o.n5").exists()
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    assert main(["preview", str(tmp_path), "--out", str(tmp_path / "p.png")]) == EXIT_MISSING_EXTRA
    assert "n5mscodecs[preview]" in capsys.readouterr().err


def test_preview_unknown_extension_is_a_clear_error(tmp_path, capsys):
    pytest.importorskip("PIL.Image")
    source, _ = _small_source(tmp_path)
    assert main(["convert", str(source), str(tmp_path / "o.n5/labels"), "--quiet", "--block-size", "8"]) == 0
    assert main(["preview", str(tmp_path / "o.n5/labels"), "--out", str(tmp_path / "x.jpgg")]) == 2
    err = capsys.readouterr().err
    assert "'.jpgg' is not a picture format" in err and ".png" in err
    assert not (tmp_path / "x.jpgg").exists()


def test_info_into_closed_pipe_exits_quietly(tmp_path):
    source, _ = _small_source(tmp_path)
    assert main(["convert", str(source), str(tmp_path / "o.n5/labels"), "--quiet", "--block-size", "4"]) == 0
    # a reader that takes nothing: every write of info meets a closed pipe
    result = subprocess.run(f"{sys.executable} -m n5mscodecs info {tmp_path / 'o.n5'} | true", shell=True,
                            capture_output=True, text=True, timeout=60)
    assert result.stderr == ""


def _corrupt(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_corrupt_blocks_are_named_by_info_argmax_and_all_listed_by_check(tmp_path, capsys):
    source, _ = _small_source(tmp_path)
    target = tmp_path / "o.n5/labels"
    assert main(["convert", str(source), str(target), "--quiet", "--block-size", "8"]) == 0
    _corrupt(target / "data/s0/0/0/0")
    _corrupt(target / "data/s0/1/0/2")
    _corrupt(target / "unique-labels/s0/0/1/0")
    capsys.readouterr()
    assert main(["info", str(target)]) == 2
    out, err = capsys.readouterr()
    assert f"{target}/data/s0/0/0/0: gzip: compressed stream is truncated" in out + err
    assert main(["argmax", str(target / "data/s0"), str(tmp_path / "a.n5/s0"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "/data/s0/" in err and "gzip" in err and "Traceback" not in err
    assert not (tmp_path / "a.n5/s0").exists()        # no half-written target blocks a rerun
    assert main(["info", "--check", str(tmp_path / "o.n5")]) == 1
    out = capsys.readouterr().out
    bad = [line for line in out.splitlines() if line.startswith("  BAD ")]
    assert len(bad) == 3 and "3 bad" in out
    assert any("data/s0/1/0/2" in line for line in bad) and any("unique-labels/s0/0/1/0" in line for line in bad)
    assert main(["info", "--check", str(tmp_path / "o.n5")[:-5] + "/l.npy"]) == 2   # not a directory


def test_info_check_passes_on_good_data(tmp_path, capsys):
    source, _ = _small_source(tmp_path)
    assert main(["convert", str(source), str(tmp_path / "o.n5/labels"), "--quiet", "--block-size", "8"]) == 0
    assert main(["info", "--check", str(tmp_path / "o.n5/labels")]) == 0
    assert "all readable" in capsys.readouterr().out


@pytest.mark.parametrize("spelling, attributes", [
    ("gzip:9", {"type": "gzip", "level": 9}),
    ("zstd:3", {"type": "zstd", "level": 3}),
    ("lz4", {"type": "lz4"}),
    ("raw", {"type": "raw"}),
    ("xz:6", {"type": "xz", "preset": 6}),
    ("bzip2:9", {"type": "bzip2", "blockSize": 9}),
    ("blosc:zstd:5", {"type": "blosc", "cname": "zstd", "clevel": 5}),
    ('{"type": "gzip", "level": 1}', {"type": "gzip", "level": 1}),
])
def test_compression_spellings(spelling, attributes, tmp_path):
    source, zyx = _small_source(tmp_path, size=12)
    if spelling.startswith("zstd") or "zstd" in spelling:
        pytest.importorskip("zstandard")
    assert main(["convert", str(source), str(tmp_path / "o.n5/labels"), "--quiet", "--block-size", "8",
                 "--compression", spelling]) == 0
    written = n5.read_attributes(tmp_path / "o.n5/labels/data/s0")["compression"]
    assert {k: written[k] for k in attributes} == attributes
    assert np.array_equal(n5.open(tmp_path / "o.n5/labels/data/s0")[:].argmax(), zyx.T)


def test_negative_offset_without_equals(tmp_path):
    source, _ = _small_source(tmp_path, size=8)
    assert main(["convert", str(source), str(tmp_path / "o.n5/labels"), "--quiet", "--offset", "-10,0,-2.5",
                 "--resolution", "4,4,40"]) == 0
    assert n5.read_attributes(tmp_path / "o.n5/labels/data")["offset"] == [-10.0, 0.0, -2.5]


def test_default_factors_follow_anisotropic_resolution(tmp_path, capsys):
    from n5mscodecs.paintera.conventions import default_factors as anisotropic_factors

    assert anisotropic_factors((512, 512, 64), (64, 64, 64), (4, 4, 40)) == [(2, 2, 1), (2, 2, 1), (2, 2, 1)]
    assert anisotropic_factors((2048, 2048, 256), (64,) * 3, (4, 4, 40)) == [
        (2, 2, 1), (2, 2, 1), (2, 2, 1), (2, 2, 2), (2, 2, 2)]
    assert anisotropic_factors((256,) * 3, (64,) * 3, (1, 1, 1)) == [(2, 2, 2), (2, 2, 2)]
    assert anisotropic_factors((1, 1, 300), (64,) * 3, (4, 4, 40)) == [(1, 1, 2), (1, 1, 2), (1, 1, 2)]
    zyx = voronoi_labels((8, 32, 32), 6, seed=3)
    np.save(tmp_path / "l.npy", zyx)
    assert main(["convert", str(tmp_path / "l.npy"), str(tmp_path / "o.n5/labels"), "--block-size", "8",
                 "--resolution", "4,4,40", "--quiet"]) == 0
    assert "s0=[32, 32, 8] s1=[16, 16, 8] s2=[8, 8, 8]" in capsys.readouterr().out
    assert n5.read_attributes(tmp_path / "o.n5/labels/data/s2")["downsamplingFactors"] == [4.0, 4.0, 1.0]


def test_argmax_threads_progress_world_attributes_and_invalid(tmp_path, capsys):
    from n5mscodecs.multiset import INVALID

    labels = np.arange(4 * 6 * 5, dtype=np.uint64).reshape(4, 6, 5) % 7  # N5 order x, y, z
    labels[0, 0, 0] = INVALID
    n5.write(tmp_path / "m.n5/s0", labels, chunks=(2, 4, 4), reserved="accept")
    n5.write_attributes(tmp_path / "m.n5/s0", {**n5.read_attributes(tmp_path / "m.n5/s0"),
                                              "resolution": [4.0, 4.0, 40.0], "offset": [-10.0, 0.0, 0.0]})
    assert main(["argmax", str(tmp_path / "m.n5/s0"), str(tmp_path / "a.n5/s0"), "--threads", "2"]) == 0
    out, err = capsys.readouterr()
    assert "argmax" in err                               # the progress bar
    written = n5.open(tmp_path / "a.n5/s0")
    expected = labels.copy()
    expected[0, 0, 0] = 0                                # INVALID becomes 0
    assert np.array_equal(written[:], expected)
    assert written.attributes["resolution"] == [4.0, 4.0, 40.0] and written.attributes["offset"] == [-10, 0, 0]
    zarr = pytest.importorskip("zarr")
    assert main(["argmax", str(tmp_path / "m.n5/s0"), str(tmp_path / "a.zarr"), "--quiet"]) == 0
    assert "(z, y, x)" in capsys.readouterr().out
    array = zarr.open_array(tmp_path / "a.zarr")
    assert np.array_equal(array[...], expected.T)
    assert array.attrs["resolution"] == [40.0, 4.0, 4.0] and array.attrs["axes"] == ["z", "y", "x"]


def test_argmax_help_says_axis_order_and_invalid(capsys):
    with pytest.raises(SystemExit):
        main(["argmax", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(z, y, x)" in text and "INVALID" in text and "become 0" in text


def test_info_on_paintera_source(tmp_path, capsys):
    source, _ = _small_source(tmp_path)
    target = tmp_path / "o.n5/labels"
    assert main(["convert", str(source), str(target), "--quiet", "--block-size", "8",
                 "--resolution", "4,4,40", "--offset", "1,2,3"]) == 0
    capsys.readouterr()
    assert main(["info", str(target)]) == 0
    out = capsys.readouterr().out
    assert "Paintera label source, maxId 6" in out
    assert "resolution [4.0, 4.0, 40.0], offset [1.0, 2.0, 3.0]" in out
    assert "levels: s0=[20, 20, 20] s1=[10, 10, 20]" in out
    assert "label-to-block-mapping/s0: label-to-block mapping, gzip, 1 files of 10000 ids" in out
    assert "3074457345618258603" not in out and "INCOMPLETE" not in out
    from n5mscodecs.paintera import CONVERSION_KEY
    attributes = n5.read_attributes(target)
    attributes[CONVERSION_KEY]["complete"] = False
    n5.write_attributes(target, attributes)
    assert main(["info", str(target)]) == 1  # found a problem
    assert "INCOMPLETE" in capsys.readouterr().out


def test_progress_has_an_s0_stage_and_a_complete_resume_reports_no_speed(tmp_path, capsys):
    source, _ = _small_source(tmp_path)
    target = str(tmp_path / "o.n5/labels")
    assert main(["convert", str(source), target, "--block-size", "8"]) == 0
    assert "s0+s1" in capsys.readouterr().err
    assert main(["convert", str(source), target, "--block-size", "8", "--resume"]) == 0
    out = capsys.readouterr().out
    assert "nothing to do" in out and "Mvoxel/s" not in out


def test_failed_convert_says_how_to_resume(tmp_path, capsys, monkeypatch):
    convert_module = sys.modules["n5mscodecs.paintera.convert"]
    source, _ = _small_source(tmp_path)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(convert_module, "build_label_to_block_mapping", broken)
    target = str(tmp_path / "o.n5/labels")
    assert main(["convert", str(source), target, "--quiet", "--block-size", "8"]) == 2
    err = capsys.readouterr().err
    assert "disk full" in err and "--resume" in err and "--overwrite" in err
    monkeypatch.undo()
    assert main(["convert", str(source), target, "--quiet", "--block-size", "8", "--resume"]) == 0


def test_demo_removes_its_temporary_folder(tmp_path, monkeypatch, capsys):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["demo", "--size", "32", "--labels", "5", "--quiet"]) == 0
    assert "removed" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_docs_checker_compares_results_shown_in_comments():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "check_examples.py"
    if not path.exists():
        pytest.skip("docs/ not shipped here")
    spec = importlib.util.spec_from_file_location("check_examples", path)
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    code = "x = [1, 2]\nx  # -> [1, 2]: a remark\nlen(x)  # -> 3\nlen(x)  # -> 23\n# prose: 5\n"
    assert checker.run_block(code, "page.md:10", {}) == [
        "line 12: the comment shows '3', the code gives 2", "line 13: the comment shows '23', the code gives 2"]
    assert checker.README.name == "README.md"


def test_argmax_rule_java_exports_what_paintera_shows(tmp_path):
    from n5mscodecs import LabelMultisetArray

    lists = LabelMultisetArray.from_elements([{2**63 + 5: 2, 10: 2}, {1: 2**31, 2: 5}, {3: 1}, {3: 1}])
    n5.write(tmp_path / "m.n5/d", lists.reshape(2, 2), (2, 2))
    for rule, expected in (("spec", [[10, 1], [3, 3]]), ("java", [[2**63 + 5, 2], [3, 3]])):
        assert main(["argmax", str(tmp_path / "m.n5/d"), str(tmp_path / f"{rule}.n5/a"), "--rule", rule,
                     "--quiet"]) == 0
        assert n5.open(tmp_path / f"{rule}.n5/a")[:].tolist() == expected


def test_every_command_names_its_missing_extra_and_exits_3(tmp_path, monkeypatch, capsys):
    from n5mscodecs.cli import EXIT_MISSING_EXTRA

    labels = np.arange(4 * 4 * 4, dtype=np.uint64).reshape(4, 4, 4) % 3
    n5.write(tmp_path / "m.n5/s0", labels, chunks=4)
    monkeypatch.setitem(sys.modules, "zarr", None)   # import zarr -> ImportError
    for argv, extra in [(["argmax", str(tmp_path / "m.n5/s0"), str(tmp_path / "a.zarr")], "zarr"),
                        (["ome-zarr", str(tmp_path / "m.n5/s0"), str(tmp_path / "o.zarr")], "ome-zarr"),
                        (["zarr-json", str(tmp_path / "m.n5")], "zarr")]:
        assert main(argv) == EXIT_MISSING_EXTRA, argv
        err = capsys.readouterr().err
        assert f"pip install 'n5mscodecs[{extra}]'" in err and "Traceback" not in err
    assert not (tmp_path / "a.zarr").exists() and not (tmp_path / "o.zarr").exists()


def test_info_reports_what_the_library_survey_finds(tmp_path, capsys):
    from n5mscodecs import paintera

    source, _ = _small_source(tmp_path)
    target = tmp_path / "o.n5/labels"
    assert main(["convert", str(source), str(target), "--quiet", "--block-size", "8"]) == 0
    capsys.readouterr()
    assert main(["info", str(tmp_path / "o.n5")]) == 0
    out = capsys.readouterr().out.splitlines()
    found = paintera.survey(tmp_path / "o.n5")
    expected = [f"{tmp_path / 'o.n5'}: {found.heading[0]}"]
    expected += [f"  {entry.name}: {entry.description}" for entry in found.datasets]
    assert out == expected


def test_a_conversion_stopped_after_writing_says_how_to_finish(tmp_path, capsys, monkeypatch):
    """A failure once the target exists names it as incomplete (resume or overwrite); a refusal does not."""
    from n5mscodecs import cli
    from n5mscodecs.errors import ConfigurationError

    source, target = tmp_path / "labels.npy", tmp_path / "out.n5"
    np.save(source, np.zeros((4, 4), np.uint64))

    def failing_convert(source, target, **options):
        n5.open(target, mode="w")
        raise OSError("disk full")

    monkeypatch.setattr(cli.paintera, "convert", failing_convert)
    assert main(["convert", str(source), str(target), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"stopped; {target} is incomplete: rerun with --resume" in err and "disk full" in err

    def refusing_convert(source, target, **options):
        n5.open(target, mode="w")
        raise ConfigurationError("refused before writing")

    monkeypatch.setattr(cli.paintera, "convert", refusing_convert)
    assert main(["convert", str(source), str(tmp_path / "refused.n5"), "--quiet"]) == 2
    assert "incomplete" not in capsys.readouterr().err
