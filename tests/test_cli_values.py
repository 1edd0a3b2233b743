"""Issue 42, item 11: every ``n5ms`` subcommand refuses bad values on one line (``n5ms: ...``)
with exit 2, no traceback, and writes nothing: each case names the target it must not create."""

import argparse
import errno
import os
import shutil
import socket

import numpy as np
import pytest

from n5mscodecs.cli import build_parser, main
from n5mscodecs.demo import voronoi_labels

BIG = str(2**64 + 5)   # beyond uint64

# (subcommand, argv after it, the path (relative to the case's directory) that must not appear)
CASES = [
    ("demo", ["--size", "0"], None),
    ("demo", ["--labels", "0"], None),
    ("demo", ["--threads", BIG], None),
    ("demo", ["--out", "o\0ut", "--size", "8", "--labels", "2"], None),
    ("demo", ["--size", "100000"], None),
    ("info", ["{missing}"], None),
    ("info", ["n\0ul.n5"], None),
    ("info", ["{dangling}"], None),
    ("info", ["{dangling}/labels/data/s0"], None),
    ("info", ["{factors}/labels/data/s1"], None),
    ("info", ["{loop}"], None),
    ("info", ["{socket}"], None),
    ("convert", ["{npy}", "t.n5/labels", "--compression", "xz:12"], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--compression", "blosc:nope"], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--compression", "blosc:lz4:99"], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--compression", "zstd:" + BIG], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--compression", "lz4:0"], "t.n5"),
    ("convert", ["{garbage_tif}", "t.n5/labels"], "t.n5"),
    ("convert", ["{garbage_npy}", "t.n5/labels"], "t.n5"),
    ("convert", ["{npy}", "t\0.n5/labels"], None),
    ("convert", ["{npy}", "t.n5/labels", "--block-size", "2000"], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--block-size", BIG], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--max-num-entries", BIG], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--lookup-block-size", BIG], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--scale", BIG], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--resolution", "1e400,1,1"], "t.n5"),
    ("convert", ["{npy}", "t.n5/labels", "--offset", "nan,1,1"], "t.n5"),
    ("convert", ["{socket}", "t.n5/labels"], "t.n5"),
    ("convert", ["{loop}", "t.n5/labels"], "t.n5"),
    ("argmax", ["{src}/data/s0", "a.n5/s0", "--additional-assignment", "1=" + BIG], "a.n5"),
    ("argmax", ["{src}/data/s0", "a.n5/s0", "--assignment-file", "missing.txt"], "a.n5"),
    ("argmax", ["{src}/data/s0", "a.n5/s0", "--threads", "0"], "a.n5"),
    ("argmax", ["n\0ul", "a.n5/s0"], "a.n5"),
    ("argmax", ["{src}/data/s0", "{src}/data/s0", "--overwrite"], None),
    ("preview", ["{src}", "--out", "p.png", "--width", "100000000"], "p.png"),
    ("preview", ["{src}", "--out", "p.png", "--width", "1e8"], "p.png"),
    ("preview", ["{src}", "--out", "p.png", "--scale", "100000"], "p.png"),
    ("preview", ["{src}", "--out", "p.png", "--index", BIG], "p.png"),
    ("preview", ["{src}", "--out", "p\0.png"], None),
    ("preview", ["{src}", "--out", "p.jpgg"], "p.jpgg"),
    ("ome-zarr", ["{src}", "z.zarr", "--shards", "0,0,0"], "z.zarr"),
    ("ome-zarr", ["{src}", "z.zarr", "--shards", "3,3,3"], "z.zarr"),
    ("ome-zarr", ["{src}", "z.zarr", "--shards", "100,100,100"], "z.zarr"),
    ("ome-zarr", ["{src}", "z.zarr", "--shards", "64,64"], "z.zarr"),
    ("ome-zarr", ["{src}", "z.zarr", "--shards", BIG + ",8,8"], "z.zarr"),
    ("ome-zarr", ["{src}", "z.zarr", "--ngff", "0.4", "--shards", "8,8,8"], "z.zarr"),
    ("ome-zarr", ["{dangling}/labels", "z.zarr"], "z.zarr"),
    ("ome-zarr", ["{src}", "z\0.zarr"], None),
    ("zarr-json", ["{missing}"], None),
    ("zarr-json", ["n\0ul.n5"], None),
    ("serve", ["{missing}"], None),
    ("serve", ["n\0ul.n5"], None),
    ("serve", ["{src}", "--port", "70000"], None),
    ("serve", ["{src}", "--port", "-1"], None),
    ("serve", ["{loop}"], None),
    ("unlock", ["{missing}"], None),
    ("unlock", ["n\0ul.n5"], None),
    ("unlock", ["{loop}", "--force"], None),
    ("commit", ["{src}", "{npy}", "--offset", BIG + ",0,0"], None),
    ("commit", ["{src}", "{npy}", "--offset", "100,0,0"], None),
    ("commit", ["{src}", "{npy}", "--offset", "0,0,0", "--ignore", BIG], None),
    ("commit", ["{src}", "{missing}", "--offset", "0,0,0"], None),
    ("commit", ["{src}", "e\0dit.npy", "--offset", "0,0,0"], None),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Paths the cases name: a Paintera source and broken copies of it, bad files."""
    root = tmp_path_factory.mktemp("inputs")
    np.save(root / "l.npy", voronoi_labels((20, 20, 20), 6, seed=2))
    assert main(["convert", str(root / "l.npy"), str(root / "src.n5/labels"), "--block-size", "8", "--quiet"]) == 0
    shutil.copytree(root / "src.n5", root / "dangling.n5")
    block = root / "dangling.n5/labels/data/s0/0/0/0"
    block.unlink()
    block.symlink_to("missing")   # inside the container, leading nowhere
    shutil.copytree(root / "src.n5", root / "factors.n5")
    attributes = root / "factors.n5/labels/data/s1/attributes.json"
    attributes.write_text(attributes.read_text().replace('"downsamplingFactors": [\n    2.0',
                                                         '"downsamplingFactors": [\n    "two"'))
    assert '"two"' in attributes.read_text()
    (root / "garbage.tif").write_bytes(b"garbage, not a TIFF")
    (root / "garbage.npy").write_bytes(b"garbage, not a .npy")
    (root / "loop").symlink_to(root / "loop")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "socket"))
    yield {"src": root / "src.n5/labels", "npy": root / "l.npy", "dangling": root / "dangling.n5",
           "factors": root / "factors.n5", "garbage_tif": root / "garbage.tif", "garbage_npy": root / "garbage.npy",
           "missing": root / "missing.n5", "loop": root / "loop", "socket": root / "socket"}
    server.close()


def run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("command, argv, target", CASES, ids=[f"{c[0]} {' '.join(c[1])}" for c in CASES])
def test_bad_value_is_one_line_and_exit_2_and_writes_nothing(command, argv, target, inputs, tmp_path, monkeypatch,
                                                             capsys):
    if command == "preview":
        pytest.importorskip("PIL.Image")
    if command == "ome-zarr":
        pytest.importorskip("zarr")
    monkeypatch.chdir(tmp_path)
    argv = [command] + [a.format(**{k: str(v) for k, v in inputs.items()}) for a in argv]
    if command in ("convert", "argmax", "ome-zarr", "demo"):
        argv.append("--quiet")
    source_before = sorted(os.walk(inputs["src"]))
    code, err = run(argv, capsys)
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("n5ms: "), err
    assert "Traceback" not in err
    assert "=True" not in err   # CLI options, not Python keywords
    if target is not None:
        assert not (tmp_path / target).exists()
    assert sorted(os.walk(inputs["src"])) == source_before   # the source is untouched too


def test_every_subcommand_has_bad_value_cases():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) == {c[0] for c in CASES}


def test_info_check_lists_a_dangling_block_link_and_exits_1(inputs, capsys):
    """``info --check`` reports bad blocks with its documented exit 1: the link is one of them."""
    try:
        code = main(["info", "--check", str(inputs["dangling"])])
    except SystemExit as stop:
        code = stop.code
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err
    bad = [line for line in captured.out.splitlines() if line.lstrip().startswith("BAD")]
    assert len(bad) == 1 and "labels/data/s0/0/0/0" in bad[0]
    assert "1 bad" in captured.out


def test_existing_ome_zarr_target_names_the_options(inputs, tmp_path, capsys):
    pytest.importorskip("zarr")
    (tmp_path / "z.zarr").mkdir()
    code, err = run(["ome-zarr", str(inputs["src"]), str(tmp_path / "z.zarr"), "--quiet"], capsys)
    assert code == 2 and "--overwrite" in err and "--resume" in err and "overwrite=True" not in err
    assert list((tmp_path / "z.zarr").iterdir()) == []


def test_unreadable_file_is_one_line(inputs, tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked.npy"
    shutil.copy(inputs["npy"], locked)
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads every file: the refusal a user gets, made by hand
        import builtins

        real_open = builtins.open

        def refusing_open(file, *args, **kwargs):
            if isinstance(file, (str, os.PathLike)) and os.fspath(file) == str(locked):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(locked))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", refusing_open)
    code, err = run(["convert", str(locked), str(tmp_path / "t.n5/labels"), "--quiet"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("n5ms: ")
    assert not (tmp_path / "t.n5").exists()


def test_preview_bound_is_documented_and_a_picture_within_it_is_drawn(inputs, tmp_path, capsys):
    pytest.importorskip("PIL.Image")
    from n5mscodecs.preview import MAX_PIXELS

    assert MAX_PIXELS == 2**26
    assert main(["preview", str(inputs["src"]), "--out", str(tmp_path / "p.png"), "--scale", "40"]) == 0
    assert (tmp_path / "p.png").exists()
