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

The writer lock is held throughout. Every block the commit changes is made, and every file it
reads (blocks, unique-labels, lookup files) read, before the first mark, so a corrupt block
refuses the commit with the source as it was. The blocks made are staged in the source
(``.tmp-commit``) by the tasks that made them, and copied into place after the marks (see
:mod:`~n5mscodecs.paintera.commit_blocks`): no block passes through the client, which holds
an edit's worth (the ids that left and entered each block), whatever the size of the
source. Before the first byte changes the source's attributes record the commit
(``n5mscodecs:commit``) and every dataset it will change carries the incomplete marker, so
readers refuse the source until it is done. An interrupted commit is finished by running the
same commit again (a different one is refused until then); that run removes the killed run's
temporary and staged files and patches the lookups from the journal the killed run wrote
before its first mark (the ids that left and entered each block it rewrites, see
:mod:`~n5mscodecs.paintera.commit_journal`), so its result equals an uninterrupted commit's
byte for byte. A commit killed before its marks changed nothing but its staged files, which
the next commit removes. A source another job left flagged incomplete (a level of an
interrupted ``convert``) is refused.

The per-block work (editing s0's blocks, remaking the lower levels' blocks, checking the
lookup files, placing the blocks, patching each level's lookup) runs as tasks on local threads
or a dask.distributed cluster (``scheduler=``, see :mod:`~n5mscodecs.paintera.cluster`), in
the order above: the same bytes either way.

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
from ..multiset.array import RESERVED_RULES
from ..n5 import storage
from ..n5.create import source_file
from ..n5.writing import INCOMPLETE_KEY, WriterLock, incomplete_marker, mark_complete, write_marked
from .cluster import engine_for, map_tasks
from .commit_blocks import (
    STAGE,
    CommitWork,
    check_lookup_task,
    edit_task,
    edit_window,
    lookup_task,
    place_task,
    remake_task,
)
from .commit_checks import COMMIT_WRITER, check_max_id, commit_offset, refuse_flagged
from .commit_journal import Changes, read_journal, remove_journal, write_journal
from .commit_source import CommitSource, open_commit_source
from .conventions import target_store
from .lookup import LABEL_BLOCK_LOOKUP
from .mapping_build import build_label_to_block_mapping
from .pyramid import children
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


def _make_blocks(engine, shared, job, touched, blocks_read):
    """Every block the commit changes made and staged, level by level (each from the blocks of
    the level above this commit made). Returns per level ``{grid: (ids left, ids entered)}``
    and ``{grid: whether a block is stored there}`` (False: removed, all background), and the
    largest id written at s0 (None: none); adds the stored blocks read to ``blocks_read``."""
    made: Changes = [{} for _ in range(job.n_levels)]
    stored: list[dict[tuple[int, ...], bool]] = [{} for _ in range(job.n_levels)]
    top = None
    for result in map_tasks(engine, edit_task, shared, touched):
        blocks_read[0] += 1
        if result is not None:
            grid, stored[0][grid], left, entered, _, block_top = result
            made[0][grid] = (left, entered)
            if block_top is not None and (top is None or block_top > top):
                top = block_top
    for lower in range(1, job.n_levels):
        factors, above = job.factors[lower], stored[lower - 1]
        parents = sorted({tuple(g // f for g, f in zip(grid, factors)) for grid in above})
        items = [(lower, grid, [(child, above[child]) for child in children(job, lower, grid) if child in above])
                 for grid in parents]
        for grid, stored[lower][grid], left, entered, reads, _ in map_tasks(engine, remake_task, shared, items):
            made[lower][grid] = (left, entered)
            blocks_read[lower] += reads
    return made, stored, top


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
    painted_total = 0
    for grid in touched:
        _, painted, _ = edit_window(s0, grid, region, edit_source, offset, ignore, reserved)
        painted_total += int(painted.sum())
    parameters = {"edit": edit_source.description(), "offset": list(offset),
                  "ignore": None if ignore is None else int(ignore), "rule": job.rule}
    n_levels = job.n_levels
    blocks_read = [0] * n_levels
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
        store.delete_tree(STAGE)   # blocks a killed run staged
        work = CommitWork(job, dict(job._datasets), s0, opened.plain, region, edit_source, offset, ignore,
                          reserved, opened.max_num_entries, opened.lookup_block_size, opened.lookup_compression)
        with engine.shared(work) as shared:
            # every block the commit changes is made (and staged) and every lookup file it
            # patches read before anything is marked: a corrupt block refuses the commit with
            # the source as it was; the tasks return what changed, never a block
            try:
                made, stored, top = _make_blocks(engine, shared, job, touched, blocks_read)
                # the ids that left and entered each block: as this run found them, or as the
                # killed run it finishes journaled them (its first blocks may be in place already;
                # None: a run without a journal, whose lookups are made again)
                changes = read_journal(store, parameters, n_levels) if recovering else made
                if changes is not None:
                    map_tasks(engine, check_lookup_task, shared,
                              [(level, _changed_ids(changes[level])) for level in range(n_levels)])
            except BaseException:
                store.delete_tree(STAGE)
                raise
            if not recovering:
                write_journal(store, parameters, made)
            _mark(store, opened, parameters, pool)
            map_tasks(engine, place_task, shared, [(level, grid, kept) for level in range(n_levels)
                                                   for grid, kept in sorted(stored[level].items())])
            store.delete_tree(STAGE)
            if changes is None:
                lookup_files = [build_label_to_block_mapping(engine, store, level, opened.lookup_block_size,
                                                             opened.lookup_compression).files
                                for level in range(n_levels)]
            else:   # the levels' lookups are independent
                lookup_files = map_tasks(engine, lookup_task, shared,
                                         [(level, _lookup_changes(changes[level])) for level in range(n_levels)])
        max_id = _raise_max_id(store, top)
        _unmark(store, opened, pool)
        remove_journal(store)
    return CommitSummary(store.location, offset, tuple(edit_source.shape), painted_total, blocks_read,
                         [len(level_made) for level_made in made], lookup_files, max_id,
                         time.perf_counter() - started, recovering, engine.description)


def _changed_ids(level_changes) -> list[int]:
    """The ids whose lookup entries a level's changes touch."""
    ids = [np.zeros(0, np.uint64)] + [np.concatenate(pair) for pair in level_changes.values()]
    return np.unique(np.concatenate(ids)).tolist()


def _lookup_changes(level_changes) -> dict[int, tuple[set, set]]:
    """A level's changes by id: ``{id: (grids it left, grids it entered)}``."""
    by_id: dict[int, tuple[set, set]] = {}
    for grid, (left, entered) in level_changes.items():
        for side, ids in enumerate((left, entered)):
            for label in ids.tolist():
                by_id.setdefault(int(label), (set(), set()))[side].add(grid)
    return by_id


def _raise_max_id(store, top):
    """``maxId`` raised to ``top``, the largest id the commit wrote at s0 (by the source's rule),
    when that is above it (as Paintera's id service never hands out an id twice, ``maxId`` is
    never lowered)."""
    attributes = store.get_attributes()
    current = attributes.get("maxId")
    current = int(current) if isinstance(current, int) else None
    if top is None:
        return current if current is not None else 0
    if current is None or top > current:
        store.set_attributes("", {**attributes, "maxId": int(top)})
        _mirror_max_id(store, int(top))
        return int(top)
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
