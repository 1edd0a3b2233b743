"""zarr's advanced selections on N5 datasets, with numpy's semantics: orthogonal
(``oindex``, one index list or mask per axis, as h5py and zarr take them), coordinate
(``vindex``: integer arrays broadcast together, numpy's fancy indexing) and mask
selections (``get_mask_selection``). Each reads only the blocks its indices touch, one
box per block, and gathers from it; the result has the selection's size, whatever the
dataset's. A dataset's basic ``read`` does the reading (fill values, boundary blocks,
views: labels or multisets), so every view gets the same selections.

>>> import tempfile
>>> from n5mscodecs import n5
>>> ds = n5.write_array(tempfile.mkdtemp() + "/raw", np.arange(30).reshape(6, 5), chunks=(2, 2))
>>> ds.oindex[[4, 0], [1, 1, 3]].tolist()
[[21, 21, 23], [1, 1, 3]]
>>> ds.vindex[[4, 0], [1, 3]].tolist(), ds[[5, 1], 2].tolist()
([21, 3], [27, 7])
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..multiset import LabelMultisetArray, assemble

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


class _Dataset(Protocol):
    """What a selection needs of a dataset: its geometry, a basic read, and its pool."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]

    @property
    def ndim(self) -> int: ...

    def read(self, key: Any = (), threads: int | None = None) -> Any: ...

    def _each_block(self, function: Callable[[Any], Any], items: list[Any], threads: int | None) -> list[Any]: ...


def _axis_indices(key: Any, axis: int, size: int) -> np.ndarray | int:
    """One axis of an orthogonal selection as sorted-or-not int64 indices (a bool mask of the
    axis's length as its true positions); an int stays an int (the axis is dropped)."""
    if isinstance(key, slice):
        return np.arange(*key.indices(size), dtype=np.int64)
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
        return int(_in_bounds(np.int64(key), axis, size))
    array = np.asarray(key)
    if array.dtype == np.bool_:
        if array.shape != (size,):
            raise IndexError(f"boolean index of shape {array.shape} does not match axis {axis} with size {size}")
        return np.flatnonzero(array).astype(np.int64)
    if array.ndim != 1 or not (array.dtype.kind in "iu" or array.size == 0):
        raise IndexError(f"axis {axis}: an orthogonal selection takes ints, slices, 1-d integer arrays or "
                         f"1-d boolean masks, got {key!r}")
    return _in_bounds(array.astype(np.int64), axis, size)


def _in_bounds(indices: np.ndarray | np.integer, axis: int, size: int) -> np.ndarray:
    """``indices`` with negative ones counted from the end; IndexError in numpy's words."""
    wrapped = np.where(indices < 0, indices + size, indices)
    bad = (wrapped < 0) | (wrapped >= size)
    if np.any(bad):
        first = np.asarray(indices)[bad].flat[0]
        raise IndexError(f"index {int(first)} is out of bounds for axis {axis} with size {size}")
    return wrapped


def _expand(key: Any, ndim: int) -> tuple[Any, ...]:
    key = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("at most one Ellipsis")
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - len(key) + 1) + key[i + 1:]
    if len(key) > ndim:
        raise IndexError(f"too many indices: {len(key)} for {ndim} dimensions")
    return key + (slice(None),) * (ndim - len(key))


def _runs(indices: np.ndarray, chunk: int) -> list[tuple[slice, slice]]:
    """Sorted ``indices`` split by block: ``(positions in the result, box read)`` per block."""
    if indices.size == 0:
        return []
    blocks = indices // chunk
    edges = [0, *(np.flatnonzero(np.diff(blocks)) + 1).tolist(), indices.size]
    return [(slice(a, b), slice(int(indices[a]), int(indices[b - 1]) + 1)) for a, b in zip(edges, edges[1:])]


def _take(piece: Any, where: tuple[np.ndarray, ...]) -> Any:
    """``piece[where]`` (numpy fancy indexing) for arrays and label multiset arrays alike."""
    if isinstance(piece, LabelMultisetArray):
        return LabelMultisetArray._from_parts(piece.index[where], piece.list_offsets, piece.ids, piece.counts)
    return np.asarray(piece)[where]


def _join(shape: tuple[int, ...], parts: list[tuple[tuple[slice, ...], Any]], like: Any) -> Any:
    if isinstance(like, LabelMultisetArray):
        return assemble(shape, parts)
    out = np.empty(shape, np.asarray(like).dtype)
    for region, part in parts:
        out[region] = part
    return out


def orthogonal(dataset: _Dataset, key: Any) -> Any:
    """``dataset.oindex[key]``: each axis selected on its own (ints, slices, 1-d integer
    arrays in any order with repeats, 1-d boolean masks)."""
    axes = [_axis_indices(k, axis, n) for axis, (k, n) in enumerate(zip(_expand(key, dataset.ndim), dataset.shape))]
    kept = [axis for axis, a in enumerate(axes) if not isinstance(a, int)]
    indices = [np.array([a], np.int64) if isinstance(a, int) else a for a in axes]
    orders = [np.argsort(a, kind="stable") for a in indices]
    ordered = [a[o] for a, o in zip(indices, orders)]
    shape = tuple(a.size for a in indices)
    runs = [_runs(a, c) for a, c in zip(ordered, dataset.chunks)]

    def read(combination: Sequence[tuple[slice, slice]]) -> tuple[tuple[slice, ...], Any]:
        box = tuple(read_box for _, read_box in combination)
        local = tuple(a[out] - read_box.start for a, (out, read_box) in zip(ordered, combination))
        return tuple(out for out, _ in combination), _take(dataset.read(box, threads=1), np.ix_(*local))

    parts = dataset._each_block(read, list(itertools.product(*runs)), None)
    if not parts:
        return _empty(dataset, tuple(shape[axis] for axis in kept))
    joined = _join(shape, parts, parts[0][1])
    inverse = [np.empty_like(o) for o in orders]
    for inv, o in zip(inverse, orders):
        inv[o] = np.arange(o.size)
    result = _take(joined, np.ix_(*inverse))
    return _drop_axes(result, [axis for axis in range(dataset.ndim) if axis not in kept])


def coordinate(dataset: _Dataset, key: Any) -> Any:
    """``dataset.vindex[key]``: one integer array per axis, broadcast together (numpy's fancy
    indexing); the result has their broadcast shape."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) != dataset.ndim:
        raise IndexError(f"a coordinate selection takes one integer array per axis ({dataset.ndim}), got {len(key)}")
    arrays = [np.asarray(k) for k in key]
    for axis, array in enumerate(arrays):
        if not (array.dtype.kind in "iu" or array.size == 0):
            raise IndexError(f"axis {axis}: a coordinate selection takes integer arrays, got {key[axis]!r}")
    try:
        broadcast = np.broadcast_arrays(*arrays)
    except ValueError as exc:
        raise IndexError(f"the index arrays cannot be broadcast together: {exc}") from None
    shape = broadcast[0].shape
    points = np.stack([_in_bounds(a.astype(np.int64).ravel(), axis, n)
                       for axis, (a, n) in enumerate(zip(broadcast, dataset.shape))], axis=1)
    if points.shape[0] == 0:
        return _empty(dataset, shape)
    blocks, which = np.unique(points // np.asarray(dataset.chunks), axis=0, return_inverse=True)
    order = np.argsort(which.ravel(), kind="stable")
    edges = np.searchsorted(which.ravel()[order], np.arange(len(blocks) + 1))

    def read(k: int) -> tuple[tuple[slice, ...], Any]:
        members = points[order[edges[k]:edges[k + 1]]]
        low, high = members.min(axis=0), members.max(axis=0) + 1
        piece = dataset.read(tuple(slice(int(a), int(b)) for a, b in zip(low, high)), threads=1)
        return (slice(int(edges[k]), int(edges[k + 1])),), _take(piece, tuple((members - low).T))

    parts = dataset._each_block(read, list(range(len(blocks))), None)
    gathered = _join((points.shape[0],), parts, parts[0][1])
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return _reshaped(_take(gathered, (inverse,)), shape)


def mask(dataset: _Dataset, selection: Any) -> Any:
    """``dataset.get_mask_selection(mask)``: the values where a boolean array of the
    dataset's shape is true, in C order (numpy's ``a[mask]``)."""
    selection = np.asarray(selection)
    if selection.dtype != np.bool_ or selection.shape != dataset.shape:
        raise IndexError(f"a mask selection takes a boolean array of the dataset's shape {dataset.shape}, got "
                         f"{selection.dtype} of shape {selection.shape}")
    return coordinate(dataset, np.nonzero(selection))


def is_advanced(key: Any) -> bool:
    """Whether ``key`` holds an index array or list (what a basic selection does not take)."""
    return any(isinstance(k, (list, np.ndarray)) for k in (key if isinstance(key, tuple) else (key,)))


def numpy_style(dataset: _Dataset, key: Any) -> Any:
    """``dataset[key]`` for a key with index arrays, as numpy and zarr read it: a boolean
    mask of the dataset's shape is a mask selection, one integer array per axis a
    coordinate selection, a single array among ints and slices an orthogonal one (numpy
    gives the same); more arrays mixed with slices need ``oindex`` or ``vindex``."""
    parts = key if isinstance(key, tuple) else (key,)
    arrays = [np.asarray(k) for k in parts if isinstance(k, (list, np.ndarray))]
    if len(parts) == 1 and arrays[0].dtype == np.bool_ and arrays[0].shape == dataset.shape:
        return mask(dataset, arrays[0])
    if len(parts) == dataset.ndim and len(arrays) == len(parts):
        return coordinate(dataset, parts)
    if len(arrays) == 1:
        return _advanced_first(orthogonal(dataset, key), _expand(key, dataset.ndim))
    raise IndexError("several index arrays mixed with slices: use .oindex[...] (each axis on its own) or "
                     ".vindex[...] (arrays broadcast together)")


def _advanced_first(result: Any, key: tuple[Any, ...]) -> Any:
    """numpy's rule for one index array among ints and slices: the array's axis stays in place
    when the array and the ints are adjacent, else it comes first (ints count as index arrays)."""
    advanced = [axis for axis, k in enumerate(key) if not isinstance(k, slice)]
    array_axis = next(axis for axis, k in enumerate(key) if isinstance(k, (list, np.ndarray)))
    if advanced == list(range(advanced[0], advanced[-1] + 1)):
        return result
    at = sum(isinstance(k, slice) for k in key[:array_axis])  # where the orthogonal result has it
    order = [at, *(axis for axis in range(result.ndim) if axis != at)]
    return result.transpose(*order)


def _drop_axes(result: Any, dropped: list[int]) -> Any:
    if not dropped:
        return result
    where = tuple(0 if axis in dropped else slice(None) for axis in range(result.ndim))
    return result[where]


def _reshaped(result: Any, shape: tuple[int, ...]) -> Any:
    if not shape:  # one point: an element, as numpy gives a scalar
        return result[0]
    return result.reshape(*shape) if isinstance(result, LabelMultisetArray) else result.reshape(shape)


def _empty(dataset: _Dataset, shape: tuple[int, ...]) -> Any:
    """An empty selection in the dataset's view (no block read)."""
    box = dataset.read(tuple(slice(0, 0) for _ in range(dataset.ndim)), threads=1)
    return _reshaped(_take(box, tuple(np.zeros(0, np.int64) for _ in range(dataset.ndim))), shape)


class Indexer:
    """``dataset.oindex`` / ``dataset.vindex``: ``[key]`` runs one kind of selection."""

    def __init__(self, dataset: _Dataset, select: Any) -> None:
        self.dataset, self.select = dataset, select

    def __getitem__(self, key: Any) -> Any:
        return self.select(self.dataset, key)

