"""The blocks of a :func:`~n5mscodecs.paintera.commit`, made and placed as tasks.

A commit makes every block it changes before it changes anything: the edited s0 blocks,
then each lower level's blocks from the level above. The blocks made are *staged*: written
by the task that made them into ``.tmp-commit`` under the source (``.tmp-commit/data/sK``
and ``.tmp-commit/unique-labels/sK``, the datasets' own encoding), where the next level's
tasks read them and from where, once the commit has marked the source, the *place* tasks
copy them over the source's blocks (a block that became all background is removed
instead, as the converter skips it).

So no block passes through the client: a task returns only what changed, the ids that
left and the ids that entered its block (which the journal records and the lookups are
patched with), how many stored blocks it read and the largest id it wrote. Those are an
edit's worth whatever the size of the source: the ids leaving a block were in the edited
voxels, and those entering it were painted there (or, where a level's lists are cut, made
the cut in a voxel over the edit). A worker holds one block and the blocks it is made from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigurationError
from ..multiset import BACKGROUND, INVALID, MAX_ID, LabelMultisetArray
from ..n5.metadata import max_id
from .lookup import patch_label_to_block_mapping, read_mapping_files
from .pyramid import PyramidJob, children, remake_block

if TYPE_CHECKING:
    from typing import Any

    from ..multiset.array import ReservedRule
    from .sources import LabelSource

#: the directory under the source where a commit stages the blocks it made
STAGE = ".tmp-commit"
#: what a make task returns: (grid, whether a block is stored there (False: all background,
#: removed), the ids that left it, the ids that entered it, stored blocks read, the largest
#: id it holds by the source's rule (None: none)); None when the edit paints none of its voxels
Made = tuple[tuple[int, ...], bool, np.ndarray, np.ndarray, int, "int | None"]


def edit_values(labels: np.ndarray, ignore: int | None, reserved: ReservedRule, name: str):
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


def edit_window(dataset, grid, region, edit: LabelSource, offset, ignore, reserved):
    """``(slices of s0 block ``grid`` the edit covers, painted mask, uint64 labels)`` there."""
    block_region = dataset.block_region(grid)
    inside = tuple(slice(max(b.start, r.start), min(b.stop, r.stop)) for b, r in zip(block_region, region))
    edit_part = edit.read(tuple(slice(s.start - o, s.stop - o) for s, o in zip(inside, offset)))
    painted, values = edit_values(np.asarray(edit_part), ignore, reserved, f"edit {edit.path or 'array'}")
    local = tuple(slice(s.start - b.start, s.stop - b.start) for s, b in zip(inside, block_region))
    return local, painted, values


def _edited_block(dataset, grid, region, edit: LabelSource, offset, ignore, reserved, plain):
    """s0 block ``grid`` with the edit's voxels in it, or None when the edit paints none of them."""
    local, painted, values = edit_window(dataset, grid, region, edit, offset, ignore, reserved)
    if not painted.any():
        return None
    old = dataset.read_block(grid)
    shape = dataset.block_shape(grid)
    if plain:
        labels = np.zeros(shape, dataset.dtype) if old is None else np.array(old, copy=True)
        labels[local][painted] = values[painted].astype(dataset.dtype)
        return labels
    old_block = LabelMultisetArray.full(shape, BACKGROUND) if old is None else old
    singletons = bool(np.all(old_block.list_lengths == 1)) and bool(np.all(old_block.counts == 1))
    if singletons:   # a converted s0 (one {label: 1} per voxel): made again as the converter makes it
        labels = old_block.argmax()
        labels[local][painted] = values[painted]
        return LabelMultisetArray.from_labels(labels, reserved="accept")
    # other lists (a source Paintera wrote from multisets) are kept where nothing is painted
    painted_labels = LabelMultisetArray.from_labels(values[painted], reserved="accept")
    index = np.array(old_block.index, np.int64)
    index[local][painted] = painted_labels.index.astype(np.int64) + old_block.n_lists
    offsets = np.concatenate([old_block.list_offsets, painted_labels.list_offsets[1:] + old_block.ids.size])
    merged = LabelMultisetArray(index, offsets, np.concatenate([old_block.ids, painted_labels.ids]),
                                np.concatenate([old_block.counts, painted_labels.counts]))
    return merged.compact()


@dataclass
class CommitWork:
    """What every task of a commit needs: sent to each dask worker once (see
    :mod:`n5mscodecs.paintera.cluster`)."""

    job: PyramidJob
    stored: dict[tuple[str, int], Any]   # the job's datasets as the source stores them
    s0: Any
    plain: bool                          # uint64 levels instead of label multisets
    region: tuple[slice, ...]
    edit: LabelSource
    offset: tuple[int, ...]
    ignore: int | None
    reserved: ReservedRule
    max_num_entries: list[int]
    lookup_block_size: int
    lookup_compression: dict[str, Any]
    _staged: dict[tuple[str, int], Any] = field(default_factory=dict, repr=False)

    def __getstate__(self):
        return {**self.__dict__, "_staged": {}}   # each process makes its own staged datasets

    def __setstate__(self, state):
        # a job travels without its datasets (a convert's makes them); a commit's are the stored ones
        self.__dict__.update(state)
        self.job._datasets.update(self.stored)

    def staged(self, group: str, level: int):
        """The dataset ``group/s{level}`` as staged: the stored one's metadata, under ``STAGE``."""
        dataset = self._staged.get((group, level))
        if dataset is None:
            stored = self.job.data(level) if group == "data" else self.job.unique_labels(level)
            key = f"{STAGE}/{group}/s{level}"
            store = self.job.store
            dataset = type(stored)(store.url(key), stored.attributes, store=store.child(key))
            self._staged[(group, level)] = dataset   # a race makes an equal dataset twice, nothing worse
        return dataset

    def read_staged(self, level: int, grid, stored: bool):
        """Block ``grid`` of ``level`` as a task of this commit made it (``stored`` False: removed,
        read as background, as the converter's skipped blocks are)."""
        if stored:
            return self.staged("data", level).read_block(grid)
        return LabelMultisetArray.full(self.job.data(level).block_shape(grid), BACKGROUND)


def _old_ids(job, level, grid) -> np.ndarray:
    """The ids the unique-labels block of ``grid`` lists now (none when it is missing)."""
    stored = job.unique_labels(level).read_block(grid)
    return np.zeros(0, np.uint64) if stored is None else np.asarray(stored, np.uint64)


def _stage(work: CommitWork, level, grid, block, labels, reads: int = 0) -> Made:
    """``block`` (``labels``: its ids, when its table holds lists no voxel uses) staged, as the
    converter writes a block: unique-labels then data, nothing for an all-background block;
    returns what the task reports (``reads``: the stored blocks it read)."""
    job = work.job
    if work.plain:
        stored = True
        new_ids = np.unique(np.asarray(block, np.uint64))
    else:
        stored = job.write_background or not block.is_background()
        new_ids = (np.unique(block.ids) if labels is None else np.asarray(labels, np.uint64)) if stored \
            else np.zeros(0, np.uint64)
    if stored:
        work.staged("unique-labels", level).write_varlength_block(grid, new_ids)
        if work.plain:
            work.staged("data", level).write_block(grid, block)
        else:
            work.staged("data", level).write_block(grid, block, write_background=True)
    old_ids = _old_ids(job, level, grid)
    top = max_id(new_ids, job.rule) if new_ids.size else None
    return grid, stored, np.setdiff1d(old_ids, new_ids), np.setdiff1d(new_ids, old_ids), reads, top


def edit_task(work: CommitWork, grid) -> Made | None:
    """S0 block ``grid`` edited and staged; None when the edit paints none of its voxels."""
    block = _edited_block(work.s0, grid, work.region, work.edit, work.offset, work.ignore, work.reserved,
                          work.plain)
    return None if block is None else _stage(work, 0, grid, block, None)


def _rebuild_plain(work: CommitWork, level, grid, changed):
    """A plain level's block again: the argmax of the converter's downsampling of the level
    below (``changed``: the blocks below this commit made, the others as stored)."""
    job = work.job
    below, factors = job.data(level - 1), job.factors[level]
    labels = np.zeros(job.data(level).block_shape(grid), job.data(level).dtype)
    kids = children(job, level, grid)
    for child in kids:
        stored = changed[child] if child in changed else below.read_block(child)
        values = np.zeros(below.block_shape(child), np.uint64) if stored is None else np.asarray(stored, np.uint64)
        part = LabelMultisetArray.from_labels(values, reserved="accept").downsample(
            factors, work.max_num_entries[level], keep=job.keep, rule=job.rule, threads=1).argmax(rule=job.rule)
        origin = tuple((c - g * f) * b // f for c, g, f, b in zip(child, grid, factors, job.block_size))
        labels[tuple(slice(o, o + n) for o, n in zip(origin, part.shape))] = part
    return labels, len(kids)


def remake_task(work: CommitWork, item) -> Made:
    """Block ``grid`` of ``level`` made again from the level above's blocks (``kids``: those of
    them this commit made, as ``(grid, stored)``) and staged."""
    level, grid, kids = item
    changed = {child: work.read_staged(level - 1, child, stored) for child, stored in kids}
    if work.plain:
        block, reads = _rebuild_plain(work, level, grid, changed)
        labels = None
    else:
        block, labels, reads = remake_block(work.job, level, grid, work.max_num_entries[level], changed)
    return _stage(work, level, grid, block, labels, reads)


def check_lookup_task(work: CommitWork, item) -> int:
    """The lookup files of ``level`` holding ``ids`` read and parsed (a corrupt one raises,
    naming it) before the commit marks anything; returns how many."""
    level, ids = item
    return len(read_mapping_files(work.job.store, level, ids, work.s0.ndim, work.lookup_block_size,
                                  work.lookup_compression))


def place_block(work: CommitWork, level: int, grid, stored: bool) -> None:
    """The staged block ``grid`` of ``level`` over the source's (unique-labels first, then
    data: a data block in place means both are); removed (data first) when it became all
    background."""
    for group in ("unique-labels", "data") if stored else ("data", "unique-labels"):
        target = work.job.data(level) if group == "data" else work.job.unique_labels(level)
        if stored:
            data = work.staged(group, level).read_block_bytes(grid)
            if data is None:
                raise ConfigurationError(f"{work.staged(group, level).block_name(grid)}: the staged block is "
                                         "missing (another writer removed it?): run the same commit again")
            target.write_block_bytes(grid, data)
        else:
            target.store.delete(target.block_key(grid))


def place_task(work: CommitWork, item) -> None:
    place_block(work, *item)


def lookup_task(work: CommitWork, item) -> int:
    """``level``'s label-to-block lookup patched for the ids that left or entered a block
    (``changes``: id -> (grids it left, grids it entered)); returns the files touched."""
    level, changes = item
    return patch_label_to_block_mapping(work.job.store, level, changes, work.job.unique_labels(level),
                                        work.lookup_block_size, work.lookup_compression)


__all__ = ["STAGE", "CommitWork", "Made", "check_lookup_task", "edit_task", "edit_values", "edit_window",
           "lookup_task", "place_block", "place_task", "remake_task"]
