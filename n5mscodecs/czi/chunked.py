"""CZI experimental chunked compression (libCZI compression mode 7).

A payload is a small varint header (compressed and decompressed chunk sizes,
codec, preprocessing) followed by independently compressed chunks of the
logical byte stream. Chunks are zstd frames or raw LZ4 blocks; with hi/lo
preprocessing each chunk's 16-bit words are stored as all low bytes, then all
high bytes of that chunk.

Chunks are (de)compressed concurrently on a shared thread pool (``workers``)
by one of two back ends (``backends``: GIL-free kernels calling the zstd/LZ4
C functions, or the packages' Python APIs). The header lives in ``header``,
the numcodecs codec in ``codec``. See ``docs/czi_chunked.md`` for the format notes.

Examples
--------
>>> import numpy as np
>>> image = np.arange(100_000, dtype=np.uint16).reshape(250, 400)
>>> payload = chunked_encode(image, level=1, max_chunk_size=65536, hilo=True)
>>> info = chunked_info(payload)
>>> info.chunk_count, info.codec, info.hilo, info.decompressed_size
(4, 'zstd', True, 200000)
>>> restored = chunked_decode(payload).view(np.uint16).reshape(image.shape)
>>> bool(np.array_equal(restored, image))
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import zstandard

from .._buffers import read_bytes, writable_bytes
from .._status import Status
from ..errors import ChunkedFormatError, ConfigurationError
from . import _chunked
from .backends import STREAM_MIN_BYTES, DecodeJob, EncodeJob, Staging, aligned_empty, current_backend
from .header import (
    CODECS,
    MAX_CHUNK_SIZE,
    MAX_CHUNK_SIZES_PAYLOAD,
    PREPROCESSING_HILO,
    ChunkedInfo,
    check_expansion,
    chunked_info,
    parse_header,
)
from .workers import run_chunks, thread_split

if TYPE_CHECKING:
    from .._buffers import BytesLike

__all__ = ["ChunkedInfo", "chunked_decode", "chunked_encode", "chunked_info"]

_ZSTD_LEVELS = (-(1 << 17), zstandard.MAX_COMPRESSION_LEVEL)
_ZSTD_DEFAULT_LEVEL = 3  # zstd's own default (ZSTD_CLEVEL_DEFAULT)
_LZ4_MAX_ACCELERATION = 65537  # LZ4_ACCELERATION_MAX: LZ4 treats larger values as this


# --- validation helpers --------------------------------------------------------


def check_threads(threads: int | None) -> None:
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ConfigurationError(f"threads must be None or a positive int, got {threads!r}")


def validate_options(codec: str, level: int | None, max_chunk_size: int, hilo: bool) -> tuple[str, int]:
    """Check encoder options; return ``(codec, level)`` with defaults applied."""
    if not isinstance(codec, str) or codec.lower() not in CODECS:
        raise ConfigurationError(f"codec must be one of {CODECS}, got {codec!r}")
    codec = codec.lower()
    if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
        raise ConfigurationError(f"level must be None or an int, got {level!r}")
    if codec == "zstd":
        level = _ZSTD_DEFAULT_LEVEL if level is None else level
        if not _ZSTD_LEVELS[0] <= level <= _ZSTD_LEVELS[1]:
            raise ConfigurationError(f"zstd level must be in {_ZSTD_LEVELS}, got {level}")
    else:
        level = 1 if level is None else level
        if not 1 <= level <= _LZ4_MAX_ACCELERATION:
            raise ConfigurationError(
                f"lz4 level (acceleration) must be in [1, {_LZ4_MAX_ACCELERATION}], got {level}"
            )
    if (
        isinstance(max_chunk_size, bool)
        or not isinstance(max_chunk_size, int)
        or not 1 <= max_chunk_size <= MAX_CHUNK_SIZE
    ):
        raise ConfigurationError(f"max_chunk_size must be an int in [1, {MAX_CHUNK_SIZE}], got {max_chunk_size!r}")
    if not isinstance(hilo, bool | np.bool_):
        raise ConfigurationError(f"hilo must be a bool, got {hilo!r}")
    return codec, level


def input_bytes(data: BytesLike, hilo: bool) -> np.ndarray:
    """The logical stream of ``data`` as a 1-D uint8 array (memory order; no copy if contiguous)."""
    if hilo and isinstance(data, np.ndarray) and not data.dtype.hasobject and data.dtype.itemsize != 2:
        raise ConfigurationError(
            f"hilo packing needs 16-bit samples (itemsize 2), got dtype {data.dtype} "
            f"with itemsize {data.dtype.itemsize}"
        )
    return read_bytes(data, "data")


# --- decode --------------------------------------------------------------------


def chunked_decode(
    data: BytesLike,
    *,
    out: BytesLike | None = None,
    threads: int | None = None,
    max_decompressed_size: int | None = None,
    allow_size_mismatch: bool = False,
) -> np.ndarray | BytesLike:
    """Decode a chunked payload.

    Parameters
    ----------
    data : bytes-like
        A chunked payload; bytes after the last chunk are ignored.
    out : writable buffer or ndarray, optional
        Receives the decoded bytes in its memory order (any C- or F-contiguous
        buffer that is not an object array). Its size in bytes must equal the
        decoded size unless ``allow_size_mismatch`` is set.
    threads : int, optional
        Worker threads; default: the available CPUs (one for small payloads).
        The result does not depend on it.
    max_decompressed_size : int, optional
        Refuse payloads whose header announces more bytes than this.
    allow_size_mismatch : bool
        libCZI's compatibility path for a decoded size that differs from
        ``out``: a shorter stream leaves the rest of ``out`` zeroed, a longer
        one is truncated. Default ``False``: a mismatch is an error.

    Returns
    -------
    numpy.ndarray or out
        A new 1-D ``uint8`` array (bytes-like; ``bytes(result)`` copies it), or
        ``out`` itself.

    Raises
    ------
    ChunkedFormatError
        For any malformed payload, including chunks that are corrupt or do not
        decompress to their declared size. Nothing is allocated for sizes the
        compressed data cannot produce.
    ConfigurationError
        For unusable arguments (``out`` not writable, ``threads`` < 1, ...).

    Examples
    --------
    >>> payload = chunked_encode(b"hello world" * 10, codec="lz4", max_chunk_size=32)
    >>> bytes(chunked_decode(payload))[:11]
    b'hello world'
    >>> target = bytearray(110)
    >>> chunked_decode(payload, out=target) is target
    True
    """
    check_threads(threads)
    payload = read_bytes(data)
    layout = parse_header(payload)
    info = layout.info
    total = info.decompressed_size
    if max_decompressed_size is not None and total > max_decompressed_size:
        raise ChunkedFormatError(
            f"DecompressedSizes: {total} bytes exceed max_decompressed_size={max_decompressed_size}"
        )
    if out is None:
        check_expansion(layout, payload)
        target = aligned_empty(total)
        result = target
    else:
        target = writable_bytes(out)
        result = out
        if target.shape[0] != total and not allow_size_mismatch:
            raise ChunkedFormatError(
                f"DecompressedSizes: payload decodes to {total} bytes, out holds {target.shape[0]}"
            )
        check_expansion(layout, payload)
        if target.shape[0] > total:
            target[total:] = 0
    limit = target.shape[0]
    workers, kernel_threads = thread_split(threads, info.chunk_count, total)
    # allow_size_mismatch with a short out: chunks starting at or past its end are
    # skipped (empty ones before it are still checked), one reaching past it is cut.
    needed = info.chunk_count
    if limit < total:
        starts, ends = layout.decompressed_offsets[:-1], layout.decompressed_offsets[1:]
        needed = max(int(np.searchsorted(starts, limit, "left")), int(np.searchsorted(ends, limit, "right")))
    job = DecodeJob(payload, target, layout, limit, kernel_threads)
    run_chunks(current_backend().decoder(job), needed, workers)
    return result


# --- encode --------------------------------------------------------------------


def chunked_encode(
    data: BytesLike,
    *,
    codec: str = "zstd",
    level: int | None = None,
    max_chunk_size: int = 65536,
    hilo: bool = False,
    threads: int | None = None,
) -> bytes:
    """Encode data as a CZI chunked (mode 7) payload.

    Parameters
    ----------
    data : ndarray or bytes-like
        The logical stream is its bytes in memory order (as numcodecs reads
        buffers: ``data.tobytes(order="A")``; C order if not contiguous).
    codec : {"zstd", "lz4"}
        Per-chunk codec: one zstd frame (content size recorded) or one raw
        LZ4 block per chunk.
    level : int, optional
        zstd: compression level (default 3, zstd's default). lz4: the
        acceleration of LZ4's fast mode (default 1 = plain LZ4, as libCZI
        writes; larger is faster and compresses less).
    max_chunk_size : int
        Uncompressed bytes per chunk (the last chunk may be shorter).
    hilo : bool
        Store each chunk's 16-bit words as all low bytes, then all high
        bytes. ndarray input must have itemsize 2; for bytes-like input the
        caller asserts the bytes are 16-bit samples (Gray16, Bgr48).
    threads : int, optional
        Worker threads; default: the available CPUs (one for small inputs).
        The output is identical for any value.

    Returns
    -------
    bytes
        Header (ChunkSizes, DecompressedSizes, CompressionMethod if not zstd,
        Preprocessing if ``hilo``, EndOfHeader) followed by the chunks.

    Raises
    ------
    ConfigurationError
        For invalid options, hilo with a non-16-bit array, or more chunks
        than the header can describe.

    Examples
    --------
    >>> payload = chunked_encode(b"abcdefgh" * 4, codec="lz4", max_chunk_size=16)
    >>> payload[:2].hex()  # ChunkSizes id 1, payload length 2 (two 1-byte sizes)
    '0102'
    """
    codec, level = validate_options(codec, level, max_chunk_size, hilo)
    check_threads(threads)
    source = input_bytes(data, hilo)
    total = source.shape[0]
    chunk_count = max(1, -(-total // max_chunk_size))
    if chunk_count > MAX_CHUNK_SIZES_PAYLOAD:
        raise ConfigurationError(
            f"{chunk_count} chunks do not fit into the ChunkSizes header chunk "
            f"(at most {MAX_CHUNK_SIZES_PAYLOAD}); use a larger max_chunk_size"
        )
    # Expected size: incompressible data plus generous per-chunk framing.
    staging = Staging(chunk_count, total + total // 255 + 64 * chunk_count)
    workers, kernel_threads = thread_split(threads, chunk_count, total)

    job = EncodeJob(source, max_chunk_size, codec, level, hilo, kernel_threads, staging)
    run_chunks(current_backend().encoder(job), chunk_count, workers)

    compressed_sizes = staging.size_of
    # DecompressedSizes [C] (one chunk: its size), or [C, L] for a shorter last chunk.
    last = total - (chunk_count - 1) * max_chunk_size
    if chunk_count == 1:
        chunk_size, last_size = total, -1
    else:
        chunk_size, last_size = max_chunk_size, (-1 if last == max_chunk_size else last)
    positions = np.empty(chunk_count, dtype=np.int64)
    status, output = _chunked.new_payload(
        compressed_sizes, chunk_size, last_size, CODECS.index(codec), PREPROCESSING_HILO if hilo else -1, positions
    )
    if status == Status.ERR_CHUNK_TOO_LARGE:
        raise ConfigurationError(f"a compressed chunk exceeds {MAX_CHUNK_SIZE} bytes; use a smaller max_chunk_size")
    if status != Status.OK:
        raise ConfigurationError(
            "the ChunkSizes header chunk would exceed its 4,194,303-byte limit; use a larger max_chunk_size"
        )
    # The staged chunks are copied into it (and its pages first touched) on the same workers.
    blocks = staging.blocks

    def start_copier():
        def copy_range(first, stop):
            _chunked.copy_staged(
                output, blocks, staging.block_of, staging.offset_of, compressed_sizes, positions, first, stop,
                len(output) >= STREAM_MIN_BYTES,
            )  # fmt: skip

        return copy_range

    run_chunks(start_copier, chunk_count, workers * kernel_threads)
    return output
