"""Chunk workers: a shared thread pool, the split of threads between chunks and each
chunk's hi/lo kernel, and the loop that hands ranges of chunks to the workers."""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from .._threads import available_cpus

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    #: Called once per worker thread; returns that worker's ``process(first, stop)``.
    StartWorker: TypeAlias = Callable[[], Callable[[int, int], None]]

# Below this many decompressed bytes a thread hand-off costs more than it saves.
PARALLEL_MIN_BYTES = 1 << 18

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_workers = 0


def _reset_pool_after_fork():
    global _pool, _pool_workers
    _pool, _pool_workers = None, 0


os.register_at_fork(after_in_child=_reset_pool_after_fork)


def _executor(workers):
    """Shared pool with at least ``workers`` threads.

    A bigger request replaces the pool without shutting the old one down: a
    concurrent call may still be submitting to it; it goes away with its last
    reference.
    """
    global _pool, _pool_workers
    with _pool_lock:
        if _pool is None or _pool_workers < workers:
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="n5mscodecs-chunked")
            _pool_workers = workers
        return _pool


def thread_split(threads: int | None, chunk_count: int, total_bytes: int) -> tuple[int, int]:
    """``(chunk workers, kernel threads)``: threads go to chunks first; with fewer
    chunks than threads, the hi/lo kernel of each chunk gets the rest."""
    if threads is None:
        if total_bytes < PARALLEL_MIN_BYTES:
            return 1, 1
        threads = available_cpus()
    workers = max(1, min(threads, chunk_count))
    return workers, max(1, threads // workers)


def run_chunks(start_worker: StartWorker, chunk_count: int, workers: int) -> None:
    """Process all chunks on ``workers`` threads.

    Each worker calls ``start_worker()`` once for its ``process(first, stop)``
    callable (per-thread codec contexts, scratch and staging live in it), then
    pulls small batches of chunks from a shared counter, so a slow core does
    not hold up the rest. Every chunk goes to a fixed place, so the result
    does not depend on the scheduling.
    """
    if workers == 1:
        start_worker()(0, chunk_count)
        return
    batch = max(1, chunk_count // (workers * 64))
    starts = itertools.count(0, batch)  # next() is atomic under the GIL
    failed = threading.Event()  # one bad chunk stops the others early

    def drain():
        process = None
        for first in starts:
            if first >= chunk_count or failed.is_set():
                return
            try:
                if process is None:
                    process = start_worker()
                process(first, min(first + batch, chunk_count))
            except BaseException:
                failed.set()
                raise

    pool = _executor(workers - 1)
    futures = [pool.submit(drain) for _ in range(workers - 1)]
    try:
        drain()  # the calling thread is one of the workers, so a busy pool cannot stall us
    finally:
        # Helpers still queued behind other callers' work have nothing left to do.
        errors = [future.exception() for future in futures if not future.cancel()]
    for error in errors:
        if error is not None:
            raise error
