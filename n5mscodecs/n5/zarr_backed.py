"""N5 containers in zarr-python's stores that this package's own stores cannot reach
(``MemoryStore``, ``ZipStore``, ``zarr.storage.ObjectStore``, wrappers): read and written through the zarr
store's own async API. :func:`~n5mscodecs.n5.stores.open_store` picks this store for them (a
``LocalStore`` or an ``FsspecStore`` gets a :class:`~n5mscodecs.n5.disk_store.DiskStore` or a
:class:`~n5mscodecs.n5.url_store.UrlStore` instead), so that every entry point that takes a
store takes zarr's too. zarr itself is imported only when a zarr store is used.
"""

from __future__ import annotations

import asyncio
import posixpath
import threading
from typing import TYPE_CHECKING, Any

from .._threads import default_threads
from ..errors import StorageError
from .store import ObjectStoreMixin, Store, _parts

if TYPE_CHECKING:
    from collections.abc import Coroutine, Iterator


class _Loop:
    """One event loop in a daemon thread, running the zarr stores' coroutines for
    synchronous callers (any thread)."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def run(cls, coroutine: Coroutine[Any, Any, Any]) -> Any:
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="n5mscodecs-zarr-store", daemon=True).start()
                cls._loop = loop
        return asyncio.run_coroutine_threadsafe(coroutine, cls._loop).result()


class ZarrBackedStore(ObjectStoreMixin, Store):
    """The keys below ``prefix`` of a zarr-python store (``MemoryStore``, ``ZipStore``, ...).

    Parameters
    ----------
    zarr_store : zarr.abc.store.Store
        The store holding the bytes; opened on first use, as zarr does.
    prefix : str
        The key of this store's root in ``zarr_store`` (``""``: its root).
    """

    def __init__(self, zarr_store: Any, prefix: str = "", *, read_only: bool = False) -> None:
        self.zarr_store = zarr_store
        self.prefix = "/".join(_parts(prefix))
        self.location = posixpath.join(str(zarr_store).rstrip("/"), *_parts(prefix)) if prefix else str(zarr_store)
        self.read_only = read_only or bool(zarr_store.read_only)
        if self.read_only:
            self.read_only_reason = f"the {type(zarr_store).__name__} is read-only"
        elif not zarr_store.supports_deletes:
            # every N5 writer removes keys (its writer lock at least)
            self.read_only = True
            self.read_only_reason = (f"a {type(zarr_store).__name__} cannot remove keys, which N5 writers need: "
                                     "write to a directory, then archive it")

    def _key(self, key: str) -> str:
        return "/".join([*_parts(self.prefix), *_parts(key)])

    def url(self, key: str = "") -> str:
        return posixpath.join(self.location, *_parts(key))

    def _run(self, key: str, operation: str, coroutine: Coroutine[Any, Any, Any]) -> Any:
        try:
            return _Loop.run(self._opened(coroutine))
        except (OSError, NotImplementedError, ValueError, KeyError) as exc:
            raise StorageError(f"{self.display(key)}: {operation}: {type(exc).__name__}: {exc}") from None

    async def _opened(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        # zarr opens its stores on first use (ZipStore reads its directory then)
        if not getattr(self.zarr_store, "_is_open", True):
            await self.zarr_store._open()
        return await coroutine

    def child(self, key: str) -> ZarrBackedStore:
        return self._derived(ZarrBackedStore(self.zarr_store, self._key(key)))

    def parent(self) -> ZarrBackedStore:
        if not self.prefix:
            raise StorageError(f"{self.display()}: the root of its {type(self.zarr_store).__name__}: no parent")
        return self._derived(ZarrBackedStore(self.zarr_store, posixpath.dirname(self.prefix)))

    def get(self, key: str = "", *, max_size: int | None = None) -> bytes | None:
        from zarr.abc.store import RangeByteRequest
        from zarr.buffer import default_buffer_prototype

        request = None if max_size is None else RangeByteRequest(0, max_size + 1)
        buffer = self._run(key, "read", self.zarr_store.get(self._key(key), default_buffer_prototype(), request))
        if buffer is None:
            return None
        data = buffer.to_bytes()
        if max_size is not None and len(data) > max_size:
            raise StorageError(f"{self.display(key)}: read: more than the {max_size} bytes it can need")
        return data

    def _set(self, key: str, data: bytes | bytearray | memoryview) -> None:
        from zarr.buffer import default_buffer_prototype

        buffer = default_buffer_prototype().buffer.from_bytes(bytes(data))
        self._run(key, "write", self.zarr_store.set(self._key(key), buffer))

    def _delete(self, key: str) -> None:
        self._run(key, "remove", self.zarr_store.delete(self._key(key)))

    def _delete_tree(self, key: str) -> None:
        if self._key(key):
            self._run(key, "remove", self.zarr_store.delete_dir(self._key(key)))
        else:
            self._run(key, "remove", self.zarr_store.clear())

    def _is_object(self, key: str) -> bool:
        return bool(self._key(key)) and self._run(key, "look up", self.zarr_store.exists(self._key(key)))

    def exists(self, key: str = "") -> bool:
        return self._is_object(key) or self.is_directory(key)

    def is_directory(self, key: str = "") -> bool:
        return bool(self.list_dir(key))

    def list_dir(self, key: str = "") -> list[str]:
        async def names() -> list[str]:
            return [name async for name in self.zarr_store.list_dir(self._key(key))]

        return sorted({name.rstrip("/") for name in self._run(key, "list", names())})

    def walk(self, key: str = "") -> Iterator[tuple[str, list[str], list[str]]]:
        top = "/".join(_parts(key))
        pending = [(top, self.list_dir(top))]   # each key listed once: the listing says it is a directory
        while pending:
            directory, names = pending.pop()
            below = {name: posixpath.join(directory, name) if directory else name for name in names}
            listings = {name: self.list_dir(child) for name, child in below.items()}
            subdirectories = [name for name in names if listings[name]]
            files = [name for name in names if self._is_object(below[name])]
            yield directory, subdirectories, files
            pending.extend((below[name], listings[name]) for name in reversed(subdirectories))

    def total_size(self, key: str = "") -> int:
        return int(self._run(key, "measure", self.zarr_store.getsize_prefix(self._key(key))))

    def request_threads(self, threads: int | None) -> int:
        return default_threads(threads)

