"""Stores of the local file system: atomic writes (a temporary file renamed over the
target, so a reader never sees half a block), confinement to the container root, only
regular files read, up to a size bound; fsspec is never imported.

A local location is *confined* to its root (the store's boundary, else the nearest of it
and its parents named ``*.n5``): a read, write or removal whose resolved path leads outside
the resolved root (through a symbolic link inside the container) raises
:class:`~n5mscodecs.StorageError`; readers may opt out (``read_outside``). A FIFO, a device
or a directory where a file should be is an error naming it, never a hang. Written files get
the permissions a plain ``open()`` would give (``0o666`` less the umask).
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import stat
from typing import TYPE_CHECKING

from .._threads import default_threads
from ..errors import StorageError
from . import storage
from .store import Store, _parts

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .storage import PathLike

# flags of os.open that only some systems have (O_BINARY: no newline translation on Windows)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@functools.lru_cache(maxsize=1024)
def _real_root(root: str) -> str:
    """The resolved root (user-named roots do not turn into links while a process reads them)."""
    return os.path.realpath(root)


def _resolved(path: str, root: str) -> str:
    """``path`` (absolute, below ``root`` as written) resolved: the root's resolution, then one
    ``lstat`` per component below it (the full resolution only after a link), which is what
    a block read can afford; missing components stay as written."""
    current = _real_root(root)
    prefix = root.rstrip(os.sep) + os.sep
    parts = path[len(prefix):].split(os.sep) if path.startswith(prefix) else os.path.relpath(path, root).split(os.sep)
    for i, part in enumerate(parts):
        if part in (".", ""):
            continue
        following = os.path.join(current, part)
        try:
            is_link = stat.S_ISLNK(os.lstat(following).st_mode)
        except OSError:  # missing (a file to write) or below a file: nothing more to resolve
            return os.path.join(following, *parts[i + 1:])
        current = os.path.realpath(following) if is_link else following
    return current


def _inside(path: str, root: str) -> bool:
    real_root = _real_root(root)
    real = _resolved(path, root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _nearest_root(path: str) -> str | None:
    """The nearest of ``path`` (absolute) and its parents named ``*.n5``."""
    while True:
        if os.path.basename(path).lower().endswith(".n5"):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def check_confined(path: str, operation: str, root: PathLike | None = None) -> None:
    """Raise :class:`~n5mscodecs.StorageError` when the local ``path`` resolves outside its
    container root (``root``, else the nearest of it and its parents named ``*.n5``; nothing
    to check without one)."""
    path = os.path.abspath(path)
    root = _nearest_root(path) if root is None else os.path.abspath(storage.local_path(root))
    if root is not None and not _inside(path, root):
        raise StorageError(
            f"{storage.display(path)}: {operation}: resolves to {_resolved(path, root)}, outside the container "
            f"root {storage.display(root)} (a symbolic link inside the container); refusing to follow it"
        )


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))
    return next((kind for test, kind in kinds if test(mode)), "not a regular file")


class DiskStore(Store):
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

    def url(self, key: str = "") -> str:
        return self._path(key)

    def child(self, key: str) -> DiskStore:
        return self._derived(DiskStore(self.url(key), boundary=self.boundary, read_outside=self.read_outside))

    def parent(self) -> DiskStore:
        path = os.path.abspath(self._path(""))
        if self.boundary is not None:
            root = os.path.abspath(storage.local_path(self.boundary))
            if not path.startswith(root.rstrip(os.sep) + os.sep):  # at or above the root
                raise StorageError(f"{self.display()}: its parent lies outside the container root "
                                   f"{storage.display(root)}; refusing to go above it")
        return self._derived(DiskStore(storage.parent(self.location), boundary=self.boundary,
                                        read_outside=self.read_outside))

    def local_file(self, key: str = "") -> str:
        return self._path(key)

    def _confine(self, key: str, operation: str) -> str:
        path = self._path(key)
        check_confined(path, operation, self.boundary)
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
        """As :meth:`~n5mscodecs.n5.store.Store.walk`, by the rules of a read: a symbolic link to a directory is
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
                    check_confined(path, "list", self.boundary)
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
