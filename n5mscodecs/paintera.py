"""Paintera label sources: label multiset pyramids with their lookup side data.

:func:`convert` turns integer labels into what paintera-conversion-helper
writes for a label source (see ``docs/paintera.md``)::

    target/                      painteraData {"type": "label"}, maxId, labelBlockLookup
      data/                      multiScale, resolution, offset, isLabelMultiset
        s0 .. sN                 label multiset datasets (maxNumEntries, downsamplingFactors)
      unique-labels/s0 .. sN     uint64 varlength blocks: the distinct ids of each block
      label-to-block-mapping/s0 .. sN   id -> intervals of the blocks holding it

Axis order is N5's throughout (``shape``, ``block_size``, factors and
resolution are x, y, z). Blocks are written block-parallel by a thread pool
or, given ``scheduler``, by the workers of a dask.distributed cluster.

>>> import tempfile
>>> labels = np.repeat(np.arange(4, dtype=np.uint64), 8).reshape(4, 4, 2)
>>> summary = convert(labels, tempfile.mkdtemp() + "/labels.n5", block_size=2, factors=[2])
>>> summary.level_shapes, summary.max_id
([(4, 4, 2), (2, 2, 1)], 3)
>>> read_label_to_block_mapping(summary.target, 1)[3]
[((0, 0, 0), (1, 1, 0))]
"""

from __future__ import annotations

import builtins
import functools
import os
import shutil
import struct
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from . import n5
from .errors import ConfigurationError
from .multiset_array import KEEP_RULES, MAX_ID, LabelMultisetArray, default_threads
from .n5_compression import compressor_from_config
from .n5_header import MODE_VARLENGTH, N5BlockHeader
from .n5_varlen import n5_varlen_encode

LABEL_BLOCK_LOOKUP = {"type": "n5-filesystem-relative", "scaleDatasetPattern": "label-to-block-mapping/s%d"}
CONVERSION_KEY = "n5mscodecs:conversion"
LOOKUP_DIMENSION = 2**63 - 1   # the label-to-block-mapping datasets span every uint63 id


# ---------------------------------------------------------------------------
# label sources
# ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def _opened(kind, path):
    """The array behind a file source, opened once per process (workers open lazily)."""
    if kind == "n5":
        return n5.open(path)
    if kind == "npy":
        return np.load(path, mmap_mode="r")
    if kind == "tiff":
        import tifffile
        try:
            return tifffile.memmap(path, mode="r")
        except ValueError:  # compressed or not contiguous: read it whole
            return tifffile.imread(path)
    if kind == "zarr":
        import zarr
        return zarr.open_array(path, mode="r")
    raise ConfigurationError(f"source: unknown kind {kind!r}")


@dataclass(frozen=True, eq=False)
class LabelSource:
    """Integer labels read region by region, in N5 axis order.

    Files are opened lazily (and once per process), so a source pickles to
    its path and can be shipped to cluster workers. N5 datasets are in N5
    order already; ``.npy``, TIFF and zarr arrays are C-ordered ``(z, y, x)``
    and are read transposed. Use :func:`open_label_source` to make one.
    """

    kind: str
    path: str | None
    shape: tuple
    dtype: str
    array: np.ndarray | None = field(default=None, repr=False)

    def read(self, region):
        """The labels of ``region`` (a tuple of slices, N5 order) as an ndarray."""
        if self.kind == "array":
            return self.array[region]
        stored = _opened(self.kind, self.path)
        if self.kind == "n5":
            return stored[region]
        return np.asarray(stored[region[::-1]]).T

    def description(self):
        """What identifies the source when resuming a conversion."""
        return {"kind": self.kind, "path": self.path, "shape": list(self.shape), "dtype": self.dtype}


def _checked_source(kind, path, shape, dtype, array=None):
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise ConfigurationError(f"source: integer labels required, {path or 'array'} has dtype {dtype}")
    if not 1 <= len(shape) <= 3:
        raise ConfigurationError(f"source: 1 to 3 dimensions required, got shape {tuple(shape)}")
    return LabelSource(kind, path, tuple(int(s) for s in shape), dtype.name, array)


def open_label_source(source, dataset=None):
    """A :class:`LabelSource` from an ndarray (N5 order), an N5 dataset or group + ``dataset``,
    a zarr array, a ``.npy`` file or a TIFF file."""
    if isinstance(source, LabelSource):
        return source
    if isinstance(source, np.ndarray):
        return _checked_source("array", None, source.shape, source.dtype, source)
    path = os.fspath(source)
    if dataset:
        path = os.path.join(path, dataset)
    if not os.path.exists(path):
        raise FileNotFoundError(f"source: {path} does not exist")
    lower = path.lower()
    if lower.endswith(".npy"):
        stored = np.load(path, mmap_mode="r")
        return _checked_source("npy", path, stored.shape[::-1], stored.dtype)
    if lower.endswith((".tif", ".tiff")):
        import tifffile
        with tifffile.TiffFile(path) as tif:
            series = tif.series[0]
            return _checked_source("tiff", path, series.shape[::-1], series.dtype)
    if "dimensions" in n5.read_attributes(path):
        stored = n5.open(path)
        if isinstance(stored, n5.LabelMultisetDataset):
            raise ConfigurationError(f"source: {path} is a label multiset dataset, not integer labels")
        return _checked_source("n5", path, stored.shape, stored.dtype)
    if os.path.exists(os.path.join(path, ".zarray")) or os.path.exists(os.path.join(path, "zarr.json")):
        try:
            import zarr  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError(f"source: {path} is a zarr array; install zarr to read it") from exc
        stored = _opened("zarr", path)
        return _checked_source("zarr", path, stored.shape[::-1], stored.dtype)
    raise ConfigurationError(
        f"source: {path} is not an N5 dataset, zarr array, .npy or TIFF file"
        + (" (an N5 group: name the dataset)" if os.path.exists(os.path.join(path, "attributes.json")) else ""))


# ---------------------------------------------------------------------------
# pyramid layout
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PyramidJob:
    """Everything a worker needs to write one block (small and picklable).

    Blocks already on disk are kept (a data block is written last, so one on
    disk is complete): that is how an interrupted run resumes.
    """

    target: str
    source: LabelSource
    block_size: tuple
    factors: tuple            # per level: factors relative to the level below (level 0: ones)
    compression: dict
    max_num_entries: int
    keep: str

    @property
    def n_levels(self):
        return len(self.factors)

    def level_shape(self, level):
        shape = self.source.shape
        for factors in self.factors[1:level + 1]:
            shape = tuple(-(-n // f) for n, f in zip(shape, factors))
        return shape

    def cumulative_factors(self, level):
        return tuple(int(np.prod([f[d] for f in self.factors[:level + 1]])) for d in range(len(self.block_size)))

    def grid_shape(self, level):
        return tuple(-(-n // b) for n, b in zip(self.level_shape(level), self.block_size))

    def data(self, level):
        return n5.LabelMultisetDataset(os.path.join(self.target, "data", f"s{level}"),
                                       self._attributes(level, label_multiset=True))

    def unique_labels(self, level):
        return n5.ArrayDataset(os.path.join(self.target, "unique-labels", f"s{level}"),
                               self._attributes(level, label_multiset=False))

    def _attributes(self, level, *, label_multiset):
        document = {"dataType": "uint8" if label_multiset else "uint64", "compression": self.compression,
                    "blockSize": list(self.block_size), "dimensions": list(self.level_shape(level))}
        if label_multiset:
            document.update(maxNumEntries=self.max_num_entries if level else -1, isLabelMultiset=True,
                            unit="pixel")
        if level:
            document["downsamplingFactors"] = [float(f) for f in self.cumulative_factors(level)]
        return document


def _normalized_factors(factors, shape, block_size):
    ndim = len(shape)
    if factors is None:  # halve until the whole volume fits one block
        factors, level_shape = [], shape
        while any(n > b for n, b in zip(level_shape, block_size)):
            step = tuple(2 if n > 1 else 1 for n in level_shape)
            factors.append(step)
            level_shape = tuple(-(-n // f) for n, f in zip(level_shape, step))
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


# ---------------------------------------------------------------------------
# block tasks (run on workers)
# ---------------------------------------------------------------------------

def _block_region(grid, block_size, shape):
    return tuple(slice(g * b, min((g + 1) * b, n)) for g, b, n in zip(grid, block_size, shape))


def _write_varlength_uint64(dataset, grid, values):
    """One unique-labels block: varlength header (the block's cropped dims), big-endian uint64."""
    payload = np.asarray(values, ">u8").tobytes()
    if dataset.compressor is not None:
        payload = dataset.compressor.encode(payload)
    header = N5BlockHeader(MODE_VARLENGTH, dataset.block_shape(grid), len(values))
    n5._write_atomic(dataset.block_path(grid), header.to_bytes() + bytes(payload))


def _write_block(job, level, grid, block):
    """unique-labels first, then the data block: a data block on disk means both are complete.

    Every list of ``block`` is in use and has positive counts (made from
    labels, by downsampling, or assembled from such), so the ids are the
    block's labels and the block is always written.
    """
    _write_varlength_uint64(job.unique_labels(level), grid, np.unique(block.ids))
    data = job.data(level)
    n5._write_atomic(data.block_path(grid), n5_varlen_encode(block, data.codec_chain, threads=1))


def _source_block(job, grid):
    """Level-0 block ``grid`` from the source labels (or from disk when resuming)."""
    data = job.data(0)
    if os.path.exists(data.block_path(grid)):  # resuming: done before
        return data.read_block(grid), 0
    labels = job.source.read(_block_region(grid, job.block_size, job.source.shape))
    if labels.dtype.kind not in "iu":
        raise ConfigurationError(f"source: integer labels required, got dtype {labels.dtype}")
    block = LabelMultisetArray.from_labels(labels)
    _write_block(job, 0, grid, block)
    return block, 1


def _assemble(shape, parts):
    """One LabelMultisetArray of ``shape`` from ``(origin, array)`` parts that tile it."""
    index = np.empty(shape, np.int64)
    offsets, ids, counts = [np.zeros(1, np.int64)], [], []
    n_lists = n_entries = 0
    for origin, part in parts:
        index[tuple(slice(o, o + n) for o, n in zip(origin, part.shape))] = part.index + n_lists
        offsets.append(part.list_offsets[1:] + n_entries)
        ids.append(part.ids)
        counts.append(part.counts)
        n_lists += part.n_lists
        n_entries += part.ids.size
    return LabelMultisetArray._from_parts(
        index.astype(np.int32) if n_lists < 2**31 else index, np.concatenate(offsets),
        np.concatenate(ids), np.concatenate(counts))


def write_pyramid_block(job, level, grid):
    """Write block ``grid`` of level ``level`` (level 1 also writes its level-0 blocks).

    A level-1 block downsamples its level-0 blocks in memory as they are made;
    higher levels read the level below from disk. Returns the number of
    blocks written (0 when resuming found it done).
    """
    data = job.data(level)
    if os.path.exists(data.block_path(grid)):  # resuming: done before
        return 0
    if level == 0:
        return _source_block(job, grid)[1]
    factors = job.factors[level]
    below = job.data(level - 1)
    child_grid = below.grid_shape
    written = 0
    parts = []
    children = [range(g * f, min((g + 1) * f, n)) for g, f, n in zip(grid, factors, child_grid)]
    for child in np.ndindex(*[len(r) for r in children]):
        child = tuple(r[c] for r, c in zip(children, child))
        if level == 1:
            block, made = _source_block(job, child)
            written += made
        else:
            block = below.read_block(child)
            if block is None:
                raise ConfigurationError(f"{below.block_path(child)}: block missing below level {level}")
        origin = tuple((c - g * f) * b // f for c, g, f, b in zip(child, grid, factors, job.block_size))
        parts.append((origin, block.downsample(factors, job.max_num_entries, keep=job.keep, threads=1)))
    _write_block(job, level, grid, _assemble(data.block_shape(grid), parts))
    return written + 1


# ---------------------------------------------------------------------------
# label-to-block-mapping
# ---------------------------------------------------------------------------

def _mapping_dataset(target, level, lookup_block_size, compression):
    return n5.ArrayDataset(os.path.join(target, "label-to-block-mapping", f"s{level}"),
                           {"dataType": "int8", "compression": compression,
                            "blockSize": [lookup_block_size], "dimensions": [LOOKUP_DIMENSION]})


def _block_labels(unique_labels):
    """(labels, grid positions) of every unique-labels block on disk, as flat arrays."""
    labels, grids = [], []
    for grid in np.ndindex(*unique_labels.grid_shape):
        values = unique_labels.read_block(grid)
        if values is not None:
            labels.append(values)
            grids.append(np.tile(np.array(grid, np.int64), (values.size, 1)))
    if not labels:
        return np.zeros(0, np.uint64), np.zeros((0, unique_labels.ndim), np.int64)
    return np.concatenate(labels), np.concatenate(grids)


def label_to_block_mapping_blocks(unique_labels, lookup_block_size):
    """``{file number: bytes}``: the uncompressed mapping files for one level.

    File ``n`` lists the ids ``n * lookup_block_size ...`` found in some
    block, ascending: int64 id, int32 number of blocks, then per block its
    interval (int64 min per axis, int64 inclusive max per axis), big-endian.
    """
    labels, grids = _block_labels(unique_labels)
    regular = labels <= MAX_ID  # reserved ids (>= 2**63 - 4 in Java's signed view) have no lookup
    labels, grids = labels[regular], grids[regular]
    order = np.lexsort(grids.T[::-1].tolist() + [labels]) if labels.size else np.zeros(0, np.int64)
    labels, grids = labels[order], grids[order]
    block = np.array(unique_labels.chunks, np.int64)
    minima = grids * block
    maxima = np.minimum(minima + block, np.array(unique_labels.shape, np.int64)) - 1
    intervals = np.concatenate([minima, maxima], axis=1).astype(">i8")
    starts = np.flatnonzero(np.concatenate([[True], labels[1:] != labels[:-1]])) if labels.size else np.zeros(0, int)
    stops = np.append(starts[1:], labels.size)
    files = {}
    for start, stop in zip(starts, stops):
        label = int(labels[start])
        files.setdefault(label // lookup_block_size, []).append(
            struct.pack(">qi", label, stop - start) + intervals[start:stop].tobytes())
    return {number: b"".join(parts) for number, parts in files.items()}


def write_label_to_block_mapping(target, level, lookup_block_size, compression, threads=None):
    """Write ``label-to-block-mapping/s{level}`` from ``unique-labels/s{level}``; returns the file count."""
    unique_labels = n5.open(os.path.join(target, "unique-labels", f"s{level}"))
    mapping = _mapping_dataset(target, level, lookup_block_size, compression)
    if os.path.isdir(mapping.path):
        shutil.rmtree(mapping.path)
    n5._write_json_atomic(os.path.join(mapping.path, "attributes.json"), mapping.attributes)
    files = label_to_block_mapping_blocks(unique_labels, lookup_block_size)

    def write_one(item):
        number, body = item
        payload = body if mapping.compressor is None else mapping.compressor.encode(body)
        header = N5BlockHeader(MODE_VARLENGTH, (lookup_block_size,), len(body))
        n5._write_atomic(mapping.block_path((number,)), header.to_bytes() + bytes(payload))

    with ThreadPoolExecutor(max_workers=default_threads(threads)) as pool:
        list(pool.map(write_one, files.items()))
    return len(files)


def read_label_to_block_mapping(target, level):
    """``{id: [(min, max), ...]}`` of a Paintera label source's ``label-to-block-mapping/s{level}``
    (intervals inclusive, N5 order), as Paintera's ``LabelBlockLookupFromN5`` reads it."""
    target = os.fspath(target)
    path = os.path.join(target, "label-to-block-mapping", f"s{level}")
    ndim = len(n5.read_attributes(os.path.join(target, "data", f"s{level}")).get("dimensions", [0, 0, 0]))
    attributes = n5.read_attributes(path)
    compressor = compressor_from_config(attributes.get("compression", {"type": "raw"}))
    result = {}
    for name in sorted(os.listdir(path)):
        if not name.isdigit():
            continue
        with builtins.open(os.path.join(path, name), "rb") as f:
            data = f.read()
        header = N5BlockHeader.from_bytes(data)
        body = memoryview(data)[header.nbytes:]
        body = bytes(body) if compressor is None else bytes(compressor.decode(body, header.num_elements))
        position = 0
        while position < len(body):
            label, n = struct.unpack_from(">qi", body, position)
            position += 12
            values = np.frombuffer(body, ">i8", count=n * 2 * ndim, offset=position).reshape(n, 2 * ndim)
            position += 16 * ndim * n
            result[label] = [(tuple(int(x) for x in v[:ndim]), tuple(int(x) for x in v[ndim:])) for v in values]
    return result


# ---------------------------------------------------------------------------
# the converter (runs on the caller's machine, blocks go to workers)
# ---------------------------------------------------------------------------

@dataclass
class ConversionSummary:
    """What :func:`convert` did."""

    target: str
    level_shapes: list
    blocks_written: int
    blocks_total: int
    max_id: int
    n_labels: int
    seconds: float

    @property
    def voxels(self):
        return int(np.prod(self.level_shapes[0], dtype=np.int64))


class _NoProgress:
    def update(self, n=1):
        pass

    def close(self):
        pass


def _executor(scheduler, threads):
    """(executor, worker threads, client to close or None): local threads, or a dask.distributed cluster."""
    if scheduler is None:
        n = default_threads(threads)
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


def _group_attributes(path):
    return n5.read_attributes(path) if os.path.isdir(path) else {}


def _start(target, parameters, overwrite, resume):
    """Create or reopen ``target``; returns True when a finished conversion is there already."""
    attributes = _group_attributes(target)
    state = attributes.get(CONVERSION_KEY)
    exists = os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target))
    if exists and overwrite:
        if not attributes:
            raise ConfigurationError(f"{target}: refusing to overwrite something that is not an N5 container")
        shutil.rmtree(target)
    elif exists and resume:
        if state is None:
            raise ConfigurationError(f"{target}: resume: not written by n5ms convert")
        if state["parameters"] != parameters:
            changed = sorted(k for k in parameters if state["parameters"].get(k) != parameters[k])
            raise ConfigurationError(f"{target}: resume: parameters differ from the interrupted run ({', '.join(changed)})")
        return state["complete"]
    elif exists:
        hint = (" (an interrupted conversion: pass resume=True to finish it)" if state and not state["complete"]
                else "")
        raise FileExistsError(f"{target} exists{hint}; pass overwrite=True to replace it")
    n5._write_json_atomic(os.path.join(target, "attributes.json"),
                          {"n5": n5.N5_VERSION, CONVERSION_KEY: {"complete": False, "parameters": parameters}})
    return False


def convert(source, target, *, dataset=None, block_size=64, factors=None, compression="gzip",
            max_num_entries=-1, keep="highest", resolution=None, offset=None, lookup_block_size=10000,
            threads=None, scheduler=None, overwrite=False, resume=False, progress=None):
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

    Returns
    -------
    ConversionSummary
    """
    started = time.perf_counter()
    source = open_label_source(source, dataset)
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
    job = PyramidJob(target, source, block_size, _normalized_factors(factors, source.shape, block_size),
                     n5._n5_compression(compression), int(max_num_entries), keep)
    parameters = {"source": source.description(), "blockSize": list(block_size),
                  "factors": [list(f) for f in job.factors], "compression": job.compression,
                  "maxNumEntries": job.max_num_entries, "keep": keep, "resolution": list(resolution),
                  "offset": list(offset), "lookupBlockSize": int(lookup_block_size)}
    levels = range(job.n_levels)
    blocks_total = sum(int(np.prod(job.grid_shape(level))) for level in levels)
    if _start(target, parameters, overwrite, resume):
        return _summary(job, 0, blocks_total, started)

    _write_layout(job, resolution, offset, lookup_block_size)
    executor, workers, client = _executor(scheduler, threads)
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
        write_label_to_block_mapping(target, level, int(lookup_block_size), job.compression, threads)
        bar.update(1)
    bar.close()
    labels = n5.open(os.path.join(target, "unique-labels", "s0"))
    all_labels = np.unique(_block_labels(labels)[0])
    regular = all_labels[all_labels <= MAX_ID]
    max_id = int(regular.max()) if regular.size else 0
    attributes = {"n5": n5.N5_VERSION, "painteraData": {"type": "label"}, "maxId": max_id,
                  "labelBlockLookup": LABEL_BLOCK_LOOKUP,
                  CONVERSION_KEY: {"complete": True, "parameters": parameters}}
    n5._write_json_atomic(os.path.join(target, "attributes.json"), attributes)
    return _summary(job, written, blocks_total, started)


def _write_layout(job, resolution, offset, lookup_block_size):
    target = job.target
    n5._write_json_atomic(os.path.join(target, "data", "attributes.json"),
                          {"multiScale": True, "offset": list(offset), "resolution": list(resolution),
                           "isLabelMultiset": True})
    n5._write_json_atomic(os.path.join(target, "unique-labels", "attributes.json"), {"multiScale": True})
    n5._write_json_atomic(os.path.join(target, "label-to-block-mapping", "attributes.json"),
                          {"isMultiscale": True, "labelBlockLookup": LABEL_BLOCK_LOOKUP})
    for level in range(job.n_levels):
        for dataset in (job.data(level), job.unique_labels(level)):
            n5._write_json_atomic(os.path.join(dataset.path, "attributes.json"), dataset.attributes)


def _summary(job, written, blocks_total, started):
    attributes = _group_attributes(job.target)
    labels = n5.open(os.path.join(job.target, "unique-labels", "s0"))
    n_labels = int(np.unique(_block_labels(labels)[0]).size)
    return ConversionSummary(job.target, [job.level_shape(level) for level in range(job.n_levels)],
                             written, blocks_total, int(attributes.get("maxId", 0)), n_labels,
                             time.perf_counter() - started)
