"""Paintera's fragment-segment-assignment: the lookup value, its N5 dataset in Paintera's layout
(checked against hand-built Java-style bytes), id allocation, and every export path giving
segments (argmax of the fragments followed by the lookup, at every level)."""

import gzip
import json
import os
import struct

import numpy as np
import pytest

from n5mscodecs import n5, paintera
from n5mscodecs.cli import main
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.errors import ConfigurationError, IncompleteError
from n5mscodecs.paintera import FragmentSegmentAssignment, IdAllocator

BIG = 2**63 + 5   # ids >= 2**63 (negative as Java's long)
JAVA_ATTRIBUTES = {"dataType": "uint64", "compression": {"type": "gzip", "useZlib": False, "level": -1}}


# ---------------------------------------------------------------------------------------------
# the value


def test_apply_equals_a_dict_model_also_for_large_ids_and_noise():
    rng = np.random.default_rng(3)
    ids = np.concatenate([rng.integers(0, 500, 40, dtype=np.uint64), np.array([BIG, 2**64 - 3], np.uint64)])
    table = {int(k): int(v) for k, v in zip(ids, rng.integers(0, 2**64, ids.size, dtype=np.uint64))}
    lookup = FragmentSegmentAssignment.from_pairs(table)
    runs = np.repeat(rng.choice(np.concatenate([ids, np.arange(600, dtype=np.uint64)]), 300), 37)  # piecewise
    noise = rng.choice(np.concatenate([ids, np.arange(600, dtype=np.uint64), [np.uint64(BIG + 1)]]), 5000)
    for labels in (runs, noise, runs.reshape(-1, 37)[:, :10], np.empty(0, np.uint64)):
        expected = np.array([table.get(int(v), int(v)) for v in labels.reshape(-1)], np.uint64).reshape(labels.shape)
        assert np.array_equal(lookup(labels), expected)
        copy = np.array(labels, order="C")
        before = copy.copy()
        out = lookup.apply(copy, in_place=True)
        assert np.array_equal(out, expected) and (out is copy or not labels.size)
        assert not np.array_equal(before, expected) or not labels.size
    for layout in ("C", "F"):   # N5's voxel order (F) is mapped in place too; a strided view is copied
        block = np.array(runs[:60 * 37].reshape(60, 37), order=layout)
        expected = np.array([table.get(int(v), int(v)) for v in block.reshape(-1)], np.uint64).reshape(block.shape)
        assert lookup.apply(block, in_place=True) is block and np.array_equal(block, expected)
    strided = runs[:60 * 37].reshape(60, 37)[:, ::2]
    assert lookup.apply(strided, in_place=True) is not strided
    signed = np.array([-1, 3, int(np.int64(BIG - 2**64))], np.int64)   # Java's longs
    assert FragmentSegmentAssignment.from_pairs({-1: 7, BIG: 9})(signed).tolist() == [7, table.get(3, 3), 9]


def test_value_queries_and_equality():
    lookup = FragmentSegmentAssignment.from_pairs([(1, 10), (2, 10), (3, 7), (1, 11)])   # later pair wins
    assert lookup.to_dict() == {1: 11, 2: 10, 3: 7}
    assert lookup.segment(2) == 10 and lookup.segment(99) == 99
    assert lookup.fragments_of(10) == {2, 10}
    assert (lookup.mapped_fragments, lookup.segment_count) == (3, 3)
    assert lookup.describe() == "3 fragments mapped into 3 segments"
    assert lookup == FragmentSegmentAssignment.from_pairs({3: 7, 2: 10, 1: 11}) and hash(lookup) == hash(
        FragmentSegmentAssignment.from_pairs({3: 7, 2: 10, 1: 11}))
    assert not FragmentSegmentAssignment.identity() and len(FragmentSegmentAssignment.identity()) == 0
    with pytest.raises(ValueError, match="sorted"):
        FragmentSegmentAssignment(np.array([2, 1], np.uint64), np.array([5, 5], np.uint64))
    with pytest.raises(ConfigurationError, match="fragment"):
        FragmentSegmentAssignment.from_pairs({"a": 1})
    with pytest.raises(ConfigurationError, match="integer ids"):
        lookup(np.ones(3, np.float32))


def test_merge_follows_paintera():
    empty = FragmentSegmentAssignment.identity()
    asked = []

    def new_id():
        asked.append(1)
        return 100 + len(asked)

    # two unassigned fragments: the second one's side gets a new segment id
    merged = empty.merge(1, 2, new_id)
    assert merged.to_dict() == {1: 101, 2: 101} and len(asked) == 1
    # an unassigned fragment joins the assigned one's segment; no id asked
    assert merged.merge(3, 2, new_id).to_dict() == {1: 101, 2: 101, 3: 101} and len(asked) == 1
    assert merged.merge(2, 3, new_id).to_dict() == {1: 101, 2: 101, 3: 101}
    # two segments: the larger id (as Java's long) is kept; the other's fragments and its id move
    two = FragmentSegmentAssignment.from_pairs({1: 10, 2: 10, 3: 20, 4: 20})
    assert two.merge(1, 3, new_id).to_dict() == {1: 20, 2: 20, 3: 20, 4: 20, 10: 20}
    assert two.merge(4, 2, new_id).to_dict() == {1: 20, 2: 20, 3: 20, 4: 20, 10: 20}
    large = FragmentSegmentAssignment.from_pairs({1: BIG, 3: 20})   # BIG is negative as a long: 20 wins
    assert large.merge(1, 3, new_id).to_dict() == {1: 20, 3: 20, BIG: 20}
    # already together, or the same fragment: unchanged and no id asked
    assert two.merge(1, 2, new_id) is two and two.merge(5, 5, new_id) is two and len(asked) == 1


def test_detach_and_assign_follow_paintera():
    lookup = FragmentSegmentAssignment.from_pairs({1: 10, 2: 10, 3: 20})
    assert lookup.detach(1).to_dict() == {2: 10, 3: 20}
    assert lookup.detach(1, from_fragment=2).to_dict() == {2: 10, 3: 20}
    assert lookup.detach(1, from_fragment=3) is lookup          # not in the same segment: no change
    assert lookup.detach(7) is lookup
    assert lookup.assign(5, 20).to_dict() == {1: 10, 2: 10, 3: 20, 5: 20}
    assert lookup.assign(1, 1).to_dict() == {2: 10, 3: 20}
    assert lookup.updated({1: 30, 10: 40}).to_dict() == {1: 30, 2: 10, 3: 20, 10: 40}   # no chaining


# ---------------------------------------------------------------------------------------------
# the dataset


def hand_block(values):
    """A Java N5 default-mode block of one column: mode 0, 2 dims [n, 1], gzip of BE uint64."""
    return struct.pack(">HHII", 0, 2, len(values), 1), struct.pack(f">{len(values)}Q", *values)


def java_attributes(n):
    return {**JAVA_ATTRIBUTES, "blockSize": [max(n, 1), 1], "dimensions": [n, 2]}


def write_hand_built(dataset, fragments, segments, dtype="uint64"):
    os.makedirs(dataset / "0", exist_ok=True)
    (dataset / "attributes.json").write_text(json.dumps({**java_attributes(len(fragments)), "dataType": dtype}))
    for column, values in enumerate((fragments, segments)):
        header, body = hand_block([v % 2**64 for v in values])
        (dataset / "0" / str(column)).write_bytes(header + gzip.compress(body))


@pytest.fixture()
def source(tmp_path):
    labels = voronoi_labels((12, 20, 24), 30, seed=2).T.copy().astype(np.uint64) + 1   # N5 order, ids 1..30
    target = tmp_path / "p.n5" / "labels"
    paintera.convert(labels, target, block_size=8, factors=[2, 2], resolution=(4, 4, 40))
    return target, labels


def test_written_dataset_is_byte_for_byte_what_java_writes(source):
    target, _ = source
    pairs = {5: 40, 3: 40, BIG: 41}
    location = paintera.write_assignment(target, pairs)
    dataset = target / "fragment-segment-assignment"
    assert os.path.normpath(location) == os.path.normpath(dataset)
    assert json.loads((dataset / "attributes.json").read_text()) == java_attributes(3)
    for column, values in enumerate(([3, 5, BIG], [40, 40, 41])):
        data = (dataset / "0" / str(column)).read_bytes()
        header, body = hand_block(values)
        assert data[:12] == header and data[12:14] == b"\x1f\x8b" and gzip.decompress(data[12:]) == body
    assert sorted(os.listdir(dataset)) == ["0", "attributes.json"] and sorted(os.listdir(dataset / "0")) == ["0", "1"]
    assert paintera.read_assignment(target).to_dict() == {3: 40, 5: 40, BIG: 41}
    assert not (target / ".n5ms-lock").exists()
    # an empty lookup: dimensions [0, 2], blockSize [1, 1], two zero-length blocks, read as identity
    paintera.write_assignment(target, {})
    assert json.loads((dataset / "attributes.json").read_text()) == java_attributes(0)
    for column in (0, 1):
        data = (dataset / "0" / str(column)).read_bytes()
        assert data[:12] == struct.pack(">HHII", 0, 2, 0, 1) and gzip.decompress(data[12:]) == b""
    assert len(paintera.read_assignment(target)) == 0


def test_reads_hand_built_java_datasets_and_the_sibling_form(source, tmp_path):
    target, labels = source
    # duplicate keys: the last wins, as Java's map; int64 data read as uint64 bit patterns
    write_hand_built(target / "fragment-segment-assignment", [1, 2, 1, -3], [50, 50, 51, 52], dtype="int64")
    assert paintera.read_assignment(target).to_dict() == {1: 51, 2: 50, 2**64 - 3: 52}
    for where in (target, target / "data", target / "data" / "s1"):
        assert paintera.read_assignment(where).to_dict() == {1: 51, 2: 50, 2**64 - 3: 52}
    # a plain dataset X and its sibling X.fragment-segment-assignment
    x = tmp_path / "c.n5" / "X"
    n5.write(x, labels, chunks=8)
    assert len(paintera.read_assignment(x)) == 0   # absent: identity
    write_hand_built(tmp_path / "c.n5" / "X.fragment-segment-assignment", [4, 6], [9, 9])
    assert paintera.assignment_location(x).endswith("X.fragment-segment-assignment")
    assert paintera.read_assignment(x).to_dict() == {4: 9, 6: 9}
    exported = paintera.export_argmax(x, tmp_path / "a.n5" / "s0")
    assert exported.assignment.to_dict() == {4: 9, 6: 9}
    lookup = FragmentSegmentAssignment.from_pairs({4: 9, 6: 9})
    assert np.array_equal(n5.open(tmp_path / "a.n5" / "s0")[:], lookup(labels))
    assert (lookup(labels) != labels).any()


def test_bad_datasets_raise_naming_the_field(source):
    target, _ = source
    dataset = target / "fragment-segment-assignment"
    n5.write_array(dataset, np.zeros((3, 3), np.uint64), chunks=(3, 1))
    with pytest.raises(ConfigurationError, match=r"dimensions.*\[3, 3\]"):
        paintera.read_assignment(target)
    with pytest.raises(ConfigurationError, match="dimensions"):
        paintera.open_pyramid(target)
    n5.write_array(dataset, np.zeros((3, 2), np.float32), chunks=(3, 1), overwrite=True)
    with pytest.raises(ConfigurationError, match="dataType"):
        paintera.read_assignment(target)
    attributes = json.loads((dataset / "attributes.json").read_text())
    (dataset / "attributes.json").write_text(json.dumps({**java_attributes(3), "n5mscodecs:incomplete": {}}))
    with pytest.raises(IncompleteError):
        paintera.read_assignment(target)
    assert attributes["dataType"] == "float32"


def test_ids_are_allocated_above_max_id_and_raise_it(source):
    target, _ = source
    max_id = n5.read_attributes(target)["maxId"]
    merged = paintera.merge_fragments(target, [1, 2, 3])
    assert merged.to_dict() == {1: max_id + 1, 2: max_id + 1, 3: max_id + 1}
    assert n5.read_attributes(target)["maxId"] == max_id + 1
    merged = paintera.merge_fragments(target, [4, 5])
    assert merged.segment(4) == max_id + 2 and n5.read_attributes(target)["maxId"] == max_id + 2
    merged = paintera.merge_fragments(target, [4, 1])   # two segments: no new id
    assert merged.segment(4) == merged.segment(5) == merged.segment(1) == max_id + 2
    assert n5.read_attributes(target)["maxId"] == max_id + 2
    assert paintera.read_assignment(target) == merged
    detached = paintera.detach_fragments(target, [1])
    assert detached.segment(1) == 1 and paintera.read_assignment(target) == detached
    paintera.assign_fragments(target, {7: max_id + 10})
    assert paintera.read_assignment(target).segment(7) == max_id + 10
    assert n5.read_attributes(target)["maxId"] == max_id + 10
    # maxId 0 counts as 1 (Paintera's id service); no maxId: refused
    attributes = n5.read_attributes(target)
    n5.write_attributes(target, {**attributes, "maxId": 0})
    assert IdAllocator(target).next() == 2 and n5.read_attributes(target)["maxId"] == 2
    n5.write_attributes(target, {k: v for k, v in attributes.items() if k != "maxId"})
    with pytest.raises(ConfigurationError, match="maxId"):
        IdAllocator(target / "data" / "s0")


# ---------------------------------------------------------------------------------------------
# every path gives segments


@pytest.fixture()
def merged(source):
    target, labels = source
    paintera.merge_fragments(target, [1, 2, 3])
    paintera.merge_fragments(target, [10, 11])
    lookup = paintera.read_assignment(target)
    assert lookup.mapped_fragments == 5 and (lookup(labels) != labels).any()
    return target, labels, lookup


def fragments_levels(target):
    return [level.compute() for level in paintera.open_pyramid(target, assignment=None).levels]


def test_open_pyramid_to_dask_and_level_datasets_give_segments(merged):
    target, labels, lookup = merged
    raw = fragments_levels(target)
    assert np.array_equal(raw[0], labels)
    pyramid = paintera.open_pyramid(target)
    assert pyramid.assignment == lookup
    for level, fragments in zip(pyramid.levels, raw):
        assert np.array_equal(level.compute(), lookup(fragments))
    for k in range(3):   # a level dataset of the source, and its data group
        single = paintera.open_pyramid(target / "data" / f"s{k}")
        assert np.array_equal(single.levels[0].compute(), lookup(raw[k]))
        dataset = n5.open(target / "data" / f"s{k}")
        assert np.array_equal(dataset.to_dask().compute(), lookup(raw[k]))
        assert np.array_equal(dataset.to_dask(assignment=None).compute(), raw[k])
    assert np.array_equal(paintera.open_pyramid(target / "data").levels[2].compute(), lookup(raw[2]))
    assert np.array_equal(paintera.open_pyramid(target.parent).levels[1].compute(), lookup(raw[1]))
    extra = paintera.open_pyramid(target, additional_assignment={20: 1})
    assert np.array_equal(extra.levels[0].compute(), lookup.updated({20: 1})(labels))
    given = paintera.open_pyramid(target, assignment={5: 6})
    assert np.array_equal(given.levels[1].compute(), FragmentSegmentAssignment.from_pairs({5: 6})(raw[1]))


@pytest.mark.parametrize("suffix", [".n5/s", ".zarr"])
def test_export_argmax_gives_segments_at_every_level(merged, tmp_path, suffix):
    if suffix == ".zarr":
        pytest.importorskip("zarr")
    target, _, lookup = merged
    raw = fragments_levels(target)
    for k in range(3):
        out = tmp_path / f"a{k}{suffix}{k}" if suffix != ".zarr" else tmp_path / f"a{k}.zarr"
        summary = paintera.export_argmax(target / "data" / f"s{k}", out)
        assert summary.assignment == lookup
        if suffix == ".zarr":
            import zarr

            written = zarr.open_array(str(out), mode="r")[...].T
        else:
            written = n5.open(out)[:]
        assert np.array_equal(written, lookup(raw[k]))
    plain = paintera.export_argmax(target / "data" / "s0", tmp_path / "f.n5" / "s0", assignment=None)
    assert plain.assignment is None and np.array_equal(n5.open(tmp_path / "f.n5" / "s0")[:], raw[0])


def test_ome_zarr_export_gives_segments_at_every_level(merged, tmp_path):
    zarr = pytest.importorskip("zarr")
    target, _, lookup = merged
    raw = fragments_levels(target)
    summary = paintera.to_ome_zarr(target, tmp_path / "o.zarr")
    assert summary.assignment == lookup
    root = zarr.open_group(str(tmp_path / "o.zarr"), mode="r")
    for k in range(3):
        assert np.array_equal(root[f"s{k}"][...].T, lookup(raw[k]))
    paintera.to_ome_zarr(target / "data" / "s1", tmp_path / "s1.zarr", version="0.4")
    assert np.array_equal(zarr.open_group(str(tmp_path / "s1.zarr"), mode="r")["s0"][...].T, lookup(raw[1]))
    paintera.to_ome_zarr(target, tmp_path / "raw.zarr", assignment=None)
    assert np.array_equal(zarr.open_group(str(tmp_path / "raw.zarr"), mode="r")["s2"][...].T, raw[2])
    with pytest.raises(ConfigurationError, match="fragment-segment-assignment"):
        paintera.to_ome_zarr(target, tmp_path / "m.zarr", multisets=True)


def test_napari_reader_gives_segments(merged):
    npe2 = pytest.importorskip("npe2")
    pytest.importorskip("dask.array")
    from test_napari import plugin_manager

    target, _, lookup = merged
    raw = fragments_levels(target)
    plugin_manager()
    ((data, kwargs, kind),) = npe2.read([os.fspath(target)], stack=False, plugin_name="n5mscodecs")
    assert kind == "labels" and kwargs["metadata"]["fragment_segment_assignment"] == lookup.describe()
    for level, fragments in zip(data, raw):
        assert np.array_equal(np.asarray(level).T, lookup(fragments))


def test_cli_argmax_and_ome_zarr_options(merged, tmp_path, capsys):
    target, _, lookup = merged
    raw = fragments_levels(target)
    assert main(["argmax", str(target / "data" / "s1"), str(tmp_path / "a.n5" / "s1"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "n5ms argmax: fragment-segment-assignment: 5 fragments mapped into 2 segments" in err
    assert np.array_equal(n5.open(tmp_path / "a.n5" / "s1")[:], lookup(raw[1]))
    assert main(["argmax", str(target / "data" / "s0"), str(tmp_path / "f.n5" / "s0"), "--quiet", "--fragments"]) == 0
    assert np.array_equal(n5.open(tmp_path / "f.n5" / "s0")[:], raw[0])
    (tmp_path / "pairs.txt").write_text("# extra merges\n20 7\n21=7\n")
    assert main(["argmax", str(target / "data" / "s0"), str(tmp_path / "e.n5" / "s0"), "--quiet",
                 "--assignment-file", str(tmp_path / "pairs.txt"), "--additional-assignment", "21=8"]) == 0
    assert "7 fragments mapped into 4 segments" in capsys.readouterr().err
    extra = lookup.updated({20: 7, 21: 8})
    assert np.array_equal(n5.open(tmp_path / "e.n5" / "s0")[:], extra(raw[0]))
    (tmp_path / "pairs.json").write_text(json.dumps({"22": 9}))
    assert main(["argmax", str(target / "data" / "s2"), str(tmp_path / "j.n5" / "s2"), "--quiet", "--fragments",
                 "--assignment-file", str(tmp_path / "pairs.json")]) == 0
    assert np.array_equal(n5.open(tmp_path / "j.n5" / "s2")[:], FragmentSegmentAssignment.from_pairs({22: 9})(raw[2]))
    with pytest.raises(SystemExit):
        main(["argmax", str(target / "data" / "s0"), str(tmp_path / "x.n5" / "s0"), "--additional-assignment", "1"])
    (tmp_path / "bad.txt").write_text("1 2 3\n")
    assert main(["argmax", str(target / "data" / "s0"), str(tmp_path / "b.n5" / "s0"), "--quiet",
                 "--assignment-file", str(tmp_path / "bad.txt")]) == 2
    assert "line 1" in capsys.readouterr().err and not (tmp_path / "b.n5" / "s0").exists()
    zarr = pytest.importorskip("zarr")
    assert main(["ome-zarr", str(target), str(tmp_path / "o.zarr"), "--quiet", "--additional-assignment", "20=7"]) == 0
    assert "n5ms ome-zarr: fragment-segment-assignment: 6 fragments" in capsys.readouterr().err
    root = zarr.open_group(str(tmp_path / "o.zarr"), mode="r")
    for k in range(3):
        assert np.array_equal(root[f"s{k}"][...].T, lookup.updated({20: 7})(raw[k]))
    assert main(["ome-zarr", str(target), str(tmp_path / "r.zarr"), "--quiet", "--fragments"]) == 0
    assert np.array_equal(zarr.open_group(str(tmp_path / "r.zarr"), mode="r")["s1"][...].T, raw[1])
