"""The README as a newcomer uses it: its tour pasted into an empty directory, twice."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def tour():
    text = README.read_text()
    section = text[text.index("## A short tour"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_tour_runs_twice_in_an_empty_directory(tmp_path):
    pytest.importorskip("zarr", minversion="3")
    code = tour()
    assert "overwrite=True" in code and "paintera_export_test" not in code  # makes what it reads
    for run in (1, 2):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"run {run}:\n{done.stderr}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.zarr", "out.n5", "tour.n5"]
