"""The N5 block header (default and varlength modes)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._buffers import read_bytes
from ..errors import N5HeaderError

if TYPE_CHECKING:
    from .._buffers import BytesLike

MODE_DEFAULT = 0
MODE_VARLENGTH = 1
MODE_OBJECT = 2
_MODE_NAMES = {MODE_DEFAULT: "default", MODE_VARLENGTH: "varlength", MODE_OBJECT: "object"}


@dataclass(frozen=True)
class N5BlockHeader:
    """``mode`` (uint16), ``shape`` (uint32 each, N5 order) and, for varlength
    blocks, ``num_elements`` (uint32); all big-endian.

    >>> h = N5BlockHeader(MODE_VARLENGTH, (32, 32, 16), 1000)
    >>> h.to_bytes().hex(' ')
    '00 01 00 03 00 00 00 20 00 00 00 20 00 00 00 10 00 00 03 e8'
    >>> N5BlockHeader.from_bytes(h.to_bytes()) == h
    True
    """

    mode: int
    shape: tuple[int, ...]
    num_elements: int | None = None

    @property
    def nbytes(self) -> int:
        """Header size in bytes."""
        return 4 + 4 * len(self.shape) + (4 if self.mode == MODE_VARLENGTH else 0)

    @classmethod
    def from_bytes(cls, data: BytesLike) -> N5BlockHeader:
        """Parse the header at the start of ``data`` (bytes-like)."""
        buf = read_bytes(data, "block")
        size = buf.shape[0]
        if size < 4:
            raise N5HeaderError(f"N5 header: mode and ndim need 4 bytes, block has {size}")
        mode, ndim = struct.unpack_from(">HH", buf.data, 0)
        if mode not in _MODE_NAMES:
            raise N5HeaderError(f"N5 header: mode 0x{mode:04x} is not default, varlength or object")
        if ndim == 0:
            raise N5HeaderError("N5 header: ndim is 0")
        end = 4 + 4 * ndim + (4 if mode == MODE_VARLENGTH else 0)
        if size < end:
            raise N5HeaderError(
                f"N5 header: ndim {ndim} ({_MODE_NAMES[mode]} mode) needs {end} header bytes, "
                f"block has {size}"
            )
        shape = struct.unpack_from(f">{ndim}I", buf.data, 4)
        num_elements = None
        if mode == MODE_VARLENGTH:
            (num_elements,) = struct.unpack_from(">I", buf.data, 4 + 4 * ndim)
        return cls(mode, tuple(int(s) for s in shape), num_elements)

    def to_bytes(self) -> bytes:
        ndim = len(self.shape)
        if not 0 < ndim < 2**16:
            raise N5HeaderError(f"N5 header: ndim {ndim} not in 1..65535")
        if any(not 0 <= int(s) < 2**32 for s in self.shape):
            raise N5HeaderError(f"N5 header: dims {self.shape} do not fit uint32")
        parts = [struct.pack(">HH", self.mode, ndim), struct.pack(f">{ndim}I", *self.shape)]
        if self.mode == MODE_VARLENGTH:
            if self.num_elements is None or not 0 <= int(self.num_elements) < 2**32:
                raise N5HeaderError(f"N5 header: numElements {self.num_elements} does not fit uint32")
            parts.append(struct.pack(">I", self.num_elements))
        return b"".join(parts)
