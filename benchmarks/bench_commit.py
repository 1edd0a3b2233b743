"""Commit benchmark: a 64^3 edit committed into 256^3 and 512^3 Paintera label sources (64^3
blocks, gzip, every level down to one block), as ``paintera.commit`` / ``n5ms commit`` do it.

    python benchmarks/bench_commit.py [--sizes 256 512] [--repeat 5] [--threads 2]

Reports per size the blocks read and rewritten per level, the lookup files patched and the
median time of ``--repeat`` commits (each paints new ids, so each changes every level), and the
ratio of the largest source's time to the smallest's. Targets (issue 41): the cost follows
the edit, not the volume: 512^3 <= 1.3x 256^3, and well under a second.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from n5mscodecs.paintera import commit, convert


def blocky_labels(size):
    """Cells of 16^3 voxels with distinct ids (a segmentation's block structure, cheap to make)."""
    axis = np.arange(size) // 16
    n = size // 16
    return (axis[:, None, None] * n * n + axis[None, :, None] * n + axis[None, None, :] + 1).astype(np.uint64)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--offset", type=int, default=100, help="the edit's corner on every axis (not aligned)")
    args = parser.parse_args(argv)
    times: dict[int, list[float]] = {}
    summaries = {}
    with tempfile.TemporaryDirectory() as work:
        sources = {}
        for size in args.sizes:
            sources[size] = Path(work, f"s{size}.n5", "labels")
            started = time.perf_counter()
            convert(blocky_labels(size), sources[size], block_size=64, threads=args.threads)
            print(f"{size}^3: converted in {time.perf_counter() - started:.1f} s")
        # the sizes' commits interleaved, so that a busy moment of the machine hits all of them
        for repeat in range(args.repeat):
            for size in args.sizes:
                edit = np.full((64, 64, 64), 10**6 + repeat, np.uint64)
                edit[::2] = 2 * 10**6 + repeat   # two new ids per commit
                summaries[size] = commit(sources[size], edit, (args.offset,) * 3, threads=args.threads)
                times.setdefault(size, []).append(summaries[size].seconds)
    medians = {size: statistics.median(values) for size, values in times.items()}
    for size, summary in summaries.items():
        print(f"{size}^3: levels {len(summary.blocks_written)}, blocks read {summary.blocks_read}, "
              f"rewritten {summary.blocks_written}, lookup files {summary.lookup_files}; "
              f"commit median {medians[size] * 1000:.0f} ms (min {min(times[size]) * 1000:.0f}, "
              f"max {max(times[size]) * 1000:.0f}, {args.repeat} commits)")
    smallest, largest = min(medians), max(medians)
    if largest != smallest:
        print(f"ratio {largest}^3 / {smallest}^3: {medians[largest] / medians[smallest]:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
