"""Writing N5 datasets: label multiset datasets the way Java writes them, plain numeric ones,
and the overwrite guards every writer goes through (see :mod:`n5mscodecs.n5.writing`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ArgumentError, ConfigurationError
from ..multiset import LabelMultisetArray
from .array_dataset import ArrayDataset
from .label_dataset import LabelMultisetDataset
from .metadata import DatasetMetadata, max_id
from .store import Store
from .stores import open_target
from .writing import dataset_writer, incomplete_marker, rewrite_hint

if TYPE_CHECKING:
    from collections.abc import Iterable

    from numpy.typing import ArrayLike, DTypeLike

    from ..multiset.array import MultisetsLike, ReservedRule
    from .compression import CompressorConfig
    from .storage import PathLike, StorageOptions
    from .store import Where


def block_size(chunks: int | Iterable[int], ndim: int, name: str = "chunks") -> tuple[int, ...]:
    """``chunks`` (one int for every axis, or one per axis) as ``ndim`` block sizes >= 1;
    ``name`` names the argument in messages."""
    try:
        values = (int(chunks),) * ndim if isinstance(chunks, (int, np.integer)) else tuple(chunks)
        sizes = tuple(int(c) for c in values)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{name}: an int or {ndim} ints required, got {chunks!r}") from None
    if len(sizes) != ndim or any(c < 1 or c != v for c, v in zip(sizes, values)):
        raise ConfigurationError(f"{name}: {ndim} integers >= 1 required (or one for every axis), got {chunks!r}")
    return sizes


#: The configuration key a compressor's level goes to (h5py's ``compression_opts``, z5py's ``level=``).
LEVEL_KEYS = {"gzip": "level", "zlib": "level", "zstd": "level", "bzip2": "blockSize", "xz": "preset",
              "blosc": "clevel"}


def compression_argument(compression: CompressorConfig | int | None, level: Any = None,
                         compression_opts: Any = None) -> CompressorConfig:
    """``compression`` as h5py, z5py and zarr users spell it, as an N5 compression spelling:
    None is raw (no compression); an int is a gzip level (h5py's ``compression=4``);
    ``level`` (z5py) or ``compression_opts`` (h5py) is the compressor's level (an int, put
    under its key in ``LEVEL_KEYS``: gzip's ``level``, xz's ``preset``, ...) or a dict of its
    options. An ``ArgumentError`` (a :class:`~n5mscodecs.ConfigurationError`) names the
    argument it refuses.

    >>> compression_argument("gzip", level=9), compression_argument(None), compression_argument("xz", None, 3)
    ({'type': 'gzip', 'level': 9}, 'raw', {'type': 'xz', 'preset': 3})
    """
    if compression is None:
        compression = "raw"
    elif isinstance(compression, bool):
        raise ArgumentError("compression", "a compression name, an N5 compression dict or a gzip level, got "
                                           f"{compression!r}")
    elif isinstance(compression, int | np.integer):
        if compression_opts is not None or level is not None:
            raise ArgumentError("compression_opts", "an int compression is already the gzip level")
        compression, level = "gzip", compression
    given = [(name, value) for name, value in (("level", level), ("compression_opts", compression_opts))
             if value is not None]
    if not given:
        return compression
    if len(given) > 1:
        raise ArgumentError("compression_opts", "pass level (z5py) or compression_opts (h5py), not both")
    argument, value = given[0]
    if isinstance(compression, str):
        config: dict[str, Any] = {"type": compression}
    elif isinstance(compression, dict) and "type" in compression:
        config = dict(compression)
    else:
        raise ArgumentError(argument, f"only with a compression named by a string or an N5 {{'type': ...}} "
                                      f"dict, got {compression!r}")
    kind = config["type"]
    if isinstance(value, Mapping):
        options = dict(value)
    elif isinstance(value, int | np.integer) and not isinstance(value, bool):
        if kind not in LEVEL_KEYS:
            raise ArgumentError(argument, f"{kind} compression has no level (compressors with one: "
                                          f"{', '.join(sorted(LEVEL_KEYS))})")
        options = {LEVEL_KEYS[kind]: int(value)}
    else:
        raise ArgumentError(argument, f"an int level or a dict of the compression's options, got {value!r}")
    clash = sorted(key for key in options if key in config and config[key] != options[key])
    if clash:
        raise ArgumentError(argument, f"{clash} given twice with different values (in compression too)")
    return {**config, **options}


def check_fill_value(**given: Any) -> None:
    """N5 has no fill value field (missing blocks read as 0): each of ``given`` (``fill_value``,
    h5py's ``fillvalue``) must be None or 0, else an ``ArgumentError`` (a
    :class:`~n5mscodecs.ConfigurationError`) naming it."""
    for name, value in given.items():
        if value is not None and not (np.ndim(value) == 0 and value == 0):
            raise ArgumentError(name, f"N5 has no fill value field (missing blocks read as 0): only 0 or None "
                                      f"is accepted, got {value!r}")


def source_file(data: object) -> str | os.PathLike[str] | None:
    """The file ``data`` reads from: an ``np.memmap``'s (also of a view or an array made on
    top of one: its ``base`` chain is followed), a dataset's or a label source's path; None
    for data in memory."""
    seen = 0
    while data is not None and seen < 64:
        source = getattr(data, "filename", None) or getattr(data, "path", None)
        if isinstance(source, (str, os.PathLike)):
            return source
        data, seen = getattr(data, "base", None), seen + 1
    return None


def _array_metadata(shape: Iterable[int], chunks: int | Iterable[int], dtype: DTypeLike,
                    compression: CompressorConfig, attributes: Mapping[str, Any] | None) -> DatasetMetadata:
    shape = [int(n) for n in shape]
    return DatasetMetadata.array(shape, block_size(chunks, len(shape)), dtype, compression, attributes=attributes)


def _write_blocks(dataset, data, threads, **options):
    """Write every block of ``data`` in parallel; each block is written by one worker."""
    def write_one(grid_position):
        dataset.write_block(grid_position, data[dataset.block_region(grid_position)], **options)

    with ThreadPoolExecutor(max_workers=dataset.store.request_threads(threads)) as pool:
        list(pool.map(write_one, np.ndindex(*dataset.grid_shape)))


def write(
    path: Where,
    data: MultisetsLike,
    chunks: int | Iterable[int],
    *,
    compression: CompressorConfig = "gzip",
    attributes: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    threads: int | None = None,
    write_background_blocks: bool = False,
    storage_options: StorageOptions = None,
    container: PathLike | Store | None = None,
    reserved: ReservedRule = "reject",
) -> LabelMultisetDataset:
    """Write a label multiset dataset the way Java does.

    ``data`` (N5 axis order) is a LabelMultisetArray, integer labels or an
    object array of elements; integer labels follow ``reserved`` (see
    :meth:`~n5mscodecs.LabelMultisetArray.from_labels`: negative and reserved
    values are refused by default). ``chunks`` is the block size (one int
    for every axis, or one per axis). Boundary blocks are truncated to the
    grid; blocks without any positive count are not written, and neither are
    blocks whose voxels are all ``{0: 1}`` (they read back the same, as
    missing blocks; the conversion helper skips all-0 blocks too) unless
    ``write_background_blocks``. Attributes: dataType uint8, compression,
    blockSize, dimensions, isLabelMultiset, maxId (largest id below 2**63,
    see ``n5mscodecs.n5.dataset.max_id``), plus ``attributes``. ``path`` may be a URL
    (see :func:`open`); blocks are then written with many requests in flight. It may
    also be a store (:func:`~n5mscodecs.n5.stores.open_store`, which then holds the
    options): a group's writers pass their child's.

    Everything is checked before anything is written. Until the last block
    is written the dataset is marked incomplete (readers refuse it; see
    :mod:`n5mscodecs.n5.writing`); ``overwrite=True`` marks the old dataset
    before removing its blocks.

    The container root gets ``{"n5": "4.0.0"}`` in its attributes (other
    attributes, and a version already there, are kept): ``container`` (the
    root's path or URL: ``path`` or one of its parents) or, by default, the
    nearest of ``path`` and its parents whose name ends with ``.n5``. With
    neither, no root attribute is written; pass ``container=`` then.
    """
    store = open_target(path, storage_options, container, source=source_file(data))
    data = LabelMultisetArray.coerce(data, reserved=reserved)
    chunks = block_size(chunks, data.ndim)
    metadata = DatasetMetadata.label_multisets(data.shape, chunks, compression,
                                               max_id=max_id(data.unique_labels()), attributes=attributes)
    marker = incomplete_marker("n5mscodecs.n5.write", rewrite_hint("n5.write"))
    with dataset_writer(store, metadata.to_json(), marker, overwrite=overwrite, container=container):
        dataset = LabelMultisetDataset(store, metadata)
        _write_blocks(dataset, data, threads, write_background=write_background_blocks)
    return dataset


def create_array_dataset(
    path: Where,
    shape: Iterable[int],
    chunks: int | Iterable[int],
    dtype: DTypeLike,
    *,
    compression: CompressorConfig = "gzip",
    attributes: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    storage_options: StorageOptions = None,
    container: PathLike | Store | None = None,
    incomplete: str | None = None,
) -> ArrayDataset:
    """Create an empty plain numeric N5 dataset; fill it with ``write_block``. The container
    root gets the N5 version attribute as in :func:`write` (``container``: its path or URL).

    ``incomplete``: for a writer that fills the dataset block by block, its name; the
    dataset is then marked incomplete (readers refuse it) until
    :func:`~n5mscodecs.n5.writing.mark_complete` is called after the last block."""
    metadata = _array_metadata(shape, chunks, dtype, compression, attributes)
    marker = None if incomplete is None else incomplete_marker(incomplete, rewrite_hint(incomplete))
    store = open_target(path, storage_options, container)
    with dataset_writer(store, metadata.to_json(), marker, overwrite=overwrite, container=container,
                        complete=False):
        pass  # no blocks: a missing block reads as 0
    return ArrayDataset(store, metadata)


def write_array(
    path: Where,
    data: ArrayLike,
    chunks: int | Iterable[int],
    *,
    compression: CompressorConfig = "gzip",
    attributes: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    threads: int | None = None,
    storage_options: StorageOptions = None,
    container: PathLike | Store | None = None,
) -> ArrayDataset:
    """Write a plain numeric N5 dataset (default-mode, truncated boundary blocks); the
    container root gets the N5 version attribute as in :func:`write`, and the dataset is
    marked incomplete until its last block is written, as there."""
    store = open_target(path, storage_options, container, source=source_file(data))
    data = np.asarray(data)
    metadata = _array_metadata(data.shape, chunks, data.dtype, compression, attributes)
    marker = incomplete_marker("n5mscodecs.n5.write_array", rewrite_hint("n5mscodecs.n5.write_array"))
    with dataset_writer(store, metadata.to_json(), marker, overwrite=overwrite, container=container):
        dataset = ArrayDataset(store, metadata)
        _write_blocks(dataset, data, threads)
    return dataset
