"""Let czifile decode CZI mode-7 (chunked) subblocks with :func:`n5mscodecs.chunked_decode`.

czifile reads mode-7 subblocks only through ``imagecodecs.chunked_decode``, one
subblock on one thread, and has no hook for another decoder: it takes its decoders
from ``czifile.CziCompressionType.decoder(value)``, which refuses functions from
other packages. :func:`accelerate_czifile` replaces that one static method by a
wrapper that answers mode 7 with a function of this module (called the way czifile
calls imagecodecs', with imagecodecs' results, see docs/czi_chunked.md) and hands
every other compression type to czifile's own method. Nothing else in czifile
changes, and :meth:`CzifileAcceleration.restore` (or leaving a ``with`` block) puts
the original method back.

Before patching, the internals it relies on are checked (czifile's version, the
static method and its signature, that mode 7 resolves to imagecodecs'
``chunked_decode``). If czifile is missing or looks different, a
:class:`CzifileAccelerationWarning` is issued once per problem and czifile is left
as it is; czifile then decodes as before.
"""

from __future__ import annotations

import importlib
import inspect
import threading
import warnings
from typing import TYPE_CHECKING, Any

from .._buffers import aligned_empty, read_bytes
from .chunked import check_threads, chunked_decode
from .header import check_expansion, parse_header

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._buffers import BytesLike

__all__ = ["CzifileAcceleration", "CzifileAccelerationWarning", "accelerate_czifile", "restore_czifile"]

CHUNKED = 7  # CompressionMode::ChunkedExtensible
# czifile 2026.8.16 added mode 7, read as
# decoder(7)(data, itemsize=dtype.itemsize, samples=pixeltype.samples, out=size in bytes)
OLDEST_CZIFILE = (2026, 8, 16)


class CzifileAccelerationWarning(UserWarning):
    """czifile is missing, or differs from what :func:`accelerate_czifile` patches;
    czifile was left untouched."""


class _Patch:
    """What is replaced while the acceleration is on."""

    def __init__(self, cls: type, original: staticmethod, fallback: Callable, version: str) -> None:
        self.cls: Any = cls  # czifile's CziCompressionType, whose decoder is replaced (czifile has no types)
        self.original = original  # CziCompressionType.__dict__["decoder"], put back on restore
        self.fallback = fallback  # czifile's own mode-7 decoder (imagecodecs.chunked_decode)
        self.version = version
        resolve = original.__func__

        def decoder(value: int, /) -> Callable | None:
            return chunked_decode_for_czifile if value == CHUNKED else resolve(value)

        decoder.__doc__ = f"czifile's CziCompressionType.decoder with mode {CHUNKED} from n5mscodecs"
        self.replacement = staticmethod(decoder)


_lock = threading.RLock()
_handles: list[CzifileAcceleration] = []  # switched-on handles, oldest first; the newest sets threads
_patch: _Patch | None = None
_route: tuple[bool, int | None] = (False, None)  # (on, threads), read without the lock by decoders
_warned: set[str] = set()
_fallback: list[Callable] = []  # czifile's own mode-7 decoder, kept from the first patch on


def chunked_decode_for_czifile(data: BytesLike, /, *, itemsize: int = 1, samples: int = 1, out=None):
    """czifile's mode-7 decoder while accelerated: ``imagecodecs.chunked_decode``'s signature
    and results, decoded by :func:`n5mscodecs.chunked_decode` with the threads of the newest
    active :func:`accelerate_czifile`.

    For an int ``out`` (czifile's call: the expected size) the result is a read-only 1-D
    ``uint8`` array instead of imagecodecs' ``bytes``: the same bytes, read the same way by
    ``numpy.frombuffer``, decoded straight into memory with huge pages instead of being copied
    into a new ``bytes`` (which costs about as much as the decode). Once the acceleration is
    off, subblocks of files opened while it was on go to czifile's own decoder again."""
    on, threads = _route
    if not on and _fallback:
        return _fallback[0](data, itemsize=itemsize, samples=samples, out=out)
    if not isinstance(out, int) or isinstance(out, bool):  # None or a buffer: imagecodecs' results
        return chunked_decode(data, itemsize=itemsize, samples=samples, out=out, threads=threads)
    payload = read_bytes(data)
    layout = parse_header(payload)
    check_expansion(layout, payload)  # nothing allocated for sizes the payload cannot produce
    target = aligned_empty(layout.info.decompressed_size)
    pixels = chunked_decode(payload, itemsize=itemsize, samples=samples, out=target, threads=threads)
    pixels.flags.writeable = False  # as bytes: czifile caches the decoded subblocks
    return pixels


class CzifileAcceleration:
    """A switched-on :func:`accelerate_czifile`: a context manager whose exit, like
    :meth:`restore`, withdraws it. ``active`` is False when czifile could not be patched
    (missing or changed; a :class:`CzifileAccelerationWarning` said why)."""

    def __init__(self, threads: int | None) -> None:
        check_threads(threads)
        self.threads = threads
        self.czifile_version: str | None = None
        self._usable = False

    @property
    def active(self) -> bool:
        """True while this handle routes czifile's mode-7 decoding."""
        with _lock:
            return any(handle is self for handle in _handles)

    def _switch_on(self, stacklevel: int) -> CzifileAcceleration:
        global _patch
        with _lock:
            if self.active:
                return self
            if _patch is None:
                patch = _prepare(stacklevel + 1)
                if patch is None:
                    return self
                patch.cls.decoder = patch.replacement
                _patch = patch
                _fallback[:] = [patch.fallback]
            self.czifile_version = _patch.version
            self._usable = True
            _handles.append(self)
            _update_route()
        return self

    def restore(self) -> None:
        """Withdraw this handle; czifile gets its own decoder back when no handle is left
        (others, e.g. of enclosing ``with`` blocks or plain calls, keep it on with their
        threads). Restoring twice does nothing."""
        with _lock:
            _handles[:] = [handle for handle in _handles if handle is not self]
            if not _handles:
                _unpatch()
            _update_route()

    def __enter__(self) -> CzifileAcceleration:
        return self._switch_on(stacklevel=2)  # on again if it was restored before

    def __exit__(self, *exc_info: object) -> None:
        self.restore()

    def __repr__(self) -> str:
        state = "active" if self.active else "inactive"
        return f"<CzifileAcceleration threads={self.threads!r} {state} czifile={self.czifile_version!r}>"


def accelerate_czifile(threads: int | None = None) -> CzifileAcceleration:
    """Decode czifile's mode-7 (chunked) subblocks with :func:`n5mscodecs.chunked_decode`.

    Switches the acceleration on at once and returns a handle. As a context manager it
    is on inside the ``with`` block only; called on its own it stays on for the process
    until ``handle.restore()`` or :func:`restore_czifile`. Nested and concurrent uses
    stack: the newest active handle's ``threads`` apply, and czifile gets its own decoder
    back when the last handle is restored.

    Files opened (their directory parsed) while it is on use it; their mode-7 subblocks
    go back to czifile's own decoder once it is off. Results are imagecodecs' (BGR to RGB,
    alpha 255 for Bgra32), errors this package's (``ChunkedFormatError``, a ``ValueError``,
    where imagecodecs raises ``ChunkedError``, a ``RuntimeError``).

    Parameters
    ----------
    threads : int, optional
        Threads per subblock, default the available CPUs (one for small subblocks).
        czifile's own ``maxworkers`` (subblocks in parallel) still applies on top.

    Returns
    -------
    CzifileAcceleration
        A context manager; ``active`` is False (and czifile untouched) when czifile is
        not installed or its internals differ from what this patches, which a
        :class:`CzifileAccelerationWarning` reports once per problem.

    Examples
    --------
    >>> from n5mscodecs import accelerate_czifile
    >>> with accelerate_czifile(threads=2) as acceleration:  # doctest: +SKIP
    ...     image = czifile.imread("mode7.czi")
    """
    return CzifileAcceleration(threads)._switch_on(stacklevel=2)


def restore_czifile() -> bool:
    """Switch the acceleration off for every handle and give czifile its own decoder back.
    Returns whether it was on."""
    with _lock:
        was_on = bool(_handles)
        _handles.clear()
        _unpatch()
        _update_route()
    return was_on


# --- internals (call with _lock held) --------------------------------------------------------


def _update_route() -> None:
    global _route
    _route = (True, _handles[-1].threads) if _handles else (False, None)


def _unpatch() -> None:
    global _patch
    if _patch is None:
        return
    if _patch.cls.__dict__.get("decoder") is _patch.replacement:
        _patch.cls.decoder = _patch.original
    _patch = None


def _warn_once(message: str, stacklevel: int) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, CzifileAccelerationWarning, stacklevel=stacklevel + 1)


def _prepare(stacklevel: int) -> _Patch | None:
    """The patch for the installed czifile, or None (warned) where it cannot be applied."""
    try:
        module = importlib.import_module("czifile")
    except ImportError as error:  # czifile, or imagecodecs it imports
        _warn_once(f"accelerate_czifile: czifile cannot be imported ({error}); nothing was changed", stacklevel + 1)
        return None
    version = str(getattr(module, "__version__", "unknown"))
    problem = _check(module, version)
    if isinstance(problem, str):
        _warn_once(
            f"accelerate_czifile: czifile {version} is not what it patches ({problem}); czifile was left "
            "untouched and decodes mode 7 with imagecodecs",
            stacklevel + 1,
        )
        return None
    original, fallback = problem
    return _Patch(module.CziCompressionType, original, fallback, version)


def _check(module, version: str) -> str | tuple[staticmethod, Callable]:
    """What differs from the czifile this was written against, or (the static method, the
    mode-7 decoder it returns)."""
    try:
        numbers = tuple(int(part) for part in version.split(".")[:3])
    except ValueError:
        return f"version {version!r} is not YYYY.M.D"
    if numbers < OLDEST_CZIFILE:
        return "older than 2026.8.16, the first to read mode 7"
    cls = getattr(module, "CziCompressionType", None)
    if not isinstance(cls, type):
        return "no class CziCompressionType"
    chunked = getattr(cls, "CHUNKED", None)
    if chunked is None or int(chunked) != CHUNKED:
        return f"CziCompressionType.CHUNKED is not {CHUNKED}"
    original = cls.__dict__.get("decoder")
    if not isinstance(original, staticmethod):
        return "CziCompressionType.decoder is not czifile's static method (patched by something else?)"
    try:
        parameters = list(inspect.signature(original.__func__).parameters.values())
    except (TypeError, ValueError):
        return "CziCompressionType.decoder has no signature"
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(parameters) != 1 or parameters[0].kind not in positional:
        return "CziCompressionType.decoder does not take exactly one value"
    try:
        fallback = original.__func__(CHUNKED)
    except Exception as error:  # noqa: BLE001 (any failure means: leave czifile alone)
        return f"CziCompressionType.decoder({CHUNKED}) raised {error!r}"
    module_name = (getattr(fallback, "__module__", "") or "").split(".", 1)[0]
    if getattr(fallback, "__name__", None) != "chunked_decode" or module_name != "imagecodecs":
        return f"CziCompressionType.decoder({CHUNKED}) is {fallback!r}, not imagecodecs.chunked_decode"
    try:
        keywords = set(inspect.signature(fallback).parameters)
    except (TypeError, ValueError):
        keywords = {"itemsize", "samples", "out"}  # a compiled function without a signature
    if not {"itemsize", "samples", "out"} <= keywords:
        return f"imagecodecs.chunked_decode takes {sorted(keywords)}, not itemsize, samples, out"
    return original, fallback
