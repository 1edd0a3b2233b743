"""Paintera label pyramids as lazy dask label arrays, with each level's voxel size and offset.

:func:`open_pyramid` opens a Paintera label source (or its ``data`` group, a
container holding one, or a single label multiset dataset) and returns a
:class:`LabelPyramid`. :func:`find_label_pyramids` lists what a container holds
(the napari reader uses it).

**Where a level sits in the world.** Paintera reads ``resolution`` and
``offset`` (N5 axis order; default ones and zeros) from the ``data`` group, and
each level's cumulative ``downsamplingFactors`` from the level's attributes.
Level ``k`` with factors ``f`` (relative to s0's, which are ones in every
pyramid Paintera or ``n5ms convert`` writes) has

- voxel size ``resolution * f``;
- offset (the world position of the *centre* of its voxel ``(0, 0, 0)``)
  ``offset + resolution * (f - 1) / 2``: a downsampled voxel sits at the centre
  of the s0 voxels it summarises.

(:func:`~n5mscodecs.paintera.conventions.level_placement` is the one definition.)

That is Paintera's ``N5Helpers.considerDownsampling`` (the transform it gives
label multiset levels opened from a group: a shift of ``0.5 - 0.5 / f`` level
voxels), what its "export source" writes as the OME-NGFF translation of a
downsampled level (``offset + (resolution_k - resolution_0) / 2``: 1.5 for s2
of ``export_test.n5``), the n5-viewer/n5-universe convention, and where napari
draws the coarser levels of a multiscale layer. Paintera's newer metadata
class ``N5PainteraDataMultiScaleMetadata`` scales by the factors without the
shift, which puts a downsampled voxel ``(f - 1) / 2`` s0 voxels off the voxels
it summarises; we follow the geometric rule above. A level without
``downsamplingFactors`` gets ``2**k`` from its name ``sk``, as n5-universe
infers it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import n5
from ..errors import ConfigurationError, IncompleteError
from ..multiset import BACKGROUND
from .assignment import resolve_assignment
from .conventions import CONVERSION_KEY, FINISH_HINT, attributes_above, is_label_source, level_placement, source_store

if TYPE_CHECKING:
    import dask.array

    from ..n5.storage import PathLike, StorageOptions
    from ..n5.store import Store
    from .assignment import FragmentSegmentAssignment, Pairs

_LEVEL = re.compile(r"^s(\d+)$")


@dataclass(frozen=True, eq=False)
class LabelPyramid:
    """The levels of a Paintera label pyramid, finest first, as lazy label arrays.

    Everything is in N5 axis order (x, y, z for 3-d data), like
    :func:`n5mscodecs.n5.open`; napari and numpy's C order want the axes
    reversed (``level.T``, ``voxel_sizes[k][::-1]``). Made by
    :func:`open_pyramid`.

    Attributes
    ----------
    path : str
        What was opened: the label source, the multiscale group or the dataset.
    datasets : tuple
        The location of each level's dataset.
    store : ~n5mscodecs.n5.store.Store
        The store of ``path``.
    stores : tuple
        The store of each level's dataset (what :meth:`open_level` opens).
    levels : tuple
        Lazy ``dask.array.Array`` per level: the uint64 argmax labels of a
        label multiset dataset (missing blocks read as ``fill_label``), the
        stored integers of a plain one; chunks are the N5 blocks.
    voxel_sizes : tuple
        Per level, the size of a voxel in world units (``resolution`` times the
        level's ``downsamplingFactors``).
    offsets : tuple
        Per level, the world position of the centre of voxel ``(0, ..., 0)``
        (``offset + resolution * (factors - 1) / 2``, see the module notes).
    downsampling_factors : tuple
        Per level, the factors relative to the finest level.
    fill_label : int
        What missing label multiset blocks read as.
    max_id : int or None
        The ``maxId`` attribute of the source (None when it has none).
    assignment : FragmentSegmentAssignment or None
        The fragment-segment-assignment applied to every level (``levels`` hold segments),
        or None when the levels hold the stored ids (fragments).
    """

    path: str
    datasets: tuple[str, ...]
    levels: tuple[dask.array.Array, ...] = field(repr=False)
    voxel_sizes: tuple[tuple[float, ...], ...]
    offsets: tuple[tuple[float, ...], ...]
    downsampling_factors: tuple[tuple[float, ...], ...]
    store: Store = field(repr=False)
    fill_label: int = BACKGROUND
    max_id: int | None = None
    stores: tuple[Store, ...] = field(default=(), repr=False)
    assignment: FragmentSegmentAssignment | None = field(default=None, repr=False)

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        """The shape of each level (N5 order)."""
        return [tuple(int(n) for n in level.shape) for level in self.levels]

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.voxel_sizes[0])

    def __len__(self) -> int:
        return len(self.levels)

    def open_level(self, level: int) -> n5.LabelMultisetDataset | n5.ArrayDataset:
        """The N5 dataset of ``level`` (reading multisets where ``levels`` holds their labels),
        its missing blocks read as ``fill_label``, through the level's store. It reads
        fragments: apply :attr:`assignment` (when not None) to its labels."""
        return n5.open_dataset(self.stores[level], fill_label=self.fill_label)


def _numbers(value, name, ndim, where):
    """``value`` as ``ndim`` floats, or a ConfigurationError naming the attribute and place."""
    try:
        numbers = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        numbers = ()
    if len(numbers) != ndim or not all(math.isfinite(v) for v in numbers):
        raise ConfigurationError(f"{where}: {name} must be {ndim} numbers, got {value!r}")
    return numbers


def _level_names(group: Store):
    """The ``sK`` children of the ``group`` store that are N5 datasets, by K."""
    names = []
    for name in group.list_dir():
        match = _LEVEL.match(name)
        if match and "dimensions" in group.get_attributes(name):
            names.append((int(match[1]), name))
    return [name for _, name in sorted(names)]


def _factors(attributes, name, ndim, where):
    """A level's ``downsamplingFactors``; without them ``2**k`` for a level named ``sk``."""
    if "downsamplingFactors" in attributes:
        factors = _numbers(attributes["downsamplingFactors"], "downsamplingFactors", ndim, where)
        if any(f <= 0 for f in factors):
            raise ConfigurationError(f"{where}: downsamplingFactors must be positive, got {list(factors)}")
        return factors
    match = _LEVEL.match(name)
    return (float(2 ** int(match[1])) if match else 1.0,) * ndim


def _open_level(level: Store, fill_label, allow_plain=False):
    """A level's dataset: label multisets, or (in a Paintera label source) plain integers."""
    dataset = n5.open_dataset(level, fill_label=fill_label)
    if isinstance(dataset, n5.ArrayDataset) and not (allow_plain and dataset.dtype.kind in "iu"):
        raise ConfigurationError(f"{dataset.name}: not a label multiset dataset (dataType {dataset.dtype})")
    return dataset


def _pyramid(opened: Store, group: Store, names, fill_label, source_attributes=None, plain=False):
    """The pyramid of ``names`` (levels of the multiscale ``group``); ``opened`` is what was opened.
    Plain integer levels are taken in a Paintera label source, or anywhere with ``plain``."""
    where = group.display()
    plain = plain or (source_attributes is not None and is_label_source(source_attributes))
    datasets = [_open_level(group.child(name), fill_label, plain) for name in names]
    ndim = datasets[0].ndim
    kinds = {type(d) for d in datasets}
    if len(kinds) > 1 or any(d.ndim != ndim for d in datasets):
        raise ConfigurationError(f"{where}: levels {names} differ in kind or dimensionality")
    group_attributes = group.get_attributes()
    fallback = source_attributes or {}
    resolution = _numbers(group_attributes.get("resolution", fallback.get("resolution", (1.0,) * ndim)),
                          "resolution", ndim, where)
    offset = _numbers(group_attributes.get("offset", fallback.get("offset", (0.0,) * ndim)), "offset", ndim, where)
    finest = _finest_level(group, names)
    first = _factors(group.get_attributes(finest), finest, ndim, where)
    factors = [tuple(f / b for f, b in zip(_factors(d.attributes, name, ndim, d.name), first))
               for d, name in zip(datasets, names)]
    max_id = fallback.get("maxId", group_attributes.get("maxId", datasets[0].attributes.get("maxId")))
    placements = [level_placement(resolution, offset, fs) for fs in factors]
    return LabelPyramid(
        path=opened.url(),
        datasets=tuple(d.path for d in datasets),
        levels=tuple(d.to_dask(assignment=None) for d in datasets),
        voxel_sizes=tuple(placement[0] for placement in placements),
        offsets=tuple(placement[1] for placement in placements),
        downsampling_factors=tuple(factors),
        fill_label=int(fill_label),
        max_id=None if max_id is None else int(max_id),
        store=opened,
        stores=tuple(d.store for d in datasets),
    )


def _finest_level(group: Store, names):
    """The finest level of ``group`` (its factors are the reference), also when ``names`` is one coarser level."""
    levels = _level_names(group) if len(names) == 1 else names
    return levels[0] if levels else names[0]


def _label_levels(group: Store):
    """The ``sK`` levels of ``group`` when there are some and all are label multiset datasets, else []."""
    names = _level_names(group)
    if names and all(group.get_attributes(name).get("isLabelMultiset") for name in names):
        return names
    return []


def interrupted(attributes: dict) -> bool:
    """Whether ``attributes`` are those of an unfinished ``n5ms convert`` target."""
    state = attributes.get(CONVERSION_KEY)
    return isinstance(state, dict) and not state.get("complete", True)


def find_label_pyramids(path: PathLike | Store, *, storage_options: StorageOptions = None) -> list[str]:
    """The label pyramids in the N5 container or group at ``path`` (a location, a store or an
    N5 group object), in walk order (their locations).

    Found are, below or at ``path``: Paintera label sources (groups with
    ``painteraData: {"type": "label"}``), multiscale groups whose ``sK``
    levels are label multiset datasets and which sit in no such source, and
    label multiset datasets that are no level of either. The walk does not
    descend into what it finds, nor into datasets or into an interrupted
    ``n5ms convert`` target. Plain datasets (unique-labels, raw data) are not
    listed.

    >>> import tempfile, numpy as np
    >>> from n5mscodecs import paintera
    >>> root = tempfile.mkdtemp() + "/c.n5"
    >>> _ = paintera.convert(np.zeros((8, 8, 8), np.uint64), root + "/labels", block_size=4)
    >>> _ = n5.write(root + "/more/seg", np.ones((4, 4), np.uint64), chunks=(2, 2))
    >>> [p[len(root) + 1:] for p in find_label_pyramids(root)]
    ['labels', 'more/seg']
    """
    store = source_store(path, storage_options)
    return [store.url(key) for key in label_pyramid_keys(store)]


def label_pyramid_keys(store: Store) -> list[str]:
    """:func:`find_label_pyramids` below ``store``, as keys of ``store`` (``""``: the store itself)."""
    found: list[str] = []
    for key, subdirectories, _ in store.walk():
        here = store.child(key) if key else store
        attributes = here.get_attributes()
        if interrupted(attributes):
            subdirectories[:] = []
        elif "dimensions" in attributes:
            subdirectories[:] = []
            if attributes.get("isLabelMultiset"):
                found.append(key)
        elif is_label_source(attributes) or _label_levels(here):
            subdirectories[:] = []
            found.append(key)
    return found


def open_pyramid(path: PathLike | Store, *, storage_options: StorageOptions = None,
                 fill_label: int = BACKGROUND, assignment: Any = "auto",
                 additional_assignment: Pairs | None = None, plain: bool = False) -> LabelPyramid:
    """Open a Paintera label pyramid as lazy dask label arrays with voxel sizes and offsets.

    Parameters
    ----------
    path : path
        One of: a Paintera label source (the group with ``painteraData`` and
        ``data/s0..sN``, what ``n5ms convert`` writes); its ``data`` group (a
        multiscale group holding ``s0..sN``); an N5 container or group holding
        exactly one label pyramid (see :func:`find_label_pyramids`; searched
        are N5 groups, with an ``attributes.json``, and ``*.n5``
        directories, which ``n5ms convert out.n5/labels`` leaves without
        one); a single
        label multiset dataset (one level; a level ``sK`` of a multiscale group
        gets that level's voxel size and offset). Levels may also be plain
        integer datasets (Paintera label sources without multisets). A local
        path or a URL (the ``remote`` extra), a :class:`~n5mscodecs.n5.store.Store`,
        or the N5 group or dataset object of one of the above.
    storage_options : dict, optional
        fsspec's options for a URL.
    fill_label : int
        What missing blocks of label multiset levels read as (default 0: the
        singleton ``{0: 1}``, as Paintera reads them).
    assignment : "auto", None, FragmentSegmentAssignment or mapping
        ``"auto"`` (default): the levels hold segments, the source's
        fragment-segment-assignment applied (what Paintera shows; found for the source, its
        ``data`` group and its levels ``data/sK``, or beside a dataset ``X`` as
        ``X.fragment-segment-assignment``); None: the stored fragments; or the lookup to
        apply. See :mod:`n5mscodecs.paintera.assignment`.
    additional_assignment : mapping or pairs, optional
        ``{fragment: segment}`` set over the lookup.
    plain : bool
        Also open plain integer datasets, and multiscale groups of them, outside Paintera label
        sources (what :func:`~n5mscodecs.n5.write_array` and ``n5ms argmax`` write).

    Returns
    -------
    LabelPyramid

    Raises
    ------
    ConfigurationError
        When ``path`` is none of the above (the message names it), a
        container holds no or several pyramids, a source is an interrupted
        ``n5ms convert`` target (its subclass ``IncompleteError``, saying how
        to finish it), or an attribute is malformed. Without dask,
        its subclass ``MissingExtraError`` names the ``dask`` extra.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from n5mscodecs import paintera
    >>> target = tempfile.mkdtemp() + "/out.n5/labels"
    >>> labels = np.arange(8 * 8 * 4, dtype=np.uint64).reshape(8, 8, 4) // 16
    >>> _ = paintera.convert(labels, target, block_size=4, factors=[2], resolution=(4, 4, 40), offset=(0, 0, 100))
    >>> pyramid = paintera.open_pyramid(target)
    >>> pyramid.shapes, pyramid.voxel_sizes[1], pyramid.offsets[1]
    ([(8, 8, 4), (4, 4, 2)], (8.0, 8.0, 80.0), (2.0, 2.0, 120.0))
    >>> bool((pyramid.levels[0].compute() == labels).all())
    True
    """
    pyramid = _open_pyramid(source_store(path, storage_options), fill_label, plain)
    lookup = resolve_assignment(pyramid.store, assignment, additional_assignment)
    if lookup is None:
        return pyramid
    levels = tuple(_segments(level, lookup) for level in pyramid.levels)
    return dataclasses.replace(pyramid, assignment=lookup, levels=levels)


def _segments(level: Any, lookup: FragmentSegmentAssignment) -> Any:
    """A lazy level's labels through the lookup, block by block (typed loosely: dask's
    ``map_blocks`` decorator hides its signature from type checkers)."""
    return level.map_blocks(lookup.apply, dtype=np.uint64)


def _open_pyramid(store: Store, fill_label: int, plain: bool = False) -> LabelPyramid:
    """:func:`open_pyramid` of ``store`` (whose parents are looked up through it)."""
    name = store.display()
    if not store.exists():
        raise ConfigurationError(f"{name} does not exist")
    attributes = store.get_attributes()
    if interrupted(attributes):
        raise IncompleteError(f"{name}: an interrupted n5ms convert target, INCOMPLETE: {FINISH_HINT} "
                              "(paintera.convert(..., resume=True) or overwrite=True)")
    if "dimensions" in attributes:  # a single dataset
        if not attributes.get("isLabelMultiset") and not plain:
            raise ConfigurationError(f"{name}: not a label multiset dataset")
        parent_attributes = attributes_above(store)
        if _LEVEL.match(store.name) and (parent_attributes.get("multiScale") or "resolution" in parent_attributes):
            parent = store.parent()
            grandparent = attributes_above(parent)
            return _pyramid(store, parent, [store.name], fill_label,
                            grandparent if is_label_source(grandparent) else None, plain)
        return _single(store, attributes, fill_label, plain)
    if "painteraData" in attributes:
        if not is_label_source(attributes):
            kind = attributes["painteraData"].get("type") if isinstance(attributes["painteraData"], dict) else None
            raise ConfigurationError(f"{name}: a Paintera {kind or 'unknown'} source, not a label source")
        data = store.child("data")
        names = _level_names(data)
        if not names:
            raise ConfigurationError(f"{name}: a Paintera label source without data/s0 .. sN levels")
        return _pyramid(store, data, names, fill_label, attributes)
    names = _level_names(store)
    if names:  # a multiscale group: Paintera's data group (its levels may be plain integers), or sK label multisets
        above = attributes_above(store) if store.name == "data" else {}
        source = above if is_label_source(above) else None
        return _pyramid(store, store, names, fill_label, source, plain)
    # a container or group: the one pyramid below it (only N5 groups and *.n5 directories are searched)
    searched = attributes or store.name.lower().endswith(".n5")
    found = label_pyramid_keys(store) if searched else []
    if len(found) == 1:
        return _open_pyramid(store.child(found[0]), fill_label, plain)
    if found:
        listed = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise ConfigurationError(f"{name} holds {len(found)} label pyramids ({listed}): open one of them")
    raise ConfigurationError(
        f"{name}: not a Paintera label source, multiscale label group, label multiset dataset "
        "or N5 container holding one")


def _single(store: Store, attributes, fill_label, plain=False):
    """A label multiset (or, with ``plain``, integer) dataset outside a multiscale group: its own
    resolution/offset/factors."""
    dataset = _open_level(store, fill_label, plain)
    where, ndim = dataset.name, dataset.ndim
    resolution = _numbers(attributes.get("resolution", (1.0,) * ndim), "resolution", ndim, where)
    offset = _numbers(attributes.get("offset", (0.0,) * ndim), "offset", ndim, where)
    factors = _numbers(attributes.get("downsamplingFactors", (1.0,) * ndim), "downsamplingFactors", ndim, where)
    max_id = attributes.get("maxId")
    voxel_size, centre = level_placement(resolution, offset, factors)
    return LabelPyramid(
        path=store.url(),
        datasets=(dataset.path,),
        levels=(dataset.to_dask(assignment=None),),
        voxel_sizes=(voxel_size,),
        offsets=(centre,),
        downsampling_factors=(factors,),
        fill_label=int(fill_label),
        max_id=None if max_id is None else int(max_id),
        store=store,
        stores=(dataset.store,),
    )


__all__ = ["LabelPyramid", "find_label_pyramids", "open_pyramid"]
