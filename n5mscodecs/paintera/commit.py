"""Commit painted labels into a Paintera label source, as Paintera's ``CommitCanvasN5`` does.

Given labels for a box of s0 (the *edit*, placed at ``offset``), :func:`commit`

1. rewrites the s0 blocks the box touches: each painted voxel becomes the singleton
   ``{label: 1}`` (INVALID, Paintera's "not painted", and an optional ``ignore``
   value keep the voxel as it was, lists and all);
2. for each lower level, downsamples again only the blocks whose windows cover a
   changed block of the level above, with that level's factors and
   ``maxNumEntries`` and the source's rule (the converter's code: see
   :func:`~n5mscodecs.paintera.pyramid.rebuild_block`);
3. rewrites the ``unique-labels`` block beside each rewritten block and patches the
   label-to-block lookup of each level for exactly the ids that entered or left a
   block (:func:`~n5mscodecs.paintera.lookup.patch_label_to_block_mapping`);
4. raises ``maxId`` when a painted id is above it.

A block that becomes all background is removed, as the converter skips such blocks.
The result equals what a from-scratch conversion of the edited s0 labels writes with
the same options. Plain uint64 levels are supported too (their lower levels hold the
argmax of the same downsampling).

The writer lock is held throughout. Everything the commit reads (blocks, unique-labels,
lookup files) is read before the first mark, so a corrupt block refuses the commit with the
source as it was. Before the first byte changes the source's
attributes record the commit (``n5mscodecs:commit``) and every dataset it will change
carries the incomplete marker, so readers refuse the source until it is done. An
interrupted commit is finished by running the same commit again (a different one is
refused until then); that run removes the killed run's temporary files (``.tmp-*``) and
patches the lookups from the journal the killed run wrote before its first mark (the ids
each block it rewrites held before, see :mod:`~n5mscodecs.paintera.commit_journal`), so
its result equals an uninterrupted commit's byte for byte. A source another job left
flagged incomplete (a level of an interrupted ``convert``) is refused.

The per-block work (reading and editing s0's blocks, remaking the lower levels' blocks,
writing them, patching each level's lookup) runs as tasks on local threads or a
dask.distributed cluster (``scheduler=``, see :mod:`~n5mscodecs.paintera.cluster`), in the
order above: the same bytes either way.

>>> import tempfile, numpy as np
>>> from n5mscodecs import paintera
>>> target = tempfile.mkdtemp() + "/p.n5/labels"
>>> _ = paintera.convert(np.ones((8, 8, 8), np.uint64), target, block_size=4, factors=[2])
>>> summary = commit(target, np.full((2, 2, 2), 7, np.uint64), (1, 1, 1))
>>> summary.blocks_written, summary.max_id
([1, 1], 7)
>>> paintera.read_label_to_block_mapping(target, 0)[7]
[((0, 0, 0), (3, 3, 3))]
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigurationError, IncompleteError
from ..multiset import BACKGROUND, INVALID, MAX_ID, LabelMultisetArray
from ..multiset.array import RESERVED_RULES
from ..n5 import storage
from ..n5.create import source_file
from ..n5.metadata import max_id
from ..n5.writing import INCOMPLETE_KEY, WriterLock, incomplete_marker, mark_complete, write_marked
from .cluster import engine_for, map_tasks
from .commit_checks import COMMIT_WRITER, check_max_id, commit_offset, refuse_flagged
from .commit_journal import Before, read_journal, remove_journal, write_journal
from .commit_source import CommitSource, open_commit_source
from .conventions import target_store
from .lookup import LABEL_BLOCK_LOOKUP, patch_label_to_block_mapping, read_mapping_files
from .mapping_build import build_label_to_block_mapping
from .pyramid import PyramidJob, children, remake_block, write_block
from .sources import LabelSource, open_label_source

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    import distributed

    from ..multiset.array import ReservedRule, Rule
    from ..n5.storage import PathLike
    from ..n5.store import Store

COMMIT_KEY = "n5mscodecs:commit"
COMMIT_HINT = "run the same commit again to finish it"


@dataclass
class CommitSummary:
    """What :func:`commit` did (per-level lists start at s0)."""

    source: str
    offset: tuple[int, ...]          # N5 order
    shape: tuple[int, ...]           # the edit's, N5 order
    voxels_painted: int              # voxels the edit set (not INVALID, not ``ignore``)
    blocks_read: list[int]           # per level: stored blocks read to make its blocks (s0: the edited ones;
    #                                  below: each rebuilt block's old self and the parts it could not reuse)
    blocks_written: list[int]        # per level: blocks rewritten or removed
    lookup_files: list[int]          # per level: label-to-block-mapping files rewritten
    max_id: int
    seconds: float
    finished_interrupted: bool = False   # this run finished an interrupted commit
    engine: str = ""                     # where the blocks were made (see n5mscodecs.paintera.cluster)


def _edit_values(labels: np.ndarray, ignore: int | None, reserved: ReservedRule, name: str):
    """``(painted mask, uint64 labels)`` of an edit region: INVALID and ``ignore`` are not painted;
    painted negative or reserved labels are refused unless ``reserved="accept"``."""
    if labels.dtype.kind not in "iu":
        raise ConfigurationError(f"{name}: integer labels required, got dtype {labels.dtype}")
    values = labels.astype(np.int64 if labels.dtype.kind == "i" else np.uint64, copy=False)
    if values.dtype == np.int64:
        values = values.view(np.uint64)   # two's complement: -2 is INVALID
    painted = values != np.uint64(INVALID)
    if ignore is not None:
        painted &= values != np.uint64(ignore)
    if reserved != "accept" and painted.any():
        chosen = values[painted]
        if labels.dtype.kind == "i" and (labels[painted] < 0).any():
            raise ConfigurationError(f"{name}: {int((labels[painted] < 0).sum())} painted voxels hold a negative "
                                     "label (only -2, INVALID, means not painted); pass reserved='accept' to "
                                     "write them as two's-complement ids")
        if (chosen > np.uint64(MAX_ID)).any():
            raise ConfigurationError(f"{name}: {int((chosen > np.uint64(MAX_ID)).sum())} painted voxels hold a "
                                     "reserved label above MAX_ID (INVALID means not painted); pass "
                                     "reserved='accept' to write them")
    return painted, values


def _edit_window(dataset, grid, region, edit: LabelSource, offset, ignore, reserved):
    """``(slices of s0 block ``grid`` the edit covers, painted mask, uint64 labels)`` there."""
    block_region = dataset.block_region(grid)
    inside = tuple(slice(max(b.start, r.start), min(b.stop, r.stop)) for b, r in zip(block_region, region))
    edit_part = edit.read(tuple(slice(s.start - o, s.stop - o) for s, o in zip(inside, offset)))
    painted, values = _edit_values(np.asarray(edit_part), ignore, reserved, f"edit {edit.path or 'array'}")
    local = tuple(slice(s.start - b.start, s.stop - b.start) for s, b in zip(inside, block_region))
    return local, painted, values


def _edited_block(dataset, grid, region, edit: LabelSource, offset, ignore, reserved, plain):
    """``(new block, old block or None)`` of s0 block ``grid`` with the edit's voxels in it, or
    None when the edit paints none of its voxels."""
    local, painted, values = _edit_window(dataset, grid, region, edit, offset, ignore, reserved)
    if not painted.any():
        return None
    old = dataset.read_block(grid)
    shape = dataset.block_shape(grid)
    if plain:
        labels = np.zeros(shape, dataset.dtype) if old is None else np.array(old, copy=True)
        labels[local][painted] = values[painted].astype(dataset.dtype)
        return labels, old
    if old is None:
        old_block = LabelMultisetArray.full(shape, BACKGROUND)
    else:
        old_block = old
    singletons = bool(np.all(old_block.list_lengths == 1)) and bool(np.all(old_block.counts == 1))
    if singletons:   # a converted s0 (one {label: 1} per voxel): made again as the converter makes it
        labels = old_block.argmax()
        labels[local][painted] = values[painted]
        return LabelMultisetArray.from_labels(labels, reserved="accept"), old
    # other lists (a source Paintera wrote from multisets) are kept where nothing is painted
    painted_labels = LabelMultisetArray.from_labels(values[painted], reserved="accept")
    index = np.array(old_block.index, np.int64)
    index[local][painted] = painted_labels.index.astype(np.int64) + old_block.n_lists
    offsets = np.concatenate([old_block.list_offsets, painted_labels.list_offsets[1:] + old_block.ids.size])
    merged = LabelMultisetArray(index, offsets, np.concatenate([old_block.ids, painted_labels.ids]),
                                np.concatenate([old_block.counts, painted_labels.counts]))
    return merged.compact(), old


def _unique(block) -> np.ndarray:
    if block is None:
        return np.zeros(0, np.uint64)
    if isinstance(block, LabelMultisetArray):
        return np.unique(block.ids)
    return np.unique(np.asarray(block, np.uint64))


def _old_ids(job, level, grid, before: Before | None = None):
    """The ids the unique-labels block of ``grid`` listed before the commit: as the journal
    ``before`` recorded them, else as it lists them now (none when it is missing)."""
    if before is not None and grid in before[level]:
        return before[level][grid]
    stored = job.unique_labels(level).read_block(grid)
    return np.zeros(0, np.uint64) if stored is None else np.asarray(stored, np.uint64)


def _write_plain(job, level, grid, labels):
    data, unique_labels = job.data(level), job.unique_labels(level)
    unique_labels.write_varlength_block(grid, np.unique(np.asarray(labels, np.uint64)))
    data.write_block(grid, labels)
    return np.unique(np.asarray(labels, np.uint64))


def _rebuild_plain(job, level, grid, max_num_entries):
    """A plain level's block again: the argmax of the converter's downsampling of the level below."""
    below = job.data(level - 1)
    factors = job.factors[level]
    shape = job.data(level).block_shape(grid)
    labels = np.zeros(shape, job.data(level).dtype)
    for child in children(job, level, grid):
        stored = below.read_block(child)
        values = np.zeros(below.block_shape(child), np.uint64) if stored is None else np.asarray(stored, np.uint64)
        part = LabelMultisetArray.from_labels(values, reserved="accept").downsample(
            factors, max_num_entries, keep=job.keep, rule=job.rule, threads=1).argmax(rule=job.rule)
        origin = tuple((c - g * f) * b // f for c, g, f, b in zip(child, grid, factors, job.block_size))
        labels[tuple(slice(o, o + n) for o, n in zip(origin, part.shape))] = part
    return _write_plain(job, level, grid, labels)


@dataclass
class _CommitWork:
    """What every task of a commit needs: sent to each dask worker once (see
    :mod:`n5mscodecs.paintera.cluster`)."""

    job: PyramidJob
    stored: dict[tuple[str, int], Any]   # the job's datasets as the source stores them
    s0: Any
    region: tuple[slice, ...]
    edit: LabelSource
    offset: tuple[int, ...]
    ignore: int | None
    reserved: ReservedRule
    max_num_entries: list[int]
    lookup_block_size: int
    lookup_compression: dict[str, Any]
    #: the ids each block to rewrite held before the commit (the journal's); None when
    #: finishing a commit interrupted before journals existed (its lookups are made again)
    before: Before | None

    def __setstate__(self, state):
        # a job travels without its datasets (a convert's makes them); a commit's are the stored ones
        self.__dict__.update(state)
        self.job._datasets.update(self.stored)


def _edit_plain_task(work: _CommitWork, grid):
    made = _edited_block(work.s0, grid, work.region, work.edit, work.offset, work.ignore, work.reserved, True)
    if made is None:
        return grid, None
    return grid, (_old_ids(work.job, 0, grid, work.before), _write_plain(work.job, 0, grid, made[0]))


def _rebuild_plain_task(work: _CommitWork, item):
    level, grid = item
    old_ids = _old_ids(work.job, level, grid, work.before)
    return grid, (old_ids, _rebuild_plain(work.job, level, grid, work.max_num_entries[level]))


def _plain_ids_task(work: _CommitWork, item) -> np.ndarray:
    """The ids a plain source's stored block ``item`` (level, grid) holds (none when missing)."""
    level, grid = item
    stored = work.job.data(level).read_block(grid)
    return np.zeros(0, np.uint64) if stored is None else np.unique(np.asarray(stored, np.uint64))


def _edit_task(work: _CommitWork, grid):
    made = _edited_block(work.s0, grid, work.region, work.edit, work.offset, work.ignore, work.reserved, False)
    return grid, _old_ids(work.job, 0, grid, work.before), None if made is None else made[0]


def _remake_task(work: _CommitWork, item):
    level, grid, kids = item
    block, labels, reads = remake_block(work.job, level, grid, work.max_num_entries[level], kids)
    return grid, _old_ids(work.job, level, grid, work.before), block, labels, reads


def _write_task(work: _CommitWork, item):
    level, grid, old_ids, block, labels = item
    stored = write_block(work.job, level, grid, block, labels)
    ids = (_unique(block) if labels is None else labels) if stored else np.zeros(0, np.uint64)
    return level, grid, old_ids, ids


def _lookup_task(work: _CommitWork, item):
    """One level's label-to-block lookup patched for the ids that entered or left a block,
    from the files read before the first mark (``files``)."""
    level, changed, files = item
    changes: dict[int, tuple[set, set]] = {}
    for grid, (old_ids, new_ids) in changed.items():
        for label in np.setdiff1d(old_ids, new_ids).tolist():
            changes.setdefault(int(label), (set(), set()))[0].add(grid)
        for label in np.setdiff1d(new_ids, old_ids).tolist():
            changes.setdefault(int(label), (set(), set()))[1].add(grid)
    return patch_label_to_block_mapping(work.job.store, level, changes, work.job.unique_labels(level),
                                        work.lookup_block_size, work.lookup_compression, files)


def _commit_plain(engine, work, shared, touched, blocks_read, blocks_written):
    """The levels of a plain uint64 source, each written before the next is made from it."""
    changed = {}
    for grid, result in map_tasks(engine, _edit_plain_task, shared, touched):
        blocks_read[0] += 1
        if result is not None:
            changed[grid] = result
    level_changes = [changed]
    for lower in range(1, work.job.n_levels):
        factors = work.job.factors[lower]
        parents = sorted({tuple(g // f for g, f in zip(grid, factors)) for grid in level_changes[-1]})
        level_changes.append(dict(map_tasks(engine, _rebuild_plain_task, shared, [(lower, g) for g in parents])))
        blocks_read[lower] = sum(len(children(work.job, lower, grid)) for grid in parents)
    for level, level_changed in enumerate(level_changes):
        blocks_written[level] = len(level_changed)
    return level_changes


def commit(
    source: PathLike | Store,
    edit: LabelSource | np.ndarray | PathLike | Store,
    offset: Sequence[int],
    *,
    dataset: str | None = None,
    level: int = 0,
    ignore: int | None = None,
    rule: Rule | None = None,
    reserved: ReservedRule = "reject",
    threads: int | None = None,
    scheduler: str | distributed.Client | None = None,
    storage_options: dict[str, Any] | None = None,
) -> CommitSummary:
    """Write labels into a region of a Paintera label source, every level kept consistent.

    Parameters
    ----------
    source : path or ~n5mscodecs.n5.store.Store
        The Paintera label source (``painteraData`` of type label, ``data/s0..sN``,
        ``unique-labels``, ``label-to-block-mapping``), local or a URL, or its
        :class:`~n5mscodecs.n5.store.Store` or group object (a read-only store is refused with
        :class:`~n5mscodecs.ReadOnlyError` before anything is written).
    edit : ndarray, path or LabelSource
        The labels of the edited box, read as :func:`~n5mscodecs.paintera.convert` reads a
        source (an ndarray in N5 order, an N5 dataset, zarr array, OME-Zarr image, ``.npy``
        or TIFF file; ``dataset`` and ``level`` as there). INVALID (``2**64 - 2``, or -2
        in a signed edit) leaves a voxel as it is.
    offset : sequence of int
        The voxel position of the edit's corner in s0 (N5 order); the edit must lie inside s0.
        Python or numpy integers (anything else, ``1.7``, ``'3'`` or ``True``, is an
        ``ArgumentError`` (a :class:`~n5mscodecs.ConfigurationError`) naming ``offset``).
    ignore : int, optional
        One more value that leaves a voxel as it is (e.g. 0 for "only paint the labels").
    rule : {"spec", "java"}, optional
        The downsampling rule of the lower levels; default: the one the source was converted
        with, else ``"java"`` (what Paintera and its conversion helper write).
    reserved : {"reject", "accept"}
        Painted negative or reserved labels are refused by default, before anything is written.
    threads : int, optional
        Worker threads (default: every core).
    scheduler : str or distributed.Client, optional
        Where the blocks are edited, remade and written: a dask.distributed ``Client`` or
        scheduler address (tasks on its workers, which must reach the source and the edit),
        ``"threads"`` (local threads); default: the active dask client if there is one, else
        local threads (see :mod:`n5mscodecs.paintera.cluster`).
    storage_options : dict, optional
        fsspec's options for URLs (source and edit).

    Returns
    -------
    CommitSummary
    """
    started = time.perf_counter()
    if reserved not in RESERVED_RULES:
        raise ConfigurationError(f"reserved must be one of {RESERVED_RULES}, got {reserved!r}")
    if ignore is not None and not 0 <= int(ignore) < 2**64:
        raise ConfigurationError(f"ignore: an id in [0, 2**64) required, got {ignore!r}")
    offset = commit_offset(offset)
    store = target_store(source, storage_options)
    if not store.exists():
        raise FileNotFoundError(f"source {store.display()} does not exist")
    storage.refuse_overlap(store.url(), source_file(edit))  # an np.memmap of a file in the source
    edit_source = open_label_source(edit, dataset, storage_options=storage_options, level=level, role="edit")
    storage.refuse_overlap(store.url(), edit_source.path)
    opened = open_commit_source(store, rule)
    job, s0 = opened.job, opened.datasets[0]
    if len(offset) != s0.ndim or len(edit_source.shape) != s0.ndim:
        raise ConfigurationError(f"offset/edit: {s0.ndim} axes required (the source's), got offset {list(offset)} "
                                 f"and an edit of shape {list(edit_source.shape)}")
    if any(o < 0 or o + n > d for o, n, d in zip(offset, edit_source.shape, s0.shape)):
        raise ConfigurationError(f"offset: an edit of shape {list(edit_source.shape)} at {list(offset)} does not lie "
                                 f"inside s0 (dimensions {list(s0.shape)})")
    region = tuple(slice(o, o + n) for o, n in zip(offset, edit_source.shape))
    first = tuple(r.start // b for r, b in zip(region, s0.chunks))
    last = tuple(-(-r.stop // b) for r, b in zip(region, s0.chunks))
    touched = [tuple(f + g for f, g in zip(first, position))
               for position in np.ndindex(*[max(0, b - a) for a, b in zip(first, last)])]
    # every painted value is checked before the first write (the edit is read twice: it is small)
    painted_total, painted_blocks, painted_ids = 0, [], [np.zeros(0, np.uint64)]
    for grid in touched:
        _, painted, values = _edit_window(s0, grid, region, edit_source, offset, ignore, reserved)
        painted_total += int(painted.sum())
        if painted.any():
            painted_blocks.append(grid)
            painted_ids.append(np.unique(values[painted]))
    parameters = {"edit": edit_source.description(), "offset": list(offset),
                  "ignore": None if ignore is None else int(ignore), "rule": job.rule}
    n_levels = job.n_levels
    blocks_read, blocks_written = [0] * n_levels, [0] * n_levels
    with (engine_for(scheduler, threads, store) as engine, WriterLock(store),
          ThreadPoolExecutor(max_workers=store.request_threads(threads)) as pool):   # the pool: metadata
        state = store.get_attributes().get(COMMIT_KEY)
        recovering = isinstance(state, dict)
        if isinstance(state, dict) and state.get("parameters") != parameters:
            raise IncompleteError(f"{store.display()}: an interrupted commit of {state.get('parameters')} is not "
                                  f"finished: {COMMIT_HINT} before another")
        refuse_flagged(store, _datasets_changed(opened), recovering)
        check_max_id(store)
        if recovering:
            store.remove_temporary_files()   # the killed run's, as convert --resume does; the lock keeps others out
        # what the blocks to rewrite listed before: journaled before the first mark, so that a
        # run finishing this one patches the lookups as this one does (see commit_journal)
        before = read_journal(store, parameters, n_levels) if recovering else None
        if not recovering:
            before = _before(job, painted_blocks, pool)
        # every changed block of every level is made first (each level from the blocks of the
        # level above, in memory), then all are written at once: the writes (encoding,
        # compression, files) are most of the cost, and every level's share runs in parallel.
        # On a cluster, the blocks made travel through the client: an edit's worth per level.
        level_changes: list[dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]]] = []
        work = _CommitWork(job, dict(job._datasets), s0, region, edit_source, offset, ignore, reserved,
                           opened.max_num_entries, opened.lookup_block_size, opened.lookup_compression, before)
        with engine.shared(work) as shared:
            if opened.plain:
                ids = _check_plain_reads(engine, shared, job, painted_blocks)
                lookups = _read_lookups(store, opened, _plain_changes(ids, painted_ids, before, n_levels), before)
                _start(store, opened, parameters, before, recovering, pool)
                level_changes = _commit_plain(engine, work, shared, touched, blocks_read, blocks_written)
            else:
                pending = []   # (level, grid, old ids, block, its ids or None)
                below: dict[tuple[int, ...], Any] = {}
                for grid, old_ids, block in map_tasks(engine, _edit_task, shared, touched):
                    blocks_read[0] += 1
                    if block is not None:
                        below[grid] = block
                        pending.append((0, grid, old_ids, block, None))
                for lower in range(1, n_levels):
                    factors = job.factors[lower]
                    parents = sorted({tuple(g // f for g, f in zip(grid, factors)) for grid in below})
                    items = [(lower, grid, {child: below[child] for child in children(job, lower, grid)
                                            if child in below}) for grid in parents]
                    below = {}
                    for grid, old_ids, block, labels, reads in map_tasks(engine, _remake_task, shared, items):
                        below[grid] = block
                        blocks_read[lower] += reads
                        pending.append((lower, grid, old_ids, block, labels))
                # everything the commit reads was read (a corrupt block has raised): only now is
                # anything marked or written
                lookups = _read_lookups(store, opened, _pending_changes(pending, n_levels), before)
                _start(store, opened, parameters, before, recovering, pool)
                level_changes = [{} for _ in range(n_levels)]
                for level_number, grid, old_ids, ids in map_tasks(engine, _write_task, shared, pending):
                    level_changes[level_number][grid] = (old_ids, ids)
                for level_number, level_changed in enumerate(level_changes):
                    blocks_written[level_number] = len(level_changed)
            # the lookup: patched for the ids that entered or left a block, or (finishing a commit
            # interrupted before the journal existed, whose unique-labels may be new already) each
            # level's made again by scan and merge tasks
            if before is None:
                lookup_files = [build_label_to_block_mapping(engine, store, level, opened.lookup_block_size,
                                                             opened.lookup_compression).files
                                for level in range(n_levels)]
            else:   # the levels' lookups are independent
                lookup_files = map_tasks(engine, _lookup_task, shared,
                                         [(level, level_changes[level], lookups[level]) for level in range(n_levels)])
        max_id = _raise_max_id(store, level_changes[0], job.rule)
        _unmark(store, opened, pool)
        remove_journal(store)
    return CommitSummary(store.location, offset, tuple(edit_source.shape), painted_total, blocks_read,
                         blocks_written, lookup_files, max_id, time.perf_counter() - started, recovering,
                         engine.description)


def _planned(job, painted_blocks) -> list[list[tuple[int, ...]]]:
    """Per level, the blocks the commit rewrites: s0's painted blocks, and each lower level's
    blocks whose windows cover one of the level above."""
    planned = [sorted(painted_blocks)]
    for level in range(1, job.n_levels):
        factors = job.factors[level]
        planned.append(sorted({tuple(g // f for g, f in zip(grid, factors)) for grid in planned[-1]}))
    return planned


def _before(job, painted_blocks, pool) -> Before:
    """Per level, the ids the unique-labels block of each block the commit will rewrite lists now."""
    return [dict(zip(grids, pool.map(lambda grid, level=level: _old_ids(job, level, grid), grids)))
            for level, grids in enumerate(_planned(job, painted_blocks))]


def _start(store, opened, parameters, before, recovering, pool):
    """The journal written (a run finishing an interrupted commit keeps the killed run's), then
    the commit recorded and every dataset it changes marked."""
    if not recovering:
        write_journal(store, parameters, before)
    _mark(store, opened, parameters, pool)


def _pending_changes(pending, n_levels) -> list[np.ndarray]:
    """Per level, the ids whose lookup entries the blocks to write may change: those that enter
    or leave a block, and every old id of a block that may be removed (all background)."""
    ids: list[list[np.ndarray]] = [[np.zeros(0, np.uint64)] for _ in range(n_levels)]
    for level, _, old_ids, block, labels in pending:
        new_ids = _unique(block) if labels is None else np.asarray(labels, np.uint64)
        ids[level].append(np.setxor1d(old_ids, new_ids))
        if not np.any(new_ids != BACKGROUND):
            ids[level].append(old_ids)
    return [np.concatenate(level_ids) for level_ids in ids]


def _plain_changes(read_ids, painted_ids, before, n_levels) -> list[np.ndarray]:
    """Per level of a plain source, ids whose lookup entries may change: those its blocks to
    rewrite hold now, and those they can take (the blocks read ahead and the painted ones)."""
    new_ids = np.concatenate([read_ids, *painted_ids])
    return [np.concatenate([new_ids, *(before[level].values() if before is not None else ())])
            for level in range(n_levels)]


def _check_plain_reads(engine, shared, job, painted_blocks) -> np.ndarray:
    """Every block a plain source's commit reads, read once (as tasks) before anything is
    marked (a corrupt one raises): s0's painted blocks and the children of each lower level's
    blocks to make again; returns the ids they hold (those the lower levels' blocks can take)."""
    planned = _planned(job, painted_blocks)
    reads = {(0, grid) for grid in planned[0]}
    for level in range(1, job.n_levels):
        reads.update((level - 1, child) for grid in planned[level] for child in children(job, level, grid))
    return np.concatenate([np.zeros(0, np.uint64), *map_tasks(engine, _plain_ids_task, shared, sorted(reads))])


def _read_lookups(store, opened, changing, before) -> list[dict[int, dict[int, bytes]]]:
    """Per level, the lookup files holding the ids in ``changing`` (that level's ids whose
    entries the commit may change), read and parsed before anything is marked (a corrupt one
    raises) and handed to the patch, which then reads no file twice. None read when finishing
    a commit interrupted before journals existed (``before`` None): its lookups are made again."""
    if before is None:
        return [{} for _ in changing]
    return [read_mapping_files(store, level, np.unique(ids).tolist(), opened.datasets[0].ndim,
                               opened.lookup_block_size, opened.lookup_compression)
            for level, ids in enumerate(changing)]


def _raise_max_id(store, changed, rule):
    """``maxId`` raised to the largest id the commit wrote, when that is above it (as Paintera's
    id service never hands out an id twice, ``maxId`` is never lowered)."""
    attributes = store.get_attributes()
    current = attributes.get("maxId")
    written = [new for _, new in changed.values() if new.size]
    current = int(current) if isinstance(current, int) else None
    if not written:
        return current if current is not None else 0
    ids = np.concatenate(written)
    candidate = max_id(ids, rule)
    if current is None or candidate > current:
        store.set_attributes("", {**attributes, "maxId": int(candidate)})
        _mirror_max_id(store, int(candidate))
        return int(candidate)
    return current


def _mirror_max_id(store, value):
    """The new ``maxId`` in the source's ``zarr.json`` too, when ``n5ms zarr-json`` wrote one (its
    attributes mirror attributes.json; plain zarr would read the old ``maxId`` otherwise)."""
    document = store.get_json(storage.ZARR_JSON)
    if isinstance(document, dict) and isinstance(document.get("attributes"), dict):
        store.set_json(storage.ZARR_JSON, {**document, "attributes": {**document["attributes"], "maxId": value}})


def _datasets_changed(opened: CommitSource):
    n_levels = opened.job.n_levels
    return ([f"data/s{k}" for k in range(n_levels)] + [f"unique-labels/s{k}" for k in range(n_levels)]
            + [f"label-to-block-mapping/s{k}" for k in range(n_levels)])


def _mark(store, opened, parameters, pool):
    """The commit recorded in the source's attributes, then every dataset it changes marked
    incomplete (by ``pool``), before the first block changes."""
    attributes = store.get_attributes()
    attributes[COMMIT_KEY] = {"complete": False, "parameters": parameters}
    attributes.setdefault("labelBlockLookup", LABEL_BLOCK_LOOKUP)
    store.set_attributes("", attributes)
    marker = incomplete_marker(COMMIT_WRITER, COMMIT_HINT)

    def mark(key):
        document = store.get_attributes(key)
        if document and INCOMPLETE_KEY not in document:
            write_marked(store.child(key), document, marker)

    list(pool.map(mark, _datasets_changed(opened)))


def _unmark(store, opened, pool):
    """The datasets' marks removed (by ``pool``), the source's record of the commit last."""
    def unmark(key):
        if store.exists(f"{key}/{storage.ATTRIBUTES}"):
            mark_complete(store.child(key))

    list(pool.map(unmark, _datasets_changed(opened)))
    attributes = store.get_attributes()
    attributes.pop(COMMIT_KEY, None)
    store.set_attributes("", attributes)


__all__ = ["COMMIT_KEY", "CommitSummary", "commit"]
