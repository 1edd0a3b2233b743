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

from typing import TYPE_CHECKING, overload

import numpy as np
import zstandard

from .._buffers import aligned_empty, read_bytes, writable_bytes
from .._status import Status
from ..errors import ChunkedFormatError, ConfigurationError
from . import _chunked
from .backends import STREAM_MIN_BYTES, DecodeJob, EncodeJob, NativeBackend, Staging, current_backend
from .header import (
    CODECS,
    HEADER_FORMS,
    MAX_CHUNK_SIZE,
    MAX_CHUNK_SIZES_PAYLOAD,
    PREPROCESSING_HILO,
    PREPROCESSING_NONE,
    ChunkedInfo,
    check_expansion,
    chunked_info,
    parse_header,
)
from .workers import run_chunks, thread_split

if TYPE_CHECKING:
    from typing_extensions import TypeIs

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


# --- imagecodecs' calling convention -------------------------------------------
# imagecodecs.chunked_decode(data, itemsize=, samples=, out=) and
# imagecodecs.chunked_encode(data, level, codec=, chunksize=, itemsize=, hilo=, out=):
# the same keywords with the same meaning and result types (docs/czi_chunked.md).

_SAMPLES = (1, 3, 4)  # gray, BGR, BGRA: the CZI pixel types' sample counts


def _is_size(out: object) -> TypeIs[int]:
    """``out`` given as a size (imagecodecs: an int ``out`` asks for ``bytes``)."""
    return isinstance(out, int) and not isinstance(out, bool | np.bool_)


def check_itemsize(itemsize: int) -> None:
    if isinstance(itemsize, bool) or not isinstance(itemsize, int | np.integer) or itemsize < 1:
        raise ConfigurationError(f"itemsize must be a positive int, got {itemsize!r}")


def codec_name(codec: object) -> str:
    """``codec`` as our name: a name in any case, or imagecodecs' ``CHUNKED.CODEC`` value
    (an int or IntEnum: 0 zstd, 1 lz4); None is zstd."""
    if codec is None:
        return "zstd"
    if isinstance(codec, int | np.integer) and not isinstance(codec, bool | np.bool_):
        if 0 <= codec < len(CODECS):
            return CODECS[int(codec)]
        raise ConfigurationError(f"codec must be one of {CODECS} or their CompressionMethod values 0, 1, got {codec!r}")
    if not isinstance(codec, str):
        raise ConfigurationError(f"codec must be one of {CODECS}, got {codec!r}")
    return codec  # validate_options checks the name


def output_view(out: object, target: np.ndarray, size: int) -> BytesLike:
    """imagecodecs' result for a buffer ``out`` that received ``size`` bytes: the bytearray
    itself when it holds exactly that, a 1-D uint8 view of an ndarray's first bytes, else a
    memoryview of them."""
    if isinstance(out, bytearray) and len(out) == size:
        return out
    if isinstance(out, np.ndarray):
        return target[:size]
    return target[:size].data


def bgr_to_rgb(pixels: np.ndarray, itemsize: int, samples: int) -> None:
    """Reverse BGR(A) samples to RGB(A) in place, as imagecodecs does for ``samples`` 3 and 4:
    samples 0 and 2 of every pixel are exchanged (each ``itemsize`` bytes wide), and an 8-bit
    alpha (Bgra32) becomes 255."""
    pixels = pixels[: pixels.shape[0] - pixels.shape[0] % (itemsize * samples)]  # a cut out: whole pixels
    if samples == 1 or pixels.shape[0] == 0:
        return
    sample = np.dtype(f"u{itemsize}") if itemsize in (1, 2, 4, 8) else np.dtype((np.void, itemsize))
    values = pixels.view(sample).reshape(-1, samples)
    values[:, [0, 2]] = values[:, [2, 0]]
    if samples == 4 and itemsize == 1:
        values[:, 3] = 255


# --- decode --------------------------------------------------------------------


@overload
def chunked_decode(
    data: BytesLike,
    *,
    out: np.ndarray,
    threads: int | None = None,
    max_decompressed_size: int | None = None,
    allow_size_mismatch: bool = False,
    itemsize: int | None = None,
    samples: int | None = None,
) -> np.ndarray: ...
@overload
def chunked_decode(
    data: BytesLike,
    *,
    out: BytesLike | int | None = None,
    threads: int | None = None,
    max_decompressed_size: int | None = None,
    allow_size_mismatch: bool = False,
    itemsize: int | None = None,
    samples: int | None = None,
) -> np.ndarray | BytesLike: ...
def chunked_decode(
    data: BytesLike,
    *,
    out: BytesLike | int | None = None,
    threads: int | None = None,
    max_decompressed_size: int | None = None,
    allow_size_mismatch: bool = False,
    itemsize: int | None = None,
    samples: int | None = None,
) -> np.ndarray | BytesLike:
    """Decode a chunked payload.

    Parameters
    ----------
    data : bytes-like
        A chunked payload; bytes after the last chunk are ignored.
    out : writable buffer or ndarray, or int, optional
        Receives the decoded bytes in its memory order (any C- or F-contiguous
        buffer that is not an object array). Its size in bytes must equal the
        decoded size unless ``allow_size_mismatch`` is set or imagecodecs'
        convention applies (then it may be larger; its first bytes are
        filled). An int (imagecodecs' expected size in bytes, not checked)
        asks for a ``bytes`` result.
    threads : int, optional
        Worker threads; default: the available CPUs (one for small payloads).
        The result does not depend on it.
    max_decompressed_size : int, optional
        Refuse payloads whose header announces more bytes than this.
    allow_size_mismatch : bool
        libCZI's compatibility path for a decoded size that differs from
        ``out``: a shorter stream leaves the rest of ``out`` zeroed, a longer
        one is truncated. Default ``False``: a mismatch is an error.
    itemsize, samples : int, optional
        imagecodecs' keywords: bytes per sample (default 1) and samples per
        pixel (1, 3 or 4; default 1). With ``samples`` 3 or 4 the decoded
        pixels are BGR(A) and are returned as RGB(A): samples 0 and 2 of
        every pixel are exchanged and an 8-bit alpha is set to 255, as
        imagecodecs does for CZI's Bgr24/Bgr48/Bgra32 pixel types. Giving
        either (or an int ``out``) selects imagecodecs' result types.

    Returns
    -------
    numpy.ndarray or out or bytes
        A new 1-D ``uint8`` array (bytes-like; ``bytes(result)`` copies it), or
        ``out`` itself. In imagecodecs' convention (``itemsize``, ``samples``
        or an int ``out`` given) the result types are imagecodecs': ``bytes``
        without a buffer ``out``; with one, a bytearray ``out`` holding
        exactly the decoded size itself, a 1-D ``uint8`` view of an ndarray
        ``out``'s decoded bytes, or a memoryview of them.

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
    >>> bgr = chunked_encode(bytes([1, 2, 3, 4, 5, 6]))  # two Bgr24 pixels
    >>> chunked_decode(bgr, itemsize=1, samples=3, out=6)  # as imagecodecs
    b'\\x03\\x02\\x01\\x06\\x05\\x04'
    """
    check_threads(threads)
    imagecodecs_style = itemsize is not None or samples is not None or _is_size(out)
    if imagecodecs_style:
        itemsize = 1 if itemsize is None else itemsize
        samples = 1 if samples is None else samples
        check_itemsize(itemsize)
        if isinstance(samples, bool) or samples not in _SAMPLES:
            raise ConfigurationError(f"samples must be one of {_SAMPLES}, got {samples!r}")
        given = None if _is_size(out) else out
        result = _decode(data, given, threads, max_decompressed_size, allow_size_mismatch, itemsize * samples)
        pixels = result if given is None else result[1]
        bgr_to_rgb(pixels, itemsize, samples)
        if given is None:
            return pixels.tobytes()
        return output_view(given, pixels, pixels.shape[0])
    return _decode(data, out, threads, max_decompressed_size, allow_size_mismatch)


def _decode(data, out, threads, max_decompressed_size, allow_size_mismatch, pixel_size=None):
    """The decode; ``pixel_size`` set (imagecodecs' convention): the decoded size must be a
    multiple of it, a larger ``out`` receives the decoded bytes at its start, and the result is
    ``(out, decoded bytes of out)`` (the new array without ``out``)."""
    payload = read_bytes(data)
    layout = parse_header(payload)
    info = layout.info
    total = info.decompressed_size
    if max_decompressed_size is not None and total > max_decompressed_size:
        raise ChunkedFormatError(
            f"DecompressedSizes: {total} bytes exceed max_decompressed_size={max_decompressed_size}"
        )
    if pixel_size is not None and total % pixel_size:
        raise ChunkedFormatError(
            f"DecompressedSizes: {total} bytes are not a whole number of pixels of {pixel_size} bytes"
            " (itemsize * samples)"
        )
    if out is None:
        check_expansion(layout, payload)
        target = aligned_empty(total)
        result = target
    else:
        target = writable_bytes(out)
        if pixel_size is not None and not allow_size_mismatch and target.shape[0] > total:
            target = target[:total]  # imagecodecs: a larger out receives the decoded bytes at its start
        result = out if pixel_size is None else (out, target[:total])
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
    if needed:  # none for a payload of zero chunks
        job = DecodeJob(payload, target, layout, limit, kernel_threads)
        run_chunks(current_backend().decoder(job), needed, workers)
    return result


# --- encode --------------------------------------------------------------------


@overload
def chunked_encode(
    data: BytesLike,
    level: int | None = None,
    *,
    codec: str | int | None = "zstd",
    max_chunk_size: int | None = 65536,
    hilo: bool = False,
    threads: int | None = None,
    chunksize: int | None = None,
    itemsize: int | None = None,
    out: int | None = None,
    header: str = "libczi",
) -> bytes: ...
@overload
def chunked_encode(
    data: BytesLike,
    level: int | None = None,
    *,
    codec: str | int | None = "zstd",
    max_chunk_size: int | None = 65536,
    hilo: bool = False,
    threads: int | None = None,
    chunksize: int | None = None,
    itemsize: int | None = None,
    out: BytesLike | int | None = None,
    header: str = "libczi",
) -> bytes | BytesLike: ...
def chunked_encode(
    data: BytesLike,
    level: int | None = None,
    *,
    codec: str | int | None = "zstd",
    max_chunk_size: int | None = 65536,
    hilo: bool = False,
    threads: int | None = None,
    chunksize: int | None = None,
    itemsize: int | None = None,
    out: BytesLike | int | None = None,
    header: str = "libczi",
) -> bytes | BytesLike:
    """Encode data as a CZI chunked (mode 7) payload.

    Parameters
    ----------
    data : ndarray or bytes-like
        The logical stream is its bytes in memory order (as numcodecs reads
        buffers: ``data.tobytes(order="A")``; C order if not contiguous).
    codec : {"zstd", "lz4"}
        Per-chunk codec: one zstd frame (content size recorded) or one raw
        LZ4 block per chunk. Names in any case; imagecodecs'
        ``CHUNKED.CODEC`` values (0 zstd, 1 lz4) and None (zstd) too.
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
    chunksize : int, optional
        imagecodecs' name of ``max_chunk_size`` (give one of the two).
    itemsize : int, optional
        imagecodecs' bytes per sample: when given, ``hilo`` applies only if
        it is above 1 (imagecodecs ignores ``hilo`` for 8-bit samples) and
        the data are taken as 16-bit words whatever their dtype.
    out : writable buffer, ndarray or int, optional
        imagecodecs' output: the payload is written to the start of a
        buffer, which must be large enough (result: the bytearray itself
        when it holds exactly the payload, a 1-D ``uint8`` view of an
        ndarray, else a memoryview); an int is the largest payload accepted
        (result: ``bytes``).
    header : {"libczi", "minimal"}
        ``"libczi"`` (default): the header libCZI's writer emits, byte for
        byte: the Preprocessing item always (``04 01 00`` without hi/lo).
        ``"minimal"``: Preprocessing only with hi/lo, as imagecodecs writes.
        Both decode the same everywhere; hi/lo payloads are identical.

    Returns
    -------
    bytes
        Header (ChunkSizes, DecompressedSizes, CompressionMethod if not zstd,
        Preprocessing, EndOfHeader) followed by the chunks (or a view of
        ``out`` holding them).

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
    if chunksize is not None:
        if max_chunk_size not in (None, 65536, chunksize):
            raise ConfigurationError(
                f"chunksize={chunksize!r} and max_chunk_size={max_chunk_size!r} disagree; give one of them"
            )
        max_chunk_size = chunksize
    elif max_chunk_size is None:
        max_chunk_size = 65536
    if header not in HEADER_FORMS:
        raise ConfigurationError(f"header must be one of {HEADER_FORMS}, got {header!r}")
    if itemsize is not None:
        check_itemsize(itemsize)
        hilo = bool(hilo) and itemsize > 1
    codec, level = validate_options(codec_name(codec), level, max_chunk_size, hilo)
    check_threads(threads)
    target = None
    if out is not None and not _is_size(out):
        target = writable_bytes(out)  # refused before any work
    # with itemsize the caller states the sample width (imagecodecs), whatever data's dtype
    source = input_bytes(data, hilo) if itemsize is None else read_bytes(data, "data")
    total = source.shape[0]
    chunk_count = max(1, -(-total // max_chunk_size))
    if chunk_count > MAX_CHUNK_SIZES_PAYLOAD:
        raise ConfigurationError(
            f"{chunk_count} chunks do not fit into the ChunkSizes header chunk "
            f"(at most {MAX_CHUNK_SIZES_PAYLOAD}); use a larger max_chunk_size"
        )
    workers, kernel_threads = thread_split(threads, chunk_count, total)
    # DecompressedSizes [C] (one chunk: its size), or [C, L] for a shorter last chunk.
    last = total - (chunk_count - 1) * max_chunk_size
    if chunk_count == 1:
        chunk_size, last_size = total, -1
    else:
        chunk_size, last_size = max_chunk_size, (-1 if last == max_chunk_size else last)
    if hilo:
        preprocessing = PREPROCESSING_HILO
    else:  # -1: no Preprocessing item
        preprocessing = PREPROCESSING_NONE if header == "libczi" else -1
    backend = current_backend()
    header_fields = (chunk_size, last_size, CODECS.index(codec), preprocessing)
    if workers == 1 and isinstance(backend, NativeBackend):
        # one thread: every chunk compressed straight to its place in the result
        output = _checked_payload(*backend.encode_payload(source, max_chunk_size, codec, level, hilo,
                                                          kernel_threads, chunk_count, header_fields))
    else:
        output = _encode_staged(backend, source, max_chunk_size, codec, level, hilo, workers, kernel_threads,
                                chunk_count, header_fields)
    if out is None or target is None:  # no out, or out given as a size (imagecodecs: bytes)
        if _is_size(out) and len(output) > out:
            raise ConfigurationError(f"out holds {out} bytes, the payload needs {len(output)}")
        return output
    if len(output) > target.shape[0]:
        raise ConfigurationError(f"out holds {target.shape[0]} bytes, the payload needs {len(output)}")
    target[: len(output)] = np.frombuffer(output, np.uint8)
    return output_view(out, target, len(output))


def _checked_payload(status: int, payload: bytes | None) -> bytes:
    """``payload``, or the ConfigurationError for a header that cannot describe its chunks."""
    if status == Status.ERR_CHUNK_TOO_LARGE:
        raise ConfigurationError(f"a compressed chunk exceeds {MAX_CHUNK_SIZE} bytes; use a smaller max_chunk_size")
    if status != Status.OK or payload is None:
        raise ConfigurationError(
            "the ChunkSizes header chunk would exceed its 4,194,303-byte limit; use a larger max_chunk_size"
        )
    return payload


def _encode_staged(backend, source, max_chunk_size, codec, level, hilo, workers, kernel_threads, chunk_count,
                   header_fields):
    """The payload from ``workers`` threads: chunks staged in large blocks as they come, then
    copied behind the header (whose size the compressed sizes decide) on the same workers."""
    # Expected size: incompressible data plus generous per-chunk framing.
    total = source.shape[0]
    staging = Staging(chunk_count, total + total // 255 + 64 * chunk_count)
    job = EncodeJob(source, max_chunk_size, codec, level, hilo, kernel_threads, staging)
    run_chunks(backend.encoder(job), chunk_count, workers)
    compressed_sizes = staging.size_of
    positions = np.empty(chunk_count, dtype=np.int64)
    output = _checked_payload(*_chunked.new_payload(compressed_sizes, *header_fields, positions))
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
