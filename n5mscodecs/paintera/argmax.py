"""The argmax export: a label multiset dataset to plain uint64 labels (what ``n5ms argmax``
writes), as an N5 dataset in N5 order or a zarr v3 array in C order.

>>> import tempfile, numpy as np
>>> from n5mscodecs import n5
>>> work = tempfile.mkdtemp()
>>> labels = np.arange(8, dtype=np.uint64).reshape(2, 2, 2)
>>> _ = n5.write(work + "/m.n5/s0", labels, chunks=2)
>>> summary = export_argmax(work + "/m.n5/s0", work + "/a.n5/s0")
>>> summary.blocks_present, bool((n5.open_dataset(work + "/a.n5/s0")[:] == labels).all())
(1, True)
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from .._extras import require
from ..errors import ConfigurationError
from ..multiset import INVALID
from ..n5 import storage
from ..n5.store import Store
from ..n5.writing import LOCK_NAME, WriterLock, mark_complete
from .assignment import resolve_assignment
from .cluster import engine_for, progress_bar, run_tasks
from .conventions import attributes_above, level_placement, source_store, target_store
from .mapping_build import spread_depth, subtrees

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    import distributed

    from ..multiset.array import Rule
    from ..n5.storage import PathLike, StorageOptions
    from .assignment import FragmentSegmentAssignment, Pairs
    from .cluster import ProgressBar


#: an export task covers the present blocks below one directory of the grid's first axes: the
#: fewest axes that leave at most this many (few messages to a scheduler, enough tasks to share)
EXPORT_BLOCKS = 64

@dataclass
class ArgmaxSummary:
    """What :func:`export_argmax` did."""

    target: str
    shape: tuple[int, ...]   # N5 order (x, y, z); a zarr target holds it reversed
    zarr: bool               # the target is a zarr v3 array (axes z, y, x)
    blocks_present: int      # source blocks read and written (missing ones read as 0)
    blocks_total: int        # blocks in the source's grid
    seconds: float
    assignment: FragmentSegmentAssignment | None = None  # the lookup applied (None: fragments written)
    engine: str = ""  # where the blocks were written (see n5mscodecs.paintera.cluster)


def is_zarr_target(target: PathLike | Store) -> bool:
    """Whether :func:`export_argmax` writes ``target`` (a location or store) as a zarr array
    (its name ends ``.zarr``)."""
    location = target.location if isinstance(target, Store) else os.fspath(target)
    return location.rstrip("/").endswith(".zarr")


def export_argmax(
    source: PathLike | Store | n5.LabelMultisetDataset,
    target: PathLike | Store,
    *,
    rule: Rule = "spec",
    overwrite: bool = False,
    threads: int | None = None,
    scheduler: str | distributed.Client | None = None,
    container: PathLike | None = None,
    progress: Callable[[str, int | None], ProgressBar] | None = None,
    storage_options: StorageOptions = None,
    assignment: Any = "auto",
    additional_assignment: Pairs | None = None,
) -> ArgmaxSummary:
    """Write the argmax labels (highest count wins) of a label multiset dataset as uint64.

    Parameters
    ----------
    source : path, ~n5mscodecs.n5.store.Store or ~n5mscodecs.n5.LabelMultisetDataset
        A label multiset dataset: its location, its :class:`~n5mscodecs.n5.store.Store` or the
        dataset object.
    target : path or ~n5mscodecs.n5.store.Store
        An N5 dataset (N5 axis order, the source's block size and compression), or a location
        ending ``.zarr`` for a zarr v3 array in C order (axes z, y, x); or its store (a
        read-only one is refused with :class:`~n5mscodecs.ReadOnlyError`).
    rule : {"spec", "java"}
        ``"java"``: the labels Paintera shows (Java's argmax, cached argmax values).
    overwrite : bool
        Replace an existing target.
    threads : int, optional
        Worker threads (default: every core; more for a URL target).
    scheduler : str or distributed.Client, optional
        Where the blocks are written: a dask.distributed ``Client`` or scheduler address
        (tasks on its workers, which must reach the source and the target), ``"threads"``
        (local threads); default: the active dask client if there is one, else local threads
        (see :mod:`n5mscodecs.paintera.cluster`).
    container : path, optional
        The N5 container root of an N5 target (see :func:`n5mscodecs.n5.write`).
    progress : callable, optional
        ``progress("argmax", None)`` returns a bar with ``update(n)`` and ``close()`` (the
        blocks are counted as they are exported: the client never lists them).
    storage_options : dict, optional
        fsspec options for URL locations (both ends).
    assignment : "auto", None, FragmentSegmentAssignment or mapping
        ``"auto"`` (default): write segments, the source's fragment-segment-assignment
        applied (what Paintera shows; for a level ``SOURCE/data/sK`` the source's, for a
        dataset ``X`` the sibling ``X.fragment-segment-assignment``); None: the stored
        fragments; or the lookup to apply (see :mod:`n5mscodecs.paintera.assignment`).
    additional_assignment : mapping or pairs, optional
        ``{fragment: segment}`` set over the lookup (as paintera-conversion-helper's
        ``--additional-assignment``).

    Returns
    -------
    ArgmaxSummary

    Notes
    -----
    Only the blocks present in the source are read (a sparse dataset's grid can be
    astronomically large); missing blocks and voxels without an entry (INVALID) read as 0.
    The source's world placement (``resolution`` and ``offset`` of it or its group, times
    its ``downsamplingFactors``, see :func:`~n5mscodecs.paintera.level_placement`)
    is copied, for zarr reversed. A failure removes what was written.
    """
    # the target's store, opened once: the lock, the N5 writer and the clean-up go through it
    store = target_store(target, storage_options, container)
    opened = source_store(source, storage_options)
    storage.refuse_overlap(store.url(), opened.url())
    dataset = n5.open_dataset(opened)
    if not isinstance(dataset, n5.LabelMultisetDataset):
        raise ConfigurationError(f"{dataset.name}: not a label multiset dataset")
    lookup = resolve_assignment(dataset.store, assignment, additional_assignment)
    if store.exists() and not overwrite:
        raise FileExistsError(f"{store.display()} exists; pass overwrite=True to replace it")
    store.check_writable("", "export into")
    zarr = require("zarr", "zarr", "zarr targets") if is_zarr_target(store) else None
    placement = world_placement(dataset)
    started = time.perf_counter()
    created = not store.exists()
    try:
        with engine_for(scheduler, threads, store) as engine, WriterLock(store):
            write = (_ZarrBlockWriter.create(zarr, dataset, store, placement, overwrite) if zarr is not None else
                     _n5_writer(dataset, store, placement, overwrite, container))
            present = _write_blocks(engine, _ArgmaxJob(dataset, write, rule, lookup), progress, store)
            if zarr is None:
                mark_complete(store)
    finally:
        if created and store.is_directory() and not store.list_dir():
            store.delete_tree("")  # the lock's directory was all that a refusal left
    return ArgmaxSummary(store.url(), dataset.shape, zarr is not None, present,
                         int(np.prod(dataset.grid_shape, dtype=object)), time.perf_counter() - started, lookup,
                         engine.description)


def world_placement(dataset: n5.LabelMultisetDataset) -> tuple[list[float], list[float]] | None:
    """``(voxel size, offset)`` of a label multiset level in N5 order, or None when neither
    it nor its group has a ``resolution`` or ``offset``.

    The dataset's attributes win over its group's (Paintera's ``data`` group); the level's
    ``downsamplingFactors`` place it (:func:`~n5mscodecs.paintera.level_placement`).
    """
    attributes = dict(dataset.attributes)
    if "resolution" not in attributes:
        attributes = {**attributes_above(dataset.store), **attributes}
    if "resolution" not in attributes and "offset" not in attributes:
        return None
    ones, zeros = [1.0] * dataset.ndim, [0.0] * dataset.ndim
    voxel_size, offset = level_placement(attributes.get("resolution", ones), attributes.get("offset", zeros),
                                         dataset.attributes.get("downsamplingFactors", ones))
    return list(voxel_size), list(offset)


def block_segments(dataset: n5.LabelMultisetDataset | n5.ArrayDataset, grid_position: Sequence[int], *,
                   rule: Rule = "spec", lookup: FragmentSegmentAssignment | None = None,
                   data: bytes | None = None) -> np.ndarray | None:
    """The uint64 labels the exports write for one block (N5 order, the block's cropped shape),
    or None when the block is missing: the argmax of a label multiset block (the stored
    integers of a plain one), INVALID as 0 (what missing blocks read as: no label), ``lookup``
    applied when given. ``data``: the block's bytes when the caller has read them already.
    Label multiset blocks come in N5's voxel order (F-contiguous: ``.T`` is C-order z, y, x)."""
    if data is None:
        data = dataset.read_block_bytes(grid_position)
        if data is None:
            return None
    if isinstance(dataset, n5.LabelMultisetDataset):
        decode = functools.partial(dataset.block_codec.decode, labels=True, rule=rule, order="K")
        labels = dataset.decode_named(decode, data, grid_position)
    else:  # a decoded block may be a view of a scratch buffer or have a header shape past the grid: copied
        block = dataset.decode_named(dataset.decode_block, data, grid_position)
        labels = np.zeros(dataset.block_shape(grid_position), np.uint64)
        overlap = tuple(slice(0, min(a, b)) for a, b in zip(block.shape, labels.shape))
        labels[overlap] = block[overlap]
    labels[labels == INVALID] = 0
    return labels if lookup is None else lookup.apply(labels, in_place=True)


@dataclass
class _ZarrBlockWriter:
    """Writes one block's labels into the zarr target (picklable: it travels to workers)."""

    array: Any          # the zarr array, through the target's store
    dataset: n5.LabelMultisetDataset

    @classmethod
    def create(cls, zarr, dataset, store, placement, overwrite):
        # zarr arrays are C-ordered (z, y, x): the N5 axes reversed; zarr writes through the target's store
        from ..zarr.store import PackageStore  # (needs zarr, which the caller required)

        array = zarr.create_array(PackageStore(store), shape=dataset.shape[::-1], chunks=dataset.chunks[::-1],
                                  dtype="uint64", overwrite=overwrite, fill_value=0)
        attributes: dict[str, object] = {"axes": ["z", "y", "x"]}
        if placement is not None:
            attributes.update(resolution=placement[0][::-1], offset=placement[1][::-1])
        array.attrs.update(attributes)
        return cls(array, dataset)

    def __call__(self, grid, labels):
        self.array[self.dataset.block_region(grid)[::-1]] = labels.T


def _n5_writer(dataset, store, placement, overwrite, container):
    world = {} if placement is None else {"resolution": placement[0], "offset": placement[1]}
    array = n5.create_array_dataset(store, dataset.shape, dataset.chunks, "uint64",
                                    compression=dataset.attributes.get("compression", "gzip"), attributes=world,
                                    overwrite=overwrite, container=container, incomplete="n5ms argmax")
    return array.write_block


@dataclass
class _ArgmaxJob:
    """What every block task needs: sent to each worker once."""

    dataset: n5.LabelMultisetDataset
    write: Callable[[Any, np.ndarray], Any]   # (grid, labels): the N5 or zarr target's writer
    rule: Rule
    lookup: FragmentSegmentAssignment | None


def _export_block(job: _ArgmaxJob, grid) -> int:
    """One block read as argmax labels (``lookup`` applied when given) and written; 1 when
    the block was there."""
    labels = block_segments(job.dataset, grid, rule=job.rule, lookup=job.lookup)
    if labels is None:
        return 0
    job.write(grid, labels)
    return 1


def _export_subtree(job: _ArgmaxJob, prefix) -> int:
    """The present blocks below the grid directory ``prefix``, found by listing here (on the
    worker), each exported; returns how many."""
    return sum(_export_block(job, grid) for grid in job.dataset.present_blocks(prefix))


def _write_blocks(engine, job, progress, store) -> int:
    """Every present block exported, as one task per subtree of the grid (the blocks below
    one directory of its first axes: at most EXPORT_BLOCKS, fewer where that gives a worker
    thread fewer than four tasks, or one row); the client lists
    the directories only, one at a time, never the blocks. Returns the blocks exported. A
    failure clears the target (its lock kept until the caller releases it)."""
    try:
        with progress_bar(progress, "argmax", None) as bar, engine.shared(job) as shared:
            prefixes = subtrees(job.dataset, spread_depth(job.dataset.grid_shape, EXPORT_BLOCKS, engine.workers))
            return run_tasks(engine, _export_subtree, shared, prefixes, bar=bar, steps=int)
    except (Exception, KeyboardInterrupt):
        store.clear("", {LOCK_NAME})
        raise


__all__ = ["ArgmaxSummary", "block_segments", "export_argmax", "is_zarr_target", "world_placement"]
