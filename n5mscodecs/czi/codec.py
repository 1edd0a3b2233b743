"""``czi_chunked``: the numcodecs codec for CZI chunked (mode 7) payloads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from numcodecs.abc import Codec

from .._buffers import read_bytes, writable_bytes
from ..errors import ConfigurationError
from .chunked import chunked_decode, chunked_encode, input_bytes, validate_options

if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    from .._buffers import BytesLike


class CziChunked(Codec):
    """numcodecs codec for CZI chunked (mode 7) payloads.

    Instances hold configuration only, so one instance may be used from many
    threads at once.

    Parameters
    ----------
    codec : {"zstd", "lz4"}
    level : int, optional
    max_chunk_size : int
    hilo : bool
        See :func:`chunked_encode`. With ``hilo`` the arrays encoded must
        have a 2-byte dtype.

    Examples
    --------
    >>> import numcodecs, numpy as np
    >>> codec = numcodecs.get_codec({"id": "czi_chunked", "codec": "lz4", "hilo": True})
    >>> data = np.arange(5000, dtype=np.uint16)
    >>> restored = codec.decode(codec.encode(data), out=np.empty_like(data))
    >>> bool(np.array_equal(restored, data)), codec.get_config()["max_chunk_size"]
    (True, 65536)
    """

    codec_id = "czi_chunked"
    #: Largest buffer encoded or decoded, and largest decoded size, in bytes
    #: (numcodecs' compressors' bound; an attribute, not configuration).
    max_buffer_size = 0x7E000000

    def __init__(
        self, codec: str = "zstd", level: int | None = None, max_chunk_size: int = 65536, hilo: bool = False
    ) -> None:
        validate_options(codec, level, max_chunk_size, hilo)
        self.codec = codec.lower()
        self.level = level
        self.max_chunk_size = max_chunk_size
        self.hilo = bool(hilo)

    def get_config(self) -> dict[str, Any]:
        return {"id": self.codec_id, "codec": self.codec, "level": self.level,
                "max_chunk_size": self.max_chunk_size, "hilo": self.hilo}

    def _check_size(self, size, what):
        if size > self.max_buffer_size:
            raise ConfigurationError(
                f"czi_chunked: {what} of {size} bytes exceeds max_buffer_size ({self.max_buffer_size})"
            )

    def encode(self, buf: BytesLike) -> bytes:
        source = input_bytes(buf, self.hilo)
        self._check_size(source.shape[0], "buffer to encode")
        # a memoryview: the 16-bit check for hilo was done on buf
        return chunked_encode(
            source.data, codec=self.codec, level=self.level, max_chunk_size=self.max_chunk_size,
            hilo=self.hilo,
        )  # fmt: skip

    def decode(self, buf: BytesLike, out: BytesLike | None = None) -> np.ndarray | BytesLike:
        payload = read_bytes(buf, "buf")
        self._check_size(payload.shape[0], "buffer to decode")
        if out is None:
            return chunked_decode(payload, max_decompressed_size=self.max_buffer_size)
        chunked_decode(payload, out=writable_bytes(out))
        return out

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(codec={self.codec!r}, level={self.level!r}, "
            f"max_chunk_size={self.max_chunk_size}, hilo={self.hilo})"
        )
