"""The library functions behind ``n5ms demo`` and ``n5ms preview``."""

import os

import numpy as np
import pytest

from n5mscodecs import n5
from n5mscodecs.demo import memory_shortfall, run_demo
from n5mscodecs.errors import ConfigurationError
from n5mscodecs.multiset import INVALID


def test_run_demo_converts_verifies_and_removes_its_temporary_directory():
    report = run_demo(32, 5, seed=1)
    assert report.problems == [] and not report.kept and not os.path.exists(report.workdir)
    assert report.shape == (32, 32, 32) and report.label_bytes == 32 ** 3 * 8
    assert report.summary.level_shapes == [(32, 32, 32)] and report.stored_bytes > 0


def test_run_demo_keeps_its_output_in_out(tmp_path):
    report = run_demo(80, 7, out=tmp_path)
    assert report.kept and report.problems == []
    assert report.summary.level_shapes == [(80, 80, 80), (40, 40, 40)]
    assert n5.read_attributes(tmp_path / "demo.n5/labels")["painteraData"] == {"type": "label"}


def test_a_demo_larger_than_memory_is_refused_before_allocating():
    shortfall = memory_shortfall(20000)   # 320 TB of working memory
    if shortfall is None:
        pytest.skip("the free memory is unknown on this platform")
    assert "the demo needs about" in shortfall and "largest size that fits" in shortfall
    assert memory_shortfall(8) is None
    with pytest.raises(ConfigurationError, match="size 20000: the demo needs about"):
        run_demo(20000)


def _label_source(tmp_path):
    labels = np.ones((8, 6, 4), np.uint64)
    labels[:4] = 2
    labels[0, 0, 0] = INVALID
    n5.write(tmp_path / "p.n5/labels/data/s0", labels, chunks=4, reserved="accept")
    return tmp_path / "p.n5/labels"


def test_write_preview_draws_a_slice_of_a_source_level(tmp_path):
    pytest.importorskip("PIL.Image")
    from PIL import Image

    from n5mscodecs.preview import write_preview

    drawn = write_preview(_label_source(tmp_path), tmp_path / "p.png", axis="z", index=0)
    assert drawn.where == "z=0" and drawn.dataset.endswith("data/s0") and drawn.rendered.n_labels == 2
    assert "1 voxels without an entry hatched grey" in drawn.rendered.description
    assert Image.open(tmp_path / "p.png").size == drawn.rendered.picture.shape[1::-1]
    assert write_preview(tmp_path / "p.n5/labels/data/s0", tmp_path / "q.png", axis="x").where == "x=4"


def test_write_preview_refuses_a_bad_index_a_plain_dataset_and_an_unknown_extension(tmp_path):
    pytest.importorskip("PIL.Image")
    from n5mscodecs.preview import write_preview

    source = _label_source(tmp_path)
    with pytest.raises(ConfigurationError, match="index 4 outside 0..3 of axis z"):
        write_preview(source, tmp_path / "p.png", index=4)
    n5.write_array(tmp_path / "p.n5/raw", np.zeros((4, 4), np.uint8), chunks=2)
    with pytest.raises(ConfigurationError, match="not a label multiset dataset"):
        write_preview(tmp_path / "p.n5/raw", tmp_path / "p.png")
    with pytest.raises(ConfigurationError, match="not a picture format"):
        write_preview(source, tmp_path / "p.xyz")
    assert not (tmp_path / "p.png").exists() and not (tmp_path / "p.xyz").exists()
