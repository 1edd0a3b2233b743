"""The one place N5 datasets and Paintera sources touch storage.

Everything above this module names things by *location* (a local path, or a URL
such as ``s3://bucket/data.n5/labels``, ``gs://...``, ``http(s)://...``,
``file://...``) and calls these functions; nothing else opens, writes, lists or
removes files. Local paths use the file system directly (atomic writes: a
temporary file renamed over the target, so a reader never sees half a block).
URLs go through fsspec (the ``remote`` extra: fsspec, s3fs, gcsfs, aiohttp),
with fsspec's ``storage_options`` (endpoint, credentials, ``anon``) and the
standard environment variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
...); an object store replaces an object in one request, which is atomic too.
``http(s)`` locations are read-only.
"""

from __future__ import annotations

import builtins
import json
import os
import posixpath
import re
import shutil
import tempfile
import time
from typing import TYPE_CHECKING

from .._threads import default_threads
from ..errors import ConfigurationError, MissingExtraError, StorageError

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping
    from typing import Any, TypeAlias

ATTRIBUTES = "attributes.json"
_TEMPORARY_PREFIX = ".tmp-"  # atomic local writes: a temporary file, renamed over the target
#: Requests in flight by default when reading or writing many blocks of a URL.
REMOTE_REQUESTS = 16
#: Attempts of a URL request that fails in a way that may pass (5xx, dropped connections,
#: timeouts), with exponential backoff from RETRY_DELAY seconds; then StorageError.
ATTEMPTS = 5
RETRY_DELAY = 0.1

#: A location: a local path (a string or an :class:`os.PathLike`) or a URL string.
PathLike: TypeAlias = str | os.PathLike[str]
StorageOptions: TypeAlias = "Mapping[str, Any] | None"

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


def _filesystem(location: str, options: StorageOptions):
    try:
        import fsspec
    except ImportError:
        raise MissingExtraError(
            f"{display(location)}: URLs need the 'remote' extra: pip install 'n5mscodecs[remote]'"
        ) from None
    try:
        return fsspec.core.url_to_fs(location, **dict(options or {}))
    except ImportError as exc:  # the protocol's package (s3fs, gcsfs, aiohttp) is missing
        raise MissingExtraError(
            f"{display(location)}: {exc}; pip install 'n5mscodecs[remote]' brings s3fs, gcsfs and aiohttp"
        ) from None
    except ValueError as exc:  # an unknown protocol
        raise ConfigurationError(f"{display(location)}: {exc}") from None


def _transient(error: BaseException) -> bool:
    """Whether a failed request may pass when repeated (missing objects and refusals do not)."""
    if isinstance(error, FileNotFoundError | PermissionError | ConfigurationError | NotImplementedError):
        return False
    module = type(error).__module__.split(".")[0]
    return isinstance(error, OSError | TimeoutError) or module in ("aiohttp", "botocore", "aiobotocore", "requests")


def _retrying(location: str, operation: str, request):
    """``request()`` with retries of transient failures; a refusal or the last failure raise
    :class:`StorageError` naming ``location`` (never credentials); FileNotFoundError passes."""
    delay = RETRY_DELAY
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return request()
        except FileNotFoundError:
            raise
        except PermissionError:
            raise StorageError(f"{display(location)}: {operation}: access denied") from None
        except Exception as error:
            if not _transient(error):
                raise
            if attempt == ATTEMPTS:
                detail = display(str(error).splitlines()[0]) if str(error) else ""
                raise StorageError(
                    f"{display(location)}: {operation} failed {ATTEMPTS} times ({type(error).__name__}"
                    + (f": {detail}" if detail else "") + ")"
                ) from None
            time.sleep(delay)
            delay *= 2


def _writable(location: str, options: StorageOptions):
    fs, path = _filesystem(location, options)
    if location.startswith(("http://", "https://")):
        raise ConfigurationError(f"{display(location)}: http(s) locations are read-only")
    return fs, path


def join(location: PathLike, *names: str | int) -> str:
    """``location`` / ``names`` (URLs keep their scheme and use "/")."""
    if is_url(location):
        return posixpath.join(location, *(str(n) for n in names))
    return os.path.join(os.fspath(location), *(str(n) for n in names))


def relative(location: str, base: str) -> str:
    """``location`` relative to ``base``, with "/" between the parts."""
    if is_url(base) or is_url(location):
        return posixpath.relpath(location.rstrip("/"), base.rstrip("/"))
    return os.path.relpath(location, base).replace(os.sep, "/")


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


def read_bytes(location: PathLike, options: StorageOptions = None) -> bytes | None:
    """The bytes at ``location``, or None when there is nothing."""
    if is_url(location):
        fs, path = _filesystem(location, options)
        try:
            return _retrying(location, "read", lambda: fs.cat_file(path))
        except FileNotFoundError:
            return None
    try:
        with builtins.open(local_path(location), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def write_bytes(location: PathLike, data: bytes, options: StorageOptions = None) -> None:
    """Write ``data`` at ``location`` atomically (creating parent directories)."""
    if is_url(location):
        fs, path = _writable(location, options)
        data = bytes(data)
        _retrying(location, "write", lambda: fs.pipe_file(path, data))
        return
    target = local_path(location)
    directory = os.path.dirname(target)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=_TEMPORARY_PREFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def read_json(location: PathLike, options: StorageOptions = None) -> Any:
    """The parsed JSON document at ``location``, or None when there is none."""
    data = read_bytes(location, options)
    return None if data is None else json.loads(data)


def write_json(location: PathLike, document: Any, options: StorageOptions = None) -> None:
    write_bytes(location, json.dumps(document, indent=2).encode(), options)


def read_attributes(location: PathLike, options: StorageOptions = None) -> dict[str, Any]:
    """The parsed ``attributes.json`` of the group or dataset ``location`` ({} when there is none)."""
    return read_json(join(location, ATTRIBUTES), options) or {}


def write_attributes(location: PathLike, document: Mapping[str, Any], options: StorageOptions = None) -> None:
    """Write the ``attributes.json`` of ``location`` (atomically)."""
    write_json(join(location, ATTRIBUTES), document, options)


def exists(location: PathLike, options: StorageOptions = None) -> bool:
    if is_url(location):
        fs, path = _filesystem(location, options)
        return _retrying(location, "look up", lambda: fs.exists(path))
    return os.path.exists(local_path(location))


def is_directory(location: PathLike, options: StorageOptions = None) -> bool:
    """Whether ``location`` holds other objects (a directory, or a prefix of an object store)."""
    if is_url(location):
        fs, path = _filesystem(location, options)
        return _retrying(location, "look up", lambda: fs.isdir(path))
    return os.path.isdir(local_path(location))


def is_nonempty_directory(location: PathLike, options: StorageOptions = None) -> bool:
    return bool(list_names(location, options)) if is_directory(location, options) else False


def list_names(location: PathLike, options: StorageOptions = None) -> list[str]:
    """The names directly below ``location`` (sorted; empty when there is nothing)."""
    if is_url(location):
        fs, path = _filesystem(location, options)
        try:
            names = _retrying(location, "list", lambda: fs.ls(path, detail=False))
            return sorted(posixpath.basename(p.rstrip("/")) for p in names)
        except FileNotFoundError:
            return []
    try:
        return sorted(os.listdir(local_path(location)))
    except FileNotFoundError:
        return []


def remove(location: PathLike, options: StorageOptions = None) -> None:
    """Remove the object at ``location`` if there is one."""
    if is_url(location):
        fs, path = _writable(location, options)
        try:
            _retrying(location, "remove", lambda: fs.rm_file(path))
        except FileNotFoundError:
            pass
        return
    try:
        os.unlink(local_path(location))
    except FileNotFoundError:
        pass


def remove_tree(location: PathLike, options: StorageOptions = None) -> None:
    """Remove ``location`` and everything below it (nothing to do when it does not exist)."""
    if is_url(location):
        fs, path = _writable(location, options)
        try:
            _retrying(location, "remove", lambda: fs.rm(path, recursive=True))
        except FileNotFoundError:
            pass
        return
    try:
        shutil.rmtree(local_path(location))
    except FileNotFoundError:
        pass


def clear(location: PathLike, keep: Collection[str] = (), options: StorageOptions = None) -> None:
    """Remove everything directly below ``location`` (and what lies below that) except the
    names in ``keep``: how an overwrite empties a dataset whose marked attributes stay."""
    for name in list_names(location, options):
        if name in keep:
            continue
        child = join(location, name)
        if is_url(child) or os.path.isdir(local_path(child)) and not os.path.islink(local_path(child)):
            remove_tree(child, options)
        else:
            remove(child, options)


def remove_temporary_files(location: PathLike, options: StorageOptions = None) -> int:
    """Remove the ``.tmp-*`` files that killed writers left below the local ``location`` (object
    stores write an object in one request and leave none); returns how many. Only for a
    location whose writer lock is held: a running writer's temporary files look the same."""
    if is_url(location):
        return 0
    removed = 0
    for directory, _, files in walk(location, options):
        for name in files:
            if name.startswith(_TEMPORARY_PREFIX):
                remove(join(directory, name), options)
                removed += 1
    return removed


def make_directory(location: PathLike, options: StorageOptions = None) -> None:
    """Create ``location`` as a directory (object stores have none: nothing to do there)."""
    if not is_url(location):
        os.makedirs(local_path(location), exist_ok=True)


def walk(location: PathLike, options: StorageOptions = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(directory, subdirectories, files)`` below ``location``, top-down and sorted, as
    ``os.walk`` (directories as locations); pruning ``subdirectories`` in place skips them."""
    if is_url(location):
        fs, path = _filesystem(location, options)
        prefix = location[: len(location) - len(path)] if location.endswith(path) else location.split("://")[0] + "://"
        for directory, subdirectories, files in fs.walk(path):
            subdirectories.sort()
            yield prefix + directory, subdirectories, sorted(files)
        return
    for directory, subdirectories, files in os.walk(local_path(location)):
        subdirectories.sort()
        yield directory, subdirectories, sorted(files)


def total_size(location: PathLike, options: StorageOptions = None) -> int:
    """Bytes stored below ``location``."""
    if is_url(location):
        fs, path = _filesystem(location, options)
        return int(fs.du(path))
    return sum(os.path.getsize(os.path.join(directory, name)) for directory, _, files in walk(location)
               for name in files)


def request_threads(location: PathLike, threads: int | None) -> int:
    """Threads for reading or writing many blocks: ``threads`` if given; else one per CPU for
    a local path and :data:`REMOTE_REQUESTS` requests in flight for a URL (latency, not cores,
    is what limits them)."""
    if threads is None and is_url(location):
        return REMOTE_REQUESTS
    return default_threads(threads)
