"""Buffer conventions shared by every codec (numcodecs' rules).

A contiguous buffer is read and written in its memory order, so that an
F-ordered array encodes to the bytes ``ndarray.tobytes(order="A")`` gives and
an F-ordered ``out`` is filled in place; a non-contiguous array is read in C
order (numcodecs refuses it). Object buffers, non-buffers and read-only
outputs raise :class:`~n5mscodecs.errors.InputTypeError` (a TypeError, as
numcodecs' helpers expect, and a ValueError, as this package promises).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from .errors import ConfigurationError, InputTypeError

if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

    #: A bytes-like object: anything exporting the buffer protocol (bytes, bytearray,
    #: memoryview, numpy arrays, ...). ndarray is named too: numpy's stubs give it
    #: ``__buffer__`` only when checking for Python >= 3.12.
    BytesLike: TypeAlias = Buffer | np.ndarray[Any, Any]


HUGE_PAGE = 1 << 21

# Per-thread scratch (``thread_scratch``): fresh allocations of hundreds of KiB per block
# made glibc hand back and re-fault the heap's top on every call, which cost more than
# the work done in them.
_thread_scratch = threading.local()


def thread_scratch(name: str, size: int, dtype: Any, keep: int) -> np.ndarray:
    """``size`` values of ``dtype`` (contents undefined): a view of this thread's scratch
    ``name`` (``keep`` values, made on first use), valid until the thread's next call for
    ``name``; a new array when ``size`` exceeds ``keep``."""
    if size > keep:
        return np.empty(size, dtype)
    array = getattr(_thread_scratch, name, None)
    if array is None:
        array = np.empty(keep, dtype)
        setattr(_thread_scratch, name, array)
    return array[:size]


def aligned_empty(nbytes: int, *, huge_from: int = 2 * HUGE_PAGE) -> np.ndarray:
    """``np.empty(nbytes, uint8)`` starting on a 2 MiB boundary when it is at least ``huge_from`` bytes.

    numpy asks for transparent huge pages on arrays of 4 MiB and more, but only
    the aligned interior gets them; an unaligned start leaves up to 4 MiB of 4 KiB
    pages whose first-touch faults cost more than writing them (and serialize
    threads on the kernel's memory map lock). A 2 MiB block is placed in a 4 MiB
    allocation so that it is one huge page: one fault instead of 512.
    """
    if nbytes < huge_from:
        return np.empty(nbytes, dtype=np.uint8)
    buffer = np.empty(max(nbytes + HUGE_PAGE, 2 * HUGE_PAGE), dtype=np.uint8)
    start = -buffer.ctypes.data % HUGE_PAGE
    return buffer[start : start + nbytes]


def _as_ndarray(data, what):
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, str):  # str exports no buffer, but say so plainly
        raise InputTypeError(f"{what}: a bytes-like object is required, got str")
    try:
        return np.asarray(memoryview(data))
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise InputTypeError(f"{what}: a bytes-like object is required, got {type(data).__name__}") from exc


def read_bytes(data: BytesLike, what: str = "data") -> np.ndarray:
    """``data``'s bytes as a 1-d uint8 array: memory order, no copy when contiguous."""
    array = _as_ndarray(data, what)
    if array.dtype.hasobject:
        raise InputTypeError(f"{what}: cannot read an object array as bytes")
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        array = np.ascontiguousarray(array)
    return array.reshape(-1, order="A").view(np.uint8)


def writable_bytes(out: BytesLike, what: str = "out") -> np.ndarray:
    """A writable 1-d uint8 view of ``out`` in its memory order (C- or F-contiguous)."""
    array = _as_ndarray(out, what)
    if array.dtype.hasobject:
        raise InputTypeError(f"{what}: cannot decode bytes into an object array")
    if not array.flags.writeable:
        raise InputTypeError(f"{what}: must be writable, got a read-only {type(out).__name__}")
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        raise ConfigurationError(f"{what}: must be a contiguous buffer (C or F order)")
    return array.reshape(-1, order="A").view(np.uint8)


def memory_order(array: np.ndarray) -> Literal["C", "F"]:
    """numpy's ``order`` that walks ``array`` in its memory order ("F" only for F-contiguous)."""
    return "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"


def as_bytes(data: BytesLike, what: str = "data") -> bytes:
    """``data`` as ``bytes`` (itself when it is already; a copy of its memory otherwise), for
    libraries that want ``bytes``."""
    return data if isinstance(data, bytes) else read_bytes(data, what).tobytes()
