"""Label sources for :func:`~n5mscodecs.paintera.convert`: integer labels read region by region
from an ndarray, an N5 dataset, a zarr array, an OME-Zarr multiscale image, a ``.npy`` or a
TIFF file (N5 axis order)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import struct
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from .._extras import require
from ..errors import ArgumentError, ConfigurationError
from ..multiset.array import check_label_range
from ..n5 import grid
from ..n5.storage import ATTRIBUTES
from .cluster import LOCAL, engine_for, run_tasks
from .conventions import source_store

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TypeGuard

    from ..multiset.array import ReservedRule
    from ..n5.storage import PathLike
    from ..n5.store import Store
    from .cluster import Engine


@dataclass(frozen=True)
class _Opening:
    """What a file source opens, as the key of :func:`_opened`: its kind, location and the
    storage options of its store as JSON (hashable); the store itself is not compared."""

    kind: str
    path: str
    options: str
    store: Store = field(compare=False)


@functools.lru_cache(maxsize=8)
def _opened(opening: _Opening) -> Any:
    """The array behind a file source, opened once per process (workers open lazily)."""
    store = opening.store
    if opening.kind == "n5":
        return n5.open_dataset(store)
    if opening.kind in ("npy", "tiff"):
        local = store.local_file()
        if local is None:
            raise ConfigurationError(f"source: {store.display()}: .npy and TIFF sources must be local files")
        if opening.kind == "npy":
            return np.load(local, mmap_mode="r")
        tifffile = require("tifffile", "cli", "TIFF sources")
        try:
            return tifffile.memmap(local, mode="r")
        except ValueError:  # compressed or not contiguous: read it whole
            return tifffile.imread(local)
    if opening.kind == "zarr":
        zarr = require("zarr", "zarr", "zarr array sources")
        from ..zarr.store import PackageStore  # (needs zarr)

        return zarr.open_array(PackageStore(store, read_only=True), mode="r")
    raise ConfigurationError(f"source: unknown kind {opening.kind!r}")


@dataclass(frozen=True, eq=False)
class LabelSource:
    """Integer labels read region by region, in N5 axis order.

    Files are opened lazily (and once per process), so a source pickles to
    its store and can be shipped to cluster workers. N5 datasets are in N5
    order already; ``.npy``, TIFF and zarr arrays are C-ordered ``(z, y, x)``
    and are read transposed. Use :func:`open_label_source` to make one.
    """

    kind: str
    path: str | None  # the location (for messages, descriptions and overlap checks)
    shape: tuple[int, ...]
    dtype: str
    array: Any = field(default=None, repr=False)  # kind "array": an ndarray; "dask": a dask array
    store: Store | None = field(default=None, repr=False)  # of a file source: what is read
    #: Voxel size and offset (N5 order) the source itself gives (an OME-Zarr level's), else None.
    resolution: tuple[float, ...] | None = None
    offset: tuple[float, ...] | None = None

    def read(self, region: tuple[slice, ...]) -> np.ndarray:
        """The labels of ``region`` (a tuple of slices, N5 order) as an ndarray."""
        if self.kind == "dask":  # computed where the task runs, in it (a worker's task waits on no other)
            return np.asarray(self.array[region].compute(scheduler="sync"))
        if self.array is not None:  # kind "array"
            return self.array[region]
        stored = _opened(_opening(self))
        if self.kind == "n5":
            return stored[region]
        return np.asarray(stored[region[::-1]]).T

    def description(self) -> dict[str, Any]:
        """What identifies the source when resuming a conversion."""
        return {"kind": self.kind, "path": self.path, "shape": list(self.shape), "dtype": self.dtype}


def _opening(source: LabelSource) -> _Opening:
    if source.store is None or source.path is None:
        raise ConfigurationError(f"source: a {source.kind} source needs its store and location")
    return _Opening(source.kind, source.path, json.dumps(source.store.storage_options, sort_keys=True), source.store)


#: a source check task reads this many blocks per axis (a cube of 64 blocks in 3-d), one at a time
CHECK_BLOCKS = 4


def check_source_labels(source: LabelSource, block_size: Sequence[int], reserved: ReservedRule = "reject",
                        engine: Engine | None = None) -> None:
    """Refuse (ConfigurationError) a source holding negative or reserved labels unless
    ``reserved="accept"``, before anything is written: the source is read region by region
    (``block_size`` regions) as tasks on ``engine`` (default: local threads; see
    :func:`~n5mscodecs.paintera.cluster.run_tasks`), each task reading a group of regions and
    returning its extremes, when its data type can hold such values at all (signed
    integers, uint64), else nothing is read. Only the extremes, and the voxels outside the
    range when there are some (a second pass, for the message), come back."""
    dtype = np.dtype(source.dtype)
    if reserved == "accept" or not (dtype.kind == "i" or dtype == np.uint64) or not all(source.shape):
        check_label_range(0, 0, None, reserved=reserved)  # checks the rule's spelling
        return
    check = _Check(source, tuple(block_size))
    with _engine(engine) as running:
        with running.shared(check) as shared:   # an in-memory source travels once per worker
            low, high = run_tasks(running, _extremes, shared, check.groups(), reduce=_widest, initial=(None, None))
        assert low is not None and high is not None   # the source has voxels: every group found some

        def count_outside(low, high):
            with running.shared(dataclasses.replace(check, low=low, high=high)) as shared:
                return run_tasks(running, _count_outside, shared, check.groups())

        check_label_range(low, high, count_outside, reserved=reserved, name=f"source {source.path or 'array'}")


@contextlib.contextmanager
def _engine(engine):
    if engine is not None:
        yield engine
    else:
        with engine_for(LOCAL) as local:
            yield local


@dataclass(frozen=True)
class _Check:
    """What a source check task needs: the source, the block size and (counting) the range."""

    source: LabelSource
    block_size: tuple[int, ...]
    low: int | None = None
    high: int | None = None

    def groups(self):
        """The positions of the task groups (:data:`CHECK_BLOCKS` blocks per axis) on a coarse grid."""
        return np.ndindex(*grid.grid_shape(self.source.shape, [b * CHECK_BLOCKS for b in self.block_size]))

    def regions(self, group):
        """The ``block_size`` regions of one group."""
        grid_shape = grid.grid_shape(self.source.shape, self.block_size)
        ranges = [range(g * CHECK_BLOCKS, min((g + 1) * CHECK_BLOCKS, n)) for g, n in zip(group, grid_shape)]
        for offsets in np.ndindex(*[len(r) for r in ranges]):
            position = tuple(r[o] for r, o in zip(ranges, offsets))
            yield grid.block_region(position, self.block_size, self.source.shape)


def _extremes(check: _Check, group) -> tuple[int | None, int | None]:
    low = high = None
    for region in check.regions(group):
        labels = check.source.read(region)
        low, high = _widest((low, high), (int(labels.min()), int(labels.max())))
    return low, high


def _widest(a, b):
    return (b[0] if a[0] is None else min(a[0], b[0]), b[1] if a[1] is None else max(a[1], b[1]))


def _count_outside(check: _Check, group) -> int:
    total = 0
    for region in check.regions(group):
        labels = check.source.read(region)
        outside = np.zeros(labels.shape, bool) if check.low is None else labels < check.low
        total += int(np.count_nonzero(outside if check.high is None else outside | (labels > check.high)))
    return total


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


def _checked_source(kind, store, shape, dtype, array=None, role="source"):
    dtype = np.dtype(dtype)
    path = None if store is None else store.url()
    if dtype.kind not in "iu":
        raise ConfigurationError(f"{role}: integer labels required, {path or 'array'} has dtype {dtype}")
    if not 1 <= len(shape) <= 3:
        raise ConfigurationError(f"{role}: 1 to 3 dimensions required, got shape {tuple(shape)}")
    return LabelSource(kind, path, tuple(int(s) for s in shape), dtype.name, array, store)


def _is_dask_array(value: Any) -> TypeGuard[Any]:
    dask_array = sys.modules.get("dask.array")   # (not imported: no dask array was made)
    return dask_array is not None and isinstance(value, dask_array.Array)


def open_label_source(source: LabelSource | np.ndarray | PathLike | Store | Any, dataset: str | None = None, *,
                      storage_options: dict[str, Any] | None = None, level: int = 0,
                      role: str = "source") -> LabelSource:
    """A :class:`LabelSource` from an ndarray or a dask array (N5 order; a dask array's regions
    are computed where the blocks are made, e.g. on cluster workers), an N5 dataset or group + ``dataset``,
    a zarr array, an OME-Zarr multiscale image (its ``level``, with the level's voxel size
    and offset), a ``.npy`` file or a TIFF file. N5 datasets and zarr arrays may be URLs
    (with fsspec's ``storage_options``); each may also be given as a store
    (:class:`~n5mscodecs.n5.store.Store`), and N5 datasets and groups as the objects
    :func:`n5mscodecs.n5.open` returns; nested lists of integers as the array they spell.
    ``level`` other than 0 is refused for what has one level (anything but an OME-Zarr
    image); ``role`` names what is opened in messages (``"edit"`` for a commit's edit)."""
    if isinstance(source, LabelSource):
        return source
    if isinstance(source, (list, tuple)):
        source = np.asarray(source)
    if isinstance(source, np.ndarray):
        if level:
            raise ArgumentError("level", f"an in-memory {role} has one level; level picks a level of an "
                                         "OME-Zarr multiscale image")
        return _checked_source("array", None, source.shape, source.dtype, source, role=role)
    if _is_dask_array(source):
        if level:
            raise ArgumentError("level", f"a dask array {role} has one level; level picks a level of an "
                                         "OME-Zarr multiscale image")
        return _checked_source("dask", None, source.shape, source.dtype, source, role=role)
    store = source_store(source, storage_options)
    return _open_stored_source(store.child(dataset) if dataset else store, level, role)


def _open_stored_source(store: Store, level: int, role: str = "source") -> LabelSource:
    """:func:`open_label_source` of what lies in ``store``."""
    name = store.display()
    if store.is_directory() and (found := level_of_image(store, level)):
        array_key, resolution, offset = found
        opened = _open_stored_source(store.child(array_key), 0, role)
        return dataclasses.replace(opened, resolution=resolution, offset=offset)
    if level:
        raise ArgumentError("level", f"{role} {name} has one level (it is no OME-Zarr multiscale image); "
                                     "level picks a level of an OME-Zarr image")
    if not store.exists():
        raise FileNotFoundError(f"{role}: {name} does not exist")
    local = store.local_file()
    lower = store.name.lower()
    if lower.endswith((".npy", ".tif", ".tiff")) and local is None:
        raise ConfigurationError(f"{role}: {name}: .npy and TIFF sources must be local files")
    if lower.endswith(".npy"):
        shape, dtype = _npy_header(local)
        return _checked_source("npy", store, shape[::-1], dtype, role=role)
    if lower.endswith((".tif", ".tiff")):
        tifffile = require("tifffile", "cli", "TIFF sources")
        try:
            with tifffile.TiffFile(local) as tif:
                series = tif.series[0]
                shape, dtype = series.shape, series.dtype
        except (ValueError, IndexError, KeyError, struct.error) as exc:  # tifffile's TiffFileError is a ValueError
            raise ConfigurationError(f"{role}: {name}: not a TIFF file tifffile can read ({exc})") from None
        return _checked_source("tiff", store, shape[::-1], dtype, role=role)
    if "dimensions" in store.get_attributes():
        stored = n5.open_dataset(store)
        if isinstance(stored, n5.LabelMultisetDataset):
            raise ConfigurationError(f"{role}: {name} is a label multiset dataset, not integer labels")
        return _checked_source("n5", store, stored.shape, stored.dtype, role=role)
    if any(store.exists(key) for key in (".zarray", "zarr.json")):
        require("zarr", "zarr", f"{role}: {name} is a zarr array; zarr arrays")
        stored = _opened(_Opening("zarr", store.url(), json.dumps(store.storage_options, sort_keys=True), store))
        return _checked_source("zarr", store, stored.shape[::-1], stored.dtype, role=role)
    group = store.exists(ATTRIBUTES)
    raise ConfigurationError(
        f"{role}: {name} is not an N5 dataset, zarr array, .npy or TIFF file"
        + (" (an N5 group: name the dataset)" if group else ""))


def level_of_image(image: Store, level: int = 0) -> tuple[str, tuple[float, ...], tuple[float, ...]] | None:
    """``(array key, resolution, offset)`` of level ``level`` of the OME-Zarr multiscale image
    ``image`` (the key relative to it; resolution and offset in N5 order, x first, from the
    level's ``scale`` and ``translation``); None when ``image`` is no OME-Zarr multiscale group."""
    multiscale = first_multiscale(image)
    if multiscale is None:
        return None
    levels = multiscale.get("datasets") or []
    if not 0 <= level < len(levels):
        raise ConfigurationError(f"{image.display()}: level {level}: the image has {len(levels)} levels")
    scale, translation = _transforms(multiscale, levels[level], image.display())
    return str(levels[level]["path"]), tuple(scale[::-1]), tuple(translation[::-1])


def first_multiscale(image: Store) -> dict[str, Any] | None:
    """The first ``multiscales`` entry of the NGFF (0.4 or 0.5) group ``image``, or None."""
    attributes = None
    for name in ("zarr.json", ".zattrs"):
        document = image.get_json(name)
        if isinstance(document, dict):
            attributes = document.get("attributes", {}) if name == "zarr.json" else document
            break
    if not isinstance(attributes, dict):
        return None
    holder = attributes.get("ome", attributes)
    multiscales = holder.get("multiscales") if isinstance(holder, dict) else None
    if not isinstance(multiscales, list) or not multiscales or not isinstance(multiscales[0], dict):
        return None
    return multiscales[0]


def _transforms(multiscale, dataset, where):
    """(scale, translation) of one level: its own transformations after the multiscale's."""
    ndim = len(multiscale.get("axes") or [])
    scale, translation = [1.0] * ndim, [0.0] * ndim
    for transforms in (dataset.get("coordinateTransformations") or [],
                       multiscale.get("coordinateTransformations") or []):
        for transform in transforms:
            kind = transform.get("type") if isinstance(transform, dict) else None
            values = transform.get(kind) if kind in ("scale", "translation") else None
            if values is None:
                continue
            if len(values) != ndim:
                raise ConfigurationError(f"{where}: {kind} has {len(values)} values for {ndim} axes")
            if kind == "scale":
                translation = [t * s for t, s in zip(translation, values)]
                scale = [a * s for a, s in zip(scale, values)]
            else:
                translation = [t + v for t, v in zip(translation, values)]
    return scale, translation
