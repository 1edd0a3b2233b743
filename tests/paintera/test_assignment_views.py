"""The zarr labels views give segments: open_labels and N5Store(multisets="labels") apply a
Paintera source's fragment-segment-assignment (written here with the package's own API) at
every level, also when opened at a level dataset; assignment=None gives fragments;
additional_assignment pairs win; n5.open's labels view stays the stored fragments."""

import pickle

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
from zarr.storage import FsspecStore, LocalStore, MemoryStore  # noqa: E402

import n5mscodecs.zarr as nz  # noqa: E402
from n5mscodecs import n5, paintera  # noqa: E402
from n5mscodecs.demo import voronoi_labels  # noqa: E402
from n5mscodecs.errors import ConfigurationError  # noqa: E402
from n5mscodecs.paintera import FragmentSegmentAssignment  # noqa: E402

LEVELS = 3


@pytest.fixture()
def merged(tmp_path):
    labels = voronoi_labels((12, 20, 24), 30, seed=2).T.copy().astype(np.uint64) + 1   # N5 order
    target = tmp_path / "p.n5" / "labels"
    paintera.convert(labels, target, block_size=8, factors=[2, 2], resolution=(4, 4, 40))
    raw = [n5.open(target / "data" / f"s{k}").read_labels() for k in range(LEVELS)]   # fragments, every level
    paintera.merge_fragments(target, [1, 2, 3])
    paintera.write_assignment(target, paintera.read_assignment(target).updated({10: 11}))
    lookup = paintera.read_assignment(target)
    assert lookup.to_dict()[10] == 11 and lookup.mapped_fragments == 4
    for fragments in raw:   # every level holds fragments the lookup moves
        assert (lookup(fragments) != fragments).any()
    return target, raw, lookup


def test_open_labels_gives_segments_at_every_level(merged):
    target, raw, lookup = merged
    for k in range(LEVELS):
        expected = lookup(raw[k])
        level = nz.open_labels(target / "data" / f"s{k}")             # the level dataset itself
        assert level.dtype == np.uint64 and np.array_equal(level[:], expected)
        via_root = nz.open_labels(target.parent, f"labels/data/s{k}")  # the container root + path
        assert np.array_equal(via_root[:], expected)
        assert np.array_equal(via_root[2:7, 3:, 1:9:2], expected[2:7, 3:, 1:9:2])
        store = nz.open_labels(LocalStore(target.parent, read_only=True), f"/labels/data/s{k}/")  # a zarr store
        assert np.array_equal(store[:], expected)
        fragments = nz.open_labels(target.parent, f"labels/data/s{k}", assignment=None)
        assert np.array_equal(fragments[:], raw[k])


def test_given_and_additional_assignments(merged):
    target, raw, lookup = merged
    assert (raw[1] == 2).any() and (raw[1] == 21).any() and lookup.segment(2) != 2
    extra = nz.open_labels(target / "data" / "s1", additional_assignment={21: 7, 2: 5})   # 2 was merged
    assert np.array_equal(extra[:], lookup.updated({21: 7, 2: 5})(raw[1]))
    assert set(extra[:][raw[1] == 2].tolist()) == {5} and set(extra[:][raw[1] == 21].tolist()) == {7}
    given = FragmentSegmentAssignment.from_pairs({5: 6})
    assert (given(raw[2]) != lookup(raw[2])).any() and (given(raw[2]) != raw[2]).any()
    for assignment in (given, {5: 6}):
        replaced = nz.open_labels(target.parent, "labels/data/s2", assignment=assignment)
        assert np.array_equal(replaced[:], given(raw[2]))
    only_extra = nz.open_labels(target.parent, "labels/data/s0", assignment=None, additional_assignment=[(4, 8)])
    assert np.array_equal(only_extra[:], FragmentSegmentAssignment.from_pairs({4: 8})(raw[0]))
    assert (raw[0] == 4).any() and (raw[0] == 2).any() and set(only_extra[:][raw[0] == 2].tolist()) == {2}
    with pytest.raises(ConfigurationError, match="assignment"):
        nz.open_labels(target.parent, "labels/data/s0", assignment="segments")


def test_n5store_labels_view_serves_segments(merged):
    target, raw, lookup = merged
    store = nz.N5Store(LocalStore(target.parent, read_only=True), multisets="labels")
    root = zarr.open_group(store, mode="r")
    for k in range(LEVELS):
        array = zarr.open_array(store, path=f"labels/data/s{k}", mode="r")
        assert np.array_equal(array[:], lookup(raw[k]))
        assert np.array_equal(root[f"labels/data/s{k}"][:], lookup(raw[k]))
    # found once per dataset and kept on the store; a merge written later is not seen by it
    assert store.assignment("labels/data/s1") == lookup
    paintera.merge_fragments(target, [21, 22])
    assert np.array_equal(zarr.open_array(store, path="labels/data/s1", mode="r")[:], lookup(raw[1]))
    later = paintera.read_assignment(target)
    assert not np.array_equal(later(raw[1]), lookup(raw[1]))
    fresh = nz.open_n5_store(target.parent, multisets="labels")
    assert np.array_equal(zarr.open_array(fresh, path="labels/data/s1", mode="r")[:], later(raw[1]))
    # zarr < 3.1.6 reopens a store read-only: the same lookups
    reopened = store.with_read_only(True)
    assert reopened.assignment("labels/data/s1") == lookup
    assert np.array_equal(zarr.open_array(reopened, path="labels/data/s0", mode="r")[:], lookup(raw[0]))
    # pickles with the lookups it found
    copy = pickle.loads(pickle.dumps(store))
    assert copy.assignment("labels/data/s1") == lookup
    assert np.array_equal(zarr.open_array(copy, path="labels/data/s2", mode="r")[:], lookup(raw[2]))
    raw_view = nz.open_n5_store(target.parent, multisets="labels", assignment=None)
    assert np.array_equal(zarr.open_array(raw_view, path="labels/data/s0", mode="r")[:], raw[0])


def test_n5store_over_an_fsspec_store_and_without_a_location(merged):
    target, raw, lookup = merged
    fsspec_store = FsspecStore.from_url(target.parent.as_uri(), read_only=True)
    array = zarr.open_array(nz.N5Store(fsspec_store, multisets="labels"), path="labels/data/s1", mode="r")
    assert np.array_equal(array[:], lookup(raw[1]))
    level = nz.open_labels((target / "data" / "s2").as_uri())   # a file:// URL of a level
    assert np.array_equal(level[:], lookup(raw[2]))
    # a store without a location finds no stored lookup (unless told where the container is)
    memory = MemoryStore()
    for path in sorted(p for p in target.parent.rglob("*") if p.is_file()):
        key = path.relative_to(target.parent).as_posix()
        zarr.core.sync.sync(memory.set(key, zarr.core.buffer.default_buffer_prototype().buffer.from_bytes(
            path.read_bytes())))
    unknown = zarr.open_array(nz.N5Store(memory, multisets="labels"), path="labels/data/s0", mode="r")
    assert np.array_equal(unknown[:], raw[0])
    told = nz.N5Store(memory, multisets="labels", location=target.parent)
    assert np.array_equal(zarr.open_array(told, path="labels/data/s0", mode="r")[:], lookup(raw[0]))


def test_plain_uint64_source_and_the_elements_view(merged, tmp_path):
    target, raw, lookup = merged
    x = tmp_path / "c.n5" / "X"
    n5.write_array(x, raw[0], chunks=8)
    paintera.write_assignment(x, {4: 9, 6: 9})
    plain = FragmentSegmentAssignment.from_pairs({4: 9, 6: 9})
    assert np.array_equal(nz.open_labels(x.parent, "X")[:], plain(raw[0]))
    assert np.array_equal(nz.open_labels(x.parent, "X", assignment=None)[:], raw[0])
    # the elements view holds multisets (fragments): a lookup is refused there
    with pytest.raises(ConfigurationError, match="labels view"):
        nz.N5Store(LocalStore(target.parent), assignment={1: 2})
    elements = zarr.open_array(nz.N5Store(LocalStore(target.parent, read_only=True)), path="labels/data/s0",
                               mode="r")
    assert elements.shape == raw[0].shape and elements.dtype != np.uint64
    assert nz.N5Store(LocalStore(target.parent)).assignment("labels/data/s0") is None


def test_n5_open_labels_view_stays_fragments(merged):
    target, raw, lookup = merged
    for k in range(LEVELS):
        dataset = n5.open(target / "data" / f"s{k}", multisets="labels")
        assert np.array_equal(dataset[:], raw[k]) and np.array_equal(np.asarray(dataset), raw[k])
        assert np.array_equal(n5.open(target / "data" / f"s{k}").read_labels(), raw[k])
        assert np.array_equal(dataset.to_dask().compute(), lookup(raw[k]))   # to_dask: segments


def test_each_dataset_is_looked_up_once_under_concurrent_reads(merged, monkeypatch):
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from n5mscodecs.n5 import dataset as module  # the resolver readers call (paintera installs it)

    target, raw, lookup = merged
    calls: dict[str, int] = {}
    guard = threading.Lock()
    real = module.assignment_resolver

    def counting(store, *args, **kwargs):
        with guard:
            calls[store.location] = calls.get(store.location, 0) + 1
        time.sleep(0.05)   # a slow store: every thread arrives while the first still looks
        return real(store, *args, **kwargs)

    store = nz.N5Store(LocalStore(target.parent, read_only=True), multisets="labels")
    monkeypatch.setattr(module, "assignment_resolver", counting)
    paths = [f"labels/data/s{k}" for k in range(LEVELS)] * 8
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(store.assignment, paths))
    assert all(f == lookup for f in found)
    assert sorted(calls.values()) == [1] * LEVELS
    arrays = [zarr.open_array(store, path=p, mode="r") for p in paths[:LEVELS]]
    with ThreadPoolExecutor(max_workers=4) as pool:   # chunk reads from many threads at once
        results = list(pool.map(lambda a: a[:], arrays * 4))
    assert all(np.array_equal(r, lookup(raw[k % LEVELS])) for k, r in enumerate(results))
    assert sorted(calls.values()) == [1] * LEVELS
