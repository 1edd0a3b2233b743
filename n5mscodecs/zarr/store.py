"""``N5Store``: an N5 container presented to zarr v3 on the fly.

Wraps any zarr store holding an N5 container (``attributes.json`` files):

- ``zarr.json`` of a label multiset dataset is made from its ``attributes.json``
  (``label_multiset`` data type, ``n5_varlen`` + ``n5_label_multiset`` + the
  N5 compressor, v2 chunk keys with "/"); N5 groups become groups, and
  directories without ``attributes.json`` implicit groups. N5 attributes stay
  in the zarr attributes (the full document under ``"_n5"``, as zarr-n5 does).
- Plain numeric datasets delegate to zarr-n5's ``n5_default`` codec when
  ``zarr_n5`` is installed, else opening them raises a clear error.
- A real ``zarr.json`` in the container wins (the specs' N5 + zarr pattern).
- Boundary blocks: reads of blocks whose header overstates the cropped grid
  (label-utilities-spark) or holds a padded payload are served truncated, the
  way Java writes them; writes of boundary chunks are truncated to the grid so
  Java readers can read them, and blocks without any positive count are not
  stored (Java's serializer writes nothing for them).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from zarr.core.buffer import default_buffer_prototype
from zarr.storage import WrapperStore

from ..multiset import INVALID
from ..n5 import LabelMultisetDataset, storage
from ..n5.grid import crop
from ..n5.header import N5BlockHeader
from ..n5.varlen import n5_varlen_decode, n5_varlen_encode
from .attributes import ATTRIBUTES, ZARR_JSON, attributes_from_zarr, zarr_document

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from zarr.abc.store import Store

    from ..n5.storage import PathLike


class N5Store(WrapperStore):
    """A read-write zarr store view of an N5 container (see the module docs).

    Parameters
    ----------
    store : zarr.abc.store.Store
        The store holding the N5 container (e.g. ``zarr.storage.LocalStore``).
    fill_label : int
        Missing blocks read as ``{fill_label: 1}``: INVALID (Paintera) by
        default; 0 is what Java's ``N5LabelMultisets`` uses.
    """

    def __init__(self, store: Store, *, fill_label: int = INVALID) -> None:
        super().__init__(store)
        self.fill_label = int(fill_label)
        # attributes.json per prefix, read once: every chunk get/set asks which
        # dataset it belongs to. Writes through this store refresh their entry.
        self._attributes_cache: dict[str, dict[str, Any] | None] = {}

    def _with_store(self, store):
        return type(self)(store, fill_label=self.fill_label)

    @property
    def _supports_sync_io(self):
        return False  # every read must pass through the translation below

    def __repr__(self) -> str:
        return f"N5Store({self._store!r})"

    # -- helpers ---------------------------------------------------------------

    async def _read_json(self, key):
        buffer = await self._store.get(key, default_buffer_prototype())
        return None if buffer is None else json.loads(buffer.to_bytes())

    async def _has_children(self, prefix):
        async for _ in self._store.list_dir(prefix):
            return True
        return False

    async def _zarr_json(self, prefix):
        real = await self._read_json(prefix + ZARR_JSON)
        if real is not None:
            return real
        attributes = await self._read_json(prefix + ATTRIBUTES)
        if attributes is None:
            if prefix == "" or await self._has_children(prefix.rstrip("/")):
                return {"zarr_format": 3, "node_type": "group", "attributes": {}}
            return None
        return zarr_document(attributes, prefix, self.fill_label)

    async def _label_dataset_of(self, key):
        """(dataset, grid position) if ``key`` is a block of a label multiset dataset."""
        parts = key.split("/")
        for n_grid in range(1, len(parts)):
            grid = parts[-n_grid:]
            if not all(p.isdigit() for p in grid):
                break
            prefix = "/".join(parts[:-n_grid])
            if prefix not in self._attributes_cache:
                self._attributes_cache[prefix] = await self._read_json(
                    prefix + "/" + ATTRIBUTES if prefix else ATTRIBUTES)
            attributes = self._attributes_cache[prefix]
            if attributes is None:
                continue
            if attributes.get("isLabelMultiset") and len(attributes.get("dimensions", ())) == n_grid:
                return LabelMultisetDataset(prefix, attributes, fill_label=self.fill_label), tuple(map(int, grid))
            return None
        return None

    # -- reads -------------------------------------------------------------------

    async def get(self, key, prototype, byte_range=None):
        if key == ZARR_JSON or key.endswith("/" + ZARR_JSON):
            document = await self._zarr_json(key[: -len(ZARR_JSON)])
            return None if document is None else prototype.buffer.from_bytes(json.dumps(document).encode())
        buffer = await self._store.get(key, prototype, byte_range)
        if buffer is None or byte_range is not None:
            return buffer
        found = await self._label_dataset_of(key)
        if found is None:
            return buffer
        dataset, grid = found
        cropped = dataset.block_shape(grid)
        if cropped == dataset.chunks:
            return buffer
        data = buffer.to_bytes()
        if N5BlockHeader.from_bytes(data).shape == cropped:
            return buffer
        # overstated or padded boundary block: serve it the way Java writes it
        block = dataset.decode_block(data, grid)
        return prototype.buffer.from_bytes(n5_varlen_encode(block, dataset.codec_chain, threads=1))

    async def get_partial_values(self, prototype, key_ranges):
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]

    async def exists(self, key):
        if key == ZARR_JSON or key.endswith("/" + ZARR_JSON):
            return await self._zarr_json(key[: -len(ZARR_JSON)]) is not None
        return await self._store.exists(key)

    async def list_dir(self, prefix):
        async for name in self._store.list_dir(prefix):
            if name == ATTRIBUTES:
                yield ZARR_JSON
            elif name != ZARR_JSON:
                yield name

    async def list(self):
        async for key in self._store.list():
            if key.endswith(ATTRIBUTES):
                yield key[: -len(ATTRIBUTES)] + ZARR_JSON
            elif not key.endswith(ZARR_JSON):
                yield key

    async def list_prefix(self, prefix):
        async for key in self.list():
            if key.startswith(prefix):
                yield key

    # -- writes ------------------------------------------------------------------

    async def set(self, key, value):
        if key == ZARR_JSON or key.endswith("/" + ZARR_JSON):
            prefix = key[: -len(ZARR_JSON)]
            attributes = attributes_from_zarr(json.loads(value.to_bytes()), prefix)
            await self._store.set(prefix + ATTRIBUTES, value.__class__.from_bytes(json.dumps(attributes).encode()))
            self._attributes_cache.pop(prefix.rstrip("/"), None)
            return
        found = await self._label_dataset_of(key)
        if found is None:
            await self._store.set(key, value)
            return
        dataset, grid = found
        data = value.to_bytes()
        cropped = dataset.block_shape(grid)
        block = crop(n5_varlen_decode(data, dataset.codec_chain, threads=1), cropped)
        if not block.has_positive_counts():
            if await self._store.exists(key):
                await self._store.delete(key)
            return
        if block.shape != N5BlockHeader.from_bytes(data).shape:
            data = n5_varlen_encode(block, dataset.codec_chain, threads=1)
        await self._store.set(key, value.__class__.from_bytes(data))

    async def set_if_not_exists(self, key, value):
        if not await self.exists(key):
            await self.set(key, value)

    async def _set_many(self, values):
        for key, value in values:
            await self.set(key, value)


def open_n5_store(location: PathLike, *, storage_options: Mapping[str, Any] | None = None, read_only: bool = False,
                  fill_label: int = INVALID) -> N5Store:
    """An :class:`N5Store` over an N5 container at a local path (zarr's ``LocalStore``) or a URL
    (zarr's ``FsspecStore``: the same fsspec file systems and ``storage_options`` as
    :mod:`n5mscodecs.n5`; ``http(s)`` is read-only)."""
    if storage.is_url(location):
        from zarr.storage import FsspecStore

        read_only = read_only or str(location).startswith(("http://", "https://"))
        store = FsspecStore.from_url(str(location), storage_options=dict(storage_options or {}), read_only=read_only)
    else:
        from zarr.storage import LocalStore

        store = LocalStore(storage.local_path(location), read_only=read_only)
    return N5Store(store, fill_label=fill_label)
