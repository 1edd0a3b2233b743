"""paintera.commit: edits written into a label source equal a from-scratch conversion of the
edited labels, level for level, block for block, lookup entry for lookup entry."""

import os

import numpy as np
import pytest
from support import commit_killed_after_blocks

from n5mscodecs import INVALID, IncompleteError, n5, paintera
from n5mscodecs.errors import ConfigurationError
from n5mscodecs.paintera import read_label_to_block_mapping

BIG = 2**63 + 11   # an id Paintera's lookup cannot list (a negative Java long)


def files(root):
    """{relative path: bytes} of every block file below ``root`` (attributes left out)."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if name != "attributes.json" and not name.startswith("."):
                path = os.path.join(directory, name)
                found[os.path.relpath(path, root)] = open(path, "rb").read()
    return found


def assert_as_converted(source, labels, options, tmp_path, name):
    """``source`` holds what converting ``labels`` from scratch with ``options`` writes."""
    fresh = tmp_path / f"{name}.n5" / "labels"
    paintera.convert(labels, fresh, **options)
    ours, theirs = files(source), files(fresh)
    assert sorted(ours) == sorted(theirs)
    different = [key for key in ours if ours[key] != theirs[key]]
    assert not different
    levels = len(paintera.open_pyramid(fresh, assignment=None).levels)
    for level in range(levels):
        assert read_label_to_block_mapping(source, level) == read_label_to_block_mapping(fresh, level)
        for group in ("data", "unique-labels", "label-to-block-mapping"):
            assert n5.read_attributes(source / group / f"s{level}") == n5.read_attributes(fresh / group / f"s{level}")


def segmentation(rng, shape):
    labels = np.repeat(rng.integers(1, 30, (shape[0] // 3 + 1, *shape[1:])).astype(np.uint64), 3, axis=0)[:shape[0]]
    labels[:, :8, :8] = 0          # background blocks, skipped
    labels[2:4, 10:12, 2:4] = 500  # an id held by one block only
    return labels


OPTIONS = [
    {"block_size": 8, "factors": [2, 2], "compression": "gzip"},
    {"block_size": 8, "factors": [(2, 2, 1), 2], "compression": "raw", "rule": "java", "max_num_entries": 2},
    {"block_size": (8, 8, 4), "factors": [2], "compression": "raw", "max_num_entries": 3, "keep": "lowest",
     "lookup_block_size": 7},
]


@pytest.mark.parametrize("options", OPTIONS)
def test_commit_sequence_equals_a_conversion_of_the_edited_labels(tmp_path, options):
    rng = np.random.default_rng(41)
    labels = segmentation(rng, (37, 30, 17))   # boundary blocks on every axis
    source = tmp_path / "s.n5" / "labels"
    paintera.convert(labels, source, **options)
    edits = [
        ((8, 8, 0), np.full((8, 8, 4), 7, np.uint64)),                       # block-aligned
        ((5, 3, 2), rng.integers(1, 40, (9, 11, 6)).astype(np.uint64)),      # not aligned
        ((30, 25, 12), np.full((7, 5, 5), BIG, np.uint64)),                  # a boundary corner, id >= 2**63
        ((2, 10, 2), np.full((2, 2, 2), 3, np.uint64)),                      # id 500 leaves the level
        ((0, 0, 0), np.zeros((8, 8, 8), np.uint64)),                         # all background
        ((16, 16, 8), np.zeros((8, 8, 8), np.uint64)),                       # a block made background
    ]
    painted = rng.integers(1, 9, (6, 6, 6)).astype(np.uint64)
    painted[rng.random(painted.shape) < 0.4] = INVALID                     # not painted
    painted[0] = 4                                                          # the ignore value
    edits.append(((20, 2, 3), painted))
    expected = labels.copy()
    for number, (offset, edit) in enumerate(edits):
        ignore = 4 if edit is painted else None
        summary = paintera.commit(source, edit, offset, ignore=ignore)
        region = expected[tuple(slice(o, o + n) for o, n in zip(offset, edit.shape))]
        keep = (edit == INVALID) | (edit == ignore if ignore is not None else False)
        region[~keep] = edit[~keep]
        assert summary.voxels_painted == int((~keep).sum())
        assert_as_converted(source, expected, options, tmp_path, f"fresh{number}")
    assert 500 not in paintera.read_label_to_block_mapping(source, 0)
    assert paintera.open_pyramid(source, assignment=None).max_id >= 39


def test_cost_follows_the_edit(tmp_path):
    labels = np.ones((64, 64, 64), np.uint64)
    source = tmp_path / "s.n5" / "labels"
    paintera.convert(labels, source, block_size=8, factors=[2, 2, 2])
    summary = paintera.commit(source, np.full((4, 4, 4), 9, np.uint64), (10, 10, 10))
    assert summary.blocks_written == [1, 1, 1, 1]
    # the one changed block below is downsampled from memory, the other parts are cut out of
    # the stored block: one read per level
    assert summary.blocks_read == [1, 1, 1, 1]
    assert summary.max_id == 9


def test_lists_of_unpainted_voxels_are_kept(tmp_path):
    """A level-0 dataset of real multisets (not singletons) keeps the lists of voxels the edit
    does not paint, as Paintera's canvas commit does."""
    rng = np.random.default_rng(3)
    labels = rng.integers(1, 5, (8, 8, 8)).astype(np.uint64)
    source = tmp_path / "s.n5" / "labels"
    paintera.convert(labels, source, block_size=8, factors=[2])
    s1 = n5.open(source / "data" / "s1").read()   # real lists: write them as s0 of a source of their own
    other = tmp_path / "o.n5" / "labels"
    paintera.convert(np.ones((4, 4, 4), np.uint64), other, block_size=4, factors=[2])
    dataset = n5.open(other / "data" / "s0", "r+", allow_incomplete=True)
    dataset.write_block((0, 0, 0), s1, write_background=True)
    edit = np.full((4, 4, 4), INVALID, np.uint64)
    edit[0, 0, 0] = 77
    paintera.commit(other, edit, (0, 0, 0))
    after = n5.open(other / "data" / "s0").read()
    assert after[0, 0, 0].as_dict() == {77: 1}
    for position in [(1, 0, 0), (3, 3, 3), (0, 2, 1)]:
        assert after[position].as_dict() == s1[position].as_dict()


def test_interrupted_commit_is_flagged_and_finished_by_running_it_again(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    labels = segmentation(rng, (32, 24, 16))
    options = {"block_size": 8, "factors": [2]}
    source = tmp_path / "s.n5" / "labels"
    paintera.convert(labels, source, **options)
    edit = np.full((12, 12, 6), 321, np.uint64)

    written = commit_killed_after_blocks(monkeypatch, 3, source, edit, (3, 3, 3))
    assert len(written) == 3
    with pytest.raises(IncompleteError):
        paintera.open_pyramid(source)
    with pytest.raises(IncompleteError, match="run the same commit again"):
        paintera.commit(source, np.ones((2, 2, 2), np.uint64), (0, 0, 0))
    summary = paintera.commit(source, edit, (3, 3, 3))
    assert summary.finished_interrupted
    expected = labels.copy()
    expected[3:15, 3:15, 3:9] = 321
    assert_as_converted(source, expected, options, tmp_path, "fresh")
    assert "n5mscodecs:commit" not in n5.read_attributes(source)


@pytest.mark.parametrize(("offset", "shape", "message"), [
    ((30, 0, 0), (4, 4, 4), "does not lie inside s0"),
    ((-1, 0, 0), (2, 2, 2), "does not lie inside s0"),
    ((0, 0), (2, 2, 2), "3 axes"),
])
def test_bad_edits_are_refused_before_anything_is_written(tmp_path, offset, shape, message):
    source = tmp_path / "s.n5" / "labels"
    paintera.convert(np.ones((32, 8, 8), np.uint64), source, block_size=8)
    before = files(source)
    with pytest.raises(ConfigurationError, match=message):
        paintera.commit(source, np.full(shape, 2, np.uint64), offset)
    assert files(source) == before


def test_reserved_and_negative_labels_are_refused(tmp_path):
    source = tmp_path / "s.n5" / "labels"
    paintera.convert(np.ones((8, 8, 8), np.uint64), source, block_size=8)
    before = files(source)
    with pytest.raises(ConfigurationError, match="reserved label"):
        paintera.commit(source, np.full((2, 2, 2), 2**64 - 1, np.uint64), (0, 0, 0))
    with pytest.raises(ConfigurationError, match="negative"):
        paintera.commit(source, np.full((2, 2, 2), -5, np.int64), (0, 0, 0))
    assert files(source) == before
    paintera.commit(source, np.full((2, 2, 2), -2, np.int64), (0, 0, 0))   # -2 is INVALID: nothing painted
    assert files(source) == before


def test_an_edit_inside_the_source_is_refused(tmp_path):
    source = tmp_path / "s.n5" / "labels"
    paintera.convert(np.ones((8, 8, 8), np.uint64), source, block_size=8)
    n5.write_array(source / "edit", np.full((2, 2, 2), 3, np.uint64), chunks=2)
    with pytest.raises(ConfigurationError, match="overlaps"):
        paintera.commit(source, source / "edit", (0, 0, 0))


def test_plain_uint64_levels(tmp_path):
    """A label source of plain uint64 levels: s0 painted, the lower levels the argmax of the
    converter's downsampling of the level above."""
    from n5mscodecs import LabelMultisetArray

    rng = np.random.default_rng(8)
    labels = rng.integers(1, 6, (16, 16, 8)).astype(np.uint64)
    source = tmp_path / "s.n5" / "labels"
    paintera.convert(labels, source, block_size=8, factors=[2], rule="java")
    s1 = n5.open(source / "data" / "s1").read_labels(rule="java")
    for level, data in enumerate([labels, s1]):   # the same source with plain levels
        attributes = n5.read_attributes(source / "data" / f"s{level}")
        n5.write_array(source / "data" / f"s{level}", data, chunks=8, overwrite=True)
        plain = n5.read_attributes(source / "data" / f"s{level}")
        extra = {"downsamplingFactors": attributes["downsamplingFactors"]} if level else {}
        n5.write_attributes(source / "data" / f"s{level}", {**plain, **extra})
    paintera.commit(source, np.full((4, 4, 4), 9, np.uint64), (1, 1, 1))
    expected = labels.copy()
    expected[1:5, 1:5, 1:5] = 9
    assert np.array_equal(n5.open(source / "data" / "s0")[:], expected)
    level1 = LabelMultisetArray.from_labels(expected).downsample(2, rule="java").argmax(rule="java")
    assert np.array_equal(n5.open(source / "data" / "s1")[:], level1)
    assert 9 in read_label_to_block_mapping(source, 1)


def test_cli_commit(tmp_path, capsys):
    from n5mscodecs.cli import main

    source = tmp_path / "s.n5" / "labels"
    labels = np.ones((16, 12, 8), np.uint64)
    paintera.convert(labels, source, block_size=8, factors=[2])
    edit = np.full((2, 3, 4), 5, np.uint64)   # C order (z, y, x): x 4, y 3, z 2
    np.save(tmp_path / "edit.npy", edit)
    assert main(["commit", str(source), str(tmp_path / "edit.npy"), "--offset", "1,2,3"]) == 0
    expected = labels.copy()
    expected[1:5, 2:5, 3:5] = 5
    assert np.array_equal(paintera.open_pyramid(source, assignment=None).levels[0].compute(), expected)
    assert "n5ms commit" in capsys.readouterr().out
    assert main(["commit", str(source), str(tmp_path / "edit.npy"), "--offset", "15,0,0"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("n5ms: ") and "does not lie inside s0" in error and "\n" not in error
