"""CZI experimental chunked compression (libCZI compression mode 7).

A payload is a small varint header (compressed and decompressed chunk sizes,
codec, preprocessing) followed by independently compressed chunks of the
logical byte stream. Chunks are zstd frames or raw LZ4 blocks; with hi/lo
preprocessing each chunk's 16-bit words are stored as all low bytes, then all
high bytes of that chunk.

Chunks are (de)compressed concurrently on a shared thread pool. Each worker
hands whole ranges of chunks to GIL-free Cython kernels in ``_chunked`` that
call the zstd and LZ4 C functions bundled in the ``zstandard`` and ``lz4``
packages (see ``_chunk_libraries``) and write every chunk straight to its
place; where those functions cannot be found, the packages' Python APIs
(which release the GIL too) do the per-chunk work (the same zstd bytes; LZ4
blocks from lz4.block's stream mode instead of LZ4's one-shot call).
See ``docs/czi_chunked.md`` for the format notes.

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

import contextlib
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import lz4.block
import numpy as np
import zstandard
from numcodecs.abc import Codec

from . import _chunk_libraries, _chunked
from ._buffers import read_bytes, writable_bytes
from .errors import ChunkedFormatError, ConfigurationError

__all__ = ["ChunkedInfo", "CziChunked", "chunked_decode", "chunked_encode", "chunked_info"]

CODECS = ("zstd", "lz4")  # index = CompressionMethod value
MAX_CHUNK_SIZE = _chunked.max_varint(4)  # 536,870,911: a 4-byte size varint
MAX_CHUNK_SIZES_PAYLOAD = _chunked.max_varint(3)  # 4,194,303: a 3-byte length varint
PREPROCESSING_NONE = 0
PREPROCESSING_HILO = 1

# Most bytes one compressed byte can stand for. LZ4: 255 (match-length bytes).
# zstd: a 4-byte RLE block (3-byte header + 1 byte) yields up to 128 KiB.
_MAX_EXPANSION = {"zstd": 32768, "lz4": 255}
_LZ4_SLACK = 16  # tiny blocks: literal-only tails add a few bytes either way

_ZSTD_LEVELS = (-(1 << 17), zstandard.MAX_COMPRESSION_LEVEL)
_ZSTD_DEFAULT_LEVEL = 3  # zstd's own default (ZSTD_CLEVEL_DEFAULT)
_LZ4_MAX_ACCELERATION = 65537  # LZ4_ACCELERATION_MAX: LZ4 treats larger values as this

# Whether the kernels call zstd/LZ4 themselves (else: their Python APIs per chunk).
_NATIVE = _chunk_libraries.bind()


@contextlib.contextmanager
def _chunk_path(native):
    """Use the kernel-called C functions (``native``) or the Python APIs inside
    the block; for the tests, the fuzz target and the benchmark. Not thread-safe."""
    global _NATIVE
    saved, _NATIVE = _NATIVE, native
    try:
        yield
    finally:
        _NATIVE = saved

# Below this many decompressed bytes a thread hand-off costs more than it saves.
_PARALLEL_MIN_BYTES = 1 << 18

_NO_SPANS = np.full(10, -1, dtype=np.int64)  # payload offset, length per header id
_NO_BYTES = np.empty(0, dtype=np.uint8)

# Outputs at least this large are written with streaming stores: they would not
# stay in the caches anyway, and skipping the read of each destination line
# halves the memory traffic.
_STREAM_MIN_BYTES = 16 << 20

# On the Python-API path, chunks are handled in batches of about this many
# decompressed bytes: one kernel call per batch for hi/lo, staging and placing
# (per-chunk calls cost more than the byte shuffling), small enough to stay in
# a core's L2 cache.
_BATCH_BYTES = 1 << 18

_HEADER_NAMES = {
    _chunked.CHUNK_SIZES: "ChunkSizes",
    _chunked.COMPRESSION_METHOD: "CompressionMethod",
    _chunked.DECOMPRESSED_SIZES: "DecompressedSizes",
    _chunked.PREPROCESSING: "Preprocessing",
}


@dataclass(frozen=True, eq=False)
class ChunkedInfo:
    """What a chunked payload's header says (see :func:`~n5mscodecs.chunked_info`).

    Attributes
    ----------
    codec : str
        ``"zstd"`` or ``"lz4"``.
    hilo : bool
        Whether hi/lo byte packing was applied to each chunk.
    preprocessing : int or None
        Raw Preprocessing value, ``None`` when the header chunk is absent.
    chunk_count : int
        Number of compressed chunks.
    compressed_sizes : numpy.ndarray
        Per-chunk compressed sizes in bytes (read-only ``uint32``).
    decompressed_sizes : numpy.ndarray
        Per-chunk decompressed sizes in bytes (read-only ``uint32``), suffix
        form expanded.
    header_size : int
        Bytes before the first chunk.
    compressed_size : int
        Sum of the compressed chunk sizes.
    decompressed_size : int
        Sum of the decompressed chunk sizes.
    trailing_bytes : int
        Bytes after the last chunk (tolerated, ignored).
    """

    codec: str
    hilo: bool
    preprocessing: int | None
    chunk_count: int
    compressed_sizes: np.ndarray
    decompressed_sizes: np.ndarray
    header_size: int
    compressed_size: int
    decompressed_size: int
    trailing_bytes: int


@dataclass(frozen=True, eq=False)
class _Layout:
    info: ChunkedInfo
    compressed_offsets: np.ndarray  # int64, chunk_count + 1, absolute in the payload
    decompressed_offsets: np.ndarray  # int64, chunk_count + 1


# --- thread pool -------------------------------------------------------------

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_workers = 0
_thread_state = threading.local()  # per-thread zstd contexts (not thread-safe objects)


def _reset_pool_after_fork():
    global _pool, _pool_workers
    _pool, _pool_workers = None, 0


os.register_at_fork(after_in_child=_reset_pool_after_fork)


def _executor(workers):
    """Shared pool with at least ``workers`` threads.

    A bigger request replaces the pool without shutting the old one down: a
    concurrent call may still be submitting to it; it goes away with its last
    reference.
    """
    global _pool, _pool_workers
    with _pool_lock:
        if _pool is None or _pool_workers < workers:
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="n5mscodecs-chunked")
            _pool_workers = workers
        return _pool


def _available_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _thread_split(threads, chunk_count, total_bytes):
    """``(chunk workers, kernel threads)``: threads go to chunks first; with fewer
    chunks than threads, the hi/lo kernel of each chunk gets the rest."""
    if threads is None:
        if total_bytes < _PARALLEL_MIN_BYTES:
            return 1, 1
        threads = _available_cpus()
    workers = max(1, min(threads, chunk_count))
    return workers, max(1, threads // workers)


def _run_chunks(start_worker, chunk_count, workers):
    """Process all chunks on ``workers`` threads.

    Each worker calls ``start_worker()`` once for its ``process(first, stop)``
    callable (per-thread codec contexts, scratch and staging live in it), then
    pulls small batches of chunks from a shared counter, so a slow core does
    not hold up the rest. Every chunk goes to a fixed place, so the result
    does not depend on the scheduling.
    """
    if workers == 1:
        start_worker()(0, chunk_count)
        return
    batch = max(1, chunk_count // (workers * 64))
    starts = itertools.count(0, batch)  # next() is atomic under the GIL
    failed = threading.Event()  # one bad chunk stops the others early

    def drain():
        process = None
        for first in starts:
            if first >= chunk_count or failed.is_set():
                return
            try:
                if process is None:
                    process = start_worker()
                process(first, min(first + batch, chunk_count))
            except BaseException:
                failed.set()
                raise

    pool = _executor(workers - 1)
    futures = [pool.submit(drain) for _ in range(workers - 1)]
    try:
        drain()  # the calling thread is one of the workers, so a busy pool cannot stall us
    finally:
        # Helpers still queued behind other callers' work have nothing left to do.
        errors = [future.exception() for future in futures if not future.cancel()]
    for error in errors:
        if error is not None:
            raise error


# --- validation helpers --------------------------------------------------------


def _check_threads(threads):
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ConfigurationError(f"threads must be None or a positive int, got {threads!r}")


def _validate_options(codec, level, max_chunk_size, hilo):
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


def _input_bytes(data, hilo):
    """The logical stream of ``data`` as a 1-D uint8 array (memory order; no copy if contiguous)."""
    if hilo and isinstance(data, np.ndarray) and not data.dtype.hasobject and data.dtype.itemsize != 2:
        raise ConfigurationError(
            f"hilo packing needs 16-bit samples (itemsize 2), got dtype {data.dtype} "
            f"with itemsize {data.dtype.itemsize}"
        )
    return read_bytes(data, "data")


# --- header --------------------------------------------------------------------


def _header_error(status, position, chunk_id, size):
    name = _HEADER_NAMES.get(chunk_id, f"id {chunk_id}")
    if status == _chunked.STATUS_ID_TRUNCATED:
        return f"header: data ends at byte {size} before EndOfHeader (truncated header chunk id)"
    if status == _chunked.STATUS_LENGTH_TRUNCATED:
        return f"header: {name} payload length varint truncated at byte {position}"
    if status == _chunked.STATUS_PAYLOAD_PAST_END:
        return f"header: {name} payload starting at byte {position} runs past the end of the data ({size} bytes)"
    if status == _chunked.STATUS_UNKNOWN_ID:
        return f"header: unknown header chunk id {chunk_id} at byte {position}"
    if status == _chunked.STATUS_DUPLICATE_ID:
        return f"header: duplicate {name} header chunk at byte {position}"
    return f"header: malformed (status {status}) at byte {position}"


def _read_size_list(payload, spans, chunk_id):
    name = _HEADER_NAMES[chunk_id]
    start, length = int(spans[2 * chunk_id]), int(spans[2 * chunk_id + 1])
    if start < 0:
        raise ChunkedFormatError(f"header: required {name} header chunk (id {chunk_id}) is missing")
    status, position, values = _chunked.read_sizes(payload, start, start + length)
    if status != _chunked.STATUS_OK:
        raise ChunkedFormatError(f"{name}: size varint truncated at byte {position} (payload ends at {start + length})")
    return values


def _read_byte_field(payload, spans, chunk_id, allowed):
    name = _HEADER_NAMES[chunk_id]
    start, length = int(spans[2 * chunk_id]), int(spans[2 * chunk_id + 1])
    if start < 0:
        return None
    if length != 1:
        raise ChunkedFormatError(f"{name}: payload must be exactly 1 byte, got {length}")
    value = int(payload[start])
    if value not in allowed:
        raise ChunkedFormatError(f"{name}: unsupported value {value} (supported: {sorted(allowed)})")
    return value


def _header_problem(payload):
    """The error for a header :func:`_chunked.read_header` rejected: the same
    checks, one step at a time, each naming what is wrong."""
    size = payload.shape[0]
    spans = _NO_SPANS.copy()
    status, header_size, chunk_id = _chunked.scan_header(payload, spans)
    if status != _chunked.STATUS_OK:
        return ChunkedFormatError(_header_error(status, header_size, chunk_id, size))
    try:
        compressed_sizes = _read_size_list(payload, spans, _chunked.CHUNK_SIZES)
        decompressed_values = _read_size_list(payload, spans, _chunked.DECOMPRESSED_SIZES)
        _read_byte_field(payload, spans, _chunked.COMPRESSION_METHOD, {0, 1})
        _read_byte_field(payload, spans, _chunked.PREPROCESSING, {PREPROCESSING_NONE, PREPROCESSING_HILO})
    except ChunkedFormatError as error:
        return error
    chunk_count, listed = compressed_sizes.shape[0], decompressed_values.shape[0]
    if chunk_count == 0:
        return ChunkedFormatError("ChunkSizes: zero chunks")
    if listed == 0:
        return ChunkedFormatError("DecompressedSizes: no values")
    if listed > chunk_count:
        return ChunkedFormatError(f"DecompressedSizes: {listed} values for {chunk_count} chunks")
    end = header_size + int(compressed_sizes.sum(dtype=np.int64))
    if end > size:
        return ChunkedFormatError(
            f"ChunkSizes: chunks need {end - header_size} bytes after the {header_size}-byte header, "
            f"but only {size - header_size} are present"
        )
    return RuntimeError("chunked header rejected by read_header but not by the step-by-step checks")


def _parse(payload):
    header = _chunked.read_header(payload)
    if header is None:
        raise _header_problem(payload)
    header_size, codec, preprocessing, compressed_sizes, decompressed_sizes, compressed_offsets, decompressed_offsets = (
        header
    )
    for array in (compressed_sizes, decompressed_sizes, compressed_offsets, decompressed_offsets):
        array.flags.writeable = False
    end = int(compressed_offsets[-1])
    info = ChunkedInfo(
        codec=CODECS[codec],
        hilo=preprocessing == PREPROCESSING_HILO,
        preprocessing=None if preprocessing < 0 else preprocessing,
        chunk_count=compressed_sizes.shape[0],
        compressed_sizes=compressed_sizes,
        decompressed_sizes=decompressed_sizes,
        header_size=header_size,
        compressed_size=end - header_size,
        decompressed_size=int(decompressed_offsets[-1]),
        trailing_bytes=payload.shape[0] - end,
    )
    return _Layout(info, compressed_offsets, decompressed_offsets)


def chunked_info(data):
    """Parse and validate the header of a chunked payload.

    Parameters
    ----------
    data : bytes-like
        A chunked payload.

    Returns
    -------
    ChunkedInfo
        Codec, preprocessing, chunk count, per-chunk sizes and header size.

    Raises
    ------
    ChunkedFormatError
        If the header is malformed or the chunks run past the payload.

    Examples
    --------
    >>> info = chunked_info(chunked_encode(bytes(150), codec="lz4", max_chunk_size=100))
    >>> info.codec, info.chunk_count, info.decompressed_sizes.tolist()
    ('lz4', 2, [100, 50])
    """
    return _parse(read_bytes(data)).info


# --- decode --------------------------------------------------------------------


def _check_expansion(layout, payload):
    """Refuse sizes that the compressed bytes cannot produce, before allocating."""
    info = layout.info
    slack = _LZ4_SLACK if info.codec == "lz4" else 0
    i = _chunked.first_overexpanded(
        info.compressed_sizes, info.decompressed_sizes, _MAX_EXPANSION[info.codec], slack
    )
    if i >= 0:
        raise ChunkedFormatError(
            f"DecompressedSizes: chunk {i} claims {info.decompressed_sizes[i]} bytes from "
            f"{info.compressed_sizes[i]} compressed bytes, beyond {info.codec}'s maximum expansion"
        )
    if info.codec == "zstd":
        status, i, content_size = _chunked.check_zstd_frames(
            payload, layout.compressed_offsets, info.decompressed_sizes
        )
        if status == _chunked.STATUS_ZSTD_MAGIC:
            raise ChunkedFormatError(f"chunk {i}: not a zstd frame (bad magic number)")
        if status == _chunked.STATUS_ZSTD_CONTENT_SIZE:
            raise ChunkedFormatError(
                f"chunk {i}: zstd frame content size {content_size} does not match "
                f"DecompressedSizes {info.decompressed_sizes[i]}"
            )
        if status != _chunked.STATUS_OK:
            raise ChunkedFormatError(f"chunk {i}: corrupt zstd frame header")


def _chunk_worker():
    """The calling thread's contexts and scratch for the ``_chunked`` codec kernels."""
    worker = getattr(_thread_state, "chunk_worker", None)
    if worker is None:
        worker = _thread_state.chunk_worker = _chunked.ChunkWorker()
    return worker


def _chunk_error(status, i, detail, codec, layout):
    """The exception for a failed ``_chunked.decode_chunks`` / ``encode_chunks`` status."""
    if status == _chunked.STATUS_CHUNK_SIZE:
        declared = int(layout.decompressed_offsets[i + 1] - layout.decompressed_offsets[i])
        return ChunkedFormatError(f"chunk {i}: decompressed to {detail} bytes, DecompressedSizes says {declared}")
    if status == _chunked.STATUS_CORRUPT:
        reason = detail if codec == "zstd" else f"LZ4_decompress_safe returned {detail}"
        return ChunkedFormatError(f"chunk {i}: corrupt {codec} data ({reason})")
    if status == _chunked.STATUS_EXTRA_DATA:
        return ChunkedFormatError(f"chunk {i}: corrupt zstd data (bytes after the end of its frame)")
    if status == _chunked.STATUS_NO_MEMORY:
        return MemoryError(f"chunk {i}: no memory for the codec context or scratch")
    return RuntimeError(f"chunk {i}: unexpected kernel status {status}")


def _chunk_decompressor(codec):
    """A ``decompress(source, size)`` callable for the calling thread."""
    if codec == "lz4":
        return lambda source, size: lz4.block.decompress(source, uncompressed_size=size)
    decompressor = getattr(_thread_state, "zstd_decompressor", None)
    if decompressor is None:
        decompressor = _thread_state.zstd_decompressor = zstandard.ZstdDecompressor()
    decompress = decompressor.decompress
    # max_output_size only matters for frames without a content size; 0 would
    # mean "unlimited", so an empty chunk gets a limit of 1.
    return lambda source, size: decompress(source, max_output_size=max(size, 1), allow_extra_data=False)


def chunked_decode(data, *, out=None, threads=None, max_decompressed_size=None, allow_size_mismatch=False):
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
    _check_threads(threads)
    payload = read_bytes(data)
    layout = _parse(payload)
    info = layout.info
    total = info.decompressed_size
    if max_decompressed_size is not None and total > max_decompressed_size:
        raise ChunkedFormatError(
            f"DecompressedSizes: {total} bytes exceed max_decompressed_size={max_decompressed_size}"
        )
    if out is None:
        _check_expansion(layout, payload)
        target = _aligned_empty(total)
        result = target
    else:
        target = writable_bytes(out)
        result = out
        if target.shape[0] != total and not allow_size_mismatch:
            raise ChunkedFormatError(f"DecompressedSizes: payload decodes to {total} bytes, out holds {target.shape[0]}")
        _check_expansion(layout, payload)
        if target.shape[0] > total:
            target[total:] = 0
    limit = target.shape[0]
    codec, hilo = info.codec, info.hilo
    workers, kernel_threads = _thread_split(threads, info.chunk_count, total)
    # allow_size_mismatch with a short out: chunks starting at or past its end are
    # skipped (empty ones before it are still checked), one reaching past it is cut.
    needed = info.chunk_count
    if limit < total:
        starts, ends = layout.decompressed_offsets[:-1], layout.decompressed_offsets[1:]
        needed = max(int(np.searchsorted(starts, limit, "left")), int(np.searchsorted(ends, limit, "right")))
    if _NATIVE:

        def start_native_worker():
            worker = _chunk_worker()

            def decode_range(first, stop):
                status, i, detail = _chunked.decode_chunks(
                    worker, payload, target, layout.compressed_offsets, layout.decompressed_offsets,
                    first, stop, codec == "lz4", hilo, kernel_threads, limit >= _STREAM_MIN_BYTES,
                )  # fmt: skip
                if status != _chunked.STATUS_OK:
                    raise _chunk_error(status, i, detail, codec, layout)

            return decode_range

        _run_chunks(start_native_worker, needed, workers)
        return result

    # Python ints and memoryviews: the per-chunk bookkeeping runs under the GIL.
    compressed_offsets = layout.compressed_offsets.tolist()
    decompressed_offsets = layout.decompressed_offsets.tolist()
    source = memoryview(payload)
    batch_chunks = max(1, _BATCH_BYTES // max(1, int(info.decompressed_sizes[0])))

    def start_worker():
        decompress = _chunk_decompressor(codec)

        def decompress_chunk(i):
            size = decompressed_offsets[i + 1] - decompressed_offsets[i]
            try:
                return decompress(source[compressed_offsets[i] : compressed_offsets[i + 1]], size)
            except (zstandard.ZstdError, lz4.block.LZ4BlockError) as error:
                raise ChunkedFormatError(f"chunk {i}: corrupt {codec} data ({error})") from None

        def size_error(i, chunk):
            size = decompressed_offsets[i + 1] - decompressed_offsets[i]
            return ChunkedFormatError(f"chunk {i}: decompressed to {len(chunk)} bytes, DecompressedSizes says {size}")

        def decode_alone(i, destination, threads):
            """Chunk ``i`` into ``destination`` (its whole size), hi/lo on ``threads``."""
            chunk = decompress_chunk(i)
            if len(chunk) != decompressed_offsets[i + 1] - decompressed_offsets[i]:
                raise size_error(i, chunk)
            if hilo:
                _chunked.hilo_unpack(chunk, destination, threads)
            else:
                _chunked.copy_bytes(chunk, destination)

        def decode_range(first, stop):
            for batch_first in range(first, stop, batch_chunks):
                batch_stop = min(stop, batch_first + batch_chunks)
                cut = batch_stop if decompressed_offsets[batch_stop] <= limit else batch_stop - 1
                if cut == batch_stop == batch_first + 1:
                    # A large chunk: with fewer chunks than threads, its hi/lo gets the spare ones.
                    start, end = decompressed_offsets[batch_first], decompressed_offsets[cut]
                    decode_alone(batch_first, target[start:end], kernel_threads)
                    continue
                chunks = [decompress_chunk(i) for i in range(batch_first, cut)]
                wrong = _chunked.place_chunks(chunks, target, layout.decompressed_offsets, batch_first, hilo)
                if wrong >= 0:
                    raise size_error(batch_first + wrong, chunks[wrong])
                if cut < batch_stop:  # reaches past out: hi/lo is per chunk, so undo it before cutting
                    start, end = decompressed_offsets[cut], decompressed_offsets[cut + 1]
                    whole = np.empty(end - start, dtype=np.uint8)
                    decode_alone(cut, whole, 1)
                    target[start:limit] = whole[: limit - start]

        return decode_range

    _run_chunks(start_worker, needed, workers)
    return result


# --- encode --------------------------------------------------------------------


def _compressor(codec, level):
    """A per-thread compress callable for ``codec`` at ``level``."""
    if codec == "lz4":
        return lambda chunk: lz4.block.compress(chunk, mode="fast", acceleration=level, store_size=False)
    compressors = getattr(_thread_state, "zstd_compressors", None)
    if compressors is None:
        compressors = _thread_state.zstd_compressors = {}
    compressor = compressors.get(level)
    if compressor is None:
        compressor = compressors[level] = zstandard.ZstdCompressor(level=level, write_content_size=True)
    return compressor.compress


class _Staging:
    """Dense staging of compressed chunks in large blocks until the header is known.

    Holding each library result as its own ``bytes`` until the end makes the
    allocator fault in fresh 4 KiB pages for the whole output; copying each
    result into a few big numpy blocks (huge pages) right away and dropping
    it keeps the allocator reusing one warm buffer.
    """

    BLOCK_BYTES = 8 << 20

    def __init__(self, chunk_count, expected_bytes):
        # Small inputs get one small block instead of 8 MiB.
        self.block_bytes = min(self.BLOCK_BYTES, expected_bytes)
        self.blocks = []
        self.block_of = np.empty(chunk_count, dtype=np.int32)
        self.offset_of = np.empty(chunk_count, dtype=np.int64)
        self.size_of = np.empty(chunk_count, dtype=np.int64)
        self._lock = threading.Lock()

    def _new_block(self, size):
        block = _aligned_empty(max(self.block_bytes, size))
        with self._lock:
            self.blocks.append(block)
            return len(self.blocks) - 1, block

    def compressor(self, source, chunk_size, codec, level, hilo, threads):
        """A ``compress(first, stop)`` callable for one worker thread: the
        ``_chunked.encode_chunks`` kernel compresses chunks ``first:stop`` of
        ``source`` straight into this worker's staging blocks."""
        worker = _chunk_worker()
        lz4_codec = codec == "lz4"
        index, block, fill = -1, _NO_BYTES, 0

        def compress(first, stop):
            nonlocal index, block, fill
            while True:
                status, first, fill, detail = _chunked.encode_chunks(
                    worker, source, chunk_size, first, stop, lz4_codec, level, hilo, threads,
                    block, index, fill, self.block_of, self.offset_of, self.size_of,
                )  # fmt: skip
                if status == _chunked.STATUS_OK:
                    return
                if status != _chunked.STATUS_BLOCK_FULL:
                    raise RuntimeError(f"chunk {first}: {codec} compression failed ({detail})")
                index, block = self._new_block(detail)  # it fits: progress
                fill = 0

        return compress

    def writer(self):
        """A ``store(first, compressed)`` callable for one worker thread: stages
        the list ``compressed`` (``bytes`` from the Python APIs) as chunks
        ``first, first + 1, ...``."""
        index, block, fill = -1, _NO_BYTES, 0

        def store(first, compressed):
            nonlocal index, block, fill
            while True:
                stored, fill = _chunked.stage_chunks(compressed, block, fill, first, self.offset_of, self.size_of)
                self.block_of[first : first + stored] = index
                if stored == len(compressed):
                    return
                first, compressed = first + stored, compressed[stored:]
                index, block = self._new_block(len(compressed[0]))  # it fits: progress
                fill = 0

        return store


_HUGE_PAGE = 1 << 21


def _aligned_empty(size):
    """``np.empty(size, uint8)`` starting on a 2 MiB boundary when it is large.

    numpy asks for transparent huge pages on large arrays, but only the
    aligned interior gets them; an unaligned start leaves up to 4 MiB of 4 KiB
    pages whose first-touch faults cost more than the copy into them.
    """
    if size < 2 * _HUGE_PAGE:
        return np.empty(size, dtype=np.uint8)
    buffer = np.empty(size + _HUGE_PAGE, dtype=np.uint8)
    start = -buffer.ctypes.data % _HUGE_PAGE
    return buffer[start : start + size]


def _hilo_scratch(size):
    scratch = getattr(_thread_state, "hilo_scratch", None)
    if scratch is None or scratch.shape[0] < size:
        scratch = _thread_state.hilo_scratch = np.empty(size, dtype=np.uint8)
    return scratch


def chunked_encode(data, *, codec="zstd", level=None, max_chunk_size=65536, hilo=False, threads=None):
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
    codec, level = _validate_options(codec, level, max_chunk_size, hilo)
    _check_threads(threads)
    source = _input_bytes(data, hilo)
    total = source.shape[0]
    chunk_count = max(1, -(-total // max_chunk_size))
    if chunk_count > MAX_CHUNK_SIZES_PAYLOAD:
        raise ConfigurationError(
            f"{chunk_count} chunks do not fit into the ChunkSizes header chunk "
            f"(at most {MAX_CHUNK_SIZES_PAYLOAD}); use a larger max_chunk_size"
        )
    # Expected size: incompressible data plus generous per-chunk framing.
    staging = _Staging(chunk_count, total + total // 255 + 64 * chunk_count)
    workers, kernel_threads = _thread_split(threads, chunk_count, total)

    if _NATIVE:

        def start_worker():
            return staging.compressor(source, max_chunk_size, codec, level, hilo, kernel_threads)

    else:
        stream = memoryview(source)
        batch_chunks = max(1, _BATCH_BYTES // max_chunk_size)

        def start_worker():
            compress = _compressor(codec, level)
            store = staging.writer()  # one per worker: it fills its staging blocks densely
            scratch = memoryview(_hilo_scratch(min(total, batch_chunks * max_chunk_size))) if hilo else None

            def encode_range(first, stop):
                for batch_first in range(first, stop, batch_chunks):
                    begin = batch_first * max_chunk_size
                    end = min(total, min(stop, batch_first + batch_chunks) * max_chunk_size)
                    piece = stream[begin:end]
                    if hilo:
                        packed = scratch[: end - begin]
                        _chunked.hilo_pack(piece, packed, kernel_threads, max_chunk_size)
                        piece = packed
                    # range(0, 1, ...): empty input is one empty chunk
                    offsets = range(0, max(1, end - begin), max_chunk_size)
                    store(batch_first, [compress(piece[k : k + max_chunk_size]) for k in offsets])

            return encode_range

    _run_chunks(start_worker, chunk_count, workers)

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
    if status == _chunked.STATUS_CHUNK_TOO_LARGE:
        raise ConfigurationError(f"a compressed chunk exceeds {MAX_CHUNK_SIZE} bytes; use a smaller max_chunk_size")
    if status != _chunked.STATUS_OK:
        raise ConfigurationError(
            "the ChunkSizes header chunk would exceed its 4,194,303-byte limit; use a larger max_chunk_size"
        )
    # The staged chunks are copied into it (and its pages first touched) on the same workers.
    blocks = staging.blocks

    def start_copier():
        def copy_range(first, stop):
            _chunked.copy_staged(
                output, blocks, staging.block_of, staging.offset_of, compressed_sizes, positions, first, stop,
                len(output) >= _STREAM_MIN_BYTES,
            )  # fmt: skip

        return copy_range

    _run_chunks(start_copier, chunk_count, workers * kernel_threads)
    return output


# --- numcodecs -----------------------------------------------------------------


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

    def __init__(self, codec="zstd", level=None, max_chunk_size=65536, hilo=False):
        _validate_options(codec, level, max_chunk_size, hilo)
        self.codec = codec.lower()
        self.level = level
        self.max_chunk_size = max_chunk_size
        self.hilo = bool(hilo)

    def get_config(self):
        return {"id": self.codec_id, "codec": self.codec, "level": self.level,
                "max_chunk_size": self.max_chunk_size, "hilo": self.hilo}

    def _check_size(self, size, what):
        if size > self.max_buffer_size:
            raise ConfigurationError(
                f"czi_chunked: {what} of {size} bytes exceeds max_buffer_size ({self.max_buffer_size})"
            )

    def encode(self, buf):
        source = _input_bytes(buf, self.hilo)
        self._check_size(source.shape[0], "buffer to encode")
        # a memoryview: the 16-bit check for hilo was done on buf
        return chunked_encode(
            memoryview(source), codec=self.codec, level=self.level, max_chunk_size=self.max_chunk_size,
            hilo=self.hilo,
        )  # fmt: skip

    def decode(self, buf, out=None):
        payload = read_bytes(buf, "buf")
        self._check_size(payload.shape[0], "buffer to decode")
        if out is None:
            return chunked_decode(payload, max_decompressed_size=self.max_buffer_size)
        chunked_decode(payload, out=writable_bytes(out))
        return out

    def __repr__(self):
        return (
            f"{type(self).__name__}(codec={self.codec!r}, level={self.level!r}, "
            f"max_chunk_size={self.max_chunk_size}, hilo={self.hilo})"
        )
