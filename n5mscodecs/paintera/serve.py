"""Paintera label sources served live over HTTP as OME-Zarr multiscales (``n5ms serve``).

:func:`serve` presents each source (a Paintera label source, a label multiset pyramid or
dataset, or with ``plain`` datasets of integers, what :func:`~n5mscodecs.paintera.open_pyramid`
opens) read-only as an OME-Zarr multiscale labels image that neuroglancer (``zarr://``),
zarr-python 2 and 3, ome-zarr-py and napari read over HTTP. Nothing is written: every chunk is
computed from the source's block when asked for.

**What is served.** Under the root URL, a zarr group holding one multiscale group per source
(its name: the source's directory name, or ``names``):

=================================  ===========================================================
NGFF 0.4 (zarr v2, default)        NGFF 0.5 (zarr v3)
=================================  ===========================================================
``.zgroup``, ``NAME/.zattrs``      ``zarr.json``, ``NAME/zarr.json`` (``attributes.ome``)
``NAME/sK/.zarray``                ``NAME/sK/zarr.json``
``NAME/sK/Z/Y/X``                  ``NAME/sK/c/Z/Y/X``
=================================  ===========================================================

Level ``sK`` holds the uint64 segments of Paintera's level K: the argmax labels with the
source's fragment-segment-assignment applied (as ``n5ms argmax`` and ``n5ms ome-zarr`` write
them: :func:`~n5mscodecs.paintera.argmax.block_segments`; ``assignment=None`` for the stored
fragments), axes z, y, x, one chunk per N5 block, little-endian, gzip (level 1) or raw. The
multiscale metadata is ``paintera.ome_zarr.multiscales_metadata``'s: scale and
translation from Paintera's ``resolution``, ``offset`` and ``downsamplingFactors``. A missing
block is a 404, which zarr readers take for the fill value 0.

**Live.** Every chunk request reads the block's bytes, so a commit shows on the next request;
the assignment is read again when its files change (locally: their size, time and inode,
checked on every request; on object stores at most every :data:`REMOTE_REFRESH_SECONDS`).
Responses carry ``Cache-Control: no-cache`` and an ``ETag`` made of the block's digest and the
assignment's generation, so clients revalidate and get 304 while nothing changed. A source or
level that carries the incomplete marker (an interrupted ``n5ms convert``, ``commit`` or
assignment write, see :mod:`n5mscodecs.n5.writing`) is answered ``503`` naming it, never with
half-written data; while a writer holds the source's lock a request waits for it up to
:data:`SETTLE_SECONDS`.

**Bounded.** Encoded chunks are kept in an LRU cache of ``cache_bytes`` (keyed by the block's
digest and the assignment's generation: a stale entry is never served); at most ``workers``
chunks are computed at once; a level whose chunk would be larger than :data:`MAX_CHUNK_BYTES`
is refused at start.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING
from urllib.parse import quote

import numpy as np

from .. import n5
from .._extras import require
from .._threads import default_threads
from ..errors import ArgumentError, ConfigurationError, IncompleteError, N5msCodecsError
from ..n5.compression import Gzip
from ..n5.storage import ATTRIBUTES
from ..n5.writing import lock_held
from ._httpd import HttpError, ReadOnlyServer, Response
from .argmax import block_segments
from .assignment import assignment_location, resolve_assignment
from .conventions import FINISH_HINT, source_store
from .multiscale import interrupted, open_pyramid
from .ome_zarr import NGFF_VERSIONS, multiscales_metadata, ngff_unit, ome_attributes

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..n5.storage import PathLike, StorageOptions
    from ..n5.store import Store
    from .assignment import FragmentSegmentAssignment, Pairs
    from .multiscale import LabelPyramid

DEFAULT_CACHE_BYTES = 256 * 2**20
#: The largest chunk (uint64 voxels of a block) served; a level with larger blocks is refused.
MAX_CHUNK_BYTES = 256 * 2**20
#: On object stores, attributes and the assignment are read again at most this often.
REMOTE_REFRESH_SECONDS = 1.0
#: How long a request waits for a writer that holds the source's lock to finish.
SETTLE_SECONDS = 5.0
ENCODINGS = ("gzip", "raw")
#: Where ``neuroglancer_url`` points by default: the public neuroglancer client.
NEUROGLANCER_APP = "https://neuroglancer-demo.appspot.com/"
_GZIP = Gzip(level=1)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_JSON = "application/json"


class ChunkCache:
    """Encoded chunks, least recently used first out, at most ``capacity`` bytes; one
    computation per key at a time (concurrent requests for one chunk wait for it)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self.size = 0
        self._entries: OrderedDict[Any, bytes] = OrderedDict()
        self._pending: dict[Any, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, key: Any, compute: Callable[[], bytes]) -> bytes:
        while True:
            with self._lock:
                found = self._entries.get(key)
                if found is not None:
                    self._entries.move_to_end(key)
                    return found
                waiting = self._pending.get(key)
                if waiting is None:
                    self._pending[key] = done = threading.Event()
                    break
            waiting.wait()  # computed (then found above) or failed (then computed here)
        value = None
        try:
            value = compute()
            return value
        finally:
            with self._lock:
                del self._pending[key]
                if value is not None and len(value) <= self.capacity:
                    self._entries[key] = value
                    self.size += len(value)
                    while self.size > self.capacity:
                        self.size -= len(self._entries.popitem(last=False)[1])
            done.set()


class _Watched:
    """A value loaded from files and loaded again when they change: locally when ``state()`` (the
    files' sizes, times and inodes) changes, checked on every ``get``; on object stores (``state``
    None) at most every REMOTE_REFRESH_SECONDS. A load's IncompleteError is kept like a value."""

    def __init__(self, state: Callable[[], Any] | None, load: Callable[[], Any]) -> None:
        self.state, self.load = state, load
        self._seen: Any = object()
        self._value: Any = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            state = int(time.monotonic() / REMOTE_REFRESH_SECONDS) if self.state is None else self.state()
            if state != self._seen:
                try:
                    self._value, self._error = self.load(), None
                except IncompleteError as exc:
                    self._value, self._error = None, exc
                self._seen = state
            if self._error is not None:
                raise self._error
            return self._value


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


def _file_state(store: Store, key: str) -> Callable[[], Any] | None:
    """The ``state`` of one file of ``store`` for :class:`_Watched` (None for an object store)."""
    root = store.local_file()
    if root is None:
        return None
    path = os.path.join(root, key)
    return lambda: _stat(path)


def _tree_state(store: Store) -> Callable[[], Any] | None:
    """The ``state`` of every file below the (small) dataset ``store``: its attributes and blocks."""
    root = store.local_file()
    if root is None:
        return None

    def state():
        found = []
        for directory, subdirectories, files in os.walk(root):
            subdirectories.sort()
            found += [(directory, name, _stat(os.path.join(directory, name))) for name in sorted(files)]
        return found
    return state


class _Level:
    """A level's dataset and its local directory (None on object stores)."""

    def __init__(self, dataset: n5.LabelMultisetDataset | n5.ArrayDataset) -> None:
        self.dataset, self.directory = dataset, dataset.store.local_file()

    def modified(self, position: tuple[int, ...]) -> float | None:
        """The block file's modification time (local stores), for ``Last-Modified``."""
        if self.directory is None:
            return None
        found = _stat(os.path.join(self.directory, *map(str, position)))
        return None if found is None else found[0] / 1e9


class ServedSource:
    """One source as served: its multiscale metadata and its chunks, read live."""

    def __init__(self, name: str, store: Store, assignment: Any, additional: Pairs | None, plain: bool) -> None:
        self.name, self.store = name, store
        self._assignment, self._additional, self._plain = assignment, additional, plain
        self._attributes = _Watched(_file_state(store, ATTRIBUTES), self._check_source)
        self._levels: dict[int, _Watched] = {}
        self._levels_lock = threading.Lock()
        self.pyramid: LabelPyramid | None = None
        try:
            self.open()
        except IncompleteError:
            pass  # served, answered 503 until it is finished
        watch = assignment is True or (isinstance(assignment, str) and assignment == "auto")
        if watch:
            self._lookup = _Watched(_tree_state(source_store(assignment_location(store))), self._read_assignment)
        else:
            fixed = self._read_assignment()
            self._lookup = _Watched(lambda: None, lambda: fixed)

    def _check_source(self) -> None:
        attributes = self.store.get_attributes()
        if interrupted(attributes):
            raise IncompleteError(f"{self.store.display()}: an interrupted n5ms convert target, INCOMPLETE: "
                                  f"{FINISH_HINT}")

    def _read_assignment(self) -> tuple[FragmentSegmentAssignment | None, str]:
        """The lookup and its generation (a digest of its pairs; ``"fragments"`` without one)."""
        lookup = resolve_assignment(self.store, self._assignment, self._additional)
        if lookup is None:
            return None, "fragments"
        digest = hashlib.blake2b(lookup.fragments.tobytes(), digest_size=8)
        digest.update(lookup.segments.tobytes())
        return lookup, digest.hexdigest()

    def open(self) -> LabelPyramid:
        """The source's pyramid as it is now (opened again: its levels may have changed)."""
        pyramid = open_pyramid(self.store, fill_label=0, assignment=None, plain=self._plain)
        if pyramid.ndim > 3:
            raise ConfigurationError(f"{self.store.display()}: {pyramid.ndim} axes; NGFF labels here have 1 to 3")
        for level, store in enumerate(pyramid.stores):
            chunks = n5.open_dataset(store).chunks
            if int(np.prod(chunks, dtype=object)) * 8 > MAX_CHUNK_BYTES:
                raise ConfigurationError(f"{store.display()}: blockSize {list(chunks)}: a chunk of level {level} "
                                         f"would be over {MAX_CHUNK_BYTES >> 20} MiB of uint64")
        if self.pyramid is None or self.pyramid.datasets != pyramid.datasets:   # other levels: watched anew
            with self._levels_lock:
                self._levels.clear()
        self.pyramid = pyramid
        return pyramid

    def _current(self) -> LabelPyramid:
        self._attributes.get()
        return self.pyramid if self.pyramid is not None else self.open()

    def level(self, level: int) -> _Level:
        """Level ``level``'s dataset as its attributes are now (IncompleteError while marked)."""
        pyramid = self._current()
        if not 0 <= level < len(pyramid.stores):
            raise HttpError(404, f"{self.name}: no level s{level} (levels s0..s{len(pyramid.stores) - 1})")
        with self._levels_lock:
            watched = self._levels.get(level)
            if watched is None:
                store = pyramid.stores[level]
                watched = self._levels[level] = _Watched(_file_state(store, ATTRIBUTES),
                                                         lambda: _Level(n5.open_dataset(store, fill_label=0)))
        return watched.get()

    def lookup(self) -> tuple[FragmentSegmentAssignment | None, str]:
        return self._lookup.get()

    def writer_active(self, level: int | None = None) -> bool:
        """Whether a writer holds the source's lock (or the level dataset's) now."""
        stores = [self.store]
        if level is not None and self.pyramid is not None and level < len(self.pyramid.stores):
            stores.append(self.pyramid.stores[level])
        return any(lock_held(store) for store in stores)


class SourceServer:
    """Serves sources over HTTP until :meth:`shutdown` (a context manager); made by :func:`serve`.

    Attributes
    ----------
    url : str
        The root URL (a zarr group holding one multiscale per source), ending ``/``.
    sources : dict
        Name to ``ServedSource`` (each source's metadata and chunks), in the order given.
    version : str
        The NGFF version served.
    viewer_url : str or None
        The local neuroglancer viewer's link (``viewer=True``).
    """

    def __init__(self, sources: dict[str, ServedSource], bind: str, port: int, version: str, encoding: str,
                 cache_bytes: int, workers: int, log: Callable[[str], None] | None) -> None:
        self.sources, self.version, self.encoding = sources, version, encoding
        self.cache = ChunkCache(cache_bytes)
        self._work = threading.BoundedSemaphore(workers)
        self._server = ReadOnlyServer((bind, port), self.respond, log)
        host = socket.gethostname() if bind in ("", "0.0.0.0", "::") else bind
        host = f"[{host}]" if ":" in host else host
        self.url = f"http://{host}:{self._server.server_address[1]}/"
        self.viewer: Any = None
        self.viewer_url: str | None = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._server.serve_forever, name="n5ms-serve", daemon=True)
        self._thread.start()

    # -- links

    def source_url(self, name: str) -> str:
        """The URL of source ``name``'s multiscale group."""
        return f"{self.url}{name}/"

    def neuroglancer_state(self) -> dict[str, Any]:
        """A neuroglancer state showing every source as a segmentation layer (``zarr://``)."""
        return {"layers": [{"type": "segmentation", "source": f"zarr://{self.source_url(name)}", "name": name}
                           for name in self.sources]}

    def neuroglancer_url(self, app: str = NEUROGLANCER_APP) -> str:
        """A link opening :meth:`neuroglancer_state` in the neuroglancer client at ``app``."""
        text = json.dumps(self.neuroglancer_state(), separators=(",", ":"))
        return f"{app}#!{quote(text, safe='')}"

    def open_viewer(self) -> str:
        """Start the neuroglancer client that the ``neuroglancer`` package ships (its own server, on
        this server's bind address) showing every source; returns its link (also ``viewer_url``)."""
        neuroglancer = require("neuroglancer", "view", "the neuroglancer viewer (--viewer)")
        bind = self._server.server_address[0]
        neuroglancer.set_server_bind_address(bind_address=bind, bind_port=0)
        viewer = neuroglancer.Viewer()
        viewer.set_state(neuroglancer.ViewerState(self.neuroglancer_state()))
        self.viewer, self.viewer_url = viewer, viewer.get_viewer_url()
        return self.viewer_url

    # -- lifetime

    @property
    def requests(self) -> int:
        """Requests answered so far."""
        return self._server.requests

    @property
    def errors(self) -> int:
        """Requests answered with a 5xx status so far."""
        return self._server.errors

    def wait(self) -> None:
        """Block until :meth:`shutdown` (for a command that serves until Ctrl-C)."""
        while not self._stopped.wait(0.5):
            pass

    def shutdown(self) -> None:
        """Stop serving and close the socket (requests in flight finish)."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> SourceServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    # -- answers

    def respond(self, key: tuple[str, ...]) -> Response:
        """The answer for a request path's parts (see the module notes); HttpError otherwise."""
        if not key:
            return self._document({"sources": {n: self.source_url(n) for n in self.sources},
                                   "ngff": self.version, "neuroglancer": self.neuroglancer_url()})
        v2 = self.version == "0.4"
        if len(key) == 1:
            if key[0] == (".zgroup" if v2 else "zarr.json"):
                return self._document({"zarr_format": 2} if v2 else
                                      {"zarr_format": 3, "node_type": "group", "attributes": {}})
            if v2 and key[0] == ".zattrs":
                return self._document({})
        source = self.sources.get(key[0])
        if source is None:
            raise HttpError(404, f"no such key: {'/'.join(key)} (sources: {', '.join(self.sources)})")
        try:
            return self._source_key(source, key[1:], v2)
        except IncompleteError as exc:
            raise HttpError(503, str(exc), {"Retry-After": "1"}) from None
        except HttpError:
            raise
        except N5msCodecsError as exc:  # unreadable attributes or blocks: the message names them
            raise HttpError(500, str(exc)) from None
        except OSError as exc:
            raise HttpError(500, f"{source.store.display()}: {exc}") from None

    def _source_key(self, source: ServedSource, key: tuple[str, ...], v2: bool) -> Response:
        if len(key) == 1 and key[0] in ((".zgroup", ".zattrs") if v2 else ("zarr.json",)):
            pyramid = self._settled(source, None, source.open)
            first = self._settled(source, 0, lambda: source.level(0)).dataset
            multiscales = multiscales_metadata(pyramid, source.name, self.version, ngff_unit(first.attributes))
            attributes = ome_attributes(self.version, multiscales, {})
            if not v2:
                return self._document({"zarr_format": 3, "node_type": "group", "attributes": attributes})
            return self._document({"zarr_format": 2} if key[0] == ".zgroup" else attributes)
        match = re.fullmatch(r"s(\d{1,6})", key[0]) if key else None
        if match is None:
            raise HttpError(404, f"no such key: {source.name}/{'/'.join(key)}")
        level = int(match[1])
        entry = self._settled(source, level, lambda: source.level(level))
        dataset = entry.dataset
        rest = key[1:]
        if len(rest) == 1 and rest[0] in ((".zarray", ".zattrs") if v2 else ("zarr.json",)):
            return self._document(self._array_metadata(dataset, v2) if rest[0] != ".zattrs" else {})
        if not v2:
            if not rest or rest[0] != "c":
                raise HttpError(404, f"no such key: {source.name}/{'/'.join(key)}")
            rest = rest[1:]
        if len(rest) != dataset.ndim or not all(part.isdigit() and len(part) < 20 for part in rest):
            raise HttpError(404, f"no such key: {source.name}/{'/'.join(key)} (chunk keys: {dataset.ndim} integers)")
        position = tuple(int(part) for part in reversed(rest))   # zarr's (z, y, x) is N5's (x, y, z) reversed
        if any(p >= n for p, n in zip(position, dataset.grid_shape)):
            raise HttpError(404, f"{source.name}/s{level}: chunk {'/'.join(rest)} is outside the grid "
                                 f"{list(dataset.grid_shape[::-1])} (z, y, x)")
        return self._chunk(source, level, entry, position)

    def _settled(self, source: ServedSource, level: int | None, read: Callable[[], Any]) -> Any:
        """``read()``; while it finds the source incomplete and a writer holds its lock, again (up
        to SETTLE_SECONDS): a merge or commit in progress is waited for, an interrupted one is not."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            try:
                return read()
            except IncompleteError:
                if time.monotonic() > deadline or not source.writer_active(level):
                    raise
            time.sleep(0.02)

    def _chunk(self, source: ServedSource, level: int, entry: _Level, position: tuple[int, ...]) -> Response:
        lookup, generation = self._settled(source, level, source.lookup)
        dataset = entry.dataset
        data = dataset.read_block_bytes(position)
        if data is None:
            raise HttpError(404, f"{dataset.block_name(position)}: no block (reads as 0)")
        digest = hashlib.blake2b(data, digest_size=12).hexdigest()
        etag = f'"{digest}-{generation}-{self.encoding}"'
        body = self.cache.get((source.name, level, position, etag),
                              lambda: self._encode(dataset, position, data, lookup))
        return Response(body, etag=etag, last_modified=entry.modified(position))

    def _encode(self, dataset: Any, position: tuple[int, ...], data: bytes,
                lookup: FragmentSegmentAssignment | None) -> bytes:
        """The chunk of block ``position``: its segments, transposed to (z, y, x), padded to the
        whole chunk (zarr's edge chunks are whole), little-endian, encoded."""
        with self._work:
            labels = block_segments(dataset, position, lookup=lookup, data=data)
            if labels is None:  # (only a block not given and missing reads as None)
                raise HttpError(404, f"{dataset.block_name(position)}: no block")
            if labels.shape == tuple(dataset.chunks):   # a whole block: nothing to pad; .T is C order, no copy
                chunk = np.ascontiguousarray(labels.T, "<u8")
            else:
                chunk = np.zeros(dataset.chunks[::-1], "<u8")
                chunk[tuple(slice(0, n) for n in labels.shape[::-1])] = labels.T
            return chunk.tobytes() if self.encoding == "raw" else _GZIP.encode(chunk)

    def _array_metadata(self, dataset: Any, v2: bool) -> dict[str, Any]:
        shape, chunks = list(dataset.shape[::-1]), list(dataset.chunks[::-1])
        if v2:
            return {"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": "<u8", "fill_value": 0,
                    "order": "C", "filters": None, "dimension_separator": "/",
                    "compressor": {"id": "gzip", "level": 1} if self.encoding == "gzip" else None}
        codecs: list[dict[str, Any]] = [{"name": "bytes", "configuration": {"endian": "little"}}]
        if self.encoding == "gzip":
            codecs.append({"name": "gzip", "configuration": {"level": 1}})
        return {"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint64",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": 0, "codecs": codecs, "dimension_names": list("zyx"[3 - len(shape):]),
                "attributes": {}}

    @staticmethod
    def _document(document: dict[str, Any]) -> Response:
        body = json.dumps(document, indent=1).encode()
        return Response(body, _JSON, etag=f'"{hashlib.blake2b(body, digest_size=12).hexdigest()}"')


def _names(stores: Sequence[Store], names: Sequence[str] | None) -> list[str]:
    """Each source's name in the URL: given, or its directory's (characters outside
    ``[A-Za-z0-9._-]`` as ``_``), made unique with ``-2``, ``-3``..."""
    if names is not None:
        names = list(names)
        if len(names) != len(stores):
            raise ArgumentError("names", f"{len(names)} names for {len(stores)} sources")
        for name in names:
            if not isinstance(name, str) or not _NAME.match(name) or name == "zarr.json":
                raise ArgumentError("names", f"{name!r}: a name is letters, digits, '.', '_' and '-', not "
                                             "starting with '.', '_' or '-' (and not zarr.json)")
        if len(set(names)) != len(names):
            raise ArgumentError("names", f"names must differ, got {names}")
        return names
    found: list[str] = []
    for store in stores:
        base = re.sub(r"[^A-Za-z0-9._-]", "_", store.name.removesuffix(".n5")).lstrip("._-") or "source"
        name, n = base, 1
        while name in found or name == "zarr.json":
            n += 1
            name = f"{base}-{n}"
        found.append(name)
    return found


def serve(
    sources: PathLike | Store | Sequence[PathLike | Store],
    *,
    port: int = 0,
    bind: str = "127.0.0.1",
    ngff: str = "0.4",
    encoding: str = "gzip",
    names: Sequence[str] | None = None,
    assignment: Any = "auto",
    additional_assignment: Pairs | None = None,
    plain: bool = True,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    workers: int | None = None,
    viewer: bool = False,
    storage_options: StorageOptions = None,
    log: Callable[[str], None] | None = None,
) -> SourceServer:
    """Serve label sources read-only over HTTP as OME-Zarr multiscales, live (see the module notes).

    Parameters
    ----------
    sources : path, ~n5mscodecs.n5.store.Store or sequence
        One or a list of: Paintera label sources, label multiset pyramids or datasets, plain
        integer datasets or multiscale groups of them (``plain``); local paths or URLs.
    port : int
        The TCP port (0: a free one, see ``url``).
    bind : str
        The address to listen on: ``127.0.0.1`` (default) serves this machine only; ``0.0.0.0``
        every network the machine is on (the sources are readable by anyone who reaches it).
    ngff : {"0.4", "0.5"}
        0.4 (default): zarr v2 arrays, which every zarr and NGFF reader takes; 0.5: zarr v3.
    encoding : {"gzip", "raw"}
        The chunks' compression: gzip level 1 (default; labels shrink 20-100x) or none.
    names : sequence, optional
        The sources' names in the URLs (default: their directory names, made unique).
    assignment, additional_assignment
        The fragment-segment-assignment applied, as for :func:`~n5mscodecs.paintera.open_pyramid`:
        ``"auto"`` (default) each source's own, read again when it changes; None the stored
        fragments; or a fixed lookup. ``additional_assignment`` pairs are set over it.
    plain : bool
        Also serve plain integer datasets and multiscale groups (default True).
    cache_bytes : int
        The chunk cache's size in bytes (default 256 MiB; 0: no cache).
    workers : int, optional
        Chunks computed at once (default: two per core); with ``cache_bytes`` this bounds memory.
    viewer : bool
        Also start the neuroglancer client the ``neuroglancer`` package ships (the ``view``
        extra), showing every source: its link is ``viewer_url``.
    storage_options : dict, optional
        fsspec options for URL sources.
    log : callable, optional
        Called with one line per answer with a 5xx status (the block or source it names).

    Returns
    -------
    SourceServer
        Already serving (in a thread of this process), until ``shutdown()`` or the end of its
        ``with`` block.

    Examples
    --------
    >>> import tempfile, urllib.request, numpy as np
    >>> from n5mscodecs import paintera
    >>> source = tempfile.mkdtemp() + "/p.n5/labels"
    >>> _ = paintera.convert(np.arange(64, dtype=np.uint64).reshape(4, 4, 4), source, block_size=4)
    >>> with serve(source) as server:
    ...     print(server.url.startswith("http://127.0.0.1:"), list(server.sources))
    ...     array = json.load(urllib.request.urlopen(server.url + "labels/s0/.zarray"))
    True ['labels']
    >>> array["shape"], array["dtype"], array["compressor"]
    ([4, 4, 4], '<u8', {'id': 'gzip', 'level': 1})
    """
    require("dask.array", "dask", "served sources")   # (the pyramid's levels are dask arrays)
    if ngff not in NGFF_VERSIONS:
        raise ArgumentError("version", f"one of {', '.join(NGFF_VERSIONS)}, got {ngff!r}")
    if encoding not in ENCODINGS:
        raise ArgumentError("encoding", f"one of {', '.join(ENCODINGS)}, got {encoding!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ArgumentError("port", f"an integer in 0..65535, got {port!r}")
    if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, int) or cache_bytes < 0:
        raise ArgumentError("cache_bytes", f"a number of bytes >= 0, got {cache_bytes!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ArgumentError("workers", f"a positive integer, got {workers!r}")
    many = sources if isinstance(sources, list | tuple) else [sources]
    if not many:
        raise ArgumentError("sources", "nothing to serve")
    stores = [source_store(source, storage_options).read_only_view("served read-only") for source in many]
    served = {name: ServedSource(name, store, assignment, additional_assignment, plain)
              for name, store in zip(_names(stores, names), stores)}
    try:
        server = SourceServer(served, bind, port, ngff, encoding, cache_bytes, workers or 2 * default_threads(), log)
    except OSError as exc:
        raise ConfigurationError(f"cannot listen on {bind}:{port}: {exc.strerror or exc}") from None
    if viewer:
        try:
            server.open_viewer()
        except BaseException:
            server.shutdown()
            raise
    return server


__all__ = ["DEFAULT_CACHE_BYTES", "ChunkCache", "ServedSource", "SourceServer", "serve"]
