"""Locations, and the rules every store follows: the policy, not the access.

A *location* is a local path or a URL (``s3://bucket/data.n5/labels``, ``gs://...``,
``http(s)://...``; ``file://`` URLs are local paths). This module holds what is decided on
location strings before or beside a store: display without credentials, container roots,
overlaps between a source and a target, a location's parent and name; the numbers the
stores follow: the time-outs, attempts and backoff of URL requests, the bounds of what is
read; and the names this package keeps in a store (attributes, temporary files, the writer
lock, the incomplete marker). Nothing here opens, writes, lists or removes anything, and nothing here knows a store:
the stores (:mod:`~n5mscodecs.n5.store` and its back ends) build on it.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import TYPE_CHECKING

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TypeAlias


ATTRIBUTES = "attributes.json"
#: The zarr v3 metadata beside it (``n5ms zarr-json``: an N5 container plain zarr opens too).
ZARR_JSON = "zarr.json"
TEMPORARY_PREFIX = ".tmp-"  # atomic local writes: a temporary file, renamed over the target
#: The writer lock a writer holds in the location it writes (see :mod:`~n5mscodecs.n5.writing`).
LOCK_NAME = ".n5ms-lock"
#: The attribute of a dataset being written, from before its first block until after its last.
INCOMPLETE_KEY = "n5mscodecs:incomplete"
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
#: dripping one byte per read time-out is cut there; see :mod:`n5mscodecs.n5.url_store`); retried
#: as a time-out. Writes have none (an upload of a large block may take longer).
REQUEST_DEADLINE = 60.0
#: Largest JSON document (``attributes.json``) read.
MAX_JSON_BYTES = 1 << 26

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


def confinement_root(location: PathLike, container: PathLike | None = None) -> str | None:
    """The root what is opened at ``location`` is confined to: its container root (``container``
    when given, see :func:`container_root`), else ``location`` itself (None for a URL, whose keys
    cannot be links)."""
    if is_url(location):
        return None
    return container_root(location, container) or os.path.abspath(local_path(location))


