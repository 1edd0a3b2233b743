"""The demo: a synthetic segmentation converted to a Paintera pyramid and verified by reading
it back (:func:`run_demo`, what ``n5ms demo`` runs)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import n5, paintera
from .errors import ConfigurationError
from .multiset import LabelMultisetArray

if TYPE_CHECKING:
    from .paintera.cluster import ProgressBar

#: bytes of memory per voxel: the labels, the Voronoi construction's temporaries and the read-back
DEMO_BYTES_PER_VOXEL = 40


@dataclass
class DemoReport:
    """What :func:`run_demo` did."""

    shape: tuple[int, ...]
    n_labels: int
    label_seconds: float                       # generating the segmentation
    summary: paintera.ConversionSummary
    label_bytes: int                           # of the uint64 labels converted
    stored_bytes: int                          # of the Paintera source written
    verify_seconds: float
    problems: list[str]                        # empty: everything read back as written
    workdir: str
    kept: bool                                 # False: ``workdir`` was a temporary directory, removed


def _available_memory():
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def memory_shortfall(size: int) -> str | None:
    """Why a demo cube of edge ``size`` does not fit the free memory, or None when it does
    (or when the free memory is unknown)."""
    needed, available = size ** 3 * DEMO_BYTES_PER_VOXEL, _available_memory()
    if available is None or needed <= available:
        return None
    largest = int((available / DEMO_BYTES_PER_VOXEL) ** (1 / 3))
    return (f"the demo needs about {needed / 2**30:.1f} GiB of memory, {available / 2**30:.1f} GiB are free "
            f"(the largest size that fits is about {largest})")


def run_demo(size: int = 256, n_labels: int = 300, seed: int = 0, *, out: str | os.PathLike[str] | None = None,
             threads: int | None = None, progress: Callable[[str, int], ProgressBar] | None = None,
             ) -> DemoReport:
    """Convert a ``size``-cubed Voronoi segmentation of ``n_labels`` cells to a Paintera label
    source (``demo.n5/labels`` in ``out``, or in a temporary directory removed at the end)
    and read it back.

    Raises
    ------
    ConfigurationError
        The cube does not fit the free memory (checked before anything is allocated).
    """
    shortfall = memory_shortfall(size)
    if shortfall is not None:
        raise ConfigurationError(f"size {size}: {shortfall}")
    shape = (size,) * 3
    started = time.perf_counter()
    labels = voronoi_labels(shape, n_labels, seed)
    label_seconds = time.perf_counter() - started
    workdir = os.fspath(out) if out is not None else tempfile.mkdtemp(prefix="n5ms-demo-")
    try:
        target = os.path.join(workdir, "demo.n5", "labels")
        summary = paintera.convert(labels, target, block_size=64, compression={"type": "gzip", "level": 6},
                                   overwrite=True, threads=threads, progress=progress)
        stored = n5.open_store(target).total_size()
        started = time.perf_counter()
        problems = verify_pyramid(target, labels)
        verify_seconds = time.perf_counter() - started
    finally:
        if out is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return DemoReport(shape, n_labels, label_seconds, summary, labels.nbytes, stored, verify_seconds, problems,
                      workdir, out is not None)


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


def _label_dataset(store: n5.Store) -> n5.LabelMultisetDataset:
    dataset = n5.open_dataset(store)
    assert isinstance(dataset, n5.LabelMultisetDataset), store
    return dataset


def _whole(dataset: n5.LabelMultisetDataset) -> LabelMultisetArray:
    whole = dataset.read()
    assert isinstance(whole, LabelMultisetArray), dataset.path
    return whole


def verify_pyramid(target: str | os.PathLike[str], labels: np.ndarray) -> list[str]:
    """Problems found reading a pyramid back: s0 against ``labels`` (N5 order), each level
    against the downsampling of the level below, the mapping against unique-labels."""
    problems = []
    store = n5.open_store(target, read_only=True)
    below = _whole(_label_dataset(store.child("data/s0")))
    if not np.array_equal(below.argmax(), labels):
        problems.append("s0 argmax differs from the labels")
    level = 1
    while store.exists(f"data/s{level}"):
        dataset = _label_dataset(store.child(f"data/s{level}"))
        previous = store.get_attributes(f"data/s{level - 1}")
        factors = [int(a / b) for a, b in zip(dataset.attributes["downsamplingFactors"],
                                              previous.get("downsamplingFactors", [1] * labels.ndim))]
        current = _whole(dataset)
        if current != below.downsample(factors, dataset.attributes["maxNumEntries"]):
            problems.append(f"s{level} is not the downsampling of s{level - 1}")
        mapping = paintera.read_label_to_block_mapping(target, level)
        unique = n5.open_dataset(store.child(f"unique-labels/s{level}"))
        assert isinstance(unique, n5.ArrayDataset)
        for label, intervals in list(mapping.items())[:20]:
            for lo, _ in intervals:
                grid = tuple(a // b for a, b in zip(lo, unique.chunks))
                stored = unique.read_block(grid)
                if stored is None or label not in stored:
                    problems.append(f"s{level}: label {label} mapped to block {grid} that lacks it")
        below = current
        level += 1
    return problems
