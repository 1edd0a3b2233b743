"""Stores: where N5 groups and datasets keep their bytes.

A :class:`Store` is rooted at a location and names what lies below it by *keys*:
``"/"``-separated relative paths (``"attributes.json"``, ``"0/1/2"``; ``""`` is the
root itself). It owns its location: :meth:`~Store.url`, :meth:`~Store.child`,
:meth:`~Store.parent`, :meth:`~Store.container_root` and the confinement of its keys are
its methods, so a location becomes a store once (:func:`~n5mscodecs.n5.stores.open_store`)
and the rest is calls on it. The back ends, one class each:

- :class:`~n5mscodecs.n5.disk_store.DiskStore` for local paths (and ``file://``);
- stores of objects under keys, without directories, links or local files
  (``ObjectStoreMixin``):
  :class:`~n5mscodecs.n5.url_store.UrlStore` for URLs (fsspec: the ``remote`` extra) and
  :class:`~n5mscodecs.n5.zarr_backed.ZarrBackedStore` for zarr-python's own stores.

The rules a location follows (its parent, its container root, what it overlaps) are the pure
string functions of :mod:`~n5mscodecs.n5.storage`; a store applies them to its own location.

``store.child(key)`` is the store of a group or dataset below (sharing the file
system and the container root), so a container opened once hands its store down.
"""

from __future__ import annotations

import abc
import copy
import json
import posixpath
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigurationError, N5msCodecsError, ReadOnlyError
from . import storage

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping
    from typing import TypeAlias

    from zarr.abc.store import Store as ZarrStore

    from .storage import PathLike, StorageOptions

    #: What a public entry point takes: a location (with storage options beside it), a store
    #: opened once (which holds its own options; those passed beside it are not used), or one
    #: of zarr-python's stores.
    Where: TypeAlias = PathLike | "Store" | ZarrStore

#: Why a store opened in mode ``r`` refuses writes (the message of its ReadOnlyError).
READ_ONLY_MODE = "opened read-only (mode 'r'); open it with mode='r+' or 'a'"

StoreT = TypeVar("StoreT", bound="Store")


def _parts(key: str) -> list[str]:
    parts = [part for part in key.split("/") if part]
    if any(part in (".", "..") for part in parts):
        raise ConfigurationError(f"store key {key!r}: '.' and '..' are not keys")
    return parts


class Store(abc.ABC):
    """Bytes by key below one location (see the module docs).

    Attributes
    ----------
    location : str
        The root: a local path or a URL (for messages use :meth:`display`).
    read_only : bool
        Whether writes are refused (``http(s)`` URLs).
    """

    location: str
    read_only: bool = False
    #: why writes are refused, for the message of ReadOnlyError
    read_only_reason: str = "opened read-only"
    #: fsspec's options of an object store (None for a local one), for the public functions
    #: that still take a location and its options
    storage_options: StorageOptions = None

    @property
    def name(self) -> str:
        """The last name of the location (``"s0"`` for a dataset ``.../data/s0``)."""
        return storage.basename(self.location)

    @abc.abstractmethod
    def local_file(self, key: str = "") -> str | None:
        """The local file system path of ``key``, None for an object store: for what
        only local files can do (memory maps, file locks, TIFF readers)."""

    @property
    def is_local(self) -> bool:
        """Whether the store is a directory of the local file system."""
        return self.local_file() is not None

    @abc.abstractmethod
    def url(self, key: str = "") -> str:
        """The location of ``key`` (a path below a local store's, a URL below a URL)."""

    def display(self, key: str = "") -> str:
        """The location of ``key`` for messages (a URL without credentials)."""
        return storage.display(self.url(key))

    @abc.abstractmethod
    def child(self, key: str) -> Store:
        """The store rooted at ``key`` (same file system, same container root)."""

    @abc.abstractmethod
    def parent(self) -> Store:
        """The store of the location holding this one (same file system and container root),
        for what lies above a dataset (its multiscale group, a Paintera source); a
        :class:`~n5mscodecs.StorageError` above the container root of a store confined to one, or
        above a bucket."""

    @abc.abstractmethod
    def get(self, key: str = "", *, max_size: int | None = None) -> bytes | None:
        """The bytes at ``key``, None when there are none; more than ``max_size`` bytes, or (local)
        something other than a regular file, is a :class:`~n5mscodecs.StorageError`."""

    def check_writable(self, key: str = "", operation: str = "write") -> None:
        """:class:`~n5mscodecs.ReadOnlyError` naming ``key`` and ``operation`` when the store is read-only."""
        if self.read_only:
            raise ReadOnlyError(f"{self.display(key)}: {operation}: read-only ({self.read_only_reason})")

    def read_only_view(self, reason: str = "opened read-only") -> Store:
        """This store, refusing every change (:class:`~n5mscodecs.ReadOnlyError`): how mode ``r``
        makes every group, dataset, attributes object and writer built on it read-only."""
        if self.read_only:
            return self
        view = copy.copy(self)
        view.read_only, view.read_only_reason = True, reason
        return view

    def _derived(self, store: StoreT) -> StoreT:
        """``store`` (a child or the parent), read-only when this one is."""
        store.read_only, store.read_only_reason = self.read_only, self.read_only_reason
        return store

    def set(self, key: str, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``key`` atomically (creating parents)."""
        self.check_writable(key, "write")
        self._set(key, data)

    def delete(self, key: str) -> None:
        """Remove the object at ``key`` if there is one."""
        self.check_writable(key, "remove")
        self._delete(key)

    def delete_tree(self, key: str) -> None:
        """Remove ``key`` and everything below it (nothing to do when it does not exist)."""
        self.check_writable(key, "remove")
        self._delete_tree(key)

    def make_directory(self, key: str = "") -> None:
        """Create the directory ``key`` (object stores have none: nothing to do)."""
        self.check_writable(key, "create")
        self._make_directory(key)

    @abc.abstractmethod
    def _set(self, key: str, data: bytes | bytearray | memoryview) -> None: ...

    @abc.abstractmethod
    def _delete(self, key: str) -> None: ...

    @abc.abstractmethod
    def _delete_tree(self, key: str) -> None: ...

    @abc.abstractmethod
    def _make_directory(self, key: str) -> None: ...

    @abc.abstractmethod
    def exists(self, key: str = "") -> bool:
        """Whether there is an object or a directory (prefix) at ``key``."""

    @abc.abstractmethod
    def is_directory(self, key: str = "") -> bool:
        """Whether ``key`` holds other objects (a directory, or a prefix of an object store)."""

    @abc.abstractmethod
    def is_file(self, key: str = "") -> bool:
        """Whether ``key`` is a local file (object stores: False, a key is not looked up for this)."""

    @abc.abstractmethod
    def is_link(self, key: str = "") -> bool:
        """Whether ``key`` is a symbolic link (object stores have none: False)."""

    @abc.abstractmethod
    def list_dir(self, key: str = "") -> list[str]:
        """The names directly below ``key``, sorted (empty when there is nothing)."""

    def can_list(self, key: str = "") -> bool:
        """Whether listing the group or dataset ``key`` shows what it holds (see
        :mod:`n5mscodecs.n5.listing`): directories and object stores do."""
        return True

    @abc.abstractmethod
    def walk(self, key: str = "") -> Iterator[tuple[str, list[str], list[str]]]:
        """``(directory, subdirectories, files)`` below ``key``, top-down and sorted, as ``os.walk``;
        directories are keys of this store (``key`` itself first; ``""`` is the root);
        pruning ``subdirectories`` in place skips them."""

    @abc.abstractmethod
    def total_size(self, key: str = "") -> int:
        """Bytes stored below ``key``."""

    @abc.abstractmethod
    def request_threads(self, threads: int | None) -> int:
        """Threads for reading or writing many blocks (``threads`` if given)."""

    def clear(self, key: str = "", keep: Collection[str] = ()) -> None:
        """Remove everything directly below ``key`` (and below that) except the names in ``keep``."""
        self.check_writable(key, "remove")
        for name in self.list_dir(key):
            if name not in keep:
                child = posixpath.join(key, name) if key else name
                self.delete_tree(child) if self._is_tree(child) else self.delete(child)

    def _is_tree(self, key: str) -> bool:
        return True

    def get_json(self, key: str) -> Any:
        """The parsed JSON document at ``key`` (None when there is none; at most
        ``storage.MAX_JSON_BYTES``); a file that is not JSON is a ConfigurationError naming it."""
        data = self.get(key, max_size=storage.MAX_JSON_BYTES)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
            raise ConfigurationError(f"{self.display(key)}: not valid JSON ({exc})") from None

    def set_json(self, key: str, document: Any) -> None:
        self.set(key, json.dumps(document, indent=2).encode())

    def get_attributes(self, key: str = "") -> dict[str, Any]:
        """The parsed ``attributes.json`` of the group or dataset ``key`` ({} when there is none)."""
        name = posixpath.join(key, storage.ATTRIBUTES) if key else storage.ATTRIBUTES
        document = self.get_json(name)
        if document is None:
            return {}
        if not isinstance(document, dict):
            raise ConfigurationError(f"{self.display(name)}: expected a JSON object, got {type(document).__name__}")
        return document

    def set_attributes(self, key: str, document: Mapping[str, Any]) -> None:
        """Write the ``attributes.json`` of ``key`` (atomically)."""
        self.set_json(posixpath.join(key, storage.ATTRIBUTES) if key else storage.ATTRIBUTES, document)

    def update_attributes(self, key: str = "", *, defaults: Mapping[str, Any] | None = None,
                          remove: Collection[str] = ()) -> None:
        """Give the attributes of ``key`` the ``defaults`` they lack and drop the names in
        ``remove``, keeping every other attribute; written only when that changes them (how a
        writer adds the container's N5 version or removes its incomplete marker)."""
        attributes = self.get_attributes(key)
        updated = {**(defaults or {}), **{name: value for name, value in attributes.items() if name not in remove}}
        if updated != attributes:
            self.set_attributes(key, updated)

    def container_root(self, container: PathLike | Store | None = None) -> Store | None:
        """The store of the N5 container root holding this group or dataset: ``container``
        (this store's location or one above it, else ConfigurationError), by default the
        nearest of this store and its parents named ``*.n5``; None when there is none. Found by
        walking up with :meth:`parent`, so it shares this store's file system and options."""
        if isinstance(container, Store):
            container = container.location
        root = storage.container_root(self.location, container)
        if root is None:
            return None
        store = self
        for _ in range(storage.depth_below(self.location, root)):
            store = store.parent()
        return store

    def mark_datasets_below(self, marker: Mapping[str, str]) -> list[str]:
        """Mark every N5 dataset at or below this store incomplete (its attributes get
        ``storage.INCOMPLETE_KEY``: ``marker``, see :mod:`~n5mscodecs.n5.writing`) before an
        overwrite removes or rewrites any of them; returns their keys, depth first. Symbolic links
        are not followed (an overwrite removes a link, never what it leads to), and a directory
        whose attributes cannot be read is not a dataset any reader opens: it is left as it is."""
        found: list[str] = []
        pending = [""]
        while pending:
            key = pending.pop()
            try:
                attributes = self.get_attributes(key)
            except N5msCodecsError:  # garbage, or not a regular file: no reader takes it for data
                continue
            if "dimensions" in attributes:
                if storage.INCOMPLETE_KEY not in attributes:
                    self.set_attributes(key, {**attributes, storage.INCOMPLETE_KEY: dict(marker)})
                found.append(key)
                continue
            children = [posixpath.join(key, name) if key else name for name in self.list_dir(key)
                        if name not in (storage.ATTRIBUTES, storage.LOCK_NAME)
                        and not name.startswith(storage.TEMPORARY_PREFIX)]
            pending.extend(reversed([child for child in children
                                     if not self.is_link(child) and self.is_directory(child)]))
        return found

    def resolved(self) -> str:
        """The location as locations are compared (see ``n5mscodecs.n5.storage.resolved``):
        what tells two stores of one place apart from stores of two places."""
        return storage.resolved(self.location)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.display()!r})"

    def remove_temporary_files(self) -> int:
        """Remove the ``.tmp-*`` files that killed writers left below this local store (object
        stores write an object in one request and leave none); returns how many. Only for a
        store whose writer lock is held: a running writer's temporary files look the same."""
        if not self.is_local:
            return 0
        removed = 0
        for directory, _, files in self.walk():
            for name in files:
                if name.startswith(storage.TEMPORARY_PREFIX):
                    self.delete(f"{directory}/{name}" if directory else name)
                    removed += 1
        return removed


class ObjectStoreMixin:
    """What the stores of objects under keys share (object stores, zarr's stores), mixed in
    before :class:`Store`: no directories (nothing to create), no symbolic links, no local files."""

    def local_file(self, key: str = "") -> None:
        return None

    def is_file(self, key: str = "") -> bool:
        return False

    def is_link(self, key: str = "") -> bool:
        return False

    def _make_directory(self, key: str) -> None:
        return None
