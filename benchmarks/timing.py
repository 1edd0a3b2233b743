"""Shared timing helper for the benchmark scripts (run them from the repository root)."""

import statistics
import time


def median_time(fn, repeat):
    """Median wall time of ``repeat`` calls of ``fn`` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
