"""Stores: where N5 groups and datasets keep their bytes, chosen once per location.

A :class:`Store` is rooted at a location and names what lies below it by *keys*:
``"/"``-separated relative paths (``"attributes.json"``, ``"0/1/2"``; ``""`` is the
root itself). :func:`open_store` picks the implementation from the location, the only
place above :mod:`~n5mscodecs.n5.storage`'s helpers that looks at a scheme:

- :class:`LocalStore` for local paths (and ``file://``): atomic writes (a temporary
  file renamed over the target), confinement to the container root, only regular
  files read, up to a size bound; fsspec is never imported.
- :class:`FsspecStore` for URLs (the ``remote`` extra): the file system is resolved
  once, with bounded time-outs and this package's retries of transient failures;
  messages never show credentials; ``http(s)`` is read-only.

``store.child(key)`` is the store of a group or dataset below (sharing the file
system and the container root), so a container opened once hands its store down.
See :mod:`n5mscodecs.n5.storage` for the confinement and retry rules.

>>> import tempfile
>>> store = open_store(tempfile.mkdtemp() + "/c.n5")
>>> store.set("labels/0/0", b"block")
>>> store.child("labels").get("0/0"), store.list_dir(), store.exists("labels/1/0")
(b'block', ['labels'], False)
"""

from __future__ import annotations

import abc
import copy
import json
import os
import posixpath
import secrets
import shutil
import stat
from typing import TYPE_CHECKING, Any, TypeVar

from .._threads import default_threads
from ..errors import ConfigurationError, ReadOnlyError, StorageError
from . import listing, remote, storage

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping

    from .storage import PathLike, StorageOptions

# flags of os.open that only some systems have (O_BINARY: no newline translation on Windows)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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

    def local_file(self, key: str = "") -> str | None:
        """The local file system path of ``key``, None for an object store: for what
        only local files can do (memory maps, file locks, TIFF readers)."""
        return None

    @property
    def is_local(self) -> bool:
        """Whether the store is a directory of the local file system."""
        return self.local_file() is not None

    def url(self, key: str = "") -> str:
        """The location of ``key``."""
        return storage.join(self.location, *_parts(key))

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

    def is_file(self, key: str = "") -> bool:
        """Whether ``key`` is a local file (object stores: False, a key is not looked up for this)."""
        return False

    def is_link(self, key: str = "") -> bool:
        """Whether ``key`` is a symbolic link (object stores have none: False)."""
        return False

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


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))
    return next((kind for test, kind in kinds if test(mode)), "not a regular file")


class LocalStore(Store):
    """A directory of the local file system.

    Parameters
    ----------
    location : str
        The root directory (or an ``os.PathLike``; ``file://`` allowed).
    boundary : str, optional
        The container root every key is confined to (default: the nearest of a key's
        location and its parents named ``*.n5``).
    read_outside : bool
        Let reads follow symbolic links out of the boundary (writes never do).
    """

    def __init__(self, location: PathLike, *, boundary: str | None = None, read_outside: bool = False,
                 read_only: bool = False) -> None:
        self.location = storage.local_path(location)  # a file:// URL as its path, once
        self.boundary = boundary
        self.read_outside = read_outside
        self.read_only = read_only

    def _path(self, key: str) -> str:
        return os.path.join(self.location, *_parts(key))

    def child(self, key: str) -> LocalStore:
        return self._derived(LocalStore(self.url(key), boundary=self.boundary, read_outside=self.read_outside))

    def parent(self) -> LocalStore:
        path = os.path.abspath(self._path(""))
        if self.boundary is not None:
            root = os.path.abspath(storage.local_path(self.boundary))
            if not path.startswith(root.rstrip(os.sep) + os.sep):  # at or above the root
                raise StorageError(f"{self.display()}: its parent lies outside the container root "
                                   f"{storage.display(root)}; refusing to go above it")
        return self._derived(LocalStore(storage.parent(self.location), boundary=self.boundary,
                                        read_outside=self.read_outside))

    def local_file(self, key: str = "") -> str:
        return self._path(key)

    def _confine(self, key: str, operation: str) -> str:
        path = self._path(key)
        storage.check_confined(path, operation, self.boundary)
        return path

    def get(self, key: str = "", *, max_size: int | None = None) -> bytes | None:
        path = self._path(key) if self.read_outside else self._confine(key, "read")
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below)
            fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_BINARY | _O_CLOEXEC)
        except FileNotFoundError:
            if os.path.islink(path):  # a link to nothing where a file should be is not "missing"
                raise StorageError(f"{self.display(key)}: read: a symbolic link to a missing file "
                                   f"({os.readlink(path)})") from None
            return None
        except (IsADirectoryError, PermissionError):
            if os.path.isdir(path):  # Windows refuses to open a directory
                raise StorageError(f"{self.display(key)}: read: a directory, not a regular file") from None
            raise
        except NotADirectoryError:
            raise StorageError(f"{self.display(key)}: read: a parent of it is a file, not a directory") from None
        except OSError as exc:  # a link loop (ELOOP), a name too long, ...: named, never a bare OSError
            raise StorageError(f"{self.display(key)}: read: {exc.strerror or exc}") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise StorageError(f"{self.display(key)}: read: {_file_kind(info.st_mode)}, not a regular file")
        with os.fdopen(fd, "rb") as f:
            if max_size is not None and info.st_size > max_size:
                raise StorageError(
                    f"{self.display(key)}: read: {info.st_size} bytes, more than the {max_size} it can need")
            # the size fstat gave (a buffer of max_size would be allocated up front), then the rest
            # of a file that grows meanwhile, up to the bound
            data = f.read(info.st_size + 1)
            if len(data) > info.st_size:
                data += f.read() if max_size is None else f.read(max(max_size + 1 - len(data), 0))
        if max_size is not None and len(data) > max_size:  # grew while being read
            raise StorageError(f"{self.display(key)}: read: more than the {max_size} bytes it can need")
        return data

    def _set(self, key: str, data: bytes | bytearray | memoryview) -> None:
        target = self._confine(key, "write")
        directory = os.path.dirname(target)
        os.makedirs(directory, exist_ok=True)
        # a new file created the way open() creates one (0o666 less the umask; mkstemp's 0o600
        # would hide it from the group), renamed over the target
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | _O_CLOEXEC
        while True:
            tmp = os.path.join(directory, f"{storage.TEMPORARY_PREFIX}{secrets.token_hex(8)}")
            try:
                fd = os.open(tmp, flags, 0o666)
                break
            except FileExistsError:
                continue
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise

    def _delete(self, key: str) -> None:
        path = self._confine(key, "remove")
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def _delete_tree(self, key: str) -> None:
        path = self._confine(key, "remove")
        if os.path.islink(path):
            raise StorageError(f"{self.display(key)}: remove: a symbolic link; refusing to remove what it leads to")
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            pass

    def _is_tree(self, key: str) -> bool:
        path = self._path(key)
        return os.path.isdir(path) and not os.path.islink(path)

    def exists(self, key: str = "") -> bool:
        return os.path.exists(self._path(key))

    def is_directory(self, key: str = "") -> bool:
        return os.path.isdir(self._path(key))

    def is_file(self, key: str = "") -> bool:
        return os.path.isfile(self._path(key))

    def is_link(self, key: str = "") -> bool:
        return os.path.islink(self._path(key))

    def list_dir(self, key: str = "") -> list[str]:
        path = self._path(key) if self.read_outside else self._confine(key, "list")
        try:
            return sorted(os.listdir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:  # unreadable: an error naming it, never an empty listing
            raise StorageError(f"{self.display(key)}: list: {exc.strerror or exc}") from None

    def walk(self, key: str = "") -> Iterator[tuple[str, list[str], list[str]]]:
        """As :meth:`Store.walk`, by the rules of a read: a symbolic link to a directory is
        followed when it resolves inside the container root (or ``read_outside``); one leading
        out of it, a link to nothing, a link loop or a directory that cannot be listed is a
        :class:`~n5mscodecs.StorageError` naming it, never skipped. Links to anything else are
        listed as files: reading them applies the same rules, file by file."""
        top = self._path(key) if self.read_outside else self._confine(key, "list")
        try:
            info = os.stat(top)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise StorageError(f"{storage.display(top)}: list: {exc.strerror or exc}") from None
        if stat.S_ISDIR(info.st_mode):
            root = self._path("")
            for directory, subdirectories, files in self._walk(top, frozenset({(info.st_dev, info.st_ino)})):
                below = os.path.relpath(directory, root)
                yield ("" if below == "." else below.replace(os.sep, "/")), subdirectories, files

    def _walk(self, directory: str,
              ancestors: frozenset[tuple[int, int]]) -> Iterator[tuple[str, list[str], list[str]]]:
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except FileNotFoundError:  # removed while being walked
            return
        except OSError as exc:
            raise StorageError(f"{storage.display(directory)}: list: {exc.strerror or exc}; "
                               "refusing to skip what it holds") from None
        subdirectories: list[str] = []
        files: list[str] = []
        identities: dict[str, tuple[int, int]] = {}
        for entry in listed:
            try:
                if not entry.is_symlink():
                    (subdirectories if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
                    continue
                path = entry.path
                try:
                    info = os.stat(path)
                except FileNotFoundError:  # a file or a directory: which, nobody can tell
                    raise StorageError(f"{storage.display(path)}: list: a symbolic link to a missing file "
                                       f"({os.readlink(path)})") from None
                if stat.S_ISDIR(info.st_mode) and not self.read_outside:
                    storage.check_confined(path, "list", self.boundary)
            except StorageError:
                raise
            except OSError as exc:
                raise StorageError(f"{storage.display(entry.path)}: list: {exc.strerror or exc}") from None
            if stat.S_ISDIR(info.st_mode):
                identity = (info.st_dev, info.st_ino)
                if identity in ancestors:
                    raise StorageError(f"{storage.display(entry.path)}: list: a symbolic link loop "
                                       "(it leads to a directory holding it)")
                identities[entry.name] = identity
                subdirectories.append(entry.name)
            else:
                files.append(entry.name)
        subdirectories.sort()
        files.sort()
        yield directory, subdirectories, files
        for name in subdirectories:  # what the caller left (pruning in place skips the rest)
            path = os.path.join(directory, name)
            if name in identities:
                identity = identities[name]
            else:
                try:
                    info = os.lstat(path)
                except FileNotFoundError:
                    continue
                identity = (info.st_dev, info.st_ino)
            yield from self._walk(path, ancestors | {identity})

    def _make_directory(self, key: str = "") -> None:
        os.makedirs(self._confine(key, "create"), exist_ok=True)

    def total_size(self, key: str = "") -> int:
        total = 0
        for directory, _, files in self.walk(key):
            for name in files:
                try:
                    total += os.path.getsize(self._path(directory + "/" + name))
                except FileNotFoundError:  # removed meanwhile (a writer's temporary file)
                    continue
        return total

    def request_threads(self, threads: int | None) -> int:
        return default_threads(threads)


class FsspecStore(Store):
    """A location of an fsspec file system (``s3://``, ``gs://``, ``http(s)://``, ``memory://``, ...).

    Parameters
    ----------
    location : str
        The root URL.
    storage_options : Mapping, optional
        fsspec's options (endpoint, credentials, ``anon``); never shown in messages.
    """

    def __init__(self, location: str, storage_options: StorageOptions = None, *, read_only: bool = False,
                 _resolved: Any = None) -> None:
        self.location = location
        self.storage_options = storage_options
        # the file system is resolved once; children share it
        self.fs, self.path = _resolved if _resolved is not None else storage.filesystem(location, storage_options)
        self.http = http = storage.read_only_location(location)
        self.read_only = read_only or http
        if http:
            self.read_only_reason = "http(s) locations are read-only"

    def _key_path(self, key: str) -> str:
        return posixpath.join(self.path, *_parts(key))

    def child(self, key: str) -> FsspecStore:
        return self._derived(FsspecStore(self.url(key), self.storage_options, _resolved=(self.fs, self._key_path(key))))

    def parent(self) -> FsspecStore:
        path = posixpath.dirname(self.path.rstrip("/"))
        if not path.strip("/"):  # a bucket (or the file system's root) has no parent to read
            raise StorageError(f"{self.display()}: no parent location above it")
        return self._derived(FsspecStore(storage.parent(self.location), self.storage_options,
                                         _resolved=(self.fs, path)))

    def _request(self, key: str, operation: str, request):
        return storage.retrying(self.url(key), operation, request)

    def get(self, key: str = "", *, max_size: int | None = None) -> bytes | None:
        path = self._key_path(key)
        try:
            if max_size is None:
                data = self._request(key, "read", lambda: remote.read(self.fs, "cat_file", path))
            elif self.http:  # a server may ignore Range: the body is read up to the bound, no further
                data = self._request(key, "read", lambda: remote.bounded_http_get(self.fs, path, max_size))
            else:
                data = self._request(key, "read", lambda: remote.read(self.fs, "cat_file", path, start=0,
                                                                      end=max_size + 1))
        except FileNotFoundError:
            return None
        if max_size is not None and len(data) > max_size:
            raise StorageError(f"{self.display(key)}: read: more than the {max_size} bytes it can need")
        return data

    def _set(self, key: str, data: bytes | bytearray | memoryview) -> None:
        path, data = self._key_path(key), bytes(data)
        self._request(key, "write", lambda: self.fs.pipe_file(path, data))

    def _delete(self, key: str) -> None:
        path = self._key_path(key)
        try:
            self._request(key, "remove", lambda: self.fs.rm_file(path))
        except FileNotFoundError:
            pass

    def _delete_tree(self, key: str) -> None:
        path = self._key_path(key)
        try:
            self._request(key, "remove", lambda: self.fs.rm(path, recursive=True))
        except FileNotFoundError:
            pass

    def exists(self, key: str = "") -> bool:
        path = self._key_path(key)
        # http: only a 404 is "absent" (fsspec's default says so of a 503 too)
        strict = {"strict": True} if self.http else {}
        return self._request(key, "look up", lambda: remote.read(self.fs, "exists", path, **strict))

    def is_directory(self, key: str = "") -> bool:
        path = self._key_path(key)
        return self._request(key, "look up", lambda: remote.read(self.fs, "isdir", path))

    def list_dir(self, key: str = "") -> list[str]:
        path = self._key_path(key)
        try:
            names = self._request(key, "list", lambda: remote.read(self.fs, "ls", path, detail=False))
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(p.rstrip("/")) for p in names)

    def can_list(self, key: str = "") -> bool:
        # many http servers serve no listings: there, the listing must show the attributes.json
        return not self.http or storage.ATTRIBUTES in self.list_dir(key)

    def walk(self, key: str = "") -> Iterator[tuple[str, list[str], list[str]]]:
        """As :meth:`Store.walk`; each listing is retried as a read is, and one that keeps
        failing is a :class:`~n5mscodecs.StorageError` naming it, never skipped."""
        return listing.walk(self._listing, "/".join(_parts(key)))

    def _listing(self, key: str) -> tuple[list[str], list[str]] | None:
        path = self._key_path(key).rstrip("/")
        try:
            entries = self._request(key, "list", lambda: remote.read(self.fs, "ls", path, detail=True))
        except FileNotFoundError:
            return None
        named = [(e["name"].rstrip("/"), e.get("type") == "directory") for e in entries]
        return (sorted(posixpath.basename(n) for n, is_dir in named if is_dir and n != path),
                sorted(posixpath.basename(n) for n, is_dir in named if not is_dir and n != path))  # not itself

    def _make_directory(self, key: str = "") -> None:
        return None  # object stores have no directories

    def total_size(self, key: str = "") -> int:
        return int(self.fs.du(self._key_path(key)))

    def request_threads(self, threads: int | None) -> int:
        # latency, not cores, limits requests in flight
        return storage.REMOTE_REQUESTS if threads is None else default_threads(threads)


def open_store(location: PathLike | Store, storage_options: StorageOptions = None, *, read_only: bool = False,
               boundary: str | None = None, read_outside: bool = False) -> Store:
    """The store of a location: where every public entry point turns a location into a store.

    Parameters
    ----------
    location : str, os.PathLike or Store
        A local path (or ``file://`` URL): a :class:`LocalStore`; another URL (``s3://``,
        ``gs://``, ``http(s)://``, ``memory://``; the ``remote`` extra): an :class:`FsspecStore`.
        A store is returned as it is (read-only when ``read_only``).
    storage_options : Mapping, optional
        fsspec's options for a URL (endpoint, credentials, ``anon``); never shown in messages.
    read_only : bool
        Refuse every write, removal and directory made through the store, and through every
        group, dataset and attributes object built on it (:class:`~n5mscodecs.ReadOnlyError`).
    boundary : str, optional
        The container root keys of a local store are confined to (default: the nearest of a
        key's location and its parents named ``*.n5``).
    read_outside : bool
        Let reads follow symbolic links out of the boundary (writes never do).

    Examples
    --------
    >>> import tempfile
    >>> from n5mscodecs import n5
    >>> store = n5.open_store(tempfile.mkdtemp() + "/c.n5")
    >>> group = n5.open(store, mode="w")
    >>> n5.open(n5.open_store(store.location, read_only=True)).create_group("a")
    Traceback (most recent call last):
    ...
    n5mscodecs.errors.ReadOnlyError: ...: read-only (opened read-only)
    """
    if isinstance(location, Store):
        return location.read_only_view() if read_only else location
    location = os.fspath(location)
    if storage.is_url(location):
        return FsspecStore(location, storage_options, read_only=read_only)
    return LocalStore(location, boundary=boundary, read_outside=read_outside, read_only=read_only)


def open_target(location: PathLike | Store, storage_options: StorageOptions = None,
                container: PathLike | Store | None = None) -> Store:
    """The store a writer writes its target through: ``location`` when it is a store (a
    group's child), else opened here, once, confined to the container root (``container``
    when given, else the nearest ``*.n5`` of the target and its parents, else the target)."""
    if isinstance(location, Store):
        return location
    if isinstance(container, Store):
        container = container.location
    if container is None:
        root = storage.confinement_root(location)
    else:
        root = storage.container_root(location, container)
    return open_store(location, storage_options, boundary=root)
