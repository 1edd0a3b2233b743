"""Which store a location gets: the one place above :mod:`~n5mscodecs.n5.storage` that
looks at a location's scheme. Every public entry point turns what it was given into a store
here, once: a local path becomes a :class:`~n5mscodecs.n5.disk_store.DiskStore`, a URL a
:class:`~n5mscodecs.n5.url_store.UrlStore`, one of zarr-python's stores the store
:func:`~n5mscodecs.n5.zarr_backed.from_zarr_store` makes of it, and a store stays itself.

>>> import tempfile
>>> store = open_store(tempfile.mkdtemp() + "/c.n5")
>>> store.set("labels/0/0", b"block")
>>> store.child("labels").get("0/0"), store.list_dir(), store.exists("labels/1/0")
(b'block', ['labels'], False)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import InputTypeError
from . import storage
from .disk_store import DiskStore
from .store import Store
from .url_store import UrlStore
from .zarr_backed import from_zarr_store

if TYPE_CHECKING:
    from .storage import PathLike, StorageOptions
    from .store import Where


def _foreign(location: object, read_only: bool) -> Store:
    store = from_zarr_store(location, read_only)
    if store is None:
        raise InputTypeError(f"location: expected a path, a URL or a store (this package's or zarr-python's), "
                             f"got {type(location).__module__}.{type(location).__qualname__}")
    return store


def open_store(location: Where, storage_options: StorageOptions = None, *, read_only: bool = False,
               boundary: str | None = None, read_outside: bool = False) -> Store:
    """The store of a location: where every public entry point turns a location into a store.

    Parameters
    ----------
    location : str, os.PathLike, ~n5mscodecs.n5.store.Store or zarr.abc.store.Store
        A local path (or ``file://`` URL): a :class:`~n5mscodecs.n5.disk_store.DiskStore`; another URL
        (``s3://``, ``gs://``, ``http(s)://``, ``memory://``; the ``remote`` extra): a
        :class:`~n5mscodecs.n5.url_store.UrlStore`; one of zarr-python's stores: see
        :func:`~n5mscodecs.n5.zarr_backed.from_zarr_store`.
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
    if not isinstance(location, (str, os.PathLike)):
        return _foreign(location, read_only)
    location = os.fspath(location)
    if storage.is_url(location):
        return UrlStore(location, storage_options, read_only=read_only)
    return DiskStore(location, boundary=boundary, read_outside=read_outside, read_only=read_only)


def open_target(location: Where, storage_options: StorageOptions = None,
                container: PathLike | Store | None = None) -> Store:
    """The store a writer writes its target through: ``location`` when it is a store (a
    group's child), else opened here, once, confined to the container root (``container``
    when given, else the nearest ``*.n5`` of the target and its parents, else the target)."""
    if isinstance(location, Store):
        return location
    if not isinstance(location, (str, os.PathLike)):
        return _foreign(location, False)
    if isinstance(container, Store):
        container = container.location
    if container is None:
        root = storage.confinement_root(location)
    else:
        root = storage.container_root(location, container)
    return open_store(location, storage_options, boundary=root)
