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
- The labels view gives segments: each dataset's Paintera fragment-segment-assignment
  (:mod:`n5mscodecs.paintera.assignment`: ``SOURCE/fragment-segment-assignment`` for a
  label source, its ``data`` group and its levels ``data/sK``, or the sibling
  ``X.fragment-segment-assignment``) is found once per dataset, the first time one of
  its chunks is read, and applied to the chunks served (label multiset datasets and
  plain ``uint64`` ones), as Paintera shows them. ``assignment=None`` gives the stored
  fragments, a mapping replaces the stored lookups, ``additional_assignment=`` sets
  pairs over them. Finding it needs the container's location: a zarr ``LocalStore`` or
  ``FsspecStore`` has one, :func:`~n5mscodecs.zarr.open_n5_store` and :func:`~n5mscodecs.zarr.open_labels`
  pass theirs.
- The package's store underneath: :func:`~n5mscodecs.zarr.open_n5_store`,
  :func:`~n5mscodecs.zarr.open_labels` and ``N5Store(zarr.storage.LocalStore(path))`` read and write
  through ``PackageStore`` (this module), which calls the store :func:`n5mscodecs.n5.open` uses, in
  threads: local reads take regular files only (a FIFO or a device is a
  :class:`~n5mscodecs.StorageError`, never a hang), follow links inside the container root and
  refuse links out of it, and read a block up to the most its dataset can need; URLs get the
  package's time-outs, retries and :class:`~n5mscodecs.StorageError`. Other zarr stores are read as
  they read.
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
import threading
from typing import TYPE_CHECKING

import numpy as np
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.abc.store import Store as ZarrStore
from zarr.storage import WrapperStore

from ..errors import ConfigurationError, ReadOnlyError
from ..multiset import BACKGROUND
from ..n5 import ArrayDataset, LabelMultisetDataset, storage
from ..n5.dataset import resolved_assignment
from ..n5.grid import crop
from ..n5.header import N5BlockHeader
from ..n5.stores import open_store, open_target
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
    from collections.abc import AsyncIterator, Iterable, Mapping
    from typing import Any, Literal

    from zarr import Array
    from zarr.abc.buffer import Buffer, BufferPrototype
    from zarr.abc.store import ByteRequest

    from ..n5.storage import PathLike
    from ..n5.store import Store as N5LocationStore
    from ..paintera.assignment import FragmentSegmentAssignment


_NOT_A_DATASET = object()  # attributes without dimensions: a group
_U64 = np.dtype(np.uint64)


def _sliced(data: bytes, byte_range: ByteRequest | None) -> bytes:
    if byte_range is None:
        return data
    if isinstance(byte_range, RangeByteRequest):
        return data[byte_range.start:byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return data[byte_range.offset:]
    if isinstance(byte_range, SuffixByteRequest):
        return data[max(0, len(data) - byte_range.suffix):]
    raise TypeError(f"Unexpected byte_range, got {byte_range!r}")  # zarr's own words (its store tests ask)


class PackageStore(ZarrStore):
    """A zarr store over this package's :class:`~n5mscodecs.n5.store.Store`: every read, write,
    listing and removal is the package store's own call, run in a thread off zarr's event loop.
    So zarr sees what :func:`n5mscodecs.n5.open` sees: for a local directory only regular files
    are read (a FIFO or a device where a key should be is a :class:`~n5mscodecs.StorageError`,
    never a hang), symbolic links are followed inside the container root and refused out of it;
    for a URL every request has the package's connect and read time-outs and its retries of
    transient failures, then a :class:`~n5mscodecs.StorageError` (see docs/remote.md).
    :func:`open_n5_store` and :func:`open_labels` build one for a location, and
    :class:`N5Store` builds one for a zarr ``LocalStore`` it is given; :class:`N5Store` bounds each
    block's read by its dataset's largest block (``max_size``).

    Parameters
    ----------
    store : n5mscodecs.n5.store.Store
        The package's store of the container root (:func:`~n5mscodecs.n5.stores.open_store`).
    read_only : bool
        Refuse writes (``http(s)`` stores always do).
    """

    supports_writes: bool = True
    supports_deletes: bool = True
    supports_listing: bool = True
    supports_partial_writes: Literal[False] = False  # abstract in zarr < 3.1.3 (with set_partial_values)

    def __init__(self, store: N5LocationStore, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only or store.read_only)
        self.store = store

    @classmethod
    def from_location(cls, location: PathLike | N5LocationStore, storage_options: Mapping[str, Any] | None = None,
                      *, read_only: bool = False) -> PackageStore:
        """The store of ``location`` (a local path, ``file://``, a URL, or the package's store of
        one), local ones confined to their container root (the nearest ``*.n5`` of the path and
        its parents, else the path)."""
        return cls(open_target(location, storage_options), read_only=read_only)

    def with_read_only(self, read_only: bool = False) -> PackageStore:
        return type(self)(self.store, read_only=read_only)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PackageStore) and type(other.store) is type(self.store)
                and other.store.url() == self.store.url())

    def __repr__(self) -> str:
        return f"PackageStore({self.store.display()!r})"

    async def _open(self) -> None:
        if not self.read_only and self.store.is_local:
            await asyncio.to_thread(self.store.make_directory)
        await super()._open()

    async def get(self, key: str, prototype: BufferPrototype | None = None, byte_range: ByteRequest | None = None,
                  *, max_size: int | None = None) -> Buffer | None:
        """The bytes at ``key`` (None when there are none); more than ``max_size`` bytes is a
        :class:`~n5mscodecs.StorageError`, as is (local) anything but a regular file."""
        data = await asyncio.to_thread(self.store.get, key, max_size=max_size)
        if data is None:
            return None
        return (prototype or default_buffer_prototype()).buffer.from_bytes(_sliced(data, byte_range))

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(key, prototype, byte_range) for key, byte_range in key_ranges)))

    def _exists(self, key: str) -> bool:
        # a key is an object: a local directory is none (an object store's prefix cannot be told apart)
        return self.store.is_file(key) if self.store.is_local else self.store.exists(key)

    async def set_partial_values(self, key_start_values: Iterable[tuple[str, int, Any]]) -> None:
        """Not supported (zarr < 3.1.3 declares it; later releases dropped it)."""
        raise NotImplementedError("PackageStore: partial writes are not supported")

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self._exists, key)

    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable()
        await asyncio.to_thread(self.store.set, key, value.to_bytes())

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        if not await self.exists(key):
            await self.set(key, value)

    def _delete(self, key: str) -> None:
        if self.store.is_local and self.store.is_directory(key) and not self.store.is_link(key):
            self.store.delete_tree(key)
        else:
            self.store.delete(key)

    async def delete(self, key: str) -> None:
        self._check_writable()
        await asyncio.to_thread(self._delete, key)

    async def delete_dir(self, prefix: str) -> None:
        self._check_writable()
        await asyncio.to_thread(self.store.delete_tree, prefix.rstrip("/"))

    def _keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        for directory, _, files in self.store.walk(prefix.rstrip("/")):
            below = directory + "/" if directory else ""
            keys.extend(below + name for name in files if not name.startswith(storage.TEMPORARY_PREFIX))
        return keys

    async def list(self) -> AsyncIterator[str]:
        for key in await asyncio.to_thread(self._keys, ""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in await asyncio.to_thread(self._keys, prefix):
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        for name in await asyncio.to_thread(self.store.list_dir, prefix.rstrip("/")):
            if not name.startswith(storage.TEMPORARY_PREFIX):
                yield name


def _package_store(store: ZarrStore) -> ZarrStore:
    """``store``, or a :class:`PackageStore` of the same directory for a zarr ``LocalStore``
    (whose reads would follow any link and read FIFOs and devices)."""
    from zarr.storage import LocalStore

    if type(store) is LocalStore:
        return PackageStore.from_location(str(store.root), read_only=store.read_only)
    return store


def _wrapped_root(store: ZarrStore) -> N5LocationStore | None:
    """The package's store of the root of a :class:`PackageStore`, a zarr ``LocalStore`` or
    ``FsspecStore`` (None for other stores, or a file system whose URL cannot be rebuilt)."""
    from zarr.storage import FsspecStore, LocalStore

    if isinstance(store, PackageStore):
        return store.store
    if isinstance(store, (LocalStore, FsspecStore)):
        try:
            return open_store(store)
        except Exception:
            return None
    return None


class _Assignments:
    """The fragment-segment-assignment of each dataset a labels view serves: a given lookup
    resolved once, or (``"auto"``) each dataset's stored one found the first time it is
    asked for and kept. Thread-safe; shared by the views :meth:`N5Store.with_read_only`
    makes; pickles with what it found (a lock is made anew)."""

    def __init__(self, assignment: Any, additional_assignment: Any, root: N5LocationStore | None) -> None:
        self.auto = assignment is True or (isinstance(assignment, str) and assignment == "auto")
        self.additional_assignment = additional_assignment
        self.root = root
        self._found: dict[str, FragmentSegmentAssignment | None] = {}
        self._lock = threading.Lock()
        # a given lookup (or, for "auto", the additional pairs alone): checked and resolved here, once
        self._given = resolved_assignment("", None if self.auto else assignment, additional_assignment)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _store(self, prefix: str) -> N5LocationStore | None:
        if self.root is None:
            return None
        return self.root.child(prefix) if prefix else self.root

    def lookup(self, prefix: str) -> FragmentSegmentAssignment | None:
        """The lookup for the dataset at ``prefix`` (None: its fragments as stored). Blocking
        I/O the first time a dataset is asked for: call it off the event loop."""
        if not self.auto:
            return self._given
        with self._lock:
            if prefix not in self._found:
                store = self._store(prefix)
                self._found[prefix] = (self._given if store is None else
                                       resolved_assignment(store, "auto", self.additional_assignment))
            return self._found[prefix]


class N5Store(WrapperStore):
    """A read-write zarr store view of an N5 container (see the module docs).

    Parameters
    ----------
    store : zarr.abc.store.Store
        The store holding the N5 container (e.g. ``zarr.storage.LocalStore``, which is read
        through the package's store: see the module docs).
    fill_label : int
        Missing blocks read as ``{fill_label: 1}``: ``{0: 1}`` by default, as
        Java's ``N5LabelMultisets`` and Paintera read them.
    multisets : {"elements", "labels"}
        ``"elements"``: label multiset datasets are arrays of the
        ``label_multiset`` data type (read-write). ``"labels"``: the read-only
        uint64 labels view (each voxel's argmax label, decoded without element
        objects; see the module docs).
    assignment : "auto", None, FragmentSegmentAssignment or mapping
        The labels view only: ``"auto"`` (default) applies each dataset's stored Paintera
        fragment-segment-assignment (segments, what Paintera shows; found once per dataset,
        see the module docs); None serves the stored fragments; a
        :class:`~n5mscodecs.paintera.FragmentSegmentAssignment` or ``{fragment: segment}``
        mapping is applied to every dataset instead.
    additional_assignment : mapping or pairs, optional
        ``{fragment: segment}`` pairs set over the lookup (labels view only).
    location : str, os.PathLike or ~n5mscodecs.n5.store.Store, optional
        Where ``store``'s root is (a local path, URL or the package's store of it), for finding
        the stored assignments;
        default: the root of a zarr ``LocalStore`` or ``FsspecStore``. Without one,
        ``"auto"`` finds none.
    storage_options : Mapping, optional
        fsspec's options for a ``location`` URL.

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

    def __init__(self, store: ZarrStore, *, fill_label: int = BACKGROUND, multisets: str = "elements",
                 assignment: Any = "auto", additional_assignment: Any = None,
                 location: PathLike | N5LocationStore | None = None,
                 storage_options: Mapping[str, Any] | None = None) -> None:
        if multisets not in ("elements", "labels"):
            raise ConfigurationError(f"multisets must be 'elements' or 'labels', got {multisets!r}")
        auto_or_none = assignment is None or (isinstance(assignment, str) and assignment == "auto")
        if multisets != "labels" and (not auto_or_none or additional_assignment):
            raise ConfigurationError("assignment: a fragment-segment-assignment is applied by the labels view "
                                     "only (multisets='labels'); the multisets hold fragments")
        store = _package_store(store)
        super().__init__(store)
        self.fill_label = int(fill_label)
        self.multisets = multisets
        # attributes.json per prefix, read once: every chunk get/set asks which
        # dataset it belongs to. Writes through this store refresh their entry.
        self._datasets: dict[str, Any] = {}  # prefix: dataset, _NOT_A_DATASET, or None (no attributes)
        self._assignments: _Assignments | None = None
        if self.labels:
            root = open_store(location, storage_options) if location is not None else _wrapped_root(store)
            self._assignments = _Assignments(assignment, additional_assignment, root)

    def _with_store(self, store):
        view = type(self)(store, fill_label=self.fill_label, multisets=self.multisets, assignment=None)
        view._assignments = self._assignments  # the same lookups, found once
        return view

    def assignment(self, path: str = "") -> FragmentSegmentAssignment | None:
        """The fragment-segment-assignment the labels view applies to the dataset at ``path``
        (None: its stored fragments, also for the elements view). The first call for a
        dataset finds it (blocking I/O); later ones, and chunk reads, reuse it."""
        return None if self._assignments is None else self._assignments.lookup(path.strip("/"))

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

    async def _get_bounded(self, key, prototype, max_size):
        """The wrapped store's bytes at ``key``; at most ``max_size`` of them from a :class:`PackageStore`
        (what a zarr store reads is its own business)."""
        if isinstance(self._store, PackageStore):
            return await self._store.get(key, prototype, max_size=max_size)
        return await self._store.get(key, prototype)

    async def _read_json(self, key):
        buffer = await self._get_bounded(key, default_buffer_prototype(), storage.MAX_JSON_BYTES)
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
        for n_grid in range(1, len(parts) + 1):  # a dataset at the store root too (prefix "")
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
        if byte_range is not None:
            return await self._store.get(key, prototype, byte_range)
        found = await self._dataset_of(key)
        # a block is read up to the most its dataset can need, as n5.open reads it
        buffer = await self._get_bounded(key, prototype, None if found is None else found[0].max_block_bytes())
        if buffer is None or found is None:
            return buffer
        dataset, grid = found
        if isinstance(dataset, ArrayDataset):  # n5_default pads truncated blocks itself
            if self.labels and dataset.dtype == _U64:
                data = await asyncio.to_thread(self._segments_block, dataset, grid, buffer)
                return buffer if data is None else prototype.buffer.from_bytes(data)
            return buffer
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
        return prototype.buffer.from_bytes(dataset.block_codec.encode(block))

    def _decode_labels(self, dataset, grid, data):
        lookup = self.assignment(dataset.path)
        labels = dataset.decode_named(dataset.decode_block, data, grid)  # the labels view
        chunk = full_chunk(labels, dataset.chunks, self.fill_label)
        if lookup is not None:  # (a missing chunk is zarr's fill_value, as the exports write it: not mapped)
            chunk = lookup.apply(chunk, in_place=True)
        return chunk.astype("<u8", copy=False)

    def _segments_block(self, dataset, grid, buffer):
        """The block of a plain uint64 dataset with the lookup applied, encoded again (None: serve
        it as stored: no lookup, no id of the lookup in it, or a varlength block)."""
        lookup = self.assignment(dataset.path)
        if lookup is None:
            return None
        block = dataset.decode_named(dataset.decode_block, buffer.to_bytes(), grid)
        if block.ndim != dataset.ndim:
            return None
        segments = lookup.apply(block)
        if np.array_equal(segments, block):
            return None
        return dataset.block_codec.encode(segments)

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
                data = dataset.block_codec.encode(block)
            await self._store.set(key, value.__class__.from_bytes(data))
            return
        block = dataset.block_codec.decode(data, grid)  # a padded zarr chunk: decoded by its header, cropped
        # as n5.write: no block without positive counts, none of all {0: 1} (read the same missing)
        if not block.has_positive_counts() or block.is_background():
            if await self._store.exists(key):
                await self._store.delete(key)
            return
        if block.shape != N5BlockHeader.from_bytes(data).shape:
            data = dataset.block_codec.encode(block)
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
    """The zarr store of ``location``: a :class:`PackageStore` over the package's store of it
    (time-outs, retries and ``StorageError`` for URLs; regular files only and confinement to
    the container root for local paths)."""
    return PackageStore.from_location(location, storage_options, read_only=read_only)


def open_n5_store(location: PathLike | N5LocationStore, *, storage_options: Mapping[str, Any] | None = None,
                  read_only: bool = False, fill_label: int = BACKGROUND, multisets: str = "elements",
                  assignment: Any = "auto", additional_assignment: Any = None) -> N5Store:
    """An :class:`N5Store` over an N5 container at a local path or a URL, read and written
    through the package's own store (``n5mscodecs.zarr.store.PackageStore``): the same fsspec file systems,
    ``storage_options``, time-outs, retries and :class:`~n5mscodecs.StorageError` as
    :mod:`n5mscodecs.n5` for a URL (``http(s)`` is read-only); for a local path only regular
    files are read, links out of the container root are refused and each block is read up to
    its dataset's bound. The labels view applies each dataset's
    fragment-segment-assignment (``assignment``, ``additional_assignment``: see
    :class:`N5Store`)."""
    read_only = read_only or multisets == "labels"
    return N5Store(_location_store(location, storage_options, read_only), fill_label=fill_label, multisets=multisets,
                   assignment=assignment, additional_assignment=additional_assignment, location=location,
                   storage_options=storage_options)


def open_labels(store: ZarrStore | PathLike | N5LocationStore, path: str = "", *,
                storage_options: Mapping[str, Any] | None = None, fill_label: int = BACKGROUND,
                assignment: Any = "auto", additional_assignment: Any = None) -> Array:
    """Open a label multiset array as a read-only zarr array of uint64 argmax labels: segments,
    when the dataset has a Paintera fragment-segment-assignment (see below).

    ``store`` is a zarr store or a local path / URL of the container; ``path``
    the array inside it. Works for N5 label multiset datasets (their blocks are
    decoded by :class:`N5Store` with ``multisets="labels"``) and for arrays whose
    ``zarr.json`` has the ``label_multiset`` data type with the ``n5_varlen``,
    ``n5_label_multiset`` or ``label_multiset`` codec (the codecs decode to
    labels). Missing chunks read as ``fill_label`` (N5) or the fill value's id.
    A zarr v2-format array (``.zarray``) is a :class:`~n5mscodecs.ConfigurationError` saying how
    to read it instead.

    ``assignment``: ``"auto"`` (default) applies the dataset's stored fragment-segment-assignment
    (``SOURCE/fragment-segment-assignment`` for a Paintera label source's ``data/sK``, or the
    sibling ``X.fragment-segment-assignment``; see :mod:`n5mscodecs.paintera.assignment`), read
    once here, so every chunk and every level shows what Paintera shows; None gives the
    stored fragments; a :class:`~n5mscodecs.paintera.FragmentSegmentAssignment` or a mapping
    ``{fragment: segment}`` is applied instead. ``additional_assignment``: pairs set over it.
    Plain ``uint64`` N5 datasets get it too; arrays of a ``zarr.json`` are served as stored.

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
    location = None if isinstance(store, ZarrStore) else store
    view = N5Store(wrapped, fill_label=fill_label, multisets="labels", assignment=assignment,
                   additional_assignment=additional_assignment, location=location, storage_options=storage_options)
    array = zarr.open_array(view, path=path, mode="r")
    if array.dtype != np.uint64:
        raise ConfigurationError(
            f"{path or 'the array'} is not a label multiset array (its data type is {array.dtype})")
    view.assignment(path)  # found now, once: every chunk read applies the same lookup
    return array
