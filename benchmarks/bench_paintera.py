"""Paintera pyramid benchmark: 512^3 uint64 segmentation (~10k labels), 64^3 blocks, 4 levels.

    python benchmarks/bench_paintera.py [--size 512] [--labels 10000] [--repeat 3] [--threads 2]

Reports end-to-end ``convert`` throughput (labels in memory -> pyramid with
unique-labels and label-to-block-mapping on disk) for a few compressions, and
compares the label multiset work (create from labels, downsample three times
by 2, serialize every block of every level) against python-elf's
``create_multiset_from_labels`` + ``downsample_multiset`` + ``serialize_multiset``
on the same blocks, when python-elf is installed. Medians of ``--repeat`` runs.
Targets (issue 5): >= 30 Mvoxel/s end to end, >= 5x elf.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile

import numpy as np
from timing import median_time

from n5mscodecs import LabelMultisetArray
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.paintera import convert
from n5mscodecs.payload import n5_label_multiset_encode


def blocks_of(labels, edge):
    grid = [-(-n // edge) for n in labels.shape]
    return [labels[tuple(slice(g * edge, (g + 1) * edge) for g in pos)] for pos in np.ndindex(*grid)]


def ours_multiset_work(blocks):
    """The per-block label multiset work of the pyramid: 8^3 source blocks of 64^3 per s3 block."""
    for block in blocks:
        level = LabelMultisetArray.from_labels(block)
        n5_label_multiset_encode(level)
        for _ in range(3):
            level = level.downsample(2)
            n5_label_multiset_encode(level)


def elf_multiset_work(blocks):
    from elf.label_multiset import create_multiset_from_labels, downsample_multiset, serialize_multiset

    for block in blocks:
        level = create_multiset_from_labels(block)
        serialize_multiset(level)
        for _ in range(3):
            level = downsample_multiset(level, (2, 2, 2))
            serialize_multiset(level)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--labels", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workdir", default=None,
                        help="where the pyramids go (default: a temporary directory; /dev/shm takes the disk out)")
    args = parser.parse_args()
    shape = (args.size,) * 3
    labels = voronoi_labels(shape, args.labels, seed=0)
    voxels = labels.size
    print(f"{shape} Voronoi segmentation, {np.unique(labels).size} labels, 64^3 blocks, 4 levels, "
          f"{args.threads} threads, median of {args.repeat}")
    workdir = tempfile.mkdtemp(prefix="bench-paintera-", dir=args.workdir)
    for name, compression in [("gzip -1 (Paintera's default)", "gzip"),
                              ("gzip 1", {"type": "gzip", "level": 1}),
                              ("zstd 3", "zstd"), ("raw", "raw")]:
        def run():
            target = f"{workdir}/p.n5"
            shutil.rmtree(target, ignore_errors=True)
            convert(labels, target, block_size=64, factors=[2, 2, 2], compression=compression,
                    threads=args.threads)
        seconds = median_time(run, args.repeat)
        print(f"  convert, {name:30s} {seconds:6.2f} s  {voxels / seconds / 1e6:6.1f} Mvoxel/s")
    shutil.rmtree(workdir, ignore_errors=True)

    # label multiset work alone, one thread, on the 64^3 blocks of a 256^3 part (elf is slow)
    part = np.ascontiguousarray(labels[:256, :256, :256])
    blocks = blocks_of(part, 64)
    ours = median_time(lambda: ours_multiset_work(blocks), args.repeat)
    print(f"  multiset work (create, 3x downsample, serialize), 1 thread, 256^3: "
          f"n5mscodecs {ours:.2f} s ({part.size / ours / 1e6:.1f} Mvoxel/s)")
    try:
        import elf.label_multiset  # noqa: F401
    except ImportError:
        print("  python-elf is not installed: no elf comparison")
        return
    theirs = median_time(lambda: elf_multiset_work(blocks), args.repeat)
    print(f"  python-elf {theirs:.2f} s ({part.size / theirs / 1e6:.1f} Mvoxel/s): n5mscodecs is "
          f"{theirs / ours:.1f}x faster")


if __name__ == "__main__":
    main()
