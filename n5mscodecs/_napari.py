"""The napari reader (npe2 manifest ``napari.yaml``, entry point ``napari.manifest``).

Opens Paintera label sources and N5 label multiset datasets as Labels layers:
multiscale (one dask array per level, finest first) and lazy, in napari's
``(z, y, x)`` order (the N5 axes reversed), with ``scale`` and ``translate``
of the finest level from Paintera's attributes (see
:mod:`n5mscodecs.paintera.multiscale`). napari draws the coarser levels itself
from the shape ratios, at the same half-voxel positions Paintera uses.

What a path opens (``docs/napari.md``):

- a local directory with an ``attributes.json`` (or that file itself), or a
  directory named ``*.n5`` (``n5ms convert out.n5/labels`` writes no
  attributes at ``out.n5``): the label pyramids :func:`~n5mscodecs.paintera.find_label_pyramids` finds at or
  below it, one layer each, in walk order. A Paintera label source, its
  ``data`` group, a multiscale group of label multiset datasets and a single
  label multiset dataset are each one layer; a container gives one layer per
  source or dataset it holds;
- anything else (another directory or file, no label pyramid inside, a URL,
  several paths at once): no reader, so napari tries its other plugins.

Layers show segments: a source's fragment-segment-assignment (Paintera's merges) is
applied to every level, as Paintera shows them (:func:`~n5mscodecs.paintera.open_pyramid`).
Missing blocks read as 0, napari's background (drawn transparent), as
Paintera shows missing blocks and as its scalar export writes them. This
module does not import napari.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

from .errors import N5msCodecsError
from .n5 import storage
from .n5.store import Store
from .n5.stores import open_store
from .paintera.multiscale import interrupted, label_pyramid_keys, open_pyramid

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .paintera.multiscale import LabelPyramid

    LayerData = tuple[Any, dict[str, Any], str]

FILL_LABEL = 0  # what missing blocks read as in napari: its background label


def _local_group(path: Any) -> str | None:
    """The N5 group or dataset ``path`` names (a directory with attributes.json or named ``*.n5``, or
    that attributes.json), else None."""
    if isinstance(path, (list, tuple)):
        if len(path) != 1:
            return None
        path = path[0]
    try:
        path = os.fspath(path)
    except TypeError:
        return None
    if storage.local_file(path) is None:  # napari's reader reads local files only
        return None
    if os.path.basename(path) == storage.ATTRIBUTES and os.path.isfile(path):
        path = os.path.dirname(path) or "."
    path = os.path.normpath(path)
    if os.path.isfile(os.path.join(path, storage.ATTRIBUTES)) or (path.lower().endswith(".n5") and os.path.isdir(path)):
        return path
    return None


def _pyramid_keys(store: Store) -> list[str]:
    """What ``store`` opens as layers (keys of it): the store itself when it is a Paintera
    ``data`` group (whose levels may be plain integers), else the label pyramids found at or
    below it."""
    found = label_pyramid_keys(store)
    if not found and interrupted(store.get_attributes()):
        return [""]  # reading it says that it is incomplete and how to finish it
    if not found and store.name == "data":
        try:
            open_pyramid(store)
        except N5msCodecsError:
            return []
        return [""]
    return found


def get_reader(path: str | Sequence[str]) -> Callable[[Any], list[LayerData]] | None:
    """napari's ``get_reader`` hook: a reader for a Paintera label source, an N5 label
    multiset dataset or an N5 container holding them, else None.

    Looks only at metadata (``attributes.json`` files). Lists of several paths
    are declined (a layer per path: open them one by one).
    """
    group = _local_group(path)
    if group is None:
        return None
    store = open_store(group, read_only=True)  # the path becomes a store here, once
    try:
        found = _pyramid_keys(store)
    except (N5msCodecsError, OSError, ValueError):  # unreadable or malformed attributes: not ours to open
        return None
    if not found:
        return None
    return functools.partial(_read, store, tuple(found))


def _read(store: Store, found: Sequence[str], _path: Any = None) -> list[LayerData]:
    return [layer_data(open_pyramid(store.child(key) if key else store, fill_label=FILL_LABEL),
                       key or os.path.basename(os.path.abspath(store.location))) for key in found]


def layer_data(pyramid: LabelPyramid, name: str | None = None) -> LayerData:
    """A napari ``(data, kwargs, "labels")`` tuple of a :class:`~n5mscodecs.paintera.LabelPyramid`.

    ``data`` is the list of the pyramid's dask arrays with their axes reversed
    (napari's ``(z, y, x)``) and ``multiscale`` True; a pyramid of one level
    gives that array and ``multiscale`` False (napari refuses a multiscale
    list of one level). ``scale``/``translate`` are the finest level's
    voxel size and offset reversed, ``metadata`` holds every level's (reversed
    too), the dataset paths and the fill label.

    >>> import tempfile, numpy as np
    >>> from n5mscodecs import paintera
    >>> target = tempfile.mkdtemp() + "/labels"
    >>> _ = paintera.convert(np.zeros((8, 8, 4), np.uint64), target, block_size=4, resolution=(4, 4, 40))
    >>> data, kwargs, kind = layer_data(paintera.open_pyramid(target), "labels")
    >>> [level.shape for level in data], kwargs["scale"], kwargs["translate"], kind
    ([(4, 8, 8), (2, 4, 4)], (40.0, 4.0, 4.0), (0.0, 0.0, 0.0), 'labels')
    """
    levels = [level.transpose() for level in pyramid.levels]
    metadata = {
        "path": pyramid.path,
        "datasets": list(pyramid.datasets),
        "axes": "reversed N5 order (z, y, x for 3-d data)",
        "voxel_sizes": [list(v[::-1]) for v in pyramid.voxel_sizes],
        "offsets": [list(o[::-1]) for o in pyramid.offsets],
        "downsampling_factors": [list(f[::-1]) for f in pyramid.downsampling_factors],
        "fill_label": pyramid.fill_label,
        "max_id": pyramid.max_id,
        "fragment_segment_assignment": None if pyramid.assignment is None else pyramid.assignment.describe(),
    }
    kwargs = {
        "name": name or os.path.basename(pyramid.path.rstrip("/")),
        "scale": tuple(pyramid.voxel_sizes[0][::-1]),
        "translate": tuple(pyramid.offsets[0][::-1]),
        "multiscale": len(levels) > 1,
        "metadata": metadata,
    }
    return (levels if len(levels) > 1 else levels[0]), kwargs, "labels"
