"""The converter: integer labels to a Paintera label source (see :mod:`n5mscodecs.paintera`)."""

from __future__ import annotations

import os
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from ..errors import ConfigurationError
from ..multiset import MAX_ID
from ..multiset.array import KEEP_RULES
from ..n5 import storage
from ..n5.dataset import write_container_version
from .lookup import LABEL_BLOCK_LOOKUP, block_labels, write_label_to_block_mapping
from .pyramid import PyramidJob, normalized_factors, write_pyramid_block
from .sources import open_label_source

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Protocol

    import distributed

    from ..multiset.array import KeepRule
    from ..n5.compression import CompressorConfig
    from ..n5.storage import PathLike
    from .sources import LabelSource

    class ProgressBar(Protocol):
        """What ``progress(description, total)`` returns (e.g. a ``tqdm.tqdm``)."""

        def update(self, n: int = 1) -> object: ...

        def close(self) -> object: ...

CONVERSION_KEY = "n5mscodecs:conversion"


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

    @property
    def voxels(self) -> int:
        return int(np.prod(self.level_shapes[0], dtype=np.int64))


class _NoProgress:
    def update(self, n=1):
        pass

    def close(self):
        pass


def _executor(scheduler, threads, target):
    """(executor, worker threads, client to close or None): local threads (more for a URL target,
    whose blocks wait on requests), or a dask.distributed cluster."""
    if scheduler is None:
        n = storage.request_threads(target, threads)
        return ThreadPoolExecutor(max_workers=n), n, None
    try:
        import distributed
    except ImportError as exc:
        raise ConfigurationError("scheduler: a dask cluster needs the 'dask' extra (dask.distributed)") from exc
    owned = not isinstance(scheduler, distributed.Client)
    client = distributed.Client(scheduler) if owned else scheduler
    n = max(1, sum(client.nthreads().values()))
    return client.get_executor(), n, client if owned else None


def _run_blocks(executor, job, level, progress, window):
    """Write every block of ``level``, at most ``window`` in flight; returns blocks written."""
    grids = list(np.ndindex(*job.grid_shape(level)))
    bar = progress(f"s{level}", len(grids)) if progress else _NoProgress()
    written, pending = 0, set()
    try:
        for grid in grids:
            pending.add(executor.submit(write_pyramid_block, job, level, grid))
            while len(pending) >= window or (grid == grids[-1] and pending):
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    written += future.result()
                    bar.update(1)
    finally:
        for future in pending:
            future.cancel()
        bar.close()
    return written


def _group_attributes(path, options):
    return n5.read_attributes(path, storage_options=options) if storage.is_directory(path, options) else {}


def _start(target, parameters, overwrite, resume, options):
    """Create or reopen ``target``; returns True when a finished conversion is there already."""
    attributes = _group_attributes(target, options)
    state = attributes.get(CONVERSION_KEY)
    name = storage.display(target)
    exists = storage.exists(target, options) and (
        not storage.is_directory(target, options) or storage.is_nonempty_directory(target, options))
    if exists and overwrite:
        if not attributes:
            raise ConfigurationError(f"{name}: refusing to overwrite something that is not an N5 container")
        storage.remove_tree(target, options)
    elif exists and resume:
        if state is None:
            raise ConfigurationError(f"{name}: resume: not written by n5ms convert")
        if state["parameters"] != parameters:
            changed = sorted(k for k in parameters if state["parameters"].get(k) != parameters[k])
            raise ConfigurationError(
                f"{name}: resume: parameters differ from the interrupted run ({', '.join(changed)})"
            )
        return state["complete"]
    elif exists:
        hint = (" (an interrupted conversion: pass resume=True to finish it)" if state and not state["complete"]
                else "")
        raise FileExistsError(f"{name} exists{hint}; pass overwrite=True to replace it")
    n5.write_attributes(target, {"n5": n5.N5_VERSION, CONVERSION_KEY: {"complete": False, "parameters": parameters}},
                        storage_options=options)
    return False


def convert(
    source: LabelSource | np.ndarray | PathLike,
    target: PathLike,
    *,
    dataset: str | None = None,
    block_size: int | Sequence[int] = 64,
    factors: Sequence[int | Sequence[int]] | None = None,
    compression: CompressorConfig = "gzip",
    max_num_entries: int = -1,
    keep: KeepRule = "highest",
    resolution: Sequence[float] | None = None,
    offset: Sequence[float] | None = None,
    lookup_block_size: int = 10000,
    threads: int | None = None,
    scheduler: str | distributed.Client | None = None,
    overwrite: bool = False,
    resume: bool = False,
    progress: Callable[[str, int], ProgressBar] | None = None,
    storage_options: dict[str, Any] | None = None,
    container: PathLike | None = None,
) -> ConversionSummary:
    """Convert integer labels into a Paintera label source (a label multiset pyramid).

    Parameters
    ----------
    source : ndarray, path or LabelSource
        Integer labels: an ndarray in N5 order (x, y, z), an N5 dataset (or an
        N5 group with ``dataset``), a zarr array, ``.npy`` or TIFF file (see
        :func:`open_label_source`).
    target : path
        The Paintera source group to create (e.g. ``out.n5/labels``).
    block_size : int or tuple
        N5 block size of every level (default 64).
    factors : list, optional
        Downsampling factors of each level relative to the one below (ints or
        tuples, each dividing ``block_size``). Default: halve until the volume
        fits one block.
    compression : str or dict
        N5 compression of every dataset (default gzip).
    max_num_entries, keep
        Cut downsampled lists to this many entries (-1: no cut); see
        :meth:`~n5mscodecs.LabelMultisetArray.downsample`.
    resolution, offset : tuple, optional
        Voxel size and offset in world units (N5 order) for ``data``.
    lookup_block_size : int
        Ids per label-to-block-mapping file.
    threads : int, optional
        Local worker threads (default: every core).
    scheduler : str or distributed.Client, optional
        A dask.distributed scheduler address (or client): blocks are then
        written by its workers, which must see ``target`` and the source.
    overwrite, resume : bool
        Replace an existing target, or finish an interrupted conversion with
        the same parameters (blocks on disk are kept).
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

    Returns
    -------
    ConversionSummary
    """
    started = time.perf_counter()
    source = open_label_source(source, dataset, storage_options=storage_options)
    target = os.fspath(target)
    ndim = len(source.shape)
    block_size = (int(block_size),) * ndim if isinstance(block_size, (int, np.integer)) else tuple(block_size)
    if len(block_size) != ndim or any(int(b) != b or b < 1 for b in block_size):
        raise ConfigurationError(f"block_size: {ndim} integers >= 1 required, got {block_size}")
    block_size = tuple(int(b) for b in block_size)
    if keep not in KEEP_RULES:
        raise ConfigurationError(f"keep must be one of {KEEP_RULES}, got {keep!r}")
    if int(lookup_block_size) < 1:
        raise ConfigurationError(f"lookup_block_size: must be >= 1, got {lookup_block_size}")
    resolution = tuple(float(r) for r in (resolution or (1.0,) * ndim))
    offset = tuple(float(o) for o in (offset or (0.0,) * ndim))
    if len(resolution) != ndim or len(offset) != ndim:
        raise ConfigurationError(f"resolution/offset: {ndim} values each required")
    job = PyramidJob(target, source, block_size, normalized_factors(factors, source.shape, block_size),
                     n5.compression_attributes(compression), int(max_num_entries), keep,
                     storage_options)
    parameters = {"source": source.description(), "blockSize": list(block_size),
                  "factors": [list(f) for f in job.factors], "compression": job.compression,
                  "maxNumEntries": job.max_num_entries, "keep": keep, "resolution": list(resolution),
                  "offset": list(offset), "lookupBlockSize": int(lookup_block_size)}
    levels = range(job.n_levels)
    blocks_total = sum(int(np.prod(job.grid_shape(level))) for level in levels)
    root = storage.container_root(target, container)
    storage.confine_to(target)  # removals and writes below target stay inside it
    if _start(target, parameters, overwrite, resume, storage_options):
        return _summary(job, 0, blocks_total, started)
    write_container_version(root, storage_options)

    _write_layout(job, resolution, offset, lookup_block_size)
    executor, workers, client = _executor(scheduler, threads, target)
    window = 4 * workers
    written = 0
    try:
        first = 1 if job.n_levels > 1 else 0   # level-1 tasks write the level-0 blocks they consume
        for level in range(first, job.n_levels):
            written += _run_blocks(executor, job, level, progress, window)
    finally:
        executor.shutdown(wait=True)
        if client is not None:
            client.close()
    bar = progress("label-to-block-mapping", job.n_levels) if progress else _NoProgress()
    for level in levels:
        write_label_to_block_mapping(target, level, int(lookup_block_size), job.compression, threads,
                                     storage_options=storage_options)
        bar.update(1)
    bar.close()
    labels = n5.open(storage.join(target, "unique-labels", "s0"), storage_options=storage_options)
    all_labels = np.unique(block_labels(labels)[0])
    regular = all_labels[all_labels <= MAX_ID]
    max_id = int(regular.max()) if regular.size else 0
    attributes = {"n5": n5.N5_VERSION, "painteraData": {"type": "label"}, "maxId": max_id,
                  "labelBlockLookup": LABEL_BLOCK_LOOKUP,
                  CONVERSION_KEY: {"complete": True, "parameters": parameters}}
    n5.write_attributes(target, attributes, storage_options=storage_options)
    return _summary(job, written, blocks_total, started)


def _write_layout(job, resolution, offset, lookup_block_size):
    target, options = job.target, job.storage_options
    layout = {
        "data": {"multiScale": True, "offset": list(offset), "resolution": list(resolution), "isLabelMultiset": True},
        "unique-labels": {"multiScale": True},
        "label-to-block-mapping": {"isMultiscale": True, "labelBlockLookup": LABEL_BLOCK_LOOKUP},
    }
    for group, document in layout.items():
        n5.write_attributes(storage.join(target, group), document, storage_options=options)
    for level in range(job.n_levels):
        for dataset in (job.data(level), job.unique_labels(level)):
            n5.write_attributes(dataset.path, dataset.attributes, storage_options=options)


def _summary(job, written, blocks_total, started):
    attributes = _group_attributes(job.target, job.storage_options)
    labels = n5.open(storage.join(job.target, "unique-labels", "s0"), storage_options=job.storage_options)
    n_labels = int(np.unique(block_labels(labels)[0]).size)
    return ConversionSummary(job.target, [job.level_shape(level) for level in range(job.n_levels)],
                             written, blocks_total, int(attributes.get("maxId", 0)), n_labels,
                             time.perf_counter() - started)
