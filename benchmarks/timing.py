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


def interleaved_medians(functions, repeat):
    """Median wall seconds and median cores busy of each function (a dict name -> callable),
    timed in turn in every round after one warm-up call each: slow drifts of a noisy machine
    hit all of them alike."""
    for function in functions.values():
        function()  # warm up: page cache, pools, allocator
    times = {name: [] for name in functions}
    cores = {name: [] for name in functions}
    for _ in range(repeat):
        for name, function in functions.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            function()
            elapsed = time.perf_counter() - start
            times[name].append(elapsed)
            cores[name].append((time.process_time() - start_cpu) / elapsed)
    return {name: (statistics.median(times[name]), statistics.median(cores[name])) for name in functions}
