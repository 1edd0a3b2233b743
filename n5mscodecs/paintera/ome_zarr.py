"""Paintera label pyramids as OME-Zarr (NGFF 0.4 and 0.5) multiscale label images, and back.

:func:`to_ome_zarr` streams a Paintera label source (or a label multiset pyramid or
dataset) into an OME-Zarr labels image: one ``uint64`` level ``sK`` per Paintera level,
axes ``z, y, x``, each level placed where :func:`~n5mscodecs.paintera.open_pyramid`
places it. :func:`ome_zarr_level` reads such an image back as the source of
:func:`~n5mscodecs.paintera.convert`.

**Mapping.** Paintera keeps N5 axis order (x, y, z); OME-Zarr arrays are C-ordered
(z, y, x), so every vector is reversed and every block transposed.

=============================================  ==============================================
Paintera (N5 attributes)                       OME-Zarr (NGFF)
=============================================  ==============================================
``data/sK`` (label multisets)                  ``sK``: uint64 argmax labels (INVALID and
                                               missing blocks as 0, the NGFF background)
``blockSize``                                  the chunk shape (reversed)
``resolution`` x ``downsamplingFactors``       ``scale`` of level K
``offset + resolution * (factors - 1) / 2``    ``translation`` of level K (voxel centres)
``fragment-segment-assignment``                applied to every level (segments); ``--fragments``
                                               for the stored ids
``unit`` (when it names an NGFF length unit)   each axis' ``unit``
the source's location                          ``image-label.source.image`` when written as
                                               ``IMAGE/labels/NAME`` (``"../../"``)
=============================================  ==============================================

NGFF 0.4 images are zarr v2 arrays with "/" chunk keys; NGFF 0.5 images are zarr v3
arrays, sharded by default (shards of whole blocks, at most :data:`SHARD_BYTES`
uncompressed). ``multisets=True`` (0.5 only) writes the label multisets themselves as
zarr v3 ``label_multiset`` arrays: lossless, readable with this package's codecs and
:func:`~n5mscodecs.zarr.open_labels`, but an extension that generic NGFF readers do not
decode.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import n5
from .._extras import require
from ..errors import ArgumentError, ConfigurationError, StorageError
from ..multiset import assemble
from ..n5 import grid, storage
from ..n5.writing import INCOMPLETE_KEY, LOCK_NAME, WriterLock, incomplete_marker
from .argmax import block_segments
from .cluster import batches, engine_for, progress_bar, run_tasks, tasks_of
from .conventions import source_store
from .multiscale import open_pyramid
from .sources import first_multiscale, level_of_image

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import distributed

    from ..n5.storage import PathLike, StorageOptions
    from ..n5.store import Store
    from .assignment import FragmentSegmentAssignment, Pairs

NGFF_VERSIONS = ("0.4", "0.5")
DEFAULT_VERSION = "0.5"
#: The largest uncompressed shard the default sharding makes (0.5): a write task holds one.
SHARD_BYTES = 64 * 2**20
#: Units NGFF allows for space axes, and the spellings Paintera users write for them.
_UNITS = {"nm": "nanometer", "nanometer": "nanometer", "um": "micrometer", "µm": "micrometer",
          "micrometer": "micrometer", "micron": "micrometer", "mm": "millimeter", "millimeter": "millimeter",
          "angstrom": "angstrom", "pm": "picometer", "picometer": "picometer", "cm": "centimeter",
          "centimeter": "centimeter", "m": "meter", "meter": "meter"}
FINISH_HINT = "rerun n5ms ome-zarr with --resume (same arguments) to finish it, or --overwrite to start again"


@dataclass
class OmeZarrSummary:
    """What :func:`to_ome_zarr` did."""

    target: str
    version: str
    level_shapes: list[tuple[int, ...]]  # (z, y, x)
    chunks_written: int
    chunks_total: int
    seconds: float
    assignment: FragmentSegmentAssignment | None = None  # the lookup applied (None: fragments written)
    notes: list[str] = field(default_factory=list)   # what the export changed on its own (levels left out)
    engine: str = ""  # where the chunks were written (see n5mscodecs.paintera.cluster)


def default_shards(chunks: Sequence[int], shape: Sequence[int], itemsize: int = 8) -> tuple[int, ...]:
    """Shards of whole chunks, doubled axis by axis (the shortest shard extent first) while a
    shard stays within ``SHARD_BYTES`` (64 MiB) uncompressed and an axis' shard does not pass the
    array's extent (in whole chunks).

    >>> default_shards((64, 64, 64), (1000, 1000, 1000))    # 64 MiB of uint64
    (256, 256, 128)
    >>> default_shards((64, 64, 64), (100, 1000, 1000))     # at most the extent along z
    (128, 256, 256)
    """
    chunks = tuple(int(c) for c in chunks)
    per_axis = [math.ceil(n / c) for n, c in zip(shape, chunks)]
    factors = [1] * len(chunks)
    grown = True
    while grown:
        grown = False
        for axis in sorted(range(len(chunks)), key=lambda a: factors[a] * chunks[a]):
            if factors[axis] >= per_axis[axis]:
                continue
            trial = [2 * f if a == axis else f for a, f in enumerate(factors)]
            if np.prod([f * c for f, c in zip(trial, chunks)], dtype=np.int64) * itemsize <= SHARD_BYTES:
                factors, grown = trial, True
    return tuple(min(f, n) * c for f, n, c in zip(factors, per_axis, chunks))


def ngff_unit(attributes: dict[str, Any]) -> str | None:
    """The NGFF unit an N5 ``unit`` attribute names (None when it names none)."""
    unit = attributes.get("unit")
    return _UNITS.get(unit.strip().lower()) if isinstance(unit, str) else None


def multiscales_metadata(pyramid, name: str, version: str, unit: str | None, levels: int | None = None,
                        ) -> dict[str, Any]:
    """The NGFF ``multiscales`` entry of a :class:`~n5mscodecs.paintera.LabelPyramid`
    (axes z, y, x; per level ``scale`` and ``translation`` reversed from N5 order); ``levels``:
    the first that many levels only (default all)."""
    axes = [{"name": axis, "type": "space", **({"unit": unit} if unit else {})} for axis in "zyx"[3 - pyramid.ndim:]]
    datasets = [{"path": f"s{k}", "coordinateTransformations": [
        {"type": "scale", "scale": [float(v) for v in pyramid.voxel_sizes[k][::-1]]},
        {"type": "translation", "translation": [float(v) for v in pyramid.offsets[k][::-1]]}]}
        for k in range(len(pyramid) if levels is None else levels)]
    entry = {"name": name, "axes": axes, "datasets": datasets,
             "metadata": {"source": storage.display(pyramid.path), "method": "Paintera label pyramid (argmax)"}}
    if version == "0.4":
        entry = {"version": "0.4", **entry}
    return entry


def ome_attributes(version: str, multiscales: dict[str, Any], image_label: dict[str, Any]) -> dict[str, Any]:
    """The group attributes of an NGFF ``version`` labels image (0.4 at the top, 0.5 under ``ome``)."""
    if version == "0.4":
        return {"multiscales": [multiscales], "image-label": {"version": "0.4", **image_label}}
    return {"ome": {"version": "0.5", "multiscales": [multiscales], "image-label": image_label}}


def _walk_through(store):
    """A local store walked from top to bottom, holding one directory at a time: a link to
    nothing, a link loop or a directory that cannot be listed raises (naming it) before
    anything is written (the blocks themselves are looked up by the tasks; object stores
    have none of these)."""
    if store.is_local:
        for _ in store.walk():
            pass


def _write_units(array_shape, chunks, shards):
    """The regions (z, y, x slices) written as one piece, lazily: whole shards, or whole chunks."""
    unit = shards or chunks
    for position in np.ndindex(*grid.grid_shape(array_shape, unit)):
        yield tuple(slice(g * u, min((g + 1) * u, n)) for g, u, n in zip(position, unit, array_shape))


def _blocks_read(read, dataset, region_zyx):
    """``[(grid position, read(position))]`` of the N5 blocks stored inside a (z, y, x) region
    (a missing block reads as None and is left out: the region is looked up block by block on
    the worker, never listed on the client)."""
    region = region_zyx[::-1]
    ranges = [range(s.start // c, -(-s.stop // c)) for s, c in zip(region, dataset.chunks)]
    found = []
    for index in np.ndindex(*[len(r) for r in ranges]):
        position = tuple(r[i] for r, i in zip(ranges, index))
        block = read(position)
        if block is not None:
            found.append((position, block))
    return found


def _labels_piece(dataset, region_zyx, blocks):
    """uint64 labels (z, y, x) of ``region_zyx`` from its blocks' argmax: INVALID and gaps 0."""
    out = np.zeros(tuple(s.stop - s.start for s in region_zyx), np.uint64)
    origin = [s.start for s in region_zyx[::-1]]
    for position, labels in blocks:
        box = dataset.block_region(position)
        out[tuple(slice(b.start - o, b.stop - o) for b, o in zip(box, origin))[::-1]] = labels.T
    return out


def _multisets_piece(dataset, region_zyx, blocks):
    """Label multisets (z, y, x) of ``region_zyx`` from its blocks; gaps ``{0: 1}``."""
    origin = [s.start for s in region_zyx[::-1]]
    parts = [(tuple(slice(b.start - o, b.stop - o) for b, o in zip(dataset.block_region(position), origin)), block)
             for position, block in blocks]
    shape = tuple(s.stop - s.start for s in region_zyx[::-1])
    return assemble(shape, parts, fill=0).T


def _chunk_written(array, region_zyx, unit):
    """Whether the chunk or shard starting ``region_zyx`` is in the store (resume)."""
    from ..zarr._compat import sync

    coords = tuple(s.start // u for s, u in zip(region_zyx, unit))
    key = array.metadata.encode_chunk_key(coords)
    store_path = array.store_path
    return sync(store_path.store.exists(f"{store_path.path}/{key}" if store_path.path else key))


def to_ome_zarr(
    source: PathLike | Store,
    target: PathLike | Store,
    *,
    version: str = DEFAULT_VERSION,
    multisets: bool = False,
    shards: bool | Sequence[int] = True,
    compressors: Any = "auto",
    name: str | None = None,
    threads: int | None = None,
    scheduler: str | distributed.Client | None = None,
    overwrite: bool = False,
    resume: bool = False,
    progress: Callable[[str, int], Any] | None = None,
    storage_options: StorageOptions = None,
    assignment: Any = "auto",
    additional_assignment: Pairs | None = None,
) -> OmeZarrSummary:
    """Export a Paintera label pyramid as an OME-Zarr multiscale labels image.

    Parameters
    ----------
    source : path or ~n5mscodecs.n5.store.Store
        A local path or a URL (or its store, :func:`~n5mscodecs.n5.stores.open_store`): a Paintera label
        source, a label multiset pyramid, a container holding one, or a single label multiset
        dataset (what :func:`~n5mscodecs.paintera.open_pyramid` opens).
    target : path or ~n5mscodecs.n5.store.Store
        A local path or a URL (or its store): the labels image group to write, e.g. ``out.zarr`` or
        ``image.zarr/labels/cells`` (then ``image-label.source.image`` points
        back to the image and the ``labels`` group lists it).
    version : {"0.4", "0.5"}
        NGFF version: 0.4 writes zarr v2 arrays, 0.5 (default) zarr v3 arrays.
    multisets : bool
        Write the label multisets themselves (zarr v3 ``label_multiset``
        arrays, 0.5 only): lossless, but generic NGFF readers cannot decode
        them.
    shards : bool or tuple
        0.5 only: shard shape (z, y, x), True for :func:`~n5mscodecs.paintera.ome_zarr.default_shards`, False
        for none. Multiset arrays are not sharded.
    compressors : optional
        The arrays' compressors as ``zarr.create_array`` takes them
        (default ``"auto"``: zarr's default, zstd).
    name : str, optional
        The multiscale's name (default: the target's last path part).
    threads : int, optional
        Write tasks in flight (default: one per core; 16 for URLs).
    scheduler : str or distributed.Client, optional
        Where the chunks are written: a dask.distributed ``Client`` or scheduler address
        (tasks on its workers, which must reach the source and the target), ``"threads"``
        (local threads); default: the active dask client if there is one, else local threads
        (see :mod:`n5mscodecs.paintera.cluster`).
    overwrite, resume : bool
        Replace an existing target, or finish an interrupted export (chunks
        and shards already written are kept); not both.
    progress : callable, optional
        ``progress(description, total)`` as for :func:`~n5mscodecs.paintera.convert`.
    storage_options : dict, optional
        fsspec options for URLs (source and target; a store holds its own).
    assignment, additional_assignment
        The fragment-segment-assignment applied to every level, as for
        :func:`~n5mscodecs.paintera.open_pyramid`: by default the source's (segments, what
        Paintera shows); None writes the stored fragments. ``multisets=True`` writes
        fragments only: it refuses an assignment in effect (pass ``assignment=None``).

    Returns
    -------
    OmeZarrSummary

    Notes
    -----
    Written block by block: a task holds one chunk or shard. Until the last
    is written the group has no NGFF metadata but ``n5mscodecs:incomplete``,
    so no NGFF reader takes it for an image; an overwrite replaces the old
    metadata by that marker before it removes anything. Missing blocks are not written
    (they read as the fill value 0).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from n5mscodecs import paintera
    >>> work = tempfile.mkdtemp()
    >>> labels = np.arange(8 * 8 * 4, dtype=np.uint64).reshape(8, 8, 4) // 16
    >>> _ = paintera.convert(labels, work + "/p.n5/labels", block_size=4, factors=[2], resolution=(4, 4, 40))
    >>> summary = paintera.to_ome_zarr(work + "/p.n5/labels", work + "/labels.zarr")
    >>> summary.level_shapes
    [(4, 8, 8), (2, 4, 4)]
    >>> import zarr
    >>> root = zarr.open_group(work + "/labels.zarr", mode="r")
    >>> root.attrs["ome"]["multiscales"][0]["datasets"][1]["coordinateTransformations"]
    [{'type': 'scale', 'scale': [80.0, 8.0, 8.0]}, {'type': 'translation', 'translation': [20.0, 2.0, 2.0]}]
    >>> bool((root["s0"][...] == labels.T).all())
    True
    """
    zarr = require("zarr", "ome-zarr", "OME-Zarr export")
    from ..zarr.store import PackageStore  # (needs zarr, required above)

    started = time.perf_counter()
    # the locations become stores here, once; zarr writes through the target's (PackageStore). The
    # target is a zarr group, no N5 container's: what lies above it (IMAGE/labels) stays reachable
    source, target = source_store(source, storage_options), source_store(target, storage_options)
    if version not in NGFF_VERSIONS:
        raise ConfigurationError(f"version: one of {NGFF_VERSIONS}, got {version!r}")
    if multisets and version != "0.5":
        raise ConfigurationError("multisets: label multiset arrays are zarr v3 arrays: version 0.5 only")
    if overwrite and resume:
        raise ConfigurationError("overwrite and resume: pass one of them")
    storage.refuse_overlap(target.location, source.location)
    pyramid = open_pyramid(source, fill_label=0, assignment=assignment,
                           additional_assignment=additional_assignment)
    if multisets and pyramid.assignment is not None:
        raise ConfigurationError(
            f"multisets: {source.display()} has a fragment-segment-assignment "
            f"({pyramid.assignment.describe()}); label multisets hold fragments: pass assignment=None "
            "(--fragments) to write them")
    if pyramid.ndim > 3:
        raise ConfigurationError(f"{source.display()}: {pyramid.ndim} axes; NGFF labels here have 1 to 3")
    datasets = [pyramid.open_level(level) for level in range(len(pyramid))]
    if multisets and not all(isinstance(d, n5.LabelMultisetDataset) for d in datasets):
        raise ConfigurationError(f"{source.display()}: multisets=True needs label multiset levels")
    if multisets:
        import n5mscodecs.zarr  # noqa: F401  (the label_multiset data type and codecs)
    name = name or target.name.removesuffix(".zarr") or "labels"
    zarr_format = 2 if version == "0.4" else 3
    notes: list[str] = []
    image = _labelled_image(target)
    if image is not None:  # IMAGE/labels/NAME: NGFF 0.5 wants as many levels as the image has
        image_levels, where = image
        if len(datasets) < image_levels:
            raise ConfigurationError(
                f"{target.display()}: the image {where} has {image_levels} levels, {source.display()} "
                f"only {len(datasets)}; NGFF wants a labels image with as many levels as its image: convert the "
                f"labels with {image_levels - 1} downsampled levels (n5ms convert --scale, once per level), or "
                "write them outside IMAGE/labels")
        if len(datasets) > image_levels:
            notes.append(f"wrote levels s0..s{image_levels - 1} of {len(datasets)}: the image {where} has "
                         f"{image_levels} (NGFF wants as many levels as the image's)")
            datasets = datasets[:image_levels]
    level_shards = [None] * len(datasets)
    if version == "0.5" and shards is not False and not multisets:
        level_shards = [_checked_shards(shards, d, level) for level, d in enumerate(datasets)]
    for dataset in datasets:   # a directory or link that cannot be listed refuses the export, not stops it
        _walk_through(dataset.store)
    exists = target.exists()
    if exists and not (overwrite or resume):
        raise FileExistsError(f"{target.display()} exists (pass overwrite=True to replace it or resume=True "
                              "to finish an interrupted export)")
    # the target's writer lock from before the first byte to after the last, as every writer of
    # the package holds one: a second export into it (or a writer above it) is refused
    with engine_for(scheduler, threads, target) as engine, WriterLock(target):
        if not exists and any(target.exists(key) for key in ("zarr.json", ".zgroup")):
            raise FileExistsError(f"{target.display()} was created by another writer meanwhile")
        marker = {INCOMPLETE_KEY: incomplete_marker("n5ms ome-zarr", FINISH_HINT)}
        if exists and overwrite:  # zarr's mode "w" would remove the lock file with the rest
            _empty_marked(target, marker, zarr_format)
        group = zarr.open_group(PackageStore(target), mode="a", zarr_format=zarr_format)
        if resume and exists and INCOMPLETE_KEY not in group.attrs.asdict():
            if "ome" in group.attrs or "multiscales" in group.attrs:
                return OmeZarrSummary(target.url(), version, [d.shape[::-1] for d in datasets], 0, 0,
                                      time.perf_counter() - started, pyramid.assignment, notes, engine.description)
            raise ConfigurationError(f"{target.display()}: resume: not an interrupted n5ms ome-zarr export")
        group.attrs.put(marker)
        written, total = 0, 0
        # the merge table goes to each worker once, for every level
        with engine.shared(pyramid.assignment) as lookup:
            for level, dataset in enumerate(datasets):
                shape, chunks = dataset.shape[::-1], dataset.chunks[::-1]
                array = _level_array(zarr, group, f"s{level}", shape, chunks, level_shards[level], multisets,
                                     zarr_format, resume and exists, compressors)
                w, t = _write_level(engine, array, dataset, chunks, level_shards[level], multisets,
                                    resume and exists, progress, f"level {level}", lookup)
                written, total = written + w, total + t
        multiscales = multiscales_metadata(pyramid, name, version, ngff_unit(datasets[0].attributes), len(datasets))
        image_label = {}
        try:
            parent = target.parent()
        except StorageError:  # a bucket: nothing above it (refused before any request)
            parent = None
        if parent is not None and parent.name == "labels":
            image_label["source"] = {"image": "../../"}
            _list_label(zarr, parent, name, version, zarr_format)
        group.attrs.put(ome_attributes(version, multiscales, image_label))
    return OmeZarrSummary(target.url(), version, [d.shape[::-1] for d in datasets], written, total,
                          time.perf_counter() - started, pyramid.assignment, notes, engine.description)


_GROUP_METADATA = {2: (".zattrs", ".zgroup"), 3: ("zarr.json",)}


def _empty_marked(target: Store, marker: dict[str, Any], zarr_format: int) -> None:
    """Empty ``target`` for an overwrite: the old group's attributes (its NGFF metadata) are
    replaced by ``marker`` first, and its metadata files go last, only where the new group's
    format does not use them, so an overwrite killed at any point leaves a group carrying the
    marker, never NGFF metadata over levels already removed (zarr v3's ``zarr.json`` sorts
    after ``s0``: a plain clear removed the levels first)."""
    try:
        document = target.get_json("zarr.json")
    except ConfigurationError:   # not JSON: nothing a reader takes for a group; replaced below
        document = None
    v3_group = isinstance(document, dict) and document.get("node_type") == "group"
    if v3_group:
        target.set_json("zarr.json", {**document, "attributes": marker})
    if any(target.exists(key) for key in _GROUP_METADATA[2]):
        target.set_json(".zattrs", marker)
    target.clear(keep=(LOCK_NAME, *_GROUP_METADATA[2], *_GROUP_METADATA[3]))
    other_format = _GROUP_METADATA[2 if zarr_format == 3 else 3]
    for key in other_format + (() if v3_group else _GROUP_METADATA[3]):
        if target.exists(key):
            target.delete(key)


def _checked_shards(shards, dataset, level):
    """The shard shape (z, y, x) of one level: ``default_shards``, or ``shards`` when each is a
    positive multiple of the level's chunk (refused before anything is written)."""
    shape, chunks = dataset.shape[::-1], dataset.chunks[::-1]
    if shards is True:
        return default_shards(chunks, shape)
    try:
        values = tuple(int(s) for s in shards)
    except (TypeError, ValueError):
        raise ArgumentError("shards", f"expected a shard shape (z, y, x) of integers, got {shards!r}") from None
    if len(values) != len(chunks) or any(v < 1 or v % c for v, c in zip(values, chunks)):
        raise ArgumentError(
            "shards", f"{list(values[::-1])} (x, y, z): level {level} needs {len(chunks)} values, each a positive "
                      f"multiple of its block size {list(chunks[::-1])} (x, y, z)")
    return values


def _labelled_image(target: Store) -> tuple[int, str] | None:
    """(levels, display) of the multiscale image ``target`` labels when it is ``IMAGE/labels/NAME``."""
    try:
        labels = target.parent()
        if labels.name != "labels":
            return None
        image = labels.parent()
    except StorageError:  # a bucket: nothing above it
        return None
    multiscale = first_multiscale(image)
    if multiscale is None or not isinstance(multiscale.get("datasets"), list) or not multiscale["datasets"]:
        return None
    return len(multiscale["datasets"]), image.display()


def _level_array(zarr, group, path, shape, chunks, shards, multisets, zarr_format, resuming, compressors):
    if resuming and path in group:
        return group[path]
    if multisets:
        import n5mscodecs.zarr as nz

        return group.create_array(path, shape=shape, chunks=chunks, dtype=nz.LabelMultisetDType(),
                                  fill_value="0x0", serializer=nz.LabelMultisetZarrCodec(), compressors=compressors,
                                  dimension_names=list("zyx"[3 - len(shape):]), overwrite=True)
    extra = {"dimension_names": list("zyx"[3 - len(shape):])} if zarr_format == 3 else {
        "chunk_key_encoding": {"name": "v2", "separator": "/"}}
    return group.create_array(path, shape=shape, chunks=chunks, shards=shards, dtype="uint64", fill_value=0,
                              compressors=compressors, overwrite=True, **extra)


@dataclass
class _LevelExport:
    """What every write task of one level needs (small: the merge table travels apart)."""

    array: Any                 # the zarr array, through the target's store
    dataset: Any               # the level's N5 dataset
    unit: tuple[int, ...]      # the shard (or chunk) shape, z, y, x
    multisets: bool
    resuming: bool


def _write_unit(shared, region) -> int:
    """One chunk or shard written (1); 0 when resuming found it written, or when no block of
    the source is stored inside it (nothing written: it reads as the fill value)."""
    level, lookup = shared
    if level.resuming and _chunk_written(level.array, region, level.unit):
        return 0
    dataset = level.dataset
    if level.multisets:  # the chunk bytes straight from the columnar form: no element objects
        from ..zarr import write_label_multisets

        blocks = _blocks_read(dataset.read_block, dataset, region)
        if blocks:
            write_label_multisets(level.array, _multisets_piece(dataset, region, blocks), region)
    else:  # the fragment-segment-assignment, when given, on the argmax labels
        blocks = _blocks_read(functools.partial(block_segments, dataset), dataset, region)
        if blocks:
            labels = _labels_piece(dataset, region, blocks)
            level.array[region] = labels if lookup is None else lookup.apply(labels, in_place=True)
    return 1 if blocks else 0


#: chunks or shards one task writes, at most (see :func:`~n5mscodecs.paintera.cluster.tasks_of`)
UNITS_PER_TASK = 16


def _write_batch(shared, regions) -> tuple[int, int]:
    """``(written, done)`` of a list of chunks or shards, each as :func:`_write_unit`."""
    return sum(_write_unit(shared, region) for region in regions), len(regions)


def _add_written(written: int, result: tuple[int, int]) -> int:
    return written + result[0]


def _units_done(result: tuple[int, int]) -> int:
    return result[1]


def _write_level(engine, array, dataset, chunks, shards, multisets, resuming, progress, description,
                 lookup=None):
    """Write every chunk or shard of one level that holds a stored block, as tasks on
    ``engine`` (``lookup``: what :meth:`Engine.shared` yields) of a few chunks or shards each,
    submitted as a lazy stream, each looking up its blocks on the worker; returns
    (written, total)."""
    unit = tuple(shards or chunks)
    total = int(np.prod(grid.grid_shape(array.shape, unit), dtype=object))
    per_task = tasks_of(total, UNITS_PER_TASK, engine.workers)
    # the level (its zarr array, its dataset) goes to each worker once, not with every task
    with progress_bar(progress, description, total) as bar, \
            engine.shared(_LevelExport(array, dataset, unit, multisets, resuming)) as level:
        written = run_tasks(engine, _write_batch, (level, lookup),
                            batches(_write_units(array.shape, chunks, shards), per_task),
                            reduce=_add_written, bar=bar, steps=_units_done)
    return written, total


def _list_label(zarr, parent: Store, name, version, zarr_format):
    """Add ``name`` to the ``labels`` list of the NGFF ``labels`` group ``parent``."""
    from ..zarr.store import PackageStore  # (needs zarr, which the caller required)

    labels_group = zarr.open_group(PackageStore(parent), mode="a", zarr_format=zarr_format)
    attributes = labels_group.attrs.asdict()
    holder = attributes if version == "0.4" else attributes.setdefault("ome", {"version": "0.5"})
    names = list(holder.get("labels", []))
    if name not in names:
        names.append(name)
    holder["labels"] = names
    labels_group.attrs.put(attributes)


def ome_zarr_level(path: PathLike | Store, level: int = 0, *, storage_options: StorageOptions = None,
                   ) -> tuple[str, tuple[float, ...], tuple[float, ...]] | None:
    """``(array location, resolution, offset)`` of level ``level`` of the OME-Zarr multiscale
    image at ``path`` (a location or a store; resolution and offset in N5 order, x first, from
    the level's ``scale`` and ``translation``); None when ``path`` is no OME-Zarr multiscale group."""
    image = source_store(path, storage_options)
    found = level_of_image(image, level)
    return None if found is None else (image.url(found[0]), found[1], found[2])


__all__ = ["DEFAULT_VERSION", "NGFF_VERSIONS", "OmeZarrSummary", "default_shards", "multiscales_metadata",
           "ome_zarr_level", "to_ome_zarr"]
