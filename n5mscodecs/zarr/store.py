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
import os

from zarr.core.buffer import default_buffer_prototype
from zarr.storage import WrapperStore

from ..errors import ConfigurationError
from ..multiset_array import INVALID
from ..n5 import LabelMultisetDataset
from ..n5_compression import compressor_from_config
from ..n5_header import N5BlockHeader
from ..n5_varlen import n5_varlen_decode, n5_varlen_encode

ATTRIBUTES = "attributes.json"
ZARR_JSON = "zarr.json"
_STRUCTURAL = ("dimensions", "blockSize", "dataType", "compression")


def label_multiset_metadata(attributes, fill_label=INVALID):
    """The zarr v3 ``zarr.json`` document for an N5 label multiset dataset's attributes."""
    compressor = compressor_from_config(attributes.get("compression", {"type": "raw"}))
    inner = [{"name": "n5_label_multiset"}]
    if compressor is not None:
        inner.append(compressor.v3_config())
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(attributes["dimensions"]),
        "data_type": "label_multiset",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(attributes["blockSize"])}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
        "fill_value": f"0x{fill_label:016X}",
        "codecs": [{"name": "n5_varlen", "configuration": {"codecs": inner}}],
        "attributes": _zarr_attributes(attributes),
    }


def _zarr_attributes(attributes):
    kept = {k: v for k, v in attributes.items() if k not in _STRUCTURAL}
    kept["_n5"] = attributes
    return kept


def _default_mode_metadata(attributes, path):
    try:
        from zarr_n5.metadata import N5ArrayMetadata, N5GroupMetadata
    except ImportError as exc:
        raise ConfigurationError(
            f"{path}: plain N5 datasets need zarr-n5's n5_default codec (pip install zarr-n5)"
        ) from exc
    import zarr_n5  # noqa: F401  (registers the n5_default codec with zarr)

    group = N5GroupMetadata.from_jso(dict(attributes))
    return N5ArrayMetadata.from_group(group).to_zarr().to_dict()


def zarr_document(attributes, path="", fill_label=INVALID):
    """The zarr v3 metadata document equivalent to an N5 ``attributes.json``."""
    if "dimensions" not in attributes:
        return {"zarr_format": 3, "node_type": "group", "attributes": _zarr_attributes(attributes)}
    if attributes.get("isLabelMultiset"):
        return label_multiset_metadata(attributes, fill_label)
    return _default_mode_metadata(attributes, path)


def write_zarr_json(container, *, fill_label=INVALID, overwrite=False):
    """Write a ``zarr.json`` next to every ``attributes.json`` of an N5 container on disk.

    The container then opens with plain ``zarr.open_group``/``zarr.open_array``
    and stays a valid N5 container; no block is touched. Plain numeric
    datasets get zarr-n5's metadata when zarr-n5 is installed and are skipped
    otherwise. Returns ``(written, skipped)`` lists of directories.
    """
    written, skipped = [], []
    for directory, subdirs, files in os.walk(container):
        subdirs.sort()
        if ATTRIBUTES not in files:
            continue
        target = os.path.join(directory, ZARR_JSON)
        if os.path.exists(target) and not overwrite:
            skipped.append(directory)
            continue
        with open(os.path.join(directory, ATTRIBUTES), "rb") as f:
            attributes = json.load(f)
        try:
            document = zarr_document(attributes, directory, fill_label)
        except ConfigurationError:
            skipped.append(directory)
            continue
        if "dimensions" in attributes:
            subdirs[:] = []  # block directories below a dataset
        with open(target, "w") as f:
            json.dump(document, f, indent=2)
        written.append(directory)
    return written, skipped


def _attributes_from_zarr(document, prefix):
    """attributes.json for a zarr.json written through the store."""
    attributes = dict(document.get("attributes") or {})
    original = attributes.pop("_n5", None) or {}
    base = {k: v for k, v in original.items() if k not in _STRUCTURAL}
    base.update(attributes)
    if document.get("node_type") == "group":
        if prefix == "":
            base.setdefault("n5", "4.0.0")
        return base
    codecs = document.get("codecs") or []
    if document.get("data_type") != "label_multiset" or len(codecs) != 1 or codecs[0].get("name") != "n5_varlen":
        raise ConfigurationError(
            "N5Store writes label multiset arrays with the n5_varlen codec only "
            "(use zarr_n5.N5WrapperStore for plain N5 arrays)"
        )
    encoding = document.get("chunk_key_encoding") or {}
    if encoding.get("name") != "v2" or (encoding.get("configuration") or {}).get("separator") != "/":
        raise ConfigurationError(
            "N5Store: N5 block paths need chunk_key_encoding={'name': 'v2', 'separator': '/'}"
        )
    inner = codecs[0]["configuration"]["codecs"]
    if len(inner) > 2 or (inner[0] if isinstance(inner[0], str) else inner[0].get("name")) != "n5_label_multiset":
        raise ConfigurationError("N5Store: n5_varlen must hold n5_label_multiset and at most one compressor")
    compressor = compressor_from_config(inner[1]) if len(inner) == 2 else None
    base.update({
        "dataType": "uint8",
        "compression": {"type": "raw"} if compressor is None else compressor.n5_config(),
        "blockSize": list(document["chunk_grid"]["configuration"]["chunk_shape"]),
        "dimensions": list(document["shape"]),
        "isLabelMultiset": True,
    })
    return base


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

    def __init__(self, store, *, fill_label=INVALID):
        super().__init__(store)
        self.fill_label = int(fill_label)
        # attributes.json per prefix, read once: every chunk get/set asks which
        # dataset it belongs to. Writes through this store refresh their entry.
        self._attributes_cache = {}

    def _with_store(self, store):
        return type(self)(store, fill_label=self.fill_label)

    @property
    def _supports_sync_io(self):
        return False  # every read must pass through the translation below

    def __repr__(self):
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
            attributes = _attributes_from_zarr(json.loads(value.to_bytes()), prefix)
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
        block = n5_varlen_decode(data, dataset.codec_chain, threads=1)
        if block.shape != cropped:
            block = block[tuple(slice(0, c) for c in cropped)]
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
