"""The ``n5ms`` command line (also ``python -m n5mscodecs``)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from . import __version__, n5
from .errors import N5msCodecsError


def voronoi_labels(shape=(192, 192, 192), n_labels=300, seed=0):
    """A synthetic segmentation: 3-D Voronoi cells of random seeds (uint64 labels 1..n).

    Cells are computed on a 4x coarser grid and upsampled, which keeps the
    demo fast without scipy; cell boundaries are therefore 4-voxel steps.
    """
    rng = np.random.default_rng(seed)
    coarse = tuple(-(-s // 4) for s in shape)
    seeds = rng.random((n_labels, 3)) * np.array(coarse)
    grid = np.stack(np.meshgrid(*[np.arange(c) + 0.5 for c in coarse], indexing="ij"), -1).reshape(-1, 3)
    labels = np.empty(len(grid), np.uint64)
    for start in range(0, len(grid), 1 << 15):
        part = grid[start:start + (1 << 15)]
        distance = ((part[:, None, :] - seeds[None, :, :]) ** 2).sum(-1)
        labels[start:start + len(part)] = distance.argmin(1) + 1
    labels = labels.reshape(coarse)
    for axis in range(3):
        labels = np.repeat(labels, 4, axis=axis)
    return np.ascontiguousarray(labels[: shape[0], : shape[1], : shape[2]])


def _size_on_disk(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def cmd_demo(args):
    shape = (args.size,) * 3
    print(f"n5mscodecs {__version__} demo: {shape} Voronoi segmentation, {args.labels} labels")
    t0 = time.perf_counter()
    labels = voronoi_labels(shape, args.labels, args.seed)
    print(f"  generated labels in {time.perf_counter() - t0:.2f} s")
    workdir = args.out or tempfile.mkdtemp(prefix="n5ms-demo-")
    target = os.path.join(workdir, "demo.n5", "labels")
    t0 = time.perf_counter()
    n5.write(target, labels, chunks=(64, 64, 64), compression={"type": "gzip", "level": 6},
             overwrite=True, threads=args.threads)
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    back = n5.open(target)[:]
    read_s = time.perf_counter() - t0
    ok = np.array_equal(back.argmax(), labels)
    voxels = labels.size
    print(f"  wrote N5 label multiset dataset {target}")
    print(f"    {_size_on_disk(target) / 2**20:.2f} MiB on disk for {voxels * 8 / 2**20:.0f} MiB of uint64 labels")
    print(f"    write {voxels / write_s / 1e6:.1f} Mvoxel/s, read {voxels / read_s / 1e6:.1f} Mvoxel/s")
    print(f"  verified by reading back: {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def cmd_info(args):
    path = args.path
    if not os.path.isdir(path):
        print(f"n5ms: {path}: no such directory", file=sys.stderr)
        return 2
    attributes = n5.read_attributes(path)
    if "dimensions" not in attributes:
        print(f"{path}: N5 group {attributes.get('n5', '')}".rstrip())
        for directory, subdirs, _ in os.walk(path):
            subdirs.sort()
            if "dimensions" in n5.read_attributes(directory):
                subdirs[:] = []
                print(f"  {os.path.relpath(directory, path)}: " + _describe(n5.open(directory)))
        return 0
    print(f"{path}: " + _describe(n5.open(path)))
    return 0


def _present_blocks(dataset):
    """Grid positions of the blocks on disk (walks the files: grids can be astronomically large)."""
    found = []
    for directory, _, files in os.walk(dataset.path):
        parts = os.path.relpath(directory, dataset.path).split(os.sep)
        parts = [] if parts == ["."] else parts
        if len(parts) == dataset.ndim - 1 and all(p.isdigit() for p in parts):
            found.extend(tuple(int(p) for p in parts + [f]) for f in files if f.isdigit())
    return sorted(found)


def _describe(dataset):
    present_blocks = _present_blocks(dataset)
    present = len(present_blocks)
    n_blocks = int(np.prod(dataset.grid_shape, dtype=object))
    compression = dataset.attributes.get("compression", {}).get("type", "raw")
    kind = "label multiset" if isinstance(dataset, n5.LabelMultisetDataset) else dataset.dtype.name
    text = (f"{kind}, shape {list(dataset.shape)}, blocks {list(dataset.chunks)}, {compression}, "
            f"{present}/{n_blocks} blocks present")
    if isinstance(dataset, n5.LabelMultisetDataset) and present:
        first = present_blocks[0]
        block = dataset.read_block(first)
        text += (f"; block {list(first)}: {block.n_lists} distinct lists, "
                 f"{block.entries_per_voxel().mean():.2f} entries/voxel, max {block.list_lengths().max()}")
    return text


def build_parser():
    parser = argparse.ArgumentParser(prog="n5ms", description=__doc__)
    parser.add_argument("--version", action="version", version=f"n5mscodecs {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="convert a generated segmentation and verify it")
    demo.add_argument("--size", type=int, default=192, help="edge length of the cube (default 192)")
    demo.add_argument("--labels", type=int, default=300, help="number of cells (default 300)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--threads", type=int, default=None)
    demo.add_argument("--out", help="directory for the output (default: a new temporary directory)")
    demo.set_defaults(run=cmd_demo)
    info = commands.add_parser("info", help="summarise an N5 container or dataset")
    info.add_argument("path")
    info.set_defaults(run=cmd_info)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (N5msCodecsError, OSError) as exc:
        print(f"n5ms: {exc}", file=sys.stderr)
        return 2
