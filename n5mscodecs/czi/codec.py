"""``czi_chunked``: the numcodecs codec for CZI chunked (mode 7) payloads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from numcodecs.abc import Codec

from .._buffers import read_bytes, writable_bytes
from ..errors import ChunkedFormatError, ConfigurationError
from .chunked import chunked_decode, chunked_encode, chunked_info, input_bytes, validate_options

#: Decoding without ``out``: the header's DecompressedSizes may total at most
#: ``max(MIN_DECODE_BOUND, max_ratio x the payload's bytes)``. zstd chunks of this codec's
#: default ``max_chunk_size`` (64 KiB) compress zeros 3,119:1 (LZ4 255:1), so any payload written
#: with it fits; zeros in chunks of 1 MiB and more reach zstd's own limit (about 32,000:1) and
#: need ``out=`` (whose size is the expected size) or a larger ``max_ratio`` beyond 16 MiB.
DEFAULT_MAX_RATIO = 4096
MIN_DECODE_BOUND = 1 << 24

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
    max_ratio : float
        Decoding without ``out``: the payload may declare at most ``max(16 MiB, max_ratio x
        its size)`` decompressed bytes (default ``DEFAULT_MAX_RATIO``; a larger claim is a
        :class:`~n5mscodecs.ChunkedFormatError` naming DecompressedSizes, before anything is
        allocated). Written to the configuration only when not the default.

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
        self, codec: str = "zstd", level: int | None = None, max_chunk_size: int = 65536, hilo: bool = False,
        max_ratio: float = DEFAULT_MAX_RATIO,
    ) -> None:
        validate_options(codec, level, max_chunk_size, hilo)
        if isinstance(max_ratio, bool) or not isinstance(max_ratio, int | float) or not max_ratio >= 1:
            raise ConfigurationError(f"czi_chunked: max_ratio must be a number >= 1, got {max_ratio!r}")
        self.codec = codec.lower()
        self.level = level
        self.max_chunk_size = max_chunk_size
        self.hilo = bool(hilo)
        self._max_ratio = max_ratio

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"id": self.codec_id, "codec": self.codec, "level": self.level,
                                  "max_chunk_size": self.max_chunk_size, "hilo": self.hilo}
        if self._max_ratio != DEFAULT_MAX_RATIO:  # the default stays out: older configs stay equal
            config["max_ratio"] = self._max_ratio
        return config

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
            limit = min(self.max_buffer_size, max(MIN_DECODE_BOUND, int(self._max_ratio * payload.shape[0])))
            declared = chunked_info(payload).decompressed_size
            if declared > limit:
                raise ChunkedFormatError(
                    f"czi_chunked: DecompressedSizes total {declared} bytes, more than {limit}: max_ratio "
                    f"{self._max_ratio:g} x the payload's {payload.shape[0]} bytes (at least {MIN_DECODE_BOUND}, "
                    f"at most max_buffer_size); pass out= of the expected size, or a larger max_ratio")
            return chunked_decode(payload, max_decompressed_size=limit)
        chunked_decode(payload, out=writable_bytes(out))
        return out

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(codec={self.codec!r}, level={self.level!r}, "
            f"max_chunk_size={self.max_chunk_size}, hilo={self.hilo}"
            + ("" if self._max_ratio == DEFAULT_MAX_RATIO else f", max_ratio={self._max_ratio!r}") + ")"
        )
