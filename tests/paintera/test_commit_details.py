"""A newcomer's commit details (issue 53, item 5): every refusal before anything is written,
in the command line's words, and the zarr.json of ``n5ms zarr-json`` kept in step."""

import json

import numpy as np
import pytest

from n5mscodecs import ArgumentError, ConfigurationError, paintera
from n5mscodecs.cli import main as n5ms
from n5mscodecs.demo import voronoi_labels

LABELS = voronoi_labels((32, 32, 32), 10, seed=1).astype(np.uint64)


@pytest.fixture
def source(tmp_path):
    target = tmp_path / "s.n5" / "labels"
    paintera.convert(LABELS, str(target), block_size=16)
    return target


def files(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_level_for_an_edit_with_one_level_is_refused_naming_it(source, tmp_path, capsys):
    np.save(tmp_path / "edit.npy", np.full((4, 4, 4), 5, np.uint64))
    before = files(source)
    assert n5ms(["commit", str(source), str(tmp_path / "edit.npy"), "--offset", "0,0,0", "--level", "3"]) == 2
    assert "--level: edit " in capsys.readouterr().err
    with pytest.raises(ArgumentError, match="level: an in-memory edit has one level"):
        paintera.commit(str(source), np.full((4, 4, 4), 5, np.uint64), (0, 0, 0), level=1)
    assert files(source) == before


def test_a_corrupt_max_id_is_refused_not_overwritten(source):
    attributes = json.loads((source / "attributes.json").read_text())
    (source / "attributes.json").write_text(json.dumps({**attributes, "maxId": "abc"}))
    before = files(source)
    with pytest.raises(ConfigurationError, match="maxId: an integer .* got 'abc'"):
        paintera.commit(str(source), np.full((4, 4, 4), 50, np.uint64), (0, 0, 0))
    assert files(source) == before


def test_the_zarr_json_of_zarr_json_follows_max_id(source, capsys):
    assert n5ms(["zarr-json", str(source.parent)]) == 0
    paintera.commit(str(source), np.full((4, 4, 4), 99, np.uint64), (0, 0, 0))
    assert json.loads((source / "attributes.json").read_text())["maxId"] == 99
    assert json.loads((source / "zarr.json").read_text())["attributes"]["maxId"] == 99


def test_messages_name_the_edit_and_speak_options(source, tmp_path, capsys):
    np.save(tmp_path / "floats.npy", np.full((4, 4, 4), 3.5))
    assert n5ms(["commit", str(source), str(tmp_path / "floats.npy"), "--offset", "0,0,0"]) == 2
    assert "n5ms: edit: integer labels required" in capsys.readouterr().err
    np.save(tmp_path / "reserved.npy", np.full((4, 4, 4), 2**64 - 1, np.uint64))
    assert n5ms(["commit", str(source), str(tmp_path / "reserved.npy"), "--offset", "0,0,0"]) == 2
    error = capsys.readouterr().err
    assert "pass --reserved accept to write them" in error and "reserved='accept'" not in error
    with pytest.raises(ConfigurationError, match="pass reserved='accept'"):  # the library speaks Python
        paintera.commit(str(source), np.full((4, 4, 4), 2**64 - 1, np.uint64), (0, 0, 0))
    assert n5ms(["convert", str(tmp_path / "floats.npy"), str(source)]) == 2
    assert "pass --overwrite to replace it or --resume" in capsys.readouterr().err


def test_a_nested_list_is_an_edit_like_the_array_it_spells(source):
    summary = paintera.commit(str(source), [[[7, 7], [7, 7]], [[7, 7], [7, 7]]], (2, 2, 2))
    assert summary.voxels_painted == 8
    assert (paintera.open_pyramid(str(source)).levels[0][2:4, 2:4, 2:4].compute() == 7).all()
