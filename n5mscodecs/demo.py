"""The demo's data and checks: a synthetic segmentation and a read-back verification of a
Paintera pyramid (``n5ms demo`` runs both around :func:`~n5mscodecs.paintera.convert`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from . import n5, paintera
from .n5 import storage


def voronoi_labels(shape: Sequence[int] = (192, 192, 192), n_labels: int = 300, seed: int = 0) -> np.ndarray:
    """A synthetic segmentation: 3-D Voronoi cells of random seeds (uint64 labels 1..n).

    Cells are computed on a 4x coarser grid and upsampled, which keeps the
    demo fast without scipy; cell boundaries are therefore 4-voxel steps.
    """
    rng = np.random.default_rng(seed)
    coarse = tuple(-(-s // 4) for s in shape)
    seeds = (rng.random((n_labels, 3)) * np.array(coarse)).astype(np.float32)
    grid = np.stack(np.meshgrid(*[np.arange(c, dtype=np.float32) + 0.5 for c in coarse], indexing="ij"),
                    -1).reshape(-1, 3)
    labels = np.empty(len(grid), np.uint64)
    seed_norms = (seeds ** 2).sum(1)
    for start in range(0, len(grid), 1 << 15):
        part = grid[start:start + (1 << 15)]
        # |p - s|^2 = |p|^2 - 2 p.s + |s|^2; |p|^2 does not change the argmin
        labels[start:start + len(part)] = (seed_norms - 2 * part @ seeds.T).argmin(1) + 1
    labels = labels.reshape(coarse)
    full = np.broadcast_to(labels[:, None, :, None, :, None], (coarse[0], 4, coarse[1], 4, coarse[2], 4))
    return np.ascontiguousarray(full.reshape(4 * coarse[0], 4 * coarse[1], 4 * coarse[2])[
        : shape[0], : shape[1], : shape[2]])


def verify_pyramid(target: str | os.PathLike[str], labels: np.ndarray) -> list[str]:
    """Problems found reading a pyramid back: s0 against ``labels`` (N5 order), each level
    against the downsampling of the level below, the mapping against unique-labels."""
    problems = []
    below = n5.open(os.path.join(target, "data", "s0"))[:]
    if not np.array_equal(below.argmax(), labels):
        problems.append("s0 argmax differs from the labels")
    level = 1
    while storage.exists(os.path.join(target, "data", f"s{level}")):
        dataset = n5.open(os.path.join(target, "data", f"s{level}"))
        previous = n5.read_attributes(os.path.join(target, "data", f"s{level - 1}"))
        factors = [int(a / b) for a, b in zip(dataset.attributes["downsamplingFactors"],
                                              previous.get("downsamplingFactors", [1] * labels.ndim))]
        current = dataset[:]
        if current != below.downsample(factors, dataset.attributes["maxNumEntries"]):
            problems.append(f"s{level} is not the downsampling of s{level - 1}")
        mapping = paintera.read_label_to_block_mapping(target, level)
        unique = n5.open(os.path.join(target, "unique-labels", f"s{level}"))
        for label, intervals in list(mapping.items())[:20]:
            for lo, _ in intervals:
                grid = tuple(a // b for a, b in zip(lo, unique.chunks))
                if label not in unique.read_block(grid):
                    problems.append(f"s{level}: label {label} mapped to block {grid} that lacks it")
        below = current
        level += 1
    return problems
