"""The Paintera entry points take stores (issue 43): each one called with a store (local and
fsspec's memory://), or with an N5 group or dataset object, gives what it gives for the
location; a read-only store refuses every Paintera writer with ReadOnlyError and leaves the
stored bytes as they were."""

import hashlib
import json
import os
import uuid

import numpy as np
import pytest

from n5mscodecs import ConfigurationError, n5, paintera
from n5mscodecs.errors import ReadOnlyError
from n5mscodecs.n5 import open_store
from n5mscodecs.paintera.containers import describe_dataset
from n5mscodecs.paintera.sources import open_label_source

LABELS = (np.arange(12 * 10 * 6, dtype=np.uint64).reshape(12, 10, 6) // 37) % 7 + 1
LABELS[:4, :4, :] = 0  # some all-background blocks (skipped)


@pytest.fixture(params=["local", "memory"])
def root(request, tmp_path):
    """A container root location: a local directory or a memory:// URL (a new bucket each time)."""
    if request.param == "local":
        return str(tmp_path / "c.n5")
    pytest.importorskip("fsspec")
    return f"memory://{uuid.uuid4().hex}/c.n5"


def tree(store):
    """``{key: bytes}`` of every object below ``store`` (attributes parsed: their key order is not
    what is compared)."""
    found = {}
    for directory, _, files in store.walk():
        for name in files:
            key = f"{directory}/{name}" if directory else name
            data = store.get(key)
            found[key] = json.loads(data) if name == "attributes.json" else data
    return found


def digest(location):
    """A hash of every file below ``location``, read without the package's stores (local: the
    file system; memory://: fsspec's own listing)."""
    sha, files = hashlib.sha256(), []
    if location.startswith("memory://"):
        import fsspec

        fs = fsspec.filesystem("memory")
        for path in sorted(fs.find(location)):
            files.append(path)
            sha.update(path.encode() + b"\0" + fs.cat_file(path))
    else:
        for directory, _, names in sorted(os.walk(location)):
            for name in sorted(names):
                path = os.path.join(directory, name)
                files.append(path)
                with open(path, "rb") as f:
                    sha.update(path.encode() + b"\0" + f.read())
    assert files, f"nothing below {location} to compare"
    return sha.hexdigest()


def converted(location):
    paintera.convert(LABELS, location, block_size=4, factors=[2, 2], resolution=(2, 2, 5))
    return location


def without_seconds(summary):
    return {k: v for k, v in vars(summary).items() if k not in ("seconds", "target")}


def test_convert_into_a_store_writes_what_convert_into_its_location_writes(root):
    by_location = paintera.convert(LABELS, root + "/a", block_size=4, factors=[2, 2], resolution=(2, 2, 5))
    store = open_store(root + "/b")
    by_store = paintera.convert(LABELS, store, block_size=4, factors=[2, 2], resolution=(2, 2, 5))
    assert by_store.target == store.location and by_location.target == root + "/a"
    assert without_seconds(by_store) == without_seconds(by_location)
    assert by_store.level_shapes == [(12, 10, 6), (6, 5, 3), (3, 3, 2)]
    written = tree(store)
    assert written == tree(open_store(root + "/a"))
    assert "data/s0/0/0/0" not in written and "data/s0/2/2/1" in written  # background block skipped
    # the container root got its version through the target's store
    assert open_store(root).get_attributes()["n5"] == n5.N5_VERSION
    # independent of both: level 0 holds the labels
    assert np.array_equal(paintera.open_pyramid(store).levels[0].compute(), LABELS)


def test_a_source_given_as_store_group_or_dataset_object(root):
    source = root + "/plain"
    n5.write_array(source, LABELS.astype(np.uint32), chunks=(4, 4, 4))
    by_location = open_label_source(source)
    for given, dataset in ((open_store(source), None), (n5.open(source), None), (open_store(root), "plain"),
                           (n5.open(root), "plain")):
        opened = open_label_source(given, dataset)
        assert (opened.kind, opened.path, opened.shape, opened.dtype) == (
            "n5", by_location.path, (12, 10, 6), "uint32")
        assert np.array_equal(opened.read((slice(0, 12), slice(0, 10), slice(0, 6))), LABELS)
    paintera.convert(open_store(source), root + "/from_store", block_size=4)
    assert np.array_equal(paintera.open_pyramid(root + "/from_store").levels[0].compute(), LABELS)


def test_open_pyramid_find_and_survey_take_stores_and_groups(root):
    converted(root + "/labels")
    store = open_store(root)
    by_location = paintera.open_pyramid(root + "/labels")
    for given in (store.child("labels"), n5.open(root + "/labels"), store, n5.open(root)):
        pyramid = paintera.open_pyramid(given)
        assert pyramid.path == by_location.path and pyramid.datasets == by_location.datasets
        assert pyramid.voxel_sizes == by_location.voxel_sizes == ((2.0, 2.0, 5.0), (4.0, 4.0, 10.0), (8.0, 8.0, 20.0))
        assert pyramid.offsets == by_location.offsets and pyramid.shapes == by_location.shapes
        assert np.array_equal(pyramid.levels[0].compute(), LABELS)
        assert np.array_equal(pyramid.open_level(1).read_labels(), by_location.open_level(1).read_labels())
    assert paintera.find_label_pyramids(store) == paintera.find_label_pyramids(root) == [store.url("labels")]
    surveyed, expected = paintera.survey(store.child("labels")), paintera.survey(root + "/labels")
    assert surveyed.heading == expected.heading and surveyed.path == expected.path
    entries = [(e.name, e.description) for e in surveyed.datasets]
    assert entries == [(e.name, e.description) for e in expected.datasets]
    first = {name: (description or "").split(";")[0] for name, description in entries}
    # 3 * 3 * 2 blocks, two of them all 0 (skipped)
    assert first["data/s0"] == "label multiset, shape [12, 10, 6], blocks [4, 4, 4], gzip, 16/18 blocks present"
    level = describe_dataset(store.child("labels/data/s2"))
    assert level.name == store.display("labels/data/s2") and level.description.startswith("label multiset")
    mapping = paintera.read_label_to_block_mapping(store.child("labels"), 0)
    assert mapping == paintera.read_label_to_block_mapping(root + "/labels", 0)
    assert sorted(mapping) == list(range(1, 8))  # 0 fills whole blocks only: they are skipped
    # written again through the store, in files of 3 ids: the same lookup
    assert paintera.write_label_to_block_mapping(store.child("labels"), 0, 3, {"type": "raw"}) == 3
    assert store.list_dir("labels/label-to-block-mapping/s0") == ["0", "1", "2", "attributes.json"]
    assert paintera.read_label_to_block_mapping(n5.open(root + "/labels"), 0) == mapping


def test_export_argmax_from_and_into_stores(root):
    converted(root + "/labels")
    by_location = paintera.export_argmax(root + "/labels/data/s1", root + "/a1")
    target = open_store(root + "/b1")
    by_store = paintera.export_argmax(n5.open(root + "/labels/data/s1"), target)
    assert by_store.target == target.location and by_store.shape == by_location.shape == (6, 5, 3)
    assert tree(target) == tree(open_store(root + "/a1"))
    level = paintera.open_pyramid(root + "/labels").levels[1].compute()
    assert np.array_equal(n5.open(target)[:], level)


def test_commit_and_assignments_through_a_store_equal_through_the_location(root):
    edit = np.full((4, 4, 2), 9, np.uint64)
    sources = [converted(root + "/a"), converted(root + "/b")]
    store = open_store(sources[1])
    paintera.commit(sources[0], edit, (4, 4, 2))
    paintera.commit(store, edit, (4, 4, 2))
    paintera.merge_fragments(sources[0], [1, 2])
    paintera.merge_fragments(store, [1, 2])
    paintera.assign_fragments(sources[0], {3: 5})
    paintera.assign_fragments(n5.open(sources[1], mode="a"), {3: 5})
    assert tree(store) == tree(open_store(sources[0]))
    expected = LABELS.copy()
    expected[4:8, 4:8, 2:4] = 9
    assert np.array_equal(paintera.open_pyramid(store, assignment=None).levels[0].compute(), expected)
    lookup = paintera.read_assignment(store)
    assert lookup == paintera.read_assignment(sources[0]) and lookup.segment(3) == 5
    assert lookup.segment(1) == lookup.segment(2) == 10  # the commit raised maxId to 9; a new id is 9 + 1
    assert paintera.assignment_location(store) == store.url("fragment-segment-assignment")
    pyramid = paintera.open_pyramid(store.child("data"))
    assert np.array_equal(pyramid.levels[0].compute(), lookup(expected))
    paintera.write_assignment(store, {})
    assert len(paintera.read_assignment(n5.open(sources[1]))) == 0


def test_a_read_only_store_refuses_every_paintera_writer(root):
    source = converted(root + "/labels")
    before = digest(root)
    read_only = open_store(source, read_only=True)
    attempts = {
        "convert into": lambda: paintera.convert(LABELS, open_store(root, read_only=True).child("new"), block_size=4),
        "convert over": lambda: paintera.convert(LABELS, read_only, block_size=4, overwrite=True),
        "commit": lambda: paintera.commit(read_only, np.ones((2, 2, 2), np.uint64), (0, 0, 0)),
        "write_assignment": lambda: paintera.write_assignment(read_only, {1: 2}),
        "merge": lambda: paintera.merge_fragments(read_only, [1, 2]),
        "detach": lambda: paintera.detach_fragments(read_only, [1]),
        "assign": lambda: paintera.assign_fragments(read_only, {1: 4}),
        "new id": lambda: paintera.IdAllocator(read_only).next(),
        "argmax": lambda: paintera.export_argmax(source + "/data/s0", open_store(root, read_only=True).child("x")),
        "mapping": lambda: paintera.write_label_to_block_mapping(read_only, 0, 10, {"type": "raw"}),
        "mode r group": lambda: paintera.write_assignment(n5.open(source, mode="r"), {1: 2}),
    }
    for name, attempt in attempts.items():
        with pytest.raises(ReadOnlyError):
            attempt()
        assert digest(root) == before, name
    # and reading through it works
    assert np.array_equal(paintera.open_pyramid(read_only).levels[0].compute(), LABELS)


def test_zarr_targets_and_sources_go_through_the_store(root):
    zarr = pytest.importorskip("zarr")
    converted(root + "/labels")
    target = open_store(root[:-len("/c.n5")] + "/argmax.zarr")
    summary = paintera.export_argmax(root + "/labels/data/s0", target)
    assert summary.zarr and summary.target == target.location
    source = open_label_source(target)
    assert (source.kind, source.shape) == ("zarr", (12, 10, 6))
    assert np.array_equal(source.read((slice(0, 12), slice(0, 10), slice(0, 6))), LABELS)
    if target.is_local:  # zarr itself, on the location: C order
        assert np.array_equal(zarr.open_array(target.location, mode="r")[:], LABELS.T)
    paintera.convert(target, root + "/again", block_size=4)
    assert np.array_equal(paintera.open_pyramid(root + "/again").levels[0].compute(), LABELS)
    with pytest.raises(ReadOnlyError):
        paintera.export_argmax(root + "/labels/data/s0", target.read_only_view(), overwrite=True)


@pytest.mark.parametrize("chunks", [(3, 1), (4, 2), (10, 2)])
def test_an_assignment_in_any_block_layout_reads_as_the_n5_reader_reads_it(root, chunks):
    """The assignment is read with its store alone (not through n5's datasets, which resolve
    assignments themselves), in any block size; a missing block is refused naming the dataset
    and the block, as Java's reader fails (issue 51, item 2), never read as zeros."""
    n5.write_array(root + "/x", np.zeros((2, 2), np.uint64), chunks=2)
    pairs = np.array([[5, 50], [6, 60], [7, 5], [0, 9], [8, 80], [9, 90], [10, 10], [11, 7], [12, 1], [13, 2]],
                     np.uint64)
    where = root + "/x.fragment-segment-assignment"
    n5.write_array(where, pairs, chunks=chunks, compression="gzip")
    expected = paintera.FragmentSegmentAssignment.from_arrays(pairs[:, 0], pairs[:, 1])
    assert paintera.read_assignment(root + "/x") == expected
    assert paintera.read_assignment(open_store(root).child("x")) == expected
    store = open_store(where)
    last = f"{(len(pairs) - 1) // chunks[0]}/{1 // chunks[1]}"
    store.delete(last)
    for reader in (lambda: paintera.read_assignment(root + "/x"),
                   lambda: paintera.read_assignment(open_store(root).child("x"))):
        with pytest.raises(ConfigurationError, match=f"x.fragment-segment-assignment: block {last} .*missing"):
            reader()
