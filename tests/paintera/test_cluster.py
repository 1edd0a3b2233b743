"""Every job on a dask.distributed cluster (a LocalCluster of two worker processes): the work
runs as tasks on the workers, and the files written are byte for byte those local threads
write, on local disk and on S3 (a moto server). See n5mscodecs.paintera.cluster."""

import contextlib
import time

import numpy as np
import pytest

from n5mscodecs import ConfigurationError, n5, paintera
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.paintera import cluster as engines

distributed = pytest.importorskip("distributed")
fsspec = pytest.importorskip("fsspec")
key_split = pytest.importorskip("dask.utils").key_split


@pytest.fixture(scope="module")
def client(s3):
    """A client of two single-threaded worker processes, active (dask's default client) while
    this module runs; started after the S3 server, so the workers inherit its environment."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
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
    labels = voronoi_labels((40, 36, 20), 30, seed=5)
    n5.write_array(f"{where}/in.n5/labels", labels, chunks=(16, 16, 16), compression="raw")
    with tasks_run(client) as tasks:
        summary = paintera.convert(f"{where}/in.n5/labels", f"{where}/cluster.n5/labels", block_size=8,
                                   factors=[2, 2], scheduler=client)
    assert tasks.get("write_level_block", 0) == summary.blocks_total - 5 * 5 * 3   # s0's written by s1's tasks
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
    assert tasks["export_block"] == summary.blocks_present > 0 and summary.engine.startswith("dask.distributed")
    paintera.export_argmax(level, f"{where}/local{suffix}", scheduler="threads")
    assert files(f"{where}/cluster{suffix}") == files(f"{where}/local{suffix}")
    assert summary.assignment is not None   # the merge table went to the workers with the job


@pytest.mark.parametrize("multisets", [False, True], ids=["labels", "multisets"])
def test_to_ome_zarr_runs_on_the_workers_and_writes_what_threads_write(client, where, pyramid_source, multisets):
    assignment = None if multisets else "auto"   # label multisets hold fragments
    with tasks_run(client) as tasks:
        summary = paintera.to_ome_zarr(pyramid_source, f"{where}/cluster/l.zarr", multisets=multisets,
                                       assignment=assignment, scheduler=client)
    assert tasks["write_unit"] == summary.chunks_written > 0 and summary.engine.startswith("dask.distributed")
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
    assert code == 1 and tasks["check_blocks"] > 0
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
    # a task per edited block, per remade block, per block written and per level's lookup
    assert tasks["indexed"] == summary.blocks_read[0] + sum(written[1:]) + sum(written) + len(written)
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
    """The journal of the killed run (the ids each block held before) travels to the workers
    with the commit's work: the lookups they patch are those an uninterrupted commit writes."""
    import importlib

    commit_module = importlib.import_module("n5mscodecs.paintera.commit")
    labels = voronoi_labels((32, 32, 16), 25, seed=4)
    for name in ("killed", "expected"):
        paintera.convert(labels, tmp_path / f"{name}.n5" / "labels", block_size=8, factors=[2, 2], rule="java",
                         scheduler="threads")
    edit = np.full((12, 12, 6), 77, np.uint64)
    paintera.commit(tmp_path / "expected.n5" / "labels", edit, (3, 3, 3), scheduler="threads")
    written, original = [], commit_module.write_block

    def killed(*args, **kwargs):   # the run is killed after its third block
        if len(written) == 3:
            raise KeyboardInterrupt
        written.append(args[1:3])
        return original(*args, **kwargs)

    monkeypatch.setattr(commit_module, "write_block", killed)
    with pytest.raises(KeyboardInterrupt):
        paintera.commit(tmp_path / "killed.n5" / "labels", edit, (3, 3, 3), scheduler="threads", threads=1)
    monkeypatch.undo()
    assert len(written) == 3
    with tasks_run(client) as tasks:
        summary = paintera.commit(tmp_path / "killed.n5" / "labels", edit, (3, 3, 3), scheduler=client)
    assert summary.finished_interrupted and tasks["indexed"] > 0
    assert files(tmp_path / "killed.n5") == files(tmp_path / "expected.n5")
