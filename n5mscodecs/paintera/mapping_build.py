"""The label-to-block-mapping of a level built as tasks: a shuffle of (id, block) pairs by id range.

The mapping inverts ``unique-labels/sK`` (block -> ids) into id -> blocks (the format:
:mod:`~n5mscodecs.paintera.lookup`). Gathering every pair on one machine costs memory in
proportion to the pairs (10^8 fragments: ~10^9 pairs, over 100 GB), so it is built as
two waves of tasks (:func:`~n5mscodecs.paintera.cluster.run_tasks`, local threads or a
dask.distributed cluster):

1. **scan**: one task per subtree of the level's grid (the blocks below one directory
   of its first axes, found by listing on the worker) reads its unique-labels blocks and
   writes its (id, block) pairs partitioned by *bucket* (a range of ids of whole lookup
   files, about :data:`BUCKET_IDS` ids) as part files ``<bucket>/<subtree>`` in a
   temporary directory beside the datasets (``.tmp-lookup-sK``, removed at the end, and
   before a run starts: left by a killed one);
2. **merge**: one task per bucket reads its parts and writes its lookup files, made one at
   a time, each exactly as :func:`~n5mscodecs.paintera.lookup.label_to_block_mapping_blocks`
   makes it.

A task returns a few counts (blocks, pairs, distinct ids, the largest id), which the
client reduces as they arrive: ``maxId`` and the number of distinct labels of a conversion
come from the merge of level 0 and cost no pass of their own. The client holds the
reductions, a bounded window of futures and the list of non-empty buckets (one per
:data:`BUCKET_IDS` ids that occur); a worker holds one subtree's pairs, or one bucket's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from ..errors import ConfigurationError
from ..multiset.rules import check_rule
from ..n5 import storage
from ..n5.writing import incomplete_marker, mark_complete, write_marked
from .cluster import engine_for, run_tasks, tasks_of
from .conventions import source_store, target_store
from .lookup import LOOKUP_DIMENSION, MAPPING_HINT, MAPPING_WRITER, _mapping_dataset, mapping_files, pairs_of_blocks

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    import distributed

    from ..multiset.array import Rule
    from ..n5.storage import PathLike
    from ..n5.store import Store
    from .cluster import Engine

#: ids per bucket (rounded to whole lookup files): a merge task holds the pairs of this many
#: ids (~ 5 blocks per id: ~ 40 MB of pairs for 3-d data)
BUCKET_IDS = 2**18
#: a scan task covers the blocks below one directory of the first axes of the grid, at the
#: shallowest level that leaves it at most this many blocks (a bound on its pairs; few,
#: large tasks, since each writes one part per bucket its ids fall in)
SCAN_BLOCKS = 2**17


@dataclass(frozen=True)
class MappingStats:
    """What building a level's mapping found: lookup files written, unique-labels blocks read,
    (id, block) pairs, distinct ids (those >= 2**63 included: they get no lookup entry), the
    largest id by ``rule`` (the ``maxId`` of those ids; None when there are none) and whether
    id 0 is one of them."""

    files: int = 0
    blocks: int = 0
    pairs: int = 0
    labels: int = 0
    max_id: int | None = None
    has_background: bool = False

    def __add__(self, other: MappingStats) -> MappingStats:
        ids = [v for v in (self.max_id, other.max_id) if v is not None]
        return MappingStats(self.files + other.files, self.blocks + other.blocks, self.pairs + other.pairs,
                            self.labels + other.labels, max(ids) if ids else None,
                            self.has_background or other.has_background)


@dataclass(frozen=True)
class _Build:
    """What every task of one level's build needs (small and picklable)."""

    store: Store            # the label source's (the target's): the mapping and the parts are written here
    reading: Store          # the same, as readers open it: the unique-labels are read here
    level: int
    lookup_block_size: int
    compression: dict[str, Any]
    rule: Rule
    write: bool             # False: count only (nothing written but the temporary parts)

    @property
    def temporary(self) -> str:
        return f"{storage.TEMPORARY_PREFIX}lookup-s{self.level}"

    @property
    def bucket_ids(self) -> int:
        return self.lookup_block_size * max(1, BUCKET_IDS // self.lookup_block_size)

    def unique_labels(self) -> n5.ArrayDataset:
        # as readers read (allow_incomplete: written by a conversion that is finishing)
        dataset = n5.open_dataset(self.reading.child(f"unique-labels/s{self.level}"), allow_incomplete=True)
        if not isinstance(dataset, n5.ArrayDataset):
            raise ConfigurationError(f"{dataset.path}: unique-labels is a label multiset dataset, not uint64 lists")
        return dataset


def scan_depth(grid_shape: tuple[int, ...], limit: int | None = None) -> int:
    """How many first axes name a task's subtree: the fewest that leave it at most ``limit``
    blocks (default SCAN_BLOCKS; 0: one task for the whole grid), and never all of them (a
    subtree is a directory: a 1-d grid is one task)."""
    limit = SCAN_BLOCKS if limit is None else limit
    depth = 0
    while depth < len(grid_shape) - 1 and int(np.prod(grid_shape[depth:], dtype=object)) > limit:
        depth += 1
    return depth


def spread_depth(grid_shape: tuple[int, ...], most: int, workers: int) -> int:
    """:func:`scan_depth` for tasks of at most ``most`` blocks that still give each of
    ``workers`` threads about four tasks where the grid has the blocks for it (a small grid
    in tasks of ``most`` blocks would be one task)."""
    return scan_depth(grid_shape, tasks_of(int(np.prod(grid_shape, dtype=object)), most, workers))


def subtrees(dataset: n5.ArrayDataset | n5.LabelMultisetDataset, depth: int) -> Iterator[tuple[int, ...]]:
    """The grid prefixes of length ``depth`` that hold blocks, found by listing directories
    (never the blocks themselves), one directory at a time; where the store cannot list (an
    ``http(s)`` server without listings: a listing finds nothing), every prefix of the grid
    (each scan task then looks its blocks up, see :mod:`~n5mscodecs.n5.listing`)."""
    if depth == 0:
        yield ()
        return
    if not dataset.store.can_list():
        yield from itertools.product(*(range(n) for n in dataset.grid_shape[:depth]))
        return
    for directory, subdirectories, _ in dataset.store.walk():
        parts = directory.split("/") if directory else []
        subdirectories[:] = [name for name in subdirectories if name.isdigit()]
        if len(parts) == depth - 1:
            prefix = tuple(int(p) for p in parts)
            for name in subdirectories:
                yield (*prefix, int(name))
            subdirectories[:] = []


def _scan(build: _Build, prefix: tuple[int, ...]) -> MappingStats:
    """Scan task: the pairs of the blocks below ``prefix``, one part file per bucket."""
    dataset = build.unique_labels()
    labels, grids, blocks = pairs_of_blocks(dataset, dataset.present_blocks(prefix))
    if labels.size:
        buckets = labels // np.uint64(build.bucket_ids)
        order = np.argsort(buckets, kind="stable")
        labels, grids, buckets = labels[order], grids[order], buckets[order]
        rows = np.concatenate([labels[:, None], grids.astype(np.uint64)], axis=1)
        starts = np.flatnonzero(np.concatenate([[True], buckets[1:] != buckets[:-1]]))
        stops = np.append(starts[1:], buckets.size)
        name = "-".join(str(p) for p in prefix) or "all"
        for start, stop in zip(starts.tolist(), stops.tolist()):
            build.store.set(f"{build.temporary}/{int(buckets[start])}/{name}", rows[start:stop].tobytes())
    return MappingStats(blocks=blocks, pairs=int(labels.size))


def _merge(build: _Build, bucket: int) -> MappingStats:
    """Merge task: the lookup files of one bucket, from its parts."""
    dataset = build.unique_labels()
    key = f"{build.temporary}/{bucket}"
    rows = [np.frombuffer(build.store.get(f"{key}/{name}") or b"", np.uint64)
            for name in build.store.list_dir(key) if not name.startswith(storage.TEMPORARY_PREFIX)]
    pairs = np.concatenate(rows).reshape(-1, 1 + dataset.ndim) if rows else np.zeros((0, 1 + dataset.ndim), np.uint64)
    labels, grids = pairs[:, 0], pairs[:, 1:].astype(np.int64)
    distinct = np.unique(labels)
    files = 0
    if build.write:
        mapping = _mapping_dataset(build.store, build.level, build.lookup_block_size, build.compression)
        for number, body in mapping_files(labels, grids, dataset.chunks, dataset.shape, build.lookup_block_size):
            mapping.write_varlength_block((number,), np.frombuffer(body, np.int8), dims=(build.lookup_block_size,))
            files += 1
    return MappingStats(files=files, labels=int(distinct.size), max_id=_largest(distinct, build.rule),
                        has_background=bool(distinct.size) and int(distinct[0]) == 0)


def _largest(distinct: np.ndarray, rule: Rule) -> int | None:
    """The ``maxId`` of ``distinct`` (sorted uint64) by ``rule`` (see ``n5.metadata.max_id``),
    None when none counts: an empty bucket, or (spec) one of ids >= 2**63 only."""
    if check_rule(rule):   # java: the signed maximum
        return int(distinct.view(np.int64).max()) if distinct.size else None
    below = distinct[distinct <= np.uint64(LOOKUP_DIMENSION)]
    return int(below[-1]) if below.size else None


def build_label_to_block_mapping(engine: Engine, store: Store, level: int, lookup_block_size: int,
                                 compression: dict[str, Any], *, rule: Rule = "spec", write: bool = True,
                                 reading: Store | None = None) -> MappingStats:
    """Build ``label-to-block-mapping/s{level}`` of the label source ``store`` from its
    ``unique-labels/s{level}`` as tasks on ``engine`` (see the module notes); ``write=False``
    only counts. ``reading``: the source's store as readers open it (default ``store``).
    The caller holds the source's writer lock.

    The dataset is marked incomplete (its new attributes, with the marker, replace the old
    ones) before its first file is removed or written, and unmarked after its last file:
    an interrupted run leaves a mapping every reader refuses, never a partial one."""
    build = _Build(store, reading or store, level, int(lookup_block_size), dict(compression), rule, write)
    unique_labels = build.unique_labels()
    store.delete_tree(build.temporary)   # a killed run's parts
    try:
        stats = run_tasks(engine, _scan, build, subtrees(unique_labels, scan_depth(unique_labels.grid_shape)),
                          initial=MappingStats())
        if write:
            mapping = _mapping_dataset(store, level, build.lookup_block_size, build.compression)
            write_marked(mapping.store, mapping.attributes, incomplete_marker(MAPPING_WRITER, MAPPING_HINT))
            mapping.store.clear("", {storage.ATTRIBUTES})
        buckets = sorted(int(name) for name in store.list_dir(build.temporary) if name.isdigit())
        stats = run_tasks(engine, _merge, build, iter(buckets), initial=stats)
        if write:
            mark_complete(mapping.store)
    finally:
        store.delete_tree(build.temporary)
    return stats


def write_label_to_block_mapping(
    target: PathLike | Store, level: int, lookup_block_size: int, compression: dict[str, Any],
    threads: int | None = None, *, storage_options: dict[str, Any] | None = None,
    scheduler: str | distributed.Client | None = None,
) -> int:
    """Write ``label-to-block-mapping/s{level}`` from ``unique-labels/s{level}``; returns the file count.
    ``target`` is the label source's location (``storage_options``: its options), store or
    group object; ``threads`` and ``scheduler`` say where the tasks run (see
    :mod:`~n5mscodecs.paintera.cluster`; workers must reach ``target``).

    The dataset is marked incomplete (its new attributes, with the marker, replace the old
    ones) before its first file is removed or written, and unmarked after its last file:
    an interrupted run leaves a mapping every reader refuses, never a partial one."""
    store = target_store(target, storage_options)
    # read as readers read: a location is confined to its container root only, not to itself
    reading = source_store(target, storage_options)
    store.check_writable("", "write the label-to-block-mapping of")
    with engine_for(scheduler, threads, store) as engine:
        return build_label_to_block_mapping(engine, store, level, lookup_block_size, compression,
                                            reading=reading).files
