"""Which store a location gets: the one place that looks at a location's scheme. Every
public entry point turns what it was given into a store here, once: a local path becomes a
:class:`~n5mscodecs.n5.disk_store.DiskStore`, a URL a :class:`~n5mscodecs.n5.url_store.UrlStore`,
one of zarr-python's stores the store that reaches its bytes best (see :func:`open_store`), and
a store stays itself. What follows is calls on the store (see :mod:`~n5mscodecs.n5.store`).

>>> import tempfile
>>> store = open_store(tempfile.mkdtemp() + "/c.n5")
>>> store.set("labels/0/0", b"block")
>>> store.child("labels").get("0/0"), store.list_dir(), store.exists("labels/1/0")
(b'block', ['labels'], False)
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import InputTypeError
from . import storage
from .disk_store import DiskStore
from .store import Store
from .url_store import UrlStore
from .zarr_backed import ZarrBackedStore

if TYPE_CHECKING:
    from .storage import PathLike, StorageOptions
    from .store import Where


def is_zarr_store(obj: object) -> bool:
    """Whether ``obj`` is one of zarr-python 3's stores (``zarr.abc.store.Store``); zarr is
    imported only when it was imported already (a zarr store cannot exist without it)."""
    if "zarr" not in sys.modules:
        return False
    try:
        from zarr.abc.store import Store as ZarrStore
    except ImportError:  # zarr 2 has no store classes of that kind
        return False
    return isinstance(obj, ZarrStore)


def _zarr_location(zarr_store: Any) -> tuple[str, StorageOptions] | None:
    """The location (and fsspec's options) of the zarr store ``zarr_store`` when this package's
    own stores reach it (a local directory, an fsspec URL); None when only its API does."""
    name = type(zarr_store).__name__
    if name == "LocalStore":
        return str(zarr_store.root), None
    if name == "FsspecStore":
        fs = getattr(zarr_store.fs, "sync_fs", zarr_store.fs)  # zarr wraps synchronous file systems
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        if protocols & {"file", "local"}:
            return zarr_store.path, None
        options = {k: v for k, v in fs.storage_options.items() if k != "asynchronous"}
        return fs.unstrip_protocol(zarr_store.path), options
    return None


def open_store(location: Where, storage_options: StorageOptions = None, *, read_only: bool = False,
               boundary: str | None = None, read_outside: bool = False) -> Store:
    """The store of a location: where every public entry point turns a location into a store.

    Parameters
    ----------
    location : str, os.PathLike, ~n5mscodecs.n5.store.Store or zarr.abc.store.Store
        A local path (or ``file://`` URL): a :class:`~n5mscodecs.n5.disk_store.DiskStore`; another URL
        (``s3://``, ``gs://``, ``http(s)://``, ``memory://``; the ``remote`` extra): a
        :class:`~n5mscodecs.n5.url_store.UrlStore`. One of zarr-python's stores: a ``LocalStore``
        becomes a ``DiskStore`` of its root (atomic writes, confinement, only regular files
        read), an ``FsspecStore`` a ``UrlStore`` of its URL and options (bounded time-outs,
        retries, no credentials in messages), any other (``MemoryStore``, ``ZipStore``, zarr's
        ``ObjectStore``, wrappers) a :class:`~n5mscodecs.n5.zarr_backed.ZarrBackedStore`; each
        is read-only when the zarr store is. A store is returned as it is (read-only when ``read_only``).
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
    if not isinstance(location, (str, os.PathLike)):
        if not is_zarr_store(location):
            raise InputTypeError(f"location: expected a path, a URL or a store (this package's or zarr-python's), "
                                 f"got {type(location).__module__}.{type(location).__qualname__}")
        zarr_store, read_only = location, read_only or bool(location.read_only)
        reached = _zarr_location(zarr_store)
        if reached is None:
            return ZarrBackedStore(zarr_store, read_only=read_only)
        location, storage_options = reached
    location = os.fspath(location)
    if storage.is_url(location):
        return UrlStore(location, storage_options, read_only=read_only)
    return DiskStore(location, boundary=boundary, read_outside=read_outside, read_only=read_only)


def open_target(location: Where, storage_options: StorageOptions = None,
                container: PathLike | Store | None = None, *, read_outside: bool = False,
                source: PathLike | None = None) -> Store:
    """The store of a group, dataset or writer's target: ``location`` when it is a store (a
    group's child), else opened here, once, a local one confined to the container root
    (``container`` when given, else the nearest ``*.n5`` of ``location`` and its parents,
    else ``location``); ``read_outside`` lets its reads follow links out of that root.

    ``source``: what a writer writes there from (a location, see
    ``n5mscodecs.n5.create.source_file``): a target that is, contains or lies inside it
    is a ConfigurationError naming both (an overwrite would remove the source under the writer)."""
    if isinstance(container, Store):
        container = container.location
    boundary = None
    if isinstance(location, (str, os.PathLike)):  # zarr's stores keep their own rules
        boundary = storage.confinement_root(location, container)
    else:
        read_outside = False
    store = open_store(location, storage_options, boundary=boundary, read_outside=read_outside)
    storage.refuse_overlap(store.location, source)
    return store
