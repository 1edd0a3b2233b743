"""Stores of URLs: fsspec's file systems (``s3://``, ``gs://``, ``http(s)://``, ``memory://``;
the ``remote`` extra), with bounded time-outs, this package's retries of transient failures,
and messages that never show credentials.

The file system is resolved once per location, with the time-outs of
:mod:`~n5mscodecs.n5.storage` (its constants are read at each request, so they can be
changed), and only :func:`retrying` repeats a request: s3fs's and botocore's own
retries are turned off. Every read, listing and look-up has a total deadline,
``storage.REQUEST_DEADLINE`` seconds, its body included (a body dripping one byte per read
time-out would otherwise never end: the clients' own time-outs are per read); writes have
none. ``http(s)`` is read-only, and its bodies are read up to the size their caller can need
(a server may ignore ``Range`` and send gigabytes for one block).
"""

from __future__ import annotations

import asyncio
import posixpath
import time
from typing import TYPE_CHECKING, Any

from .._threads import default_threads
from ..errors import ConfigurationError, MissingExtraError, N5msCodecsError, StorageError
from . import storage
from .store import ObjectStoreMixin, Store, _parts

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from .storage import StorageOptions


def _bounded_options(location, options):
    """``options`` with this module's time-outs and single attempts for the protocols that take
    them (the caller's own settings win): retries are counted once, in :func:`retrying`."""
    options = dict(options or {})
    scheme = location.split("://", 1)[0].lower()
    if scheme in ("s3", "s3a"):
        config = {"connect_timeout": storage.CONNECT_TIMEOUT, "read_timeout": storage.READ_TIMEOUT,
                  "retries": {"total_max_attempts": 1, "mode": "standard"}}
        options["config_kwargs"] = {**config, **dict(options.get("config_kwargs") or {})}
    elif scheme in ("http", "https"):
        import aiohttp

        client = dict(options.get("client_kwargs") or {})
        client.setdefault("timeout", aiohttp.ClientTimeout(sock_connect=storage.CONNECT_TIMEOUT,
                                                           sock_read=storage.READ_TIMEOUT))
        options["client_kwargs"] = client
    return options


def filesystem(location: str, options: StorageOptions):
    try:
        import fsspec
    except ImportError:
        raise MissingExtraError(
            f"{storage.display(location)}: URLs need the 'remote' extra: pip install 'n5mscodecs[remote]'"
        ) from None
    try:
        fs, path = fsspec.core.url_to_fs(location, **_bounded_options(location, options))
        if type(fs).__module__.startswith("s3fs"):
            fs.retries = 1  # s3fs repeats failed calls itself (5 times by default)
        return fs, path
    except ImportError as exc:  # the protocol's package (s3fs, gcsfs, aiohttp) is missing
        raise MissingExtraError(
            f"{storage.display(location)}: {exc}; pip install 'n5mscodecs[remote]' brings s3fs, gcsfs and aiohttp"
        ) from None
    except ValueError as exc:  # an unknown protocol
        raise ConfigurationError(f"{storage.display(location)}: {exc}") from None


_PERMANENT = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, FileExistsError,
              NotImplementedError)
# transient errors of the HTTP stacks, by class name (the packages are optional)
_TRANSIENT_NAMES = {
    "EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError",
    "ResponseStreamingError", "IncompleteReadError", "ClientConnectionError", "ClientConnectorError",
    "ServerDisconnectedError", "ServerTimeoutError", "ClientPayloadError", "ClientOSError", "FSTimeoutError",
}


def _transient(error: BaseException) -> bool:
    """Whether a failed request may pass when repeated: dropped or refused connections,
    time-outs, 5xx and 429 answers. Missing objects, refusals and client errors (a bad
    endpoint, credentials where they cannot go) do not."""
    if isinstance(error, _PERMANENT + (ConfigurationError,)):
        return False
    if isinstance(error, TimeoutError | ConnectionError):
        return True
    if any(cls.__name__ in _TRANSIENT_NAMES for cls in type(error).__mro__):
        return True
    wrapped = getattr(error, "kwargs", {}).get("error") if isinstance(getattr(error, "kwargs", None), dict) else None
    if wrapped is not None:  # botocore's HTTPClientError wraps what the HTTP client raised
        return _transient(wrapped)
    status = getattr(error, "status", None) or getattr(error, "status_code", None)
    if isinstance(status, int):
        return status >= 500 or status == 429
    # s3fs turns server errors it has no better class for into plain OSError
    return type(error) is OSError


def retrying(location: str, operation: str, request):
    """``request()`` with retries of transient failures; a refusal or the last failure raise
    :class:`~n5mscodecs.StorageError` naming ``location`` (never credentials); FileNotFoundError passes."""
    delay = storage.RETRY_DELAY
    for attempt in range(1, storage.ATTEMPTS + 1):
        try:
            return request()
        except FileNotFoundError:
            raise
        except PermissionError:
            raise StorageError(f"{storage.display(location)}: {operation}: access denied") from None
        except N5msCodecsError:
            raise
        except Exception as error:
            detail = storage.display(str(error).splitlines()[0]) if str(error) else ""
            reason = type(error).__name__ + (f": {detail}" if detail else "")
            if not _transient(error):
                raise StorageError(f"{storage.display(location)}: {operation} failed ({reason}); not retried") from None
            if attempt == storage.ATTEMPTS:
                raise StorageError(
                    f"{storage.display(location)}: {operation} failed {storage.ATTEMPTS} times ({reason})") from None
            time.sleep(delay)
            delay *= 2


_CHUNK = 1 << 16


async def _http_body(fs: Any, url: str, max_size: int) -> bytes:
    session = await fs.set_session()
    async with session.get(fs.encode_url(url), **fs.kwargs) as response:
        if response.status == 404:
            raise FileNotFoundError(url)
        response.raise_for_status()
        declared = response.content_length
        if declared is not None and declared > max_size:
            raise StorageError(f"{storage.display(url)}: read: {declared} bytes, more than the {max_size} it can need")
        body = bytearray()
        async for chunk in response.content.iter_chunked(_CHUNK):
            body += chunk
            if len(body) > max_size:  # stop reading: the rest is never received
                raise StorageError(f"{storage.display(url)}: read: more than the {max_size} bytes it can need")
        return bytes(body)


async def _within_deadline(request: Any) -> Any:
    deadline = storage.REQUEST_DEADLINE
    started = time.monotonic()
    try:
        async with asyncio.timeout(deadline):
            return await request()
    except TimeoutError as error:  # also the clients' per-read time-outs: named as what they are
        if time.monotonic() - started < deadline:
            raise
        raise TimeoutError(f"no complete answer within the deadline of {deadline:g} s per request") from error


def _call(fs: Any, request: Any) -> Any:
    from fsspec.asyn import sync
    from fsspec.exceptions import FSTimeoutError

    try:
        return sync(fs.loop, _within_deadline, request)
    except FSTimeoutError as error:  # fsspec's name for any time-out: the one raised says which
        raise error.__cause__ if isinstance(error.__cause__, TimeoutError) else error from None


def bounded_read(fs: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``fs.<method>(*args, **kwargs)`` (``cat_file``, ``ls``, ``exists``, ``isdir``, ...) within
    the request deadline: the asynchronous ``_<method>`` on the file system's loop, cancelled at
    the deadline (a TimeoutError naming it, for the caller's retries). A file system that is not
    asynchronous (``memory://``) is called as it is."""
    if not getattr(fs, "async_impl", False):
        return getattr(fs, method)(*args, **kwargs)
    return _call(fs, lambda: getattr(fs, "_" + method)(*args, **kwargs))


def bounded_http_get(fs: Any, url: str, max_size: int) -> bytes:
    """The body at ``url`` (an fsspec HTTP file system's), at most ``max_size`` bytes, within the
    request deadline: more is a :class:`~n5mscodecs.StorageError` (not retried), a 404 a
    FileNotFoundError, other failures as aiohttp raises them (for the caller's retries)."""
    return _call(fs, lambda: _http_body(fs, url, max_size))


def _walk(listing: Callable[[str], tuple[list[str], list[str]] | None],
         key: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(directory, subdirectories, files)`` top-down from ``key``, as ``os.walk``, by
    ``listing(key)`` (``(subdirectories, files)``, None when nothing is there): how an object
    store walks with its own listing, whose failures are retried and then raised, never skipped."""
    listed = listing(key)
    if listed is None:
        return
    subdirectories, files = listed
    yield key, subdirectories, files
    for name in subdirectories:  # what the caller left (pruning in place skips the rest)
        yield from _walk(listing, f"{key}/{name}" if key else name)


class UrlStore(ObjectStoreMixin, Store):
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
        self.fs, self.path = _resolved if _resolved is not None else filesystem(location, storage_options)
        self.http = http = storage.read_only_location(location)
        self.read_only = read_only or http
        if http:
            self.read_only_reason = "http(s) locations are read-only"

    def _key_path(self, key: str) -> str:
        return posixpath.join(self.path, *_parts(key))

    def url(self, key: str = "") -> str:
        return posixpath.join(self.location, *_parts(key))

    def child(self, key: str) -> UrlStore:
        return self._derived(UrlStore(self.url(key), self.storage_options, _resolved=(self.fs, self._key_path(key))))

    def parent(self) -> UrlStore:
        path = posixpath.dirname(self.path.rstrip("/"))
        if not path.strip("/"):  # a bucket (or the file system's root) has no parent to read
            raise StorageError(f"{self.display()}: no parent location above it")
        return self._derived(UrlStore(storage.parent(self.location), self.storage_options,
                                         _resolved=(self.fs, path)))

    def _request(self, key: str, operation: str, request):
        return retrying(self.url(key), operation, request)

    def get(self, key: str = "", *, max_size: int | None = None) -> bytes | None:
        path = self._key_path(key)
        try:
            if max_size is None:
                data = self._request(key, "read", lambda: bounded_read(self.fs, "cat_file", path))
            elif self.http:  # a server may ignore Range: the body is read up to the bound, no further
                data = self._request(key, "read", lambda: bounded_http_get(self.fs, path, max_size))
            else:
                data = self._request(key, "read", lambda: bounded_read(self.fs, "cat_file", path, start=0,
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
        return self._request(key, "look up", lambda: bounded_read(self.fs, "exists", path, **strict))

    def is_directory(self, key: str = "") -> bool:
        path = self._key_path(key)
        return self._request(key, "look up", lambda: bounded_read(self.fs, "isdir", path))

    def list_dir(self, key: str = "") -> list[str]:
        path = self._key_path(key)
        try:
            names = self._request(key, "list", lambda: bounded_read(self.fs, "ls", path, detail=False))
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(p.rstrip("/")) for p in names)

    def can_list(self, key: str = "") -> bool:
        # many http servers serve no listings: there, the listing must show the attributes.json
        return not self.http or storage.ATTRIBUTES in self.list_dir(key)

    def walk(self, key: str = "") -> Iterator[tuple[str, list[str], list[str]]]:
        """As :meth:`~n5mscodecs.n5.store.Store.walk`; each listing is retried as a read is, and one that keeps
        failing is a :class:`~n5mscodecs.StorageError` naming it, never skipped."""
        return _walk(self._listing, "/".join(_parts(key)))

    def _listing(self, key: str) -> tuple[list[str], list[str]] | None:
        path = self._key_path(key).rstrip("/")
        try:
            entries = self._request(key, "list", lambda: bounded_read(self.fs, "ls", path, detail=True))
        except FileNotFoundError:
            return None
        named = [(e["name"].rstrip("/"), e.get("type") == "directory") for e in entries]
        return (sorted(posixpath.basename(n) for n, is_dir in named if is_dir and n != path),
                sorted(posixpath.basename(n) for n, is_dir in named if not is_dir and n != path))  # not itself

    def total_size(self, key: str = "") -> int:
        return int(self.fs.du(self._key_path(key)))

    def request_threads(self, threads: int | None) -> int:
        # latency, not cores, limits requests in flight
        return storage.REMOTE_REQUESTS if threads is None else default_threads(threads)
