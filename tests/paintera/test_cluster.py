"""Every job on a dask.distributed cluster (a LocalCluster of two worker processes): the work
runs as tasks on the workers, and the files written are byte for byte those local threads
write, on local disk and on S3 (a moto server). See n5mscodecs.paintera.cluster."""

import contextlib
import gc
import pickle
import time
import tracemalloc

import numpy as np
import pytest
from support import commit_killed_after_blocks

from n5mscodecs import ConfigurationError, StorageError, n5, paintera
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.paintera import cluster as engines

pytestmark = pytest.mark.slow  # run once per CI run: see pyproject's markers

distributed = pytest.importorskip("distributed")
fsspec = pytest.importorskip("fsspec")
key_split = pytest.importorskip("dask.utils").key_split


@pytest.fixture(scope="module")
def client(s3):
    """A client of two single-threaded worker processes of 2 GiB, active (dask's default client)
    while this module runs; started after the S3 server, so the workers inherit its environment."""
    with (distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                   host="127.0.0.1", memory_limit="2GiB") as cluster,
          distributed.Client(cluster) as client):
        yield client


@contextlib.contextmanager
def tasks_run(client):
    """Counts of the tasks the workers ran meanwhile, by function name (the key's prefix)."""
    counts: dict[str, int] = {}
    with distributed.get_task_stream(client) as stream:
        yield counts
    for record in stream.data:
        name = key_split(record["key"])
        counts[name] = counts.get(name, 0) + 1


def files(location):
    """{path below ``location``: bytes} of every file there (local or S3)."""
    fs, root = fsspec.core.url_to_fs(str(location))
    return {path[len(root):]: fs.cat_file(path) for path in fs.find(root)}


@pytest.fixture(scope="module")
def pyramid_source(tmp_path_factory):
    """A three-level Paintera source on local disk with a fragment-segment-assignment."""
    root = tmp_path_factory.mktemp("source")
    labels = voronoi_labels((48, 40, 24), 40, seed=11)
    paintera.convert(labels, root / "p.n5" / "labels", block_size=8, factors=[2, 2], scheduler="threads")
    paintera.write_assignment(root / "p.n5" / "labels", {1: 2, 3: 2, 7: 9})
    return root / "p.n5" / "labels"


@pytest.fixture(params=["local", "s3"])
def where(request, tmp_path):
    """A place to write into: a local directory, or a fresh prefix in the S3 bucket."""
    if request.param == "local":
        return str(tmp_path)
    request.getfixturevalue("s3")
    return f"s3://bucket/{request.node.name.replace('[', '-').rstrip(']')}"


# ---------------------------------------------------------------------------------------------
# the engine


def test_an_active_client_is_used_by_default_and_threads_opts_out(client):
    with engines.engine_for(None) as engine:
        assert engine.client is client and "dask.distributed" in engine.description
        assert engine.workers == 2
    with engines.engine_for("threads", threads=3) as engine:
        assert engine.client is None and engine.description == "local threads (3)"
    with engines.engine_for(client.scheduler.address) as engine:   # an address: a client of its own, closed after
        assert engine.client is not client and engine.client.status == "running"
    assert engine.client.status == "closed" and client.status == "running"


def test_a_scheduler_that_is_neither_address_nor_client_is_refused():
    with pytest.raises(ConfigurationError, match="scheduler: a dask.distributed Client"):
        with engines.engine_for(4):
            pass


def _record(done, item):
    done.append(item)
    return item * item


def test_run_tasks_consumes_items_lazily_with_a_bounded_window():
    done: list[int] = []
    in_flight = []

    def items():
        for i in range(100):
            in_flight.append(i - len(done))   # submitted, not finished
            yield i

    with engines.engine_for("threads", threads=2) as engine:
        total = engines.run_tasks(engine, _record, done, items(), window=5)
    assert total == sum(i * i for i in range(100)) and sorted(done) == list(range(100))
    assert max(in_flight) <= 4   # the next is submitted only when fewer than 5 are in flight


def _fail_on(bad, item):
    if item == bad:
        raise RuntimeError(f"task {item} failed")
    return 1


def test_run_tasks_reduces_with_the_given_function_and_raises_the_first_failure(client):
    with engines.engine_for(client) as engine:
        assert engines.run_tasks(engine, _fail_on, -1, range(10), reduce=lambda seen, r: seen + [r],
                                 initial=[]) == [1] * 10
        with pytest.raises(RuntimeError, match="task 3 failed"):
            engines.run_tasks(engine, _fail_on, 3, iter(range(10)))


def test_a_shared_value_is_scattered_once_and_released_after_the_job(client):
    big = np.arange(2**20, dtype=np.uint64)   # 8 MiB
    with engines.engine_for(client) as engine, engine.shared(big) as shared:
        assert isinstance(shared, distributed.Future) and shared.key in client.who_has()
        assert engines.run_tasks(engine, _sum_of, (shared, 1), range(8)) == 8 * int(big.sum()) + 8
    assert released(client, shared.key)


def released(client, key):
    """Whether the scheduler forgets ``key`` (releases reach it asynchronously: up to 30 s)."""
    for _ in range(600):
        if key not in client.who_has():
            return True
        time.sleep(0.05)
    return False


def _sum_of(shared, item):
    values, one = shared
    return int(values.sum()) + one


# ---------------------------------------------------------------------------------------------
# convert and export_argmax


def test_convert_runs_on_the_workers_and_writes_what_threads_write(client, where):
    labels = voronoi_labels((24, 20, 16), 20, seed=5)
    n5.write_array(f"{where}/in.n5/labels", labels, chunks=(16, 16, 16), compression="raw")
    with tasks_run(client) as tasks:
        summary = paintera.convert(f"{where}/in.n5/labels", f"{where}/cluster.n5/labels", block_size=8,
                                   factors=[2, 2], scheduler=client)
    assert tasks.get("write_level_block", 0) == summary.blocks_total - 3 * 3 * 2   # s0's written by s1's tasks
    assert summary.engine.startswith("dask.distributed")
    local = paintera.convert(f"{where}/in.n5/labels", f"{where}/local.n5/labels", block_size=8, factors=[2, 2],
                             scheduler="threads")
    assert local.engine.startswith("local threads")
    assert files(f"{where}/cluster.n5") == files(f"{where}/local.n5")


def test_an_in_memory_source_is_scattered_to_the_workers_with_the_job(client, tmp_path):
    labels = voronoi_labels((32, 32, 16), 20, seed=2)
    with tasks_run(client) as tasks:
        paintera.convert(labels, tmp_path / "c.n5" / "labels", block_size=8, factors=[2], scheduler=client)
    paintera.convert(labels, tmp_path / "t.n5" / "labels", block_size=8, factors=[2], scheduler="threads")
    assert tasks["write_level_block"] == 2 * 2 * 1   # s1's tasks (each writes its s0 blocks too)
    assert files(tmp_path / "c.n5") == files(tmp_path / "t.n5")


@pytest.mark.parametrize("suffix", [".n5", ".zarr"])
def test_export_argmax_runs_on_the_workers_and_writes_what_threads_write(client, where, pyramid_source, suffix):
    level = pyramid_source / "data" / "s0"
    with tasks_run(client) as tasks:
        summary = paintera.export_argmax(level, f"{where}/cluster{suffix}", scheduler=client)
    present = n5.open(level).present_blocks()   # 6 x 5 x 3 blocks
    # a task per directory of the grid's first two axes (rows of 3 blocks: 90 blocks / 2 worker
    # threads / 4 tasks each leave at most 11 blocks a task), listing its blocks on the worker
    assert tasks["export_subtree"] == len({grid[:2] for grid in present}) == 30
    assert summary.blocks_present == len(present) and summary.engine.startswith("dask.distributed")
    paintera.export_argmax(level, f"{where}/local{suffix}", scheduler="threads")
    assert files(f"{where}/cluster{suffix}") == files(f"{where}/local{suffix}")
    assert summary.assignment is not None   # the merge table went to the workers with the job


@pytest.mark.parametrize("multisets", [False, True], ids=["labels", "multisets"])
def test_to_ome_zarr_runs_on_the_workers_and_writes_what_threads_write(client, where, pyramid_source, multisets):
    assignment = None if multisets else "auto"   # label multisets hold fragments
    with tasks_run(client) as tasks:
        summary = paintera.to_ome_zarr(pyramid_source, f"{where}/cluster/l.zarr", multisets=multisets,
                                       assignment=assignment, scheduler=client)
    # a task per few chunks (multisets) or shards (labels): at most 16, and 4 per worker thread or more
    assert summary.chunks_written > 0 and summary.engine.startswith("dask.distributed")
    assert summary.chunks_total / 16 <= tasks["write_batch"] <= summary.chunks_total
    assert multisets == (tasks["write_batch"] < summary.chunks_total)   # labels: a few shards, a task each
    paintera.to_ome_zarr(pyramid_source, f"{where}/local/l.zarr", multisets=multisets, assignment=assignment,
                         scheduler="threads")   # the same name: the multiscale is named after it
    assert files(f"{where}/cluster/l.zarr") == files(f"{where}/local/l.zarr")
    assert (summary.assignment is None) == multisets


def test_info_check_reads_every_block_on_the_workers(client, pyramid_source, tmp_path, capsys):
    import shutil

    from n5mscodecs.cli import main

    copy = tmp_path / "p.n5"
    shutil.copytree(pyramid_source.parent, copy)
    bad_block = copy / "labels" / "data" / "s0" / "1" / "2" / "0"
    bad_block.write_bytes(bad_block.read_bytes()[:20])   # truncated
    with tasks_run(client) as tasks:
        code = main(["info", str(copy / "labels"), "--check", "--scheduler", client.scheduler.address])
    cluster_out = capsys.readouterr().out
    assert code == 1 and tasks["check_subtree"] > 0
    assert main(["info", str(copy / "labels"), "--check", "--scheduler", "threads"]) == 1
    local_out = capsys.readouterr().out
    bad = [line for line in cluster_out.splitlines() if "BAD" in line]
    assert len(bad) == 1 and "s0/1/2/0" in bad[0] and bad == [line for line in local_out.splitlines() if "BAD" in line]
    assert " on dask.distributed tcp://" in cluster_out and " on local threads" in local_out


def test_commit_runs_on_the_workers_and_writes_what_threads_write(client, where, tmp_path_factory):
    labels = voronoi_labels((32, 32, 16), 25, seed=4)
    converted = tmp_path_factory.mktemp("converted") / "p.n5"
    paintera.convert(labels, converted / "labels", block_size=8, factors=[2, 2], rule="java", scheduler="threads")
    fs, root = fsspec.core.url_to_fs(where)
    for name in ("cluster", "local"):   # two copies of one source
        fs.put(str(converted), f"{root}/{name}.n5", recursive=True)
    edit = np.full((6, 9, 5), 77, np.uint64)
    with tasks_run(client) as tasks:
        summary = paintera.commit(f"{where}/cluster.n5/labels", edit, (3, 10, 4), scheduler=client)
    local = paintera.commit(f"{where}/local.n5/labels", edit, (3, 10, 4), scheduler="threads")
    written = summary.blocks_written
    # a task per edited block, per remade block, per level's lookup check, per block placed and
    # per level's lookup patch
    assert tasks["indexed"] == summary.blocks_read[0] + sum(written[1:]) + 2 * len(written) + sum(written)
    assert summary.engine.startswith("dask.distributed") and local.engine.startswith("local threads")
    assert files(f"{where}/cluster.n5") == files(f"{where}/local.n5")


def test_a_commit_into_plain_levels_on_the_workers(client, tmp_path):
    rng = np.random.default_rng(8)
    labels = rng.integers(1, 6, (16, 16, 8)).astype(np.uint64)
    for name in ("cluster", "local"):
        source = tmp_path / f"{name}.n5" / "labels"
        paintera.convert(labels, source, block_size=8, factors=[2], rule="java", scheduler="threads")
        s1 = n5.open(source / "data" / "s1").read_labels(rule="java")
        for level, data in enumerate([labels, s1]):   # the same source with plain levels
            attributes = n5.read_attributes(source / "data" / f"s{level}")
            n5.write_array(source / "data" / f"s{level}", data, chunks=8, overwrite=True)
            extra = {"downsamplingFactors": attributes["downsamplingFactors"]} if level else {}
            n5.write_attributes(source / "data" / f"s{level}", {**n5.read_attributes(source / "data" / f"s{level}"),
                                                                 **extra})
    edit = np.full((4, 4, 4), 9, np.uint64)
    with tasks_run(client) as tasks:
        paintera.commit(tmp_path / "cluster.n5" / "labels", edit, (1, 1, 1), scheduler=client)
    paintera.commit(tmp_path / "local.n5" / "labels", edit, (1, 1, 1), scheduler="threads")
    assert tasks["indexed"] > 0 and files(tmp_path / "cluster.n5") == files(tmp_path / "local.n5")


def test_a_killed_commit_finished_on_the_workers_equals_the_uninterrupted_one(client, tmp_path, monkeypatch):
    """The journal of the killed run (the ids that left and entered each block) reaches the
    workers with the lookup tasks: the lookups they patch are those an uninterrupted commit
    writes."""
    labels = voronoi_labels((32, 32, 16), 25, seed=4)
    for name in ("killed", "expected"):
        paintera.convert(labels, tmp_path / f"{name}.n5" / "labels", block_size=8, factors=[2, 2], rule="java",
                         scheduler="threads")
    edit = np.full((12, 12, 6), 77, np.uint64)
    paintera.commit(tmp_path / "expected.n5" / "labels", edit, (3, 3, 3), scheduler="threads")
    written = commit_killed_after_blocks(monkeypatch, 3, tmp_path / "killed.n5" / "labels", edit, (3, 3, 3),
                                         scheduler="threads", threads=1)
    assert len(written) == 3
    with tasks_run(client) as tasks:
        summary = paintera.commit(tmp_path / "killed.n5" / "labels", edit, (3, 3, 3), scheduler=client)
    assert summary.finished_interrupted and tasks["indexed"] > 0
    assert files(tmp_path / "killed.n5") == files(tmp_path / "expected.n5")


def _commit_client_peak(client, root, edge, n_labels):
    """Peak bytes traced in this (the client's) process while a fixed 8^3 edit of a new id
    is committed at the centre of an ``edge``^3 source of ``n_labels`` cells, on the cluster;
    and the commit's summary."""
    source = root / f"c{edge}.n5" / "labels"
    levels = (edge // 8).bit_length() - 1   # down to one block: its lists hold every id
    paintera.convert(voronoi_labels((edge,) * 3, n_labels, seed=edge), source, block_size=8, rule="java",
                     factors=[2] * levels, scheduler="threads")
    edit = np.full((8, 8, 8), 10**6, np.uint64)
    gc.collect()
    tracemalloc.start()
    try:
        summary = paintera.commit(source, edit, (edge // 2 - 4,) * 3, scheduler=client)
        return tracemalloc.get_traced_memory()[1], summary
    finally:
        tracemalloc.stop()


def test_a_commits_client_memory_does_not_grow_with_the_source(client, tmp_path):
    """The blocks a commit makes stay on the workers (staged in the source); the client holds
    what changed, an edit's worth: its peak does not follow the volume or the ids."""
    _commit_client_peak(client, tmp_path, 16, 20)   # the first job's one-off costs
    small, small_summary = _commit_client_peak(client, tmp_path, 32, 1000)
    large, large_summary = _commit_client_peak(client, tmp_path, 64, 8000)   # 8x the voxels and the ids
    assert large_summary.blocks_written == [8, 8, 8, 1] and large_summary.max_id == 10**6
    assert small_summary.blocks_written == [8, 8, 1]
    assert large <= 2 * small, (small, large)


# ---------------------------------------------------------------------------------------------
# the merge table: once per worker, not inside the graphs


def _cached_tokens():
    return list(engines._process_cache)


def graph_bytes(array):
    return len(pickle.dumps(dict(array.__dask_graph__())))


def test_a_stored_merge_table_stays_out_of_the_graphs_and_is_read_once_per_worker(client, tmp_path):
    da = pytest.importorskip("dask.array")
    from n5mscodecs.zarr import open_labels

    labels = voronoi_labels((64, 64, 32), 50, seed=1)
    source = tmp_path / "p.n5" / "labels"
    paintera.convert(labels, source, block_size=16, factors=[2], scheduler="threads")
    fragments = np.arange(1, 4 * 10**6 + 1, dtype=np.uint64)   # 4·10^6 pairs: 64 MB
    paintera.write_assignment(source, paintera.FragmentSegmentAssignment(fragments, fragments // 7 + 10**7))
    pyramid, fragments_only = paintera.open_pyramid(source), paintera.open_pyramid(source, assignment=None)
    level = n5.open(source / "data" / "s0")
    zarr_view = da.from_zarr(open_labels(source / "data" / "s0"))
    zarr_view[:1, :1, :1].compute(scheduler="sync")   # its lookup found ("auto" looks on first read)
    for view, bare in [(pyramid.levels[0], fragments_only.levels[0]), (pyramid.levels[1], fragments_only.levels[1]),
                       (level.to_dask(), level.to_dask(assignment=None)),
                       (zarr_view, da.from_zarr(open_labels(source / "data" / "s0", assignment=None)))]:
        assert graph_bytes(view) - graph_bytes(bare) <= 8 * 2**20
    expected = pyramid.assignment.apply(labels)
    assert np.array_equal(pyramid.levels[0].compute(), expected)   # on the cluster: the active client
    assert np.array_equal(level.to_dask().compute(), expected)
    assert np.array_equal(zarr_view.compute(), expected)
    tokens = client.run(_cached_tokens)
    assert all(pyramid.assignment.token in tokens[worker] for worker in tokens)   # read by each, kept
    assert pyramid.assignment.token not in engines._process_cache   # the scheduler (here) passed it on unread


def test_a_merge_table_changed_after_the_view_was_made_is_refused_on_the_workers(client, tmp_path):
    labels = voronoi_labels((32, 32, 16), 10, seed=3)
    source = tmp_path / "p.n5" / "labels"
    paintera.convert(labels, source, block_size=16, scheduler="threads")
    paintera.write_assignment(source, {1: 2})
    view = paintera.open_pyramid(source).levels[0]
    paintera.write_assignment(source, {1: 3})
    with pytest.raises(StorageError, match="fragment-segment-assignment changed after the view"):
        view.compute()
    assert np.array_equal(paintera.open_pyramid(source).levels[0].compute(),
                          paintera.FragmentSegmentAssignment.from_pairs({1: 3}).apply(labels))


# ---------------------------------------------------------------------------------------------
# sources that travel


def test_a_dask_array_source_is_computed_on_the_workers(client, tmp_path):
    da = pytest.importorskip("dask.array")
    zarr = pytest.importorskip("zarr")
    labels = voronoi_labels((40, 32, 24), 20, seed=9)
    stored = zarr.create_array(str(tmp_path / "l.zarr"), shape=labels.shape[::-1], chunks=(8, 16, 16),
                               dtype=labels.dtype)
    stored[:] = labels.T
    source = da.from_zarr(str(tmp_path / "l.zarr")).T   # N5 order, as an ndarray source
    with tasks_run(client) as tasks:
        paintera.convert(source, tmp_path / "c.n5" / "labels", block_size=8, factors=[2], scheduler=client)
    paintera.convert(source, tmp_path / "t.n5" / "labels", block_size=8, factors=[2], scheduler="threads")
    assert tasks["write_level_block"] == 3 * 2 * 2
    assert files(tmp_path / "c.n5") == files(tmp_path / "t.n5")
    assert np.array_equal(paintera.open_pyramid(tmp_path / "c.n5" / "labels").levels[0].compute(), labels)


def test_a_stored_merge_table_pickles_small_and_unpickles_lazily(tmp_path):
    import gc

    source = tmp_path / "p.n5" / "labels"
    paintera.convert(np.arange(64, dtype=np.uint64).reshape(4, 4, 4), source, block_size=4, scheduler="threads")
    pairs = {int(f): 1000 + int(f) % 3 for f in range(1, 20000)}
    paintera.write_assignment(source, pairs)
    stored = paintera.read_assignment(source)
    data = pickle.dumps(stored)
    assert len(data) < 2000 < stored.fragments.nbytes   # its location and hash, not its 320 KB of pairs
    assert pickle.loads(data).to_dict() == pairs
    assert stored.token not in engines._process_cache   # in the process that pickled it: that one, not read again
    del stored
    gc.collect()
    lazy = pickle.loads(data)   # nothing read yet; passed on (a worker sending it to another) as it came
    again = pickle.loads(pickle.dumps(lazy))
    assert len(pickle.dumps(lazy)) == len(data) and again.to_dict() == lazy.to_dict() == pairs
    in_memory = paintera.FragmentSegmentAssignment.from_pairs(pairs)   # no location: its pairs travel
    assert pickle.loads(pickle.dumps(in_memory)) == in_memory and len(pickle.dumps(in_memory)) > len(data)


def _write_then_fail(directory, item):
    if item == 0:
        raise RuntimeError("the first task failed")
    time.sleep(0.05)
    (directory / f"{item}.written").write_bytes(b"x")
    return 1


@pytest.mark.parametrize("scheduler", ["threads", "cluster"])
def test_after_a_failure_no_task_still_writes(client, tmp_path, scheduler):
    """What a caller clears after run_tasks raised stays cleared: no task of it runs then."""
    with engines.engine_for(client if scheduler == "cluster" else "threads", threads=2) as engine:
        with pytest.raises(RuntimeError, match="the first task failed"):
            engines.run_tasks(engine, _write_then_fail, tmp_path, range(50), window=6)
        written = sorted(path.name for path in tmp_path.iterdir())
        time.sleep(0.5)   # a task still running would write meanwhile
        assert sorted(path.name for path in tmp_path.iterdir()) == written and len(written) < 49


def test_the_commands_take_a_scheduler_and_say_where_they_ran(client, pyramid_source, tmp_path, capsys):
    from n5mscodecs.cli import main

    address = client.scheduler.address
    np.save(tmp_path / "l.npy", voronoi_labels((16, 16, 8), 5, seed=1).T)
    np.save(tmp_path / "edit.npy", np.full((2, 3, 4), 5, np.uint64))
    commands = [["convert", str(tmp_path / "l.npy"), str(tmp_path / "c.n5" / "labels"), "--block-size", "8"],
                ["argmax", str(pyramid_source / "data" / "s0"), str(tmp_path / "a.n5")],
                ["ome-zarr", str(pyramid_source), str(tmp_path / "o.zarr")],
                ["commit", str(tmp_path / "c.n5" / "labels"), str(tmp_path / "edit.npy"), "--offset", "1,2,3"]]
    for command in commands:
        with tasks_run(client) as tasks:
            assert main([*command, "--scheduler", address, "--quiet"] if command[0] != "commit"
                        else [*command, "--scheduler", address]) == 0
        assert sum(tasks.values()) > 0 and f"on dask.distributed {address}" in capsys.readouterr().out, command
