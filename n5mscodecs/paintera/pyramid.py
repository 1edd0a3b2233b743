"""The label multiset pyramid of a Paintera label source: its layout and the block tasks
that workers run (each writes one block of one level, and the unique-labels block beside it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from ..errors import ConfigurationError
from ..multiset import BACKGROUND, LabelMultisetArray, assemble
from .conventions import default_factors
from .sources import LabelSource

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..multiset.array import KeepRule, ReservedRule, Rule
    from ..n5.store import Store


@dataclass(frozen=True)
class PyramidJob:
    """Everything a worker needs to write one block (small and picklable).

    Blocks already on disk are kept (a data block is written last, so one on
    disk is complete): that is how an interrupted run resumes. What a resumed
    run skips is checked, not assumed: a data block whose unique-labels
    block is missing (another writer's removal, a hand-deleted file) gets it
    again from the data block. Blocks skipped as all background are made
    again, and skipped again.
    """

    store: Store  # the target's (its file system resolved once; pickled with the job)
    source: LabelSource
    block_size: tuple[int, ...]
    factors: tuple[tuple[int, ...], ...]  # per level: factors relative to the level below (level 0: ones)
    compression: dict[str, Any]
    #: the cut of downsampled lists: one for every level, or one per level from s1 on (the last
    #: one for the levels after it, as paintera-conversion-helper's ``--max-num-entries``)
    max_num_entries: int | tuple[int, ...]
    keep: KeepRule
    rule: Rule = "spec"
    write_background: bool = False  # write all-{0: 1} blocks too (they read the same when missing)
    reserved: ReservedRule = "reject"
    _datasets: dict[tuple[str, int], Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def target(self) -> str:
        """The target's location."""
        return self.store.location

    @property
    def n_levels(self) -> int:
        return len(self.factors)

    def level_shape(self, level: int) -> tuple[int, ...]:
        shape = self.source.shape
        for factors in self.factors[1:level + 1]:
            shape = tuple(-(-n // f) for n, f in zip(shape, factors))
        return shape

    def cumulative_factors(self, level: int) -> tuple[int, ...]:
        return tuple(int(np.prod([f[d] for f in self.factors[:level + 1]])) for d in range(len(self.block_size)))

    def level_max_num_entries(self, level: int) -> int:
        """The cut of ``level``'s lists (-1: none; level 0 holds the source's labels, uncut)."""
        entries = self.max_num_entries
        if level == 0:
            return -1
        if isinstance(entries, tuple):
            return entries[min(level, len(entries)) - 1] if entries else -1
        return entries

    def grid_shape(self, level: int) -> tuple[int, ...]:
        return tuple(-(-n // b) for n, b in zip(self.level_shape(level), self.block_size))

    def data(self, level: int) -> n5.LabelMultisetDataset:
        """The label multiset dataset of ``level`` (made once per job and level)."""
        return self._dataset("data", level)

    def unique_labels(self, level: int) -> n5.ArrayDataset:
        """The unique-labels dataset of ``level`` (made once per job and level)."""
        return self._dataset("unique-labels", level)

    def _dataset(self, group, level):
        # every block of a level shares one dataset: its attributes are validated and its
        # codec chain parsed once, not once per block
        key = (group, level)
        dataset = self._datasets.get(key)
        if dataset is None:
            label_multiset = group == "data"
            kind = n5.LabelMultisetDataset if label_multiset else n5.ArrayDataset
            where = f"{group}/s{level}"
            dataset = kind(self.store.url(where), self.metadata(level, label_multiset=label_multiset),
                           store=self.store.child(where))
            self._datasets[key] = dataset  # a race makes an equal dataset twice, nothing worse
        return dataset

    def __getstate__(self) -> dict[str, Any]:
        # a job travels to dask workers small: each worker makes its own datasets
        return {**self.__dict__, "_datasets": {}}

    def metadata(self, level: int, *, label_multiset: bool) -> n5.DatasetMetadata:
        """The metadata of ``level``'s label multiset dataset (``data/s<level>``) or, without
        ``label_multiset``, its unique-labels dataset; levels above 0 record their
        ``downsamplingFactors`` relative to level 0."""
        shape = self.level_shape(level)
        attributes: dict[str, Any] = {"unit": "pixel"} if label_multiset else {}
        if level:
            attributes["downsamplingFactors"] = [float(f) for f in self.cumulative_factors(level)]
        if label_multiset:  # level 0 is not bounded: it holds the source's labels
            return n5.DatasetMetadata.label_multisets(shape, self.block_size, self.compression,
                                                      max_num_entries=self.level_max_num_entries(level),
                                                      attributes=attributes)
        return n5.DatasetMetadata.array(shape, self.block_size, "uint64", self.compression, attributes=attributes)


def normalized_max_num_entries(value: int | Sequence[int]) -> int | tuple[int, ...]:
    """``max_num_entries`` checked: an int for every downsampled level, or a non-empty sequence
    of them, one per level from s1 on (the last for the levels after it); each -1 (or any
    value < 1: no cut, as Java reads it) or a count. A sequence of one value is that value."""
    values = [value] if isinstance(value, (int, np.integer)) else value
    try:
        entries = tuple(int(v) for v in values)
        exact = all(not isinstance(v, bool) and int(v) == v for v in values)
    except (TypeError, ValueError):
        entries, exact = (), False
    if not entries or not exact:
        raise ConfigurationError(f"max_num_entries: an int or a non-empty sequence of ints (one per level from s1 "
                                 f"on), got {value!r}")
    if len(set(entries)) == 1:
        return entries[0]
    return entries


def normalized_factors(
    factors: Sequence[int | Sequence[int]] | str | None, shape: Sequence[int], block_size: Sequence[int],
    resolution: Sequence[float] | None = None,
) -> tuple[tuple[int, ...], ...]:
    """Per level (level 0 first, ones), the factors relative to the level below, checked:
    ``ndim`` integers >= 1 dividing ``block_size``. ``None`` and ``"resolution"`` choose them
    (:func:`~n5mscodecs.paintera.conventions.default_factors`; ``"resolution"`` by the voxel
    size ``resolution``)."""
    ndim = len(shape)
    if factors is None or (isinstance(factors, str) and factors == "resolution"):
        factors = default_factors(shape, block_size, resolution if factors == "resolution" else None)
    elif isinstance(factors, str):
        raise ConfigurationError(f"factors: a list of factors, None or 'resolution' required, got {factors!r}")
    result = [(1,) * ndim]
    for level, value in enumerate(factors, start=1):
        step = (value,) * ndim if isinstance(value, (int, np.integer)) else tuple(value)
        if len(step) != ndim or any(int(f) != f or f < 1 for f in step):
            raise ConfigurationError(f"factors[{level - 1}]: {ndim} integers >= 1 required, got {value!r}")
        step = tuple(int(f) for f in step)
        if any(b % f for b, f in zip(block_size, step)):
            raise ConfigurationError(
                f"factors[{level - 1}]: {step} must divide block_size {block_size} "
                "(downsampling windows never straddle blocks)")
        result.append(step)
    return tuple(result)


def _write_block(job, level, grid, block, labels=None):
    """unique-labels first, then the data block: a data block on disk means both are complete.
    Returns the number of blocks written (1, or 0 for a skipped block).

    Every list of ``block`` is in use (made from labels, by downsampling, or
    assembled from such), so its ids are the block's labels (``labels``: those ids,
    when the block's table also holds lists no voxel uses). A block whose
    voxels are all ``{0: 1}`` is not written (unless ``job.write_background``):
    it reads the same when missing, as the conversion helper's Java skips it,
    and it gets no unique-labels block either (its only id is background 0,
    which Paintera never looks up).
    """
    data, unique_labels = job.data(level), job.unique_labels(level)
    if not job.write_background and block.is_background():
        data.store.delete(data.block_key(grid))   # a commit's edit may have made a stored block background
        unique_labels.store.delete(unique_labels.block_key(grid))
        return 0
    unique_labels.write_varlength_block(grid, np.unique(block.ids) if labels is None else labels)
    data.write_block(grid, block, write_background=True)
    return 1


def _done_before(job, level, grid, *, read):
    """Whether a resumed run finds the block of ``level`` at ``grid`` on disk: (found, the
    block when ``read`` or when its missing unique-labels block had to be made again)."""
    data = job.data(level)
    if not data.has_block(grid):
        return False, None
    unique_labels = job.unique_labels(level)
    block = None
    if read or not unique_labels.has_block(grid):
        block = data.read_block(grid)
    if block is not None and not unique_labels.has_block(grid):
        unique_labels.write_varlength_block(grid, np.unique(block.ids))
    return True, block


def _source_block(job, grid):
    """Level-0 block ``grid`` from the source labels (or from disk when resuming; a skipped
    background block is made again)."""
    found, block = _done_before(job, 0, grid, read=True)
    if found:
        return block, 0
    data = job.data(0)
    labels = job.source.read(data.block_region(grid))
    if labels.dtype.kind not in "iu":
        raise ConfigurationError(f"source: integer labels required, got dtype {labels.dtype}")
    block = LabelMultisetArray.from_labels(labels, reserved=job.reserved, name=f"source block {tuple(grid)}")
    return block, _write_block(job, 0, grid, block)


def children(job: PyramidJob, level: int, grid: Sequence[int]) -> list[tuple[int, ...]]:
    """The blocks of ``level - 1`` that block ``grid`` of ``level`` is made from."""
    factors, child_grid = job.factors[level], job.grid_shape(level - 1)
    ranges = [range(g * f, min((g + 1) * f, n)) for g, f, n in zip(grid, factors, child_grid)]
    return [tuple(r[c] for r, c in zip(ranges, child)) for child in np.ndindex(*[len(r) for r in ranges])]


def write_pyramid_block(job: PyramidJob, level: int, grid: Sequence[int]) -> int:
    """Write block ``grid`` of level ``level`` (level 1 also writes its level-0 blocks).

    A level-1 block downsamples its level-0 blocks in memory as they are made;
    higher levels read the level below from disk. Returns the number of
    blocks written (0 when resuming found it done).
    """
    if level == 0:
        return _source_block(job, grid)[1]
    if _done_before(job, level, grid, read=False)[0]:
        if level == 1:  # the level-0 blocks it was made from are checked too (made again when missing)
            missing = [child for child in children(job, level, grid) if not _done_before(job, 0, child, read=False)[0]]
            return sum(_source_block(job, child)[1] for child in missing)
        return 0
    written = 0
    if level == 1:   # the level-0 blocks are made from the source as they are consumed
        parts = []
        for child in children(job, level, grid):
            block, made = _source_block(job, child)
            written += made
            parts.append((child, block))
    else:
        parts = [(child, _stored_block(job, level - 1, child)) for child in children(job, level, grid)]
    block = _downsampled(job, level, grid, parts, job.level_max_num_entries(level))
    return written + _write_block(job, level, grid, block)


def _stored_block(job, level, grid):
    """Block ``grid`` of ``level`` as stored; a missing block was skipped as all background:
    it reads as {0: 1} voxels."""
    below = job.data(level)
    block = below.read_block(grid)
    return LabelMultisetArray.full(below.block_shape(grid), BACKGROUND) if block is None else block


def _downsampled(job, level, grid, blocks, max_num_entries):
    """Block ``grid`` of ``level`` from the ``(grid, block)`` blocks of the level below it is made from."""
    return assemble(job.data(level).block_shape(grid),
                    [_part(job, level, grid, child, block, max_num_entries) for child, block in blocks])


def remake_block(job: PyramidJob, level: int, grid: Sequence[int], max_num_entries: int,
                 changed: dict[tuple[int, ...], LabelMultisetArray] | None = None,
                 ) -> tuple[LabelMultisetArray, np.ndarray | None, int]:
    """Block ``grid`` of ``level`` (>= 1) made again from the blocks of the level below, cut to
    ``max_num_entries`` (not written: see :func:`write_block`). ``changed``: the blocks below
    that changed (grid -> new block); only they are downsampled again and laid over the stored
    block (its bytes do not depend on how the lists are tabled: the encoder stores the lists
    voxels use, identical ones once, in voxel order); a missing block is made from the level
    below. Returns ``(the block, its distinct ids when its table holds lists no voxel uses
    (else None: the ids of its table), the number of stored blocks read)``."""
    grid = tuple(int(g) for g in grid)
    changed = changed or {}
    kids = children(job, level, grid)
    shape = job.data(level).block_shape(grid)
    stored = job.data(level).read_block(grid) if any(child not in changed for child in kids) else None
    parts: list[tuple[tuple[slice, ...], LabelMultisetArray | None]]
    if isinstance(stored, LabelMultisetArray):
        # the changed parts laid over the stored block; lists no voxel uses any more stay in its
        # table: the encoder writes only the lists voxels use, and the labels are their ids
        parts = [(tuple(slice(0, n) for n in shape), stored)]
        parts += [_part(job, level, grid, child, changed[child], max_num_entries) for child in kids
                  if child in changed]
        block = assemble(shape, parts)
        return block, block.unique_labels(), 1
    parts, reads = [], 0
    for child in kids:
        below: Any = changed.get(child)
        if below is None:
            below, reads = _stored_block(job, level - 1, child), reads + 1
        parts.append(_part(job, level, grid, child, below, max_num_entries))
    return assemble(shape, parts), None, reads


def _part(job, level, grid, child, block, max_num_entries) -> tuple[tuple[slice, ...], LabelMultisetArray]:
    """``(region in the block of ``level``, the downsampled child block)``."""
    factors = job.factors[level]
    origin = tuple((c - g * f) * b // f for c, g, f, b in zip(child, grid, factors, job.block_size))
    part = block.downsample(factors, max_num_entries, keep=job.keep, rule=job.rule, threads=1)
    return tuple(slice(o, o + n) for o, n in zip(origin, part.shape)), part


def write_block(job: PyramidJob, level: int, grid: Sequence[int], block: LabelMultisetArray,
                labels: np.ndarray | None = None) -> bool:
    """Write ``block`` at ``grid`` of ``level`` with its unique-labels block (``labels``: its
    ids, when its table holds lists no voxel uses), as the converter does (see
    ``_write_block``); returns whether a block is stored (False: all background, removed)."""
    return bool(_write_block(job, level, tuple(int(g) for g in grid), block, labels))
