"""The converter: integer labels to a Paintera label source (see :mod:`n5mscodecs.paintera`)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from ..errors import ConfigurationError
from ..multiset import BACKGROUND
from ..multiset.array import RESERVED_RULES, check_keep
from ..n5 import storage
from ..n5.create import source_file
from ..n5.writing import (
    LOCK_NAME,
    WriterLock,
    incomplete_marker,
    mark_complete,
    write_container_version,
    write_marked,
)
from .cluster import LOCAL, engine_for, progress_bar, run_tasks
from .conventions import CONVERSION_KEY, FINISH_HINT, target_store
from .lookup import LABEL_BLOCK_LOOKUP
from .mapping_build import build_label_to_block_mapping
from .pyramid import PyramidJob, normalized_factors, normalized_max_num_entries, write_pyramid_block
from .sources import check_source_labels, open_label_source

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Literal

    import distributed

    from ..multiset.array import KeepRule, ReservedRule, Rule
    from ..n5.compression import CompressorConfig
    from ..n5.storage import PathLike
    from ..n5.store import Store
    from .cluster import Engine, ProgressBar
    from .sources import LabelSource


@dataclass
class ConversionSummary:
    """What :func:`convert` did."""

    target: str
    level_shapes: list[tuple[int, ...]]
    blocks_written: int
    blocks_total: int
    max_id: int
    n_labels: int
    seconds: float
    #: per level above s0, its factors relative to the level below
    factors: list[tuple[int, ...]] = field(default_factory=list)
    #: the source's voxel size (N5 order) written to the ``data`` group
    resolution: tuple[float, ...] = ()
    #: where the blocks were written ("local threads (N)" or "dask.distributed <address> (...)")
    engine: str = ""

    @property
    def voxels(self) -> int:
        return int(np.prod(self.level_shapes[0], dtype=np.int64))


#: the size of a block above which a level is warned about (:class:`~n5mscodecs.paintera.LargeBlockWarning`)
LARGE_BLOCK_BYTES = 256 * 2**20
SAMPLE_BLOCKS = 8   # unique-labels blocks of the level below read for the estimate


class LargeBlockWarning(UserWarning):
    """A level's blocks are estimated above ``LARGE_BLOCK_BYTES``: each task making one holds it
    (and the blocks below it) in memory; a cut (``max_num_entries``) bounds them."""


def estimated_block_bytes(job: PyramidJob, level: int, engine: Engine | None = None,
                          shared_job: Any = None) -> tuple[int, int] | None:
    """``(bytes, ids)``: the estimated size of a block of ``level`` (>= 1) and the ids it holds,
    from up to ``SAMPLE_BLOCKS`` unique-labels blocks of the level below (on disk, spread over
    its grid; None when none is there), read as tasks on ``engine`` (default local threads;
    ``shared_job``: the job as :meth:`~n5mscodecs.paintera.cluster.Engine.shared` gave it),
    which return their sizes only (a block high up holds many ids): their mean ids per
    block times the blocks below one block (ids that span several count several times: an
    upper estimate), at most the cut times the voxels; each id costs at least one 12-byte
    list entry, each voxel 4 bytes."""
    grid_shape = job.grid_shape(level - 1)
    total = math.prod(grid_shape)
    spread = sorted({round(i * (total - 1) / max(1, SAMPLE_BLOCKS - 1)) for i in range(SAMPLE_BLOCKS)})
    positions = [tuple(int(p) for p in np.unravel_index(index, grid_shape)) for index in spread]
    with contextlib.ExitStack() as stack:
        if engine is None:
            engine = stack.enter_context(engine_for(LOCAL))
        counts = run_tasks(engine, _stored_ids, (job if shared_job is None else shared_job, level - 1), positions,
                           reduce=_counted, initial=())
    if not counts:
        return None
    voxels = math.prod(job.block_size)
    ids = int(np.mean(counts) * math.prod(job.factors[level]))
    cut = job.level_max_num_entries(level)
    ids = min(ids, cut * voxels) if cut > 0 else ids
    return 12 * ids + 4 * voxels, ids


def _stored_ids(job_level, position):
    """The number of ids of a stored unique-labels block (None when it is missing)."""
    job, level = job_level
    values = job.unique_labels(level).read_block(position)
    return None if values is None else int(values.size)


def _counted(counts, count):
    return counts if count is None else (*counts, count)


def _warn_large_blocks(engine, job, shared_job, level):
    estimate = estimated_block_bytes(job, level, engine, shared_job) if level >= 2 else None
    if estimate is not None and estimate[0] > LARGE_BLOCK_BYTES:
        size, ids = estimate
        warnings.warn(
            f"{job.store.display()}: s{level}: its blocks may reach {size / 2**20:.0f} MiB (~{ids} ids each, "
            f"estimated from s{level - 1}); each task holds one and the {math.prod(job.factors[level])} blocks "
            "below it: pass max_num_entries (per level: n5ms convert --max-num-entries -1,-1,...,N) to bound "
            "the top levels", LargeBlockWarning, stacklevel=4)


def _write_level_block(job_level, grid):
    job, level = job_level
    return write_pyramid_block(job, level, grid)


def _write_level(engine, job, shared_job, level, progress):
    """Write every block of ``level`` as tasks on ``engine``; returns the blocks written."""
    grid_shape = job.grid_shape(level)
    with progress_bar(progress, f"s{level}", int(np.prod(grid_shape))) as bar:
        return run_tasks(engine, _write_level_block, (shared_job, level), np.ndindex(*grid_shape), bar=bar)


def _group_attributes(store):
    return store.get_attributes() if store.is_directory() else {}


def _start(store, parameters, overwrite, resume):
    """Create or reopen the target ``store`` (its writer lock held); returns True when a
    finished conversion is there already. An overwritten target is marked unfinished, and
    every dataset below it incomplete, before anything in it is removed."""
    attributes = _group_attributes(store)
    state = attributes.get(CONVERSION_KEY)
    state = state if isinstance(state, dict) else None
    name = store.display()
    exists = store.exists() and (not store.is_directory() or set(store.list_dir()) - {LOCK_NAME} != set())
    unfinished = {"n5": n5.N5_VERSION, CONVERSION_KEY: {"complete": False, "parameters": parameters}}
    if exists and overwrite:
        if not attributes:
            raise ConfigurationError(f"{name}: refusing to overwrite something that is not an N5 container")
        store.mark_datasets_below(incomplete_marker("n5ms convert (an overwrite)", FINISH_HINT))
        store.set_attributes("", unfinished)
        store.clear("", {storage.ATTRIBUTES, LOCK_NAME})
        return False
    if exists and resume:
        if state is None:
            raise ConfigurationError(f"{name}: resume: not written by n5ms convert")
        if state.get("parameters") != parameters:
            previous = state.get("parameters") if isinstance(state.get("parameters"), dict) else {}
            changed = sorted(k for k in parameters if previous.get(k) != parameters[k])
            raise ConfigurationError(
                f"{name}: resume: parameters differ from the interrupted run ({', '.join(changed)})"
            )
        if not state.get("complete"):
            store.remove_temporary_files()  # a killed run's; the lock keeps others out
        return bool(state.get("complete"))
    if exists:
        hint = (" (an interrupted conversion: pass resume=True to finish it)" if state and not state.get("complete")
                else "")
        raise FileExistsError(f"{name} exists{hint}; pass overwrite=True to replace it")
    store.set_attributes("", unfinished)
    return False


def convert(
    source: LabelSource | np.ndarray | PathLike | Store | Any,
    target: PathLike | Store,
    *,
    dataset: str | None = None,
    block_size: int | Sequence[int] = 64,
    factors: Sequence[int | Sequence[int]] | Literal["resolution"] | None = None,
    compression: CompressorConfig = "gzip",
    max_num_entries: int | Sequence[int] = -1,
    keep: KeepRule | None = None,
    rule: Rule = "spec",
    write_background_blocks: bool = False,
    resolution: Sequence[float] | None = None,
    offset: Sequence[float] | None = None,
    lookup_block_size: int = 10000,
    threads: int | None = None,
    scheduler: str | distributed.Client | None = None,
    overwrite: bool = False,
    resume: bool = False,
    progress: Callable[[str, int], ProgressBar] | None = None,
    storage_options: dict[str, Any] | None = None,
    container: PathLike | Store | None = None,
    reserved: ReservedRule = "reject",
    level: int = 0,
) -> ConversionSummary:
    """Convert integer labels into a Paintera label source (a label multiset pyramid).

    Parameters
    ----------
    source : ndarray, dask array, path, ~n5mscodecs.n5.store.Store or LabelSource
        Integer labels: an ndarray or a dask array in N5 order (x, y, z; a dask
        array's regions are computed where the blocks are made), an N5 dataset (or an
        N5 group with ``dataset``), a zarr array, an OME-Zarr multiscale label
        image (its level ``level``; its voxel size and offset are the
        defaults of ``resolution`` and ``offset``), ``.npy`` or TIFF file (see
        :func:`open_label_source`), by location or as a store (or N5 group
        or dataset object).
    target : path or ~n5mscodecs.n5.store.Store
        The Paintera source group to create (e.g. ``out.n5/labels``), or its
        :class:`~n5mscodecs.n5.store.Store` (a read-only one is refused with
        :class:`~n5mscodecs.ReadOnlyError` before anything is written).
    block_size : int or tuple
        N5 block size of every level (default 64).
    factors : list or "resolution", optional
        Downsampling factors of each level relative to the one below (ints or
        tuples, each dividing ``block_size``). Default: halve every axis until
        the volume fits one block. ``"resolution"``: levels until the volume
        fits one block that halve only the axes whose voxel size is at most
        half the coarsest (``n5ms convert``'s default; see
        :func:`~n5mscodecs.paintera.default_factors`).
    compression : str or dict
        N5 compression of every dataset (default gzip).
    max_num_entries, keep
        Cut downsampled lists to this many entries (-1: no cut); see
        :meth:`~n5mscodecs.LabelMultisetArray.downsample`. A sequence gives
        one value per level from s1 on, the last one for the levels after it
        (paintera-conversion-helper's ``--max-num-entries N ...``): e.g.
        ``[-1, -1, 20]`` keeps s1 and s2 exact and bounds s3 and above. Without
        a cut, a block of a level ``k`` holds every id found under its
        footprint in s0, and the top level every id of the volume: a warning
        (:class:`~n5mscodecs.paintera.LargeBlockWarning`) says so before a level whose blocks are
        estimated above ``LARGE_BLOCK_BYTES`` is written.
    rule : {"spec", "java"}
        ``"java"``: downsampled levels hold exactly the lists Java's
        label-utilities-spark writes (see
        :meth:`~n5mscodecs.LabelMultisetArray.downsample`; ``keep`` is then
        not allowed) and ``maxId`` is Java's signed maximum (see
        ``n5mscodecs.n5.dataset.max_id``).
    write_background_blocks : bool
        Also write blocks whose voxels are all ``{0: 1}``. By default they are
        skipped, as the conversion helper skips all-0 blocks: a missing block
        reads as exactly that.
    resolution, offset : tuple, optional
        Voxel size and offset in world units (N5 order) for ``data``.
    lookup_block_size : int
        Ids per label-to-block-mapping file.
    threads : int, optional
        Local worker threads (default: every core).
    scheduler : str or distributed.Client, optional
        Where the blocks are written: a dask.distributed ``Client`` or scheduler
        address (tasks on its workers, which must reach ``target`` and the source;
        an in-memory source is sent to each worker once), ``"threads"`` (local
        threads); default: the active dask client if there is one, else local
        threads (see :mod:`n5mscodecs.paintera.cluster`; the summary's ``engine``
        says which ran).
    overwrite, resume : bool
        Replace an existing target, or finish an interrupted conversion with
        the same parameters (blocks on disk are kept); not both. A target that
        is, contains or lies inside the source is refused, whatever these say.
    progress : callable, optional
        ``progress(description, total)`` returning an object with
        ``update(n)`` and ``close()``, e.g.
        ``lambda description, total: tqdm.tqdm(desc=description, total=total)``.
    container : path, optional
        The N5 container root (``target`` or one of its parents), which gets
        ``{"n5": "4.0.0"}`` in its attributes as Java's N5 writers write it
        (other attributes are kept). Default: the nearest of ``target`` and
        its parents whose name ends with ``.n5``; with neither, the version
        is written in ``target``'s attributes only.

    reserved : {"reject", "accept"}
        Negative labels and labels above MAX_ID (Paintera's reserved ids) are
        refused by default, before anything is written (the whole source is
        scanned for them when its data type can hold them); "accept" reads
        signed labels as two's-complement uint64 (-1 TRANSPARENT, -2 INVALID)
        and keeps reserved ones (see
        :meth:`~n5mscodecs.LabelMultisetArray.from_labels`).

    Returns
    -------
    ConversionSummary

    Notes
    -----
    Nothing is written before every argument, the source's labels and the
    scheduler are checked. While it runs, the target holds a writer lock
    (a second writer is refused with :class:`~n5mscodecs.TargetInUseError`
    naming the first), its group attributes record an unfinished conversion
    and every dataset in it carries the incomplete marker (see
    :mod:`n5mscodecs.n5.writing`), so readers refuse it until it finishes.
    """
    started = time.perf_counter()
    if overwrite and resume:
        raise ConfigurationError(
            "overwrite and resume: pass one of them (resume keeps the blocks, overwrite removes them)")
    # the target's store, opened once: every step below and every worker writes through it
    store = target_store(target, storage_options, container)
    storage.refuse_overlap(store.url(), source_file(source))  # an np.memmap of a file in the target
    source = open_label_source(source, dataset, storage_options=storage_options, level=level)
    storage.refuse_overlap(store.url(), source.path)
    ndim = len(source.shape)
    block_size = n5.block_size(block_size, ndim, "block_size")
    keep = check_keep(keep, rule)
    if reserved not in RESERVED_RULES:
        raise ConfigurationError(f"reserved must be one of {RESERVED_RULES}, got {reserved!r}")
    if int(lookup_block_size) < 1:
        raise ConfigurationError(f"lookup_block_size: must be >= 1, got {lookup_block_size}")
    resolution = tuple(float(r) for r in (resolution or source.resolution or (1.0,) * ndim))
    offset = tuple(float(o) for o in (offset or source.offset or (0.0,) * ndim))
    if len(resolution) != ndim or len(offset) != ndim:
        raise ConfigurationError(f"resolution/offset: {ndim} values each required")
    job = PyramidJob(store, source, block_size, normalized_factors(factors, source.shape, block_size, resolution),
                     n5.compression_attributes(compression), normalized_max_num_entries(max_num_entries), keep, rule,
                     bool(write_background_blocks), reserved)
    parameters = {"source": source.description(), "blockSize": list(block_size),
                  "factors": [list(f) for f in job.factors], "compression": job.compression,
                  "maxNumEntries": _recorded(job.max_num_entries), "keep": keep, "rule": rule,
                  "writeBackgroundBlocks": job.write_background, "resolution": list(resolution),
                  "offset": list(offset), "lookupBlockSize": int(lookup_block_size)}
    if reserved != "reject":
        parameters["reserved"] = reserved
    levels = range(job.n_levels)
    blocks_total = sum(int(np.prod(job.grid_shape(level))) for level in levels)
    root = store.container_root(container)
    # everything that can be checked is checked before the target is touched
    store.check_writable("", "convert into")
    with engine_for(scheduler, threads, store) as engine:
        check_source_labels(source, block_size, reserved, engine)
        with WriterLock(store):
            return _convert(engine, job, parameters, overwrite, resume, root, resolution, offset,
                            int(lookup_block_size), progress, blocks_total, started)


def _convert(engine, job, parameters, overwrite, resume, root, resolution, offset, lookup_block_size, progress,
             blocks_total, started):
    """The conversion proper, on ``engine``, the target's writer lock held."""
    store = job.store
    if _start(store, parameters, overwrite, resume):
        labels = _labels(engine, job, lookup_block_size, write=False)
        return _summary(job, 0, blocks_total, started, resolution, engine.description, labels.labels)
    write_container_version(root)
    _write_layout(job, resolution, offset, lookup_block_size)
    written = 0
    first = 1 if job.n_levels > 1 else 0   # level-1 tasks write the level-0 blocks they consume
    with engine.shared(job) as shared_job:  # with its source: an in-memory array too, once per worker
        for level in range(first, job.n_levels):
            _warn_large_blocks(engine, job, shared_job, level)
            written += _write_level(engine, job, shared_job, level, progress)
    labels = _finish(engine, job, parameters, lookup_block_size, progress)
    return _summary(job, written, blocks_total, started, resolution, engine.description, labels.labels)


def _finish(engine, job, parameters, lookup_block_size, progress):
    """The label-to-block lookup and ``maxId``, then the datasets' and the source's marks of
    an unfinished conversion removed (the source's last). Returns the source's labels
    (:func:`_labels`)."""
    with progress_bar(progress, "label-to-block-mapping", job.n_levels) as bar:
        labels = _labels(engine, job, lookup_block_size)   # s0's lookup, and the counts
        bar.update(1)
        for level in range(1, job.n_levels):
            build_label_to_block_mapping(engine, job.store, level, lookup_block_size, job.compression, rule=job.rule)
            bar.update(1)
    for level in range(job.n_levels):
        for dataset in (job.data(level), job.unique_labels(level)):
            mark_complete(dataset.store)
    attributes = {"n5": n5.N5_VERSION, "painteraData": {"type": "label"},
                  "maxId": 0 if labels.max_id is None else labels.max_id,
                  "labelBlockLookup": LABEL_BLOCK_LOOKUP,
                  CONVERSION_KEY: {"complete": True, "parameters": parameters}}
    job.store.set_attributes("", attributes)
    return labels


def _recorded(entries):
    """``max_num_entries`` as the parameters record it (JSON: a list for a sequence)."""
    return list(entries) if isinstance(entries, tuple) else entries


def _write_layout(job, resolution, offset, lookup_block_size):
    layout = {
        "data": {"multiScale": True, "offset": list(offset), "resolution": list(resolution), "isLabelMultiset": True},
        "unique-labels": {"multiScale": True},
        "label-to-block-mapping": {"isMultiscale": True, "labelBlockLookup": LABEL_BLOCK_LOOKUP},
    }
    for group, document in layout.items():
        job.store.set_attributes(group, document)
    marker = incomplete_marker("n5ms convert", FINISH_HINT)
    for level in range(job.n_levels):
        for dataset in (job.data(level), job.unique_labels(level)):
            write_marked(dataset.store, dataset.attributes, marker)


def _labels(engine, job, lookup_block_size, *, write=True):
    """The distinct labels of the source, counted from ``unique-labels/s0`` (as tasks, see
    :mod:`~n5mscodecs.paintera.mapping_build`; ``write``: writing s0's lookup meanwhile)."""
    return _with_background(job, build_label_to_block_mapping(
        engine, job.store, 0, lookup_block_size, job.compression, rule=job.rule, write=write))


def _with_background(job, stats):
    """``stats`` of s0's ids with background 0 counted when a block was skipped as all
    background (it has no unique-labels block)."""
    if stats.blocks >= math.prod(job.grid_shape(0)) or stats.has_background:
        return stats
    ids = [v for v in (stats.max_id, BACKGROUND) if v is not None]
    return dataclasses.replace(stats, labels=stats.labels + 1, max_id=max(ids), has_background=True)


def _summary(job, written, blocks_total, started, resolution, engine, n_labels):
    attributes = _group_attributes(job.store)
    return ConversionSummary(job.target, [job.level_shape(level) for level in range(job.n_levels)],
                             written, blocks_total, int(attributes.get("maxId", 0)), n_labels,
                             time.perf_counter() - started, list(job.factors[1:]), resolution, engine)
