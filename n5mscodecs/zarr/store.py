"""``N5Store``: an N5 container presented to zarr v3 on the fly.

Wraps any zarr store holding an N5 container (``attributes.json`` files):

- ``zarr.json`` of a label multiset dataset is made from its ``attributes.json``
  (``label_multiset`` data type, ``n5_varlen`` + ``n5_label_multiset`` + the
  N5 compressor, v2 chunk keys with "/"); N5 groups become groups, and
  directories without ``attributes.json`` implicit groups. N5 attributes stay
  in the zarr attributes (the full document under ``"_n5"``, as zarr-n5 does).
- Plain numeric datasets are arrays of their data type with this package's
  ``n5_default`` codec (:class:`~n5mscodecs.zarr.N5DefaultZarrCodec`), read and
  written (zarr-n5 is not needed).
- A real ``zarr.json`` in the container wins (the specs' N5 + zarr pattern).
- ``multisets="labels"``: the read-only labels view. Every label multiset
  dataset is a plain ``uint64`` array (same shape and chunk grid, ``fill_value``
  the fill label, N5 attributes kept) whose chunks this store decodes straight
  from the block bytes to little-endian argmax labels, off the event loop and
  without element objects; a corrupt block's error names it. A real
  ``zarr.json`` of the ``label_multiset`` data type gets the codecs' labels
  view (:func:`~n5mscodecs.zarr.labels_view_metadata`). Writes
  raise :class:`~n5mscodecs.errors.ReadOnlyError`.
- Boundary blocks: reads of blocks whose header overstates the cropped grid
  (label-utilities-spark) or holds a padded payload are served truncated, the
  way Java writes them; writes of boundary chunks are truncated to the grid so
  Java readers can read them, and blocks without any positive count are not
  stored (Java's serializer writes nothing for them). Plain boundary blocks are
  written truncated the same way.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import numpy as np
from zarr.abc.store import Store as ZarrStore
from zarr.storage import WrapperStore

from ..errors import ConfigurationError, ReadOnlyError
from ..multiset import BACKGROUND
from ..n5 import ArrayDataset, LabelMultisetDataset, storage
from ..n5.default import n5_default_encode
from ..n5.grid import crop
from ..n5.header import N5BlockHeader
from ..n5.varlen import n5_varlen_decode, n5_varlen_encode
from ..n5.writing import check_complete
from ._compat import default_buffer_prototype, sync
from .attributes import (
    ATTRIBUTES,
    ZARR_JSON,
    attributes_from_zarr,
    labels_metadata,
    labels_view_metadata,
    zarr_document,
)
from .codecs import full_chunk

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from zarr import Array

    from ..n5.storage import PathLike


_NOT_A_DATASET = object()  # attributes without dimensions: a group


class N5Store(WrapperStore):
    """A read-write zarr store view of an N5 container (see the module docs).

    Parameters
    ----------
    store : zarr.abc.store.Store
        The store holding the N5 container (e.g. ``zarr.storage.LocalStore``).
    fill_label : int
        Missing blocks read as ``{fill_label: 1}``: ``{0: 1}`` by default, as
        Java's ``N5LabelMultisets`` and Paintera read them.
    multisets : {"elements", "labels"}
        ``"elements"``: label multiset datasets are arrays of the
        ``label_multiset`` data type (read-write). ``"labels"``: the read-only
        uint64 labels view (each voxel's argmax label, decoded without element
        objects; see the module docs).

    Examples
    --------
    >>> import tempfile, numpy as np, zarr
    >>> from n5mscodecs import n5
    >>> from n5mscodecs.zarr import N5Store
    >>> root = tempfile.mkdtemp() + "/c.n5"
    >>> _ = n5.write(root + "/labels", np.array([[1, 2], [3, 3]], np.uint64), chunks=(2, 1))
    >>> labels = zarr.open_array(N5Store(zarr.storage.LocalStore(root), multisets="labels"), path="labels", mode="r")
    >>> str(labels.dtype), labels[:].tolist()
    ('uint64', [[1, 2], [3, 3]])
    """

    def __init__(self, store: ZarrStore, *, fill_label: int = BACKGROUND, multisets: str = "elements") -> None:
        if multisets not in ("elements", "labels"):
            raise ConfigurationError(f"multisets must be 'elements' or 'labels', got {multisets!r}")
        super().__init__(store)
        self.fill_label = int(fill_label)
        self.multisets = multisets
        # attributes.json per prefix, read once: every chunk get/set asks which
        # dataset it belongs to. Writes through this store refresh their entry.
        self._datasets: dict[str, Any] = {}  # prefix: dataset, _NOT_A_DATASET, or None (no attributes)

    def _with_store(self, store):
        return type(self)(store, fill_label=self.fill_label, multisets=self.multisets)

    def with_read_only(self, read_only: bool = False) -> N5Store:
        """The same view over the wrapped store opened read-only or not (zarr < 3.1.6 asks
        for it when an array is opened with ``mode="r"``); a labels view stays read-only."""
        return self._with_store(self._store.with_read_only(read_only))

    @property
    def labels(self) -> bool:
        """Whether this is the read-only labels view."""
        return self.multisets == "labels"

    @property
    def read_only(self) -> bool:
        return self.labels or self._store.read_only

    def _check_writable(self):
        if self.labels:
            raise ReadOnlyError("N5Store(multisets='labels') is a read-only labels view; "
                                "write label multisets through N5Store(store)")
        self._store._check_writable()

    @property
    def _supports_sync_io(self):
        return False  # every read must pass through the translation below

    def __repr__(self) -> str:
        view = ", multisets='labels'" if self.labels else ""
        return f"N5Store({self._store!r}{view})"

    # -- helpers ---------------------------------------------------------------

    async def _read_json(self, key):
        buffer = await self._store.get(key, default_buffer_prototype())
        return None if buffer is None else json.loads(buffer.to_bytes())

    async def _has_children(self, prefix):
        async for _ in self._store.list_dir(prefix):
            return True
        return False

    async def _zarr_json(self, prefix):
        attributes = await self._read_json(prefix + ATTRIBUTES)
        if attributes is not None and "dimensions" in attributes:
            check_complete(attributes, f"N5Store: {prefix.rstrip('/') or '/'}")
        if self.labels and attributes is not None and attributes.get("isLabelMultiset"):
            return labels_metadata(attributes, self.fill_label)  # its blocks are decoded in get()
        real = await self._read_json(prefix + ZARR_JSON)
        if real is not None:
            return labels_view_metadata(real) if self.labels else real
        if attributes is None:
            if prefix == "" or await self._has_children(prefix.rstrip("/")):
                return {"zarr_format": 3, "node_type": "group", "attributes": {}}
            return None
        return zarr_document(attributes, prefix, self.fill_label)

    async def _dataset_of(self, key):
        """(dataset, grid position) if ``key`` is a block of an N5 dataset. Each dataset's
        attributes are parsed once (the dataset object is kept until its attributes change)."""
        parts = key.split("/")
        for n_grid in range(1, len(parts)):
            grid = parts[-n_grid:]
            if not all(p.isdigit() for p in grid):
                break
            prefix = "/".join(parts[:-n_grid])
            if prefix not in self._datasets:
                attributes = await self._read_json(prefix + "/" + ATTRIBUTES if prefix else ATTRIBUTES)
                self._datasets[prefix] = attributes if attributes is None else self._dataset(prefix, attributes)
            dataset = self._datasets[prefix]
            if dataset is None:
                continue
            if dataset is _NOT_A_DATASET or dataset.ndim != n_grid:
                return None
            return dataset, tuple(map(int, grid))
        return None

    def _dataset(self, prefix, attributes):
        """The dataset at ``prefix`` in this store's view, or _NOT_A_DATASET for a group."""
        if "dimensions" not in attributes:
            return _NOT_A_DATASET
        if attributes.get("isLabelMultiset"):
            return LabelMultisetDataset(prefix, attributes, fill_label=self.fill_label, multisets=self.multisets)
        return ArrayDataset(prefix, attributes)

    # -- reads -------------------------------------------------------------------

    async def get(self, key, prototype, byte_range=None):
        if key == ZARR_JSON or key.endswith("/" + ZARR_JSON):
            document = await self._zarr_json(key[: -len(ZARR_JSON)])
            return None if document is None else prototype.buffer.from_bytes(json.dumps(document).encode())
        buffer = await self._store.get(key, prototype, byte_range)
        if buffer is None or byte_range is not None:
            return buffer
        found = await self._dataset_of(key)
        if found is None or isinstance(found[0], ArrayDataset):  # n5_default pads truncated blocks itself
            return buffer
        dataset, grid = found
        if self.labels:
            chunk = await asyncio.to_thread(self._decode_labels, dataset, grid, buffer.as_numpy_array())
            return prototype.buffer.from_array_like(chunk.reshape(-1).view(np.uint8))
        cropped = dataset.block_shape(grid)
        if cropped == dataset.chunks:
            return buffer
        data = buffer.to_bytes()
        if N5BlockHeader.from_bytes(data).shape == cropped:
            return buffer
        # overstated or padded boundary block: serve it the way Java writes it
        block = dataset.decode_block(data, grid)
        return prototype.buffer.from_bytes(n5_varlen_encode(block, dataset.codec_chain, threads=1))

    def _decode_labels(self, dataset, grid, data):
        labels = dataset.decode_named(dataset.decode_block, data, grid)  # the labels view
        return full_chunk(labels, dataset.chunks, self.fill_label).astype("<u8", copy=False)

    async def get_partial_values(self, prototype, key_ranges):
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]

    async def exists(self, key):
        if key == ZARR_JSON or key.endswith("/" + ZARR_JSON):
            return await self._zarr_json(key[: -len(ZARR_JSON)]) is not None
        return await self._store.exists(key)

    async def list_dir(self, prefix):
        metadata = False  # zarr.json once, for attributes.json and/or a real zarr.json
        async for name in self._store.list_dir(prefix):
            if name in (ATTRIBUTES, ZARR_JSON):
                if not metadata:
                    yield ZARR_JSON
                metadata = True
            else:
                yield name

    async def list(self):
        listed = set()
        async for key in self._store.list():
            if key.endswith((ATTRIBUTES, ZARR_JSON)):
                key = key[: -len(ATTRIBUTES if key.endswith(ATTRIBUTES) else ZARR_JSON)] + ZARR_JSON
                if key in listed:
                    continue
                listed.add(key)
            yield key

    async def list_prefix(self, prefix):
        async for key in self.list():
            if key.startswith(prefix):
                yield key

    # -- writes ------------------------------------------------------------------

    async def set(self, key, value):
        self._check_writable()
        if key == ZARR_JSON or key.endswith("/" + ZARR_JSON):
            prefix = key[: -len(ZARR_JSON)]
            attributes = attributes_from_zarr(json.loads(value.to_bytes()), prefix)
            await self._store.set(prefix + ATTRIBUTES, value.__class__.from_bytes(json.dumps(attributes).encode()))
            self._datasets.pop(prefix.rstrip("/"), None)
            return
        found = await self._dataset_of(key)
        if found is None:
            await self._store.set(key, value)
            return
        dataset, grid = found
        data = value.to_bytes()
        cropped = dataset.block_shape(grid)
        if isinstance(dataset, ArrayDataset):
            if N5BlockHeader.from_bytes(data).shape != cropped:  # a boundary block: truncated, as Java writes it
                block = crop(dataset.decode_named(dataset.decode_block, data, grid), cropped)
                data = n5_default_encode(block, dataset.compressor)
            await self._store.set(key, value.__class__.from_bytes(data))
            return
        block = crop(n5_varlen_decode(data, dataset.codec_chain, threads=1), cropped)
        # as n5.write: no block without positive counts, none of all {0: 1} (read the same missing)
        if not block.has_positive_counts() or block.is_background():
            if await self._store.exists(key):
                await self._store.delete(key)
            return
        if block.shape != N5BlockHeader.from_bytes(data).shape:
            data = n5_varlen_encode(block, dataset.codec_chain, threads=1)
        await self._store.set(key, value.__class__.from_bytes(data))

    async def delete(self, key):
        self._check_writable()
        await self._store.delete(key)

    async def set_if_not_exists(self, key, value):
        self._check_writable()
        if not await self.exists(key):
            await self.set(key, value)

    async def _set_many(self, values):
        for key, value in values:
            await self.set(key, value)


def _location_store(location, storage_options, read_only):
    """zarr's store for ``location``: where :func:`~n5mscodecs.n5.store.open_store` picks a
    local store, zarr's ``LocalStore``, else its ``FsspecStore``."""
    path = storage.local_file(location)
    if path is None:
        from zarr.storage import FsspecStore

        read_only = read_only or storage.read_only_location(location)
        return FsspecStore.from_url(str(location), storage_options=dict(storage_options or {}), read_only=read_only)
    from zarr.storage import LocalStore

    return LocalStore(path, read_only=read_only)


def open_n5_store(location: PathLike, *, storage_options: Mapping[str, Any] | None = None, read_only: bool = False,
                  fill_label: int = BACKGROUND, multisets: str = "elements") -> N5Store:
    """An :class:`N5Store` over an N5 container at a local path (zarr's ``LocalStore``) or a URL
    (zarr's ``FsspecStore``: the same fsspec file systems and ``storage_options`` as
    :mod:`n5mscodecs.n5`; ``http(s)`` is read-only)."""
    read_only = read_only or multisets == "labels"
    return N5Store(_location_store(location, storage_options, read_only), fill_label=fill_label, multisets=multisets)


def open_labels(store: ZarrStore | PathLike, path: str = "", *, storage_options: Mapping[str, Any] | None = None,
                fill_label: int = BACKGROUND) -> Array:
    """Open a label multiset array as a read-only zarr array of uint64 argmax labels.

    ``store`` is a zarr store or a local path / URL of the container; ``path``
    the array inside it. Works for N5 label multiset datasets (their blocks are
    decoded by :class:`N5Store` with ``multisets="labels"``) and for arrays whose
    ``zarr.json`` has the ``label_multiset`` data type with the ``n5_varlen``,
    ``n5_label_multiset`` or ``label_multiset`` codec (the codecs decode to
    labels). Missing chunks read as ``fill_label`` (N5) or the fill value's id.
    A zarr v2-format array (``.zarray``) is a :class:`~n5mscodecs.ConfigurationError` saying how
    to read it instead.

    >>> import tempfile, numpy as np
    >>> from n5mscodecs import n5
    >>> root = tempfile.mkdtemp() + "/c.n5"
    >>> _ = n5.write(root + "/labels", np.array([[5, 5], [7, 5]], np.uint64), chunks=(1, 2))
    >>> open_labels(root, "labels")[:].tolist()
    [[5, 5], [7, 5]]
    """
    import zarr

    # a location gets zarr's store for it
    wrapped = store if isinstance(store, ZarrStore) else _location_store(store, storage_options, read_only=True)
    if sync(wrapped.exists(f"{path.strip('/')}/.zarray" if path.strip("/") else ".zarray")):
        raise ConfigurationError(
            f"{path or 'the array'} is a zarr v2-format array (.zarray); open_labels reads N5 datasets and "
            "zarr v3 arrays only. Read its label multisets with zarr.open_array(...) and take their labels "
            "with n5mscodecs.argmax_elements(...)")
    array = zarr.open_array(N5Store(wrapped, fill_label=fill_label, multisets="labels"), path=path, mode="r")
    if array.dtype != np.uint64:
        raise ConfigurationError(
            f"{path or 'the array'} is not a label multiset array (its data type is {array.dtype})")
    return array
