"""Paintera jobs on a dask.distributed cluster at growing sizes (issue 50): what the client holds,
what a worker holds, the time, the tasks and the scheduler's overhead per task.

    python benchmarks/bench_cluster.py [--sizes 128 256 512] [--workers 2] [--edge 8]

For each size N a fresh process builds an N^3 segmentation of cells of ``--edge``^3 voxels
(offset so they straddle blocks; ids shuffled over 1..~(N/edge)^3, so the ids grow with the
volume: 4,913 at 128^3, 274,625 at 512^3), saved as an N5 dataset the workers read, and
runs on a cluster of a scheduler and ``--workers`` single-threaded workers, each in a process
of its own (``distributed.deploy.subprocess.SubprocessCluster``; a ``LocalCluster`` hosts its
scheduler in the client's process, whose memory would then count as the client's):

- ``convert`` (64^3 blocks, gzip, every level to one block, the lookup and maxId);
- ``export_argmax`` of s0 to uint64;
- ``commit`` of a 64^3 edit of new ids at the centre.

Reported per job: wall seconds; the client's peak Python allocations (tracemalloc) and peak
RSS growth over the job (sampled every 20 ms); the largest worker peak RSS (sampled in each
worker every 20 ms); the tasks the scheduler ran; the overhead per task: (wall x worker
threads - the tasks' compute time) / tasks, the slot time a task costs beyond its work.
A no-op calibration (300 empty tasks through the same windowed runner) gives the
cluster's floor per task. Jobs that take no ``scheduler=`` yet run locally and say so.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc

import numpy as np


def cell_labels(size, edge, seed=0):
    """Cells of ``edge``^3 voxels offset by ``edge // 2 - 1`` (so they straddle blocks), ids
    shuffled: id order says nothing of where a cell lies, as in a real segmentation."""
    shift = edge // 2 - 1
    axis = (np.arange(size) + shift) // edge
    n = int(axis[-1]) + 1
    ids = np.random.default_rng(seed).permutation(n ** 3).astype(np.uint64) + 1
    return n ** 3, ids, axis, n


def write_source(path, size, edge):
    """The labels as an N5 uint64 dataset (64^3 blocks, raw), written block by block: the
    workers read it (an ``.npy`` would be memory-mapped, and its pages count in their RSS)."""
    from n5mscodecs import n5

    count, ids, axis, n = cell_labels(size, edge)
    dataset = n5.create_array_dataset(path, (size,) * 3, (64,) * 3, "uint64", compression={"type": "raw"})
    for position in np.ndindex(*dataset.grid_shape):
        x, y, z = (axis[region] for region in dataset.block_region(position))
        dataset.write_block(position, ids[x[:, None, None] * n * n + y[None, :, None] * n + z[None, None, :]])
    return count


class RssSampler:
    """The peak RSS of this process over a block of code (read from /proc every 20 ms)."""

    def __enter__(self):
        self.peak, self.base, self._stop = 0, _rss(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss())
            time.sleep(0.02)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _worker_sampler_start():
    """(on a worker) sample its RSS every 20 ms into a module global, once per worker."""
    import builtins

    if getattr(builtins, "_bench_peak", None) is None:
        builtins._bench_peak = [0]

        def run():
            while True:
                builtins._bench_peak[0] = max(builtins._bench_peak[0], _rss())
                time.sleep(0.02)

        threading.Thread(target=run, daemon=True).start()
    return True


def _worker_peak_reset():
    import builtins

    peak, builtins._bench_peak[0] = builtins._bench_peak[0], _rss()
    return peak


def _count_plugin():
    from distributed.diagnostics.plugin import SchedulerPlugin

    class TaskCount(SchedulerPlugin):
        name = "bench-task-count"

        def __init__(self):
            self.tasks, self.compute = 0, 0.0

        def transition(self, key, start, finish, *args, **kwargs):
            if finish in ("memory", "erred") and start == "processing":
                self.tasks += 1
                for span in kwargs.get("startstops") or ():
                    if span.get("action") == "compute":
                        self.compute += span["stop"] - span["start"]

    return TaskCount()


def _read_count(dask_scheduler):
    plugin = dask_scheduler.plugins["bench-task-count"]
    tasks, compute = plugin.tasks, plugin.compute
    plugin.tasks, plugin.compute = 0, 0.0
    return tasks, compute


NOOPS = 300


def _noop(shared, item):
    return 1


def measure(client, threads, name, job, trace=True):
    """Run ``job()`` and return its measures (``trace``: with tracemalloc, which slows the client)."""
    client.run(_worker_peak_reset)
    client.run_on_scheduler(_read_count)
    gc.collect()
    if trace:
        tracemalloc.start()
    with RssSampler() as rss:
        start = time.perf_counter()
        where = job()
        wall = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1] if trace else 0
    tracemalloc.stop()
    tasks, compute = client.run_on_scheduler(_read_count)
    workers = client.run(_worker_peak_reset)
    return {"job": name, "where": where, "seconds": round(wall, 2), "client_traced_mb": round(traced / 2**20, 2),
            "client_rss_growth_mb": round((rss.peak - rss.base) / 2**20, 1),
            "worker_peak_rss_mb": round(max(workers.values()) / 2**20, 1), "tasks": tasks,
            "compute_seconds": round(compute, 2),
            "overhead_ms_per_task": round(1e3 * max(0.0, wall * threads - compute) / tasks, 2) if tasks else None}


def one_size(size, workers, edge, work):
    """Everything for one size, in this (fresh) process; prints one JSON line per job."""
    import distributed
    from distributed.deploy.subprocess import SubprocessCluster

    from n5mscodecs import paintera
    from n5mscodecs.paintera.cluster import engine_for, run_tasks

    source = os.path.join(work, f"labels-{size}.n5", "s0")
    n_ids = write_source(source, size, edge)
    target = os.path.join(work, f"p{size}.n5", "labels")
    exported = os.path.join(work, f"argmax{size}.n5", "s0")

    def on_cluster(function, client):
        """scheduler=client when ``function`` takes it (else it runs where it runs by default)."""
        if "scheduler" in inspect.signature(function).parameters:
            return {"scheduler": client}, "cluster"
        return {}, "default (no scheduler= yet)"

    with SubprocessCluster(n_workers=workers, worker_kwargs={"nthreads": 1}, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.wait_for_workers(workers)
        client.register_plugin(_count_plugin())
        client.run(_worker_sampler_start)
        threads = sum(client.nthreads().values())
        rows = []

        def calibrate():
            with engine_for(client) as engine:
                run_tasks(engine, _noop, None, range(NOOPS))
            return "cluster"

        rows.append(measure(client, threads, f"no-op x{NOOPS}", calibrate, trace=False))

        def convert():
            options, where = on_cluster(paintera.convert, client)
            summary = paintera.convert(source, target, block_size=64, **options)
            assert summary.n_labels == n_ids, (summary.n_labels, n_ids)
            return where

        def export():
            options, where = on_cluster(paintera.export_argmax, client)
            paintera.export_argmax(os.path.join(target, "data", "s0"), exported, **options)
            return where

        def commit():
            options, where = on_cluster(paintera.commit, client)
            edit = np.arange(64 ** 3, dtype=np.uint64).reshape(64, 64, 64) // 4096 + 10 ** 9
            paintera.commit(target, edit, (size // 2 - 32,) * 3, **options)
            return where

        rows += [measure(client, threads, name, job) for name, job in
                 (("convert", convert), ("export_argmax", export), ("commit", commit))]
    for row in rows:
        print(json.dumps({"size": size, "ids": n_ids, **row}), flush=True)


def unit_costs(size, edge, work):
    """Seconds per unit of each phase at one local thread (the cost model's inputs)."""
    from n5mscodecs import n5, paintera
    from n5mscodecs.paintera.cluster import LOCAL, engine_for
    from n5mscodecs.paintera.mapping_build import build_label_to_block_mapping
    from n5mscodecs.paintera.sources import check_source_labels, open_label_source

    source = os.path.join(work, f"labels-{size}.n5", "s0")
    n_ids = write_source(source, size, edge)
    target = os.path.join(work, f"u{size}.n5", "labels")
    with engine_for(LOCAL, threads=1) as engine:
        start = time.perf_counter()
        check_source_labels(open_label_source(source), (64, 64, 64), "reject", engine)
        check = time.perf_counter() - start
        start = time.perf_counter()
        summary = paintera.convert(source, target, block_size=64, scheduler=LOCAL, threads=1)
        whole = time.perf_counter() - start
        store = n5.open_store(target)
        compression = n5.read_attributes(os.path.join(target, "data", "s0"))["compression"]
        lookups, pairs, s0 = 0.0, 0, None
        for level in range(len(summary.level_shapes)):
            start = time.perf_counter()
            found = build_label_to_block_mapping(engine, store, level, 10000, compression)
            lookups += time.perf_counter() - start
            pairs += found.pairs
            s0 = s0 or found
    blocks = summary.blocks_written
    print(json.dumps({
        "size": size, "ids": n_ids, "s0_blocks": s0.blocks, "pairs_s0": s0.pairs, "pairs_all_levels": pairs,
        "blocks_all_levels": blocks,
        "check_ns_per_voxel": round(1e9 * check / size ** 3, 2),
        "convert_ms_per_block": round(1e3 * (whole - check - lookups) / blocks, 2),
        "lookup_us_per_pair": round(1e6 * lookups / max(1, pairs), 2),
        "lookup_ms_per_block": round(1e3 * lookups / blocks, 3)}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--edge", type=int, default=8)
    parser.add_argument("--unit-costs", type=int, metavar="SIZE",
                        help="only the cost model's unit costs, at one local thread, for a SIZE^3 volume")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one_size(args.one, args.workers, args.edge, args.work)
        return
    if args.unit_costs:
        work = tempfile.mkdtemp(prefix="bench-cluster-units-")
        try:
            unit_costs(args.unit_costs, args.edge, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    results = []
    for size in args.sizes:
        work = tempfile.mkdtemp(prefix=f"bench-cluster-{size}-")
        try:
            run = subprocess.run([sys.executable, __file__, "--one", str(size), "--workers", str(args.workers),
                                  "--edge", str(args.edge), "--work", work],
                                 capture_output=True, text=True, check=False)
            if run.returncode:
                sys.stderr.write(run.stderr[-4000:])
                raise SystemExit(f"size {size} failed")
            for line in run.stdout.splitlines():
                if line.startswith("{"):
                    results.append(json.loads(line))
                    print(line, flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    _table(results)


def _table(results):
    columns = ["size", "ids", "job", "where", "seconds", "tasks", "overhead_ms_per_task", "client_traced_mb",
               "client_rss_growth_mb", "worker_peak_rss_mb"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in results:
        print("| " + " | ".join(str(row.get(c)) for c in columns) + " |")


if __name__ == "__main__":
    main()
