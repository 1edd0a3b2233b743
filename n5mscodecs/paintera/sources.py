"""Label sources for :func:`~n5mscodecs.paintera.convert`: integer labels read region by region
from an ndarray, an N5 dataset, a zarr array, a ``.npy`` or a TIFF file (N5 axis order)."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from .._extras import require
from .._threads import default_threads
from ..errors import ConfigurationError
from ..multiset.array import check_label_range
from ..n5 import grid, storage
from ..n5.store import open_store

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..multiset.array import ReservedRule
    from ..n5.storage import PathLike
    from ..n5.store import Store


@functools.lru_cache(maxsize=8)
def _opened(kind, path, options_json="null"):
    """The array behind a file source, opened once per process (workers open lazily);
    ``options_json``: the storage options of a URL, as JSON (a hashable cache key)."""
    options = json.loads(options_json)
    if kind == "n5":
        return n5.open_dataset(path, storage_options=options)
    if kind == "npy":
        return np.load(path, mmap_mode="r")
    if kind == "tiff":
        tifffile = require("tifffile", "cli", "TIFF sources")
        try:
            return tifffile.memmap(path, mode="r")
        except ValueError:  # compressed or not contiguous: read it whole
            return tifffile.imread(path)
    if kind == "zarr":
        zarr = require("zarr", "zarr", "zarr array sources")
        return zarr.open_array(path, mode="r", storage_options=options) if options else zarr.open_array(path, mode="r")
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
    shape: tuple[int, ...]
    dtype: str
    array: np.ndarray | None = field(default=None, repr=False)
    storage_options: dict[str, Any] | None = field(default=None, repr=False)  # for URLs; never printed
    #: Voxel size and offset (N5 order) the source itself gives (an OME-Zarr level's), else None.
    resolution: tuple[float, ...] | None = None
    offset: tuple[float, ...] | None = None

    def read(self, region: tuple[slice, ...]) -> np.ndarray:
        """The labels of ``region`` (a tuple of slices, N5 order) as an ndarray."""
        if self.array is not None:  # kind "array"
            return self.array[region]
        stored = _opened(self.kind, self.path, json.dumps(self.storage_options, sort_keys=True))
        if self.kind == "n5":
            return stored[region]
        return np.asarray(stored[region[::-1]]).T

    def description(self) -> dict[str, Any]:
        """What identifies the source when resuming a conversion."""
        return {"kind": self.kind, "path": self.path, "shape": list(self.shape), "dtype": self.dtype}


def check_source_labels(source: LabelSource, block_size: Sequence[int], reserved: ReservedRule = "reject",
                        threads: int | None = None) -> None:
    """Refuse (ConfigurationError) a source holding negative or reserved labels unless
    ``reserved="accept"``, before anything is written: the source is read region by region
    (``block_size`` regions, in parallel) when its data type can hold such values at all
    (signed integers, uint64), else nothing is read."""
    dtype = np.dtype(source.dtype)
    if reserved == "accept" or not (dtype.kind == "i" or dtype == np.uint64) or not all(source.shape):
        check_label_range(0, 0, None, reserved=reserved)  # checks the rule's spelling
        return
    regions = [grid.block_region(position, block_size, source.shape)
               for position in np.ndindex(*grid.grid_shape(source.shape, block_size))]

    def extremes(region):
        labels = source.read(region)
        return int(labels.min()), int(labels.max())

    with ThreadPoolExecutor(max_workers=default_threads(threads)) as pool:
        found = list(pool.map(extremes, regions))

    def count_outside(low, high):
        total = 0
        for region in regions:
            labels = source.read(region)
            outside = np.zeros(labels.shape, bool) if low is None else labels < low
            total += int(np.count_nonzero(outside if high is None else outside | (labels > high)))
        return total

    check_label_range(min(lo for lo, _ in found), max(hi for _, hi in found), count_outside,
                      reserved=reserved, name=f"source {source.path or 'array'}")


def _npy_header(path):
    """(shape, dtype) from a ``.npy`` header, without reading (or allocating) the array."""
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(f)
        except (ValueError, OSError, EOFError, SyntaxError) as exc:
            raise ConfigurationError(f"source: {path}: not a readable .npy file ({exc})") from None
    return shape, dtype


def _checked_source(kind, path, shape, dtype, array=None, storage_options=None):
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise ConfigurationError(f"source: integer labels required, {path or 'array'} has dtype {dtype}")
    if not 1 <= len(shape) <= 3:
        raise ConfigurationError(f"source: 1 to 3 dimensions required, got shape {tuple(shape)}")
    return LabelSource(kind, path, tuple(int(s) for s in shape), dtype.name, array, storage_options)


def open_label_source(source: LabelSource | np.ndarray | PathLike, dataset: str | None = None, *,
                      storage_options: dict[str, Any] | None = None, level: int = 0) -> LabelSource:
    """A :class:`LabelSource` from an ndarray (N5 order), an N5 dataset or group + ``dataset``,
    a zarr array, an OME-Zarr multiscale image (its ``level``, with the level's voxel size
    and offset), a ``.npy`` file or a TIFF file. N5 datasets and zarr arrays may be URLs
    (with fsspec's ``storage_options``)."""
    if isinstance(source, LabelSource):
        return source
    if isinstance(source, np.ndarray):
        return _checked_source("array", None, source.shape, source.dtype, source)
    path = os.fspath(source)
    if dataset:
        path = storage.join(path, dataset)
    return _open_stored_source(open_store(path, storage_options), level)


def _open_stored_source(store: Store, level: int) -> LabelSource:
    """:func:`open_label_source` of what lies at the location of ``store``."""
    from .ome_zarr import level_of_image  # (a cycle at import time: ome_zarr uses the converter's readers)

    path, name, options = store.location, store.display(), store.storage_options
    if store.is_directory() and (found := level_of_image(store, level)):
        array_key, resolution, offset = found
        opened = _open_stored_source(store.child(array_key), 0)
        return dataclasses.replace(opened, resolution=resolution, offset=offset)
    if not store.exists():
        raise FileNotFoundError(f"source: {name} does not exist")
    lower = path.lower()
    if lower.endswith((".npy", ".tif", ".tiff")) and not store.is_local:
        raise ConfigurationError(f"source: {name}: .npy and TIFF sources must be local files")
    if lower.endswith(".npy"):
        shape, dtype = _npy_header(path)
        return _checked_source("npy", path, shape[::-1], dtype)
    if lower.endswith((".tif", ".tiff")):
        tifffile = require("tifffile", "cli", "TIFF sources")
        try:
            with tifffile.TiffFile(path) as tif:
                series = tif.series[0]
                shape, dtype = series.shape, series.dtype
        except (ValueError, IndexError, KeyError, struct.error) as exc:  # tifffile's TiffFileError is a ValueError
            raise ConfigurationError(f"source: {name}: not a TIFF file tifffile can read ({exc})") from None
        return _checked_source("tiff", path, shape[::-1], dtype)
    if "dimensions" in store.get_attributes():
        # opened by location: n5.open confines the dataset to its container root
        stored = n5.open_dataset(path, storage_options=options)
        if isinstance(stored, n5.LabelMultisetDataset):
            raise ConfigurationError(f"source: {name} is a label multiset dataset, not integer labels")
        return _checked_source("n5", path, stored.shape, stored.dtype, storage_options=options)
    if any(store.exists(key) for key in (".zarray", "zarr.json")):
        require("zarr", "zarr", f"source: {name} is a zarr array; zarr arrays")
        stored = _opened("zarr", path, json.dumps(options, sort_keys=True))
        return _checked_source("zarr", path, stored.shape[::-1], stored.dtype, storage_options=options)
    group = store.exists(storage.ATTRIBUTES)
    raise ConfigurationError(
        f"source: {name} is not an N5 dataset, zarr array, .npy or TIFF file"
        + (" (an N5 group: name the dataset)" if group else ""))
