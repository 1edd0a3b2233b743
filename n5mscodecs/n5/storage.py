"""Locations, and the rules every access to storage follows.

Groups and datasets hold a store (:mod:`n5mscodecs.n5.store`, chosen once, at the public
entry point that was given a location) and name their objects by key. This module holds
what the stores build on: a *location*'s rules (a local path, or a URL such as
``s3://bucket/data.n5/labels``, ``gs://...``, ``http(s)://...``; ``file://`` URLs are local
paths): display without credentials, container roots and overlaps, confinement, fsspec's
file system with bounded time-outs, and the retries. Nothing here opens, writes, lists or
removes anything: the stores do. Local paths use the file system directly (atomic
writes: a temporary file renamed over the target, so a reader never sees half a block).
URLs go through fsspec (the ``remote`` extra: fsspec, s3fs, gcsfs, aiohttp), with
fsspec's ``storage_options`` (endpoint, credentials, ``anon``) and the standard
environment variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...); an object store
replaces an object in one request, which is atomic too. ``http(s)`` locations are
read-only.

The container root is a boundary. A local location is *confined* to its root (the
store's boundary, else the nearest of it and its parents named ``*.n5``): a read,
write or removal whose resolved path leads outside the resolved root (through a
symbolic link inside the container) raises :class:`~n5mscodecs.StorageError`; readers may opt
out (``read_outside``). Only regular files are read, up to a size bound: a FIFO,
a device or a directory where a file should be is an error naming it, never a
hang. Written files get the permissions a plain ``open()`` would give (``0o666``
less the umask).
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import stat
import time
from typing import TYPE_CHECKING

from ..errors import ConfigurationError, MissingExtraError, N5msCodecsError, StorageError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TypeAlias

    from .store import Store

ATTRIBUTES = "attributes.json"
TEMPORARY_PREFIX = ".tmp-"  # atomic local writes: a temporary file, renamed over the target
#: Requests in flight by default when reading or writing many blocks of a URL.
REMOTE_REQUESTS = 16
#: Attempts of a URL request that fails in a way that may pass (5xx, dropped connections,
#: timeouts), with exponential backoff from RETRY_DELAY seconds; then StorageError. These are
#: the only retries: s3fs's and botocore's own are turned off for the filesystems made here.
ATTEMPTS = 5
RETRY_DELAY = 0.1
#: Seconds to connect, and to wait for each read of a response, for s3:// and http(s)://
#: locations (unless storage options set them). A server that accepts and never answers
#: costs at most :func:`~n5mscodecs.n5.storage.never_answered_seconds` before the StorageError.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 15.0
#: Seconds one read, listing or look-up of a URL may take in all, its body included (a body
#: dripping one byte per read time-out is cut there; see :mod:`n5mscodecs.n5.remote`); retried
#: as a time-out. Writes have none (an upload of a large block may take longer).
REQUEST_DEADLINE = 60.0
#: Largest JSON document (``attributes.json``) read.
MAX_JSON_BYTES = 1 << 26

#: A location: a local path (a string or an :class:`os.PathLike`) or a URL string.
PathLike: TypeAlias = str | os.PathLike[str]
StorageOptions: TypeAlias = "Mapping[str, Any] | None"
#: What a public entry point takes: a location (with storage options beside it) or a store
#: opened once (which holds its own options; those passed beside it are not used).
Where: TypeAlias = "PathLike | Store"

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@")


def is_url(location: PathLike) -> bool:
    """Whether ``location`` is a URL handled by fsspec (``file://`` URLs are local paths)."""
    return isinstance(location, str) and bool(_URL.match(location)) and not location.startswith("file://")


def display(location: PathLike) -> str:
    """``location`` for messages: a URL without any ``user:password@``."""
    return _USERINFO.sub(r"\1", os.fspath(location))


def local_path(location: PathLike) -> str:
    """A local location as a file system path (``file://`` removed)."""
    location = os.fspath(location)
    return location[len("file://"):] if location.startswith("file://") else location


def local_file(location: PathLike) -> str | None:
    """The file system path of a local ``location`` (``file://`` removed), None for a URL."""
    return None if is_url(location) else local_path(location)


def read_only_location(location: PathLike) -> bool:
    """Whether ``location`` can only be read (``http(s)`` URLs: no writes over plain HTTP)."""
    return is_url(location) and os.fspath(location).lower().startswith(("http://", "https://"))


def basename(location: PathLike) -> str:
    """The last name of ``location`` (a trailing "/" ignored): ``"s0"`` for ``.../data/s0/``."""
    location = os.fspath(location)
    if is_url(location):
        return location.rstrip("/").rsplit("/", 1)[-1]
    return os.path.basename(os.path.normpath(location))


def parent(location: PathLike) -> str:
    """The location that holds ``location`` (a relative local path's parent made absolute
    when it has no other: ``parent("c.n5")`` is the working directory)."""
    location = os.fspath(location)
    if is_url(location):
        return location.rstrip("/").rsplit("/", 1)[0]
    head, tail = os.path.split(location.rstrip(os.sep) or location)
    if head and tail not in ("", ".", ".."):  # as the location is written: its children's parent is it
        return head
    return os.path.dirname(os.path.normpath(location)) or os.path.dirname(os.path.abspath(location))


def never_answered_seconds() -> float:
    """Longest a URL request takes before its :class:`~n5mscodecs.StorageError` when the server
    accepts connections and never answers (or never accepts them): ``ATTEMPTS`` times the
    connect and read time-outs, plus the backoff between attempts. A refused connection
    or a non-transient error (access denied, a bad client configuration) fails sooner."""
    return ATTEMPTS * (CONNECT_TIMEOUT + READ_TIMEOUT) + _backoff()


def worst_case_seconds() -> float:
    """Longest a read, listing or look-up of a URL can take before its
    :class:`~n5mscodecs.StorageError`, whatever the server does (also a body dripping slowly):
    ``ATTEMPTS`` times ``REQUEST_DEADLINE`` (at least the connect and read time-outs), plus the
    backoff between attempts."""
    return ATTEMPTS * max(REQUEST_DEADLINE, CONNECT_TIMEOUT + READ_TIMEOUT) + _backoff()


def _backoff() -> float:
    return sum(RETRY_DELAY * 2**k for k in range(ATTEMPTS - 1))


def _bounded_options(location, options):
    """``options`` with this module's time-outs and single attempts for the protocols that take
    them (the caller's own settings win): retries are counted once, in ``_retrying``."""
    options = dict(options or {})
    scheme = location.split("://", 1)[0].lower()
    if scheme in ("s3", "s3a"):
        config = {"connect_timeout": CONNECT_TIMEOUT, "read_timeout": READ_TIMEOUT,
                  "retries": {"total_max_attempts": 1, "mode": "standard"}}
        options["config_kwargs"] = {**config, **dict(options.get("config_kwargs") or {})}
    elif scheme in ("http", "https"):
        import aiohttp

        client = dict(options.get("client_kwargs") or {})
        client.setdefault("timeout", aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT))
        options["client_kwargs"] = client
    return options


def filesystem(location: str, options: StorageOptions):
    try:
        import fsspec
    except ImportError:
        raise MissingExtraError(
            f"{display(location)}: URLs need the 'remote' extra: pip install 'n5mscodecs[remote]'"
        ) from None
    try:
        fs, path = fsspec.core.url_to_fs(location, **_bounded_options(location, options))
        if type(fs).__module__.startswith("s3fs"):
            fs.retries = 1  # s3fs repeats failed calls itself (5 times by default)
        return fs, path
    except ImportError as exc:  # the protocol's package (s3fs, gcsfs, aiohttp) is missing
        raise MissingExtraError(
            f"{display(location)}: {exc}; pip install 'n5mscodecs[remote]' brings s3fs, gcsfs and aiohttp"
        ) from None
    except ValueError as exc:  # an unknown protocol
        raise ConfigurationError(f"{display(location)}: {exc}") from None


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
    delay = RETRY_DELAY
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return request()
        except FileNotFoundError:
            raise
        except PermissionError:
            raise StorageError(f"{display(location)}: {operation}: access denied") from None
        except N5msCodecsError:
            raise
        except Exception as error:
            detail = display(str(error).splitlines()[0]) if str(error) else ""
            reason = type(error).__name__ + (f": {detail}" if detail else "")
            if not _transient(error):
                raise StorageError(f"{display(location)}: {operation} failed ({reason}); not retried") from None
            if attempt == ATTEMPTS:
                raise StorageError(f"{display(location)}: {operation} failed {ATTEMPTS} times ({reason})") from None
            time.sleep(delay)
            delay *= 2


def join(location: PathLike, *names: str | int) -> str:
    """``location`` / ``names`` (URLs keep their scheme and use "/")."""
    if is_url(location):
        return posixpath.join(location, *(str(n) for n in names))
    return os.path.join(os.fspath(location), *(str(n) for n in names))


def _lineage(location: str) -> list[str]:
    """``location`` normalized (local paths absolute), then each of its parents up to the root
    (a URL's first part, e.g. its bucket, is the last)."""
    if is_url(location):
        scheme, rest = location.split("://", 1)
        parts = [part for part in posixpath.normpath(rest).split("/") if part not in ("", ".")]
        return [f"{scheme}://" + "/".join(parts[:n]) for n in range(len(parts), 0, -1)]
    path = os.path.abspath(local_path(location))
    lineage = [path]
    while os.path.dirname(lineage[-1]) != lineage[-1]:
        lineage.append(os.path.dirname(lineage[-1]))
    return lineage


def resolved(location: PathLike) -> str:
    """``location`` as it is compared for overlaps: a local path absolute with every symlink
    resolved (also those in parents of a location that does not exist yet); a URL with its
    scheme in lower case, its path normalized and no trailing "/"."""
    location = os.fspath(location)
    if is_url(location):
        scheme, rest = location.split("://", 1)
        parts = [part for part in posixpath.normpath(rest).split("/") if part not in ("", ".")]
        return f"{scheme.lower()}://" + "/".join(parts)
    return os.path.realpath(local_path(location))


def overlaps(first: PathLike, second: PathLike) -> bool:
    """Whether ``first`` is ``second``, lies inside it or contains it (see :func:`resolved`)."""
    a, b = resolved(first), resolved(second)
    if is_url(a) != is_url(b):
        return False
    separator = "/" if is_url(a) else os.sep
    return a == b or a.startswith(b.rstrip(separator) + separator) or b.startswith(a.rstrip(separator) + separator)


def refuse_overlap(target: PathLike, source: PathLike | None) -> None:
    """ConfigurationError, naming both, when writing ``target`` could touch ``source``; call it
    before anything is written or removed (None: an in-memory source, nothing to check)."""
    if source is not None and overlaps(target, source):
        raise ConfigurationError(
            f"target {display(target)} overlaps the source {display(source)} (it is, contains or lies "
            "inside it): refusing to write there; choose a target outside the source")


def container_root(location: PathLike, container: PathLike | None = None) -> str | None:
    """The N5 container root that holds the group or dataset ``location``: ``container`` when
    given (it must be ``location`` or one of its parents, else ConfigurationError), otherwise
    the nearest of ``location`` and its parents whose name ends with ``.n5`` (in any case);
    None when there is none. Local roots are returned as absolute paths."""
    lineage = _lineage(os.fspath(location))
    if container is not None:
        root = _lineage(os.fspath(container))[0]
        if root not in lineage:
            raise ConfigurationError(
                f"container: {display(container)} is not {display(location)} or one of its parents")
        return root
    name = posixpath.basename if is_url(lineage[0]) else os.path.basename
    return next((p for p in lineage if name(p).lower().endswith(".n5")), None)


def depth_below(location: PathLike, parent: PathLike) -> int:
    """How many levels ``location`` lies below ``parent`` (one of its parents, or itself)."""
    return _lineage(os.fspath(location)).index(_lineage(os.fspath(parent))[0])


def confinement_root(location: PathLike) -> str | None:
    """The root what is opened at ``location`` is confined to: its container root, else
    ``location`` itself (None for a URL, whose keys cannot be links)."""
    if is_url(location):
        return None
    return container_root(location) or os.path.abspath(local_path(location))


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


def _nearest_root(path):
    """The nearest of ``path`` and its parents named ``*.n5``."""
    for candidate in _lineage(path):
        if os.path.basename(candidate).lower().endswith(".n5"):
            return candidate
    return None


def check_confined(location: PathLike, operation: str, root: PathLike | None = None) -> None:
    """Raise :class:`~n5mscodecs.StorageError` when the local ``location`` resolves outside
    its container root (``root``, else the nearest of it and its parents named ``*.n5``;
    nothing to check without one, or for a URL, whose keys cannot be links)."""
    if is_url(location):
        return
    path = os.path.abspath(local_path(location))
    root = _nearest_root(path) if root is None else os.path.abspath(local_path(root))
    if root is not None and not _inside(path, root):
        raise StorageError(
            f"{display(location)}: {operation}: resolves to {_resolved(path, root)}, outside the container "
            f"root {display(root)} (a symbolic link inside the container); refusing to follow it"
        )
