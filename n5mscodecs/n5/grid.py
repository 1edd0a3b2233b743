"""N5 grid geometry: block shapes, selections and the crop/pad of boundary blocks (no I/O)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Container, Sequence
    from types import EllipsisType
    from typing import TypeAlias, TypeVar

    from ..multiset import LabelMultisetArray

    #: One item of a basic selection of an N5 dataset.
    Index: TypeAlias = "int | np.integer | slice | EllipsisType"
    #: A basic selection: an index or a tuple of them (ints, slices, Ellipsis).
    Selection: TypeAlias = "Index | tuple[Index, ...]"
    _Block = TypeVar("_Block", np.ndarray, LabelMultisetArray)


def voxels(shape: Sequence[int]) -> int:
    """The number of voxels of ``shape`` (a Python int: never wraps around as int64 would)."""
    n = 1
    for s in shape:
        n *= int(s)
    return n


def grid_shape(shape: Sequence[int], chunks: Sequence[int]) -> tuple[int, ...]:
    return tuple(-(-s // b) for s, b in zip(shape, chunks))


def block_shape(grid_position: Sequence[int], chunks: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """Cropped shape of a block: what Java writes and reads for boundary blocks."""
    return tuple(min(b, s - g * b) for g, b, s in zip(grid_position, chunks, shape))


def block_region(
    grid_position: Sequence[int], chunks: Sequence[int], shape: Sequence[int]
) -> tuple[slice, ...]:
    """The block's voxels in the dataset, as a tuple of slices."""
    return tuple(slice(g * b, min((g + 1) * b, s)) for g, b, s in zip(grid_position, chunks, shape))


def crop(block: _Block, shape: Sequence[int]) -> _Block:
    """``block`` (an ndarray or LabelMultisetArray) cut to ``shape`` at its origin; itself if it fits."""
    if tuple(block.shape) == tuple(shape):
        return block
    return block[tuple(slice(0, n) for n in shape)]


def normalize_selection(
    key: Selection, shape: Sequence[int]
) -> tuple[list[int], list[int], list[int], list[int]]:
    """``(starts, stops, steps, dropped axes)`` of a basic selection (ints, slices, Ellipsis),
    or IndexError in numpy's words (a bool is no index: numpy reads it as a mask)."""
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("at most one Ellipsis")
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices: {len(key)} for {len(shape)} dimensions")
    key = key + (slice(None),) * (len(shape) - len(key))
    starts, stops, steps, drop = [], [], [], []
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k) + n if k < 0 else int(k)
            if not 0 <= i < n:
                raise IndexError(f"index {int(k)} is out of bounds for axis {axis} with size {n}")
            starts.append(i)
            stops.append(i + 1)
            steps.append(1)
            drop.append(axis)
        elif isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step <= 0:
                raise IndexError(f"slices of positive step only, got step {step} on axis {axis}")
            stop = max(stop, start)
            starts.append(start)
            stops.append(stop)
            steps.append(step)
        else:
            raise IndexError(f"slices, ints and Ellipsis only (basic indexing), got {k!r} on axis {axis}")
    return starts, stops, steps, drop


def final_view(steps: Sequence[int], drop: Container[int]) -> tuple[int | slice, ...]:
    """The strides and dropped axes of a selection, applied to its bounding box."""
    return tuple(0 if axis in drop else slice(None, None, step) for axis, step in enumerate(steps))


def covering_blocks(
    starts: Sequence[int], stops: Sequence[int], chunks: Sequence[int], shape: Sequence[int]
) -> list[tuple[tuple[int, ...], tuple[slice, ...], tuple[slice, ...]]]:
    """For the bounding box ``starts:stops``: ``(grid position, target, source)`` of every block
    it touches, ``target`` the slices in the box and ``source`` those in the (cropped) block."""
    if any(stop <= start for start, stop in zip(starts, stops)):
        return []
    first = [s // b for s, b in zip(starts, chunks)]
    last = [max(s - 1, 0) // b for s, b in zip(stops, chunks)]
    result = []
    for offset in np.ndindex(*[hi - lo + 1 for lo, hi in zip(first, last)]):
        position = tuple(lo + o for lo, o in zip(first, offset))
        origin = [g * b for g, b in zip(position, chunks)]
        cropped = block_shape(position, chunks, shape)
        lo = [max(st, o) for st, o in zip(starts, origin)]
        hi = [min(sp, o + n) for sp, o, n in zip(stops, origin, cropped)]
        target = tuple(slice(a - st, b - st) for a, b, st in zip(lo, hi, starts))
        source = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, origin))
        result.append((position, target, source))
    return result
