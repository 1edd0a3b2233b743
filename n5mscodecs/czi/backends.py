"""The two ways chunks are (de)compressed, chosen in one place.

- ``native``: the ``_chunked`` kernels call the zstd and LZ4 C functions
  bundled in the ``zstandard`` and ``lz4`` packages (see ``libraries``) for
  whole ranges of chunks, without the GIL, writing each chunk in place.
- ``python``: the packages' Python APIs (which release the GIL too) do the
  per-chunk work, for builds of those packages that do not export their C
  functions (the same zstd bytes; LZ4 blocks from lz4.block's stream mode).

:func:`current_backend` is the one that :func:`~n5mscodecs.chunked_decode` and
:func:`~n5mscodecs.chunked_encode` use: ``native`` when the functions were
found at import, else ``python``. :func:`use_backend` switches it for the
calling context only (a ``contextvars.ContextVar``), so tests, the fuzz
target and the benchmark can compare both while other threads keep theirs.
The codec classes never see this choice.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import lz4.block
import numpy as np
import zstandard

from .._buffers import aligned_empty
from .._status import Status
from ..errors import ChunkedFormatError, ConfigurationError
from . import _chunked
from . import libraries as _libraries
from .header import ChunkLayout

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TypeAlias

    from .workers import StartWorker

    #: A chunk (de)compression back end (see the module docs).
    Backend: TypeAlias = "NativeBackend | PythonBackend"

# Outputs at least this large are written with streaming stores: they would not
# stay in the caches anyway, and skipping the read of each destination line
# halves the memory traffic.
STREAM_MIN_BYTES = 16 << 20

# On the Python-API path, chunks are handled in batches of about this many
# decompressed bytes: one kernel call per batch for hi/lo, staging and placing
# (per-chunk calls cost more than the byte shuffling), small enough to stay in
# a core's L2 cache.
_BATCH_BYTES = 1 << 18

_NO_BYTES = np.empty(0, dtype=np.uint8)
_thread_state = threading.local()  # per-thread codec contexts and scratch (not shareable)


@dataclass(frozen=True, eq=False)
class DecodeJob:
    """One :func:`~n5mscodecs.chunked_decode` call, for the workers."""

    payload: np.ndarray  # uint8, the whole payload
    target: np.ndarray  # uint8, where the decoded bytes go
    layout: ChunkLayout
    limit: int  # bytes of target to fill (a short ``out`` with allow_size_mismatch)
    kernel_threads: int  # threads for each chunk's hi/lo kernel


@dataclass(frozen=True, eq=False)
class EncodeJob:
    """One :func:`~n5mscodecs.chunked_encode` call, for the workers."""

    source: np.ndarray  # uint8, the logical stream
    chunk_size: int
    codec: str
    level: int
    hilo: bool
    kernel_threads: int
    staging: Staging


def chunk_worker() -> _chunked.ChunkWorker:
    """The calling thread's contexts and scratch for the ``_chunked`` codec kernels."""
    worker = getattr(_thread_state, "chunk_worker", None)
    if worker is None:
        worker = _thread_state.chunk_worker = _chunked.ChunkWorker()
    return worker


def _chunk_error(status, i, detail, codec, layout):
    """The exception for a failed ``_chunked.decode_chunks`` / ``encode_chunks`` status."""
    if status == Status.ERR_CHUNK_SIZE:
        declared = int(layout.decompressed_offsets[i + 1] - layout.decompressed_offsets[i])
        return ChunkedFormatError(f"chunk {i}: decompressed to {detail} bytes, DecompressedSizes says {declared}")
    if status == Status.ERR_CORRUPT:
        reason = detail if codec == "zstd" else f"LZ4_decompress_safe returned {detail}"
        return ChunkedFormatError(f"chunk {i}: corrupt {codec} data ({reason})")
    if status == Status.ERR_NO_MEMORY:
        return MemoryError(f"chunk {i}: no memory for the codec context or scratch")
    return RuntimeError(f"chunk {i}: unexpected kernel status {status}")


class Staging:
    """Dense staging of compressed chunks in large blocks until the header is known.

    Holding each library result as its own ``bytes`` until the end makes the
    allocator fault in fresh 4 KiB pages for the whole output; copying each
    result into a few big numpy blocks (huge pages) right away and dropping
    it keeps the allocator reusing one warm buffer.
    """

    BLOCK_BYTES = 8 << 20

    def __init__(self, chunk_count: int, expected_bytes: int) -> None:
        # Small inputs get one small block instead of 8 MiB.
        self.block_bytes = min(self.BLOCK_BYTES, expected_bytes)
        self.blocks: list[np.ndarray] = []
        self.block_of = np.empty(chunk_count, dtype=np.int32)
        self.offset_of = np.empty(chunk_count, dtype=np.int64)
        self.size_of = np.empty(chunk_count, dtype=np.int64)
        self._lock = threading.Lock()

    def new_block(self, size: int) -> tuple[int, np.ndarray]:
        block = aligned_empty(max(self.block_bytes, size))
        with self._lock:
            self.blocks.append(block)
            return len(self.blocks) - 1, block

def _native_compressor(staging, source, chunk_size, codec, level, hilo, threads):
    """A ``compress(first, stop)`` callable for one worker thread: the
    ``_chunked.encode_chunks`` kernel compresses chunks ``first:stop`` of
    ``source`` straight into this worker's staging blocks."""
    worker = chunk_worker()
    lz4_codec = codec == "lz4"
    index, block, fill = -1, _NO_BYTES, 0

    def compress(first, stop):
        nonlocal index, block, fill
        while True:
            status, first, fill, detail = _chunked.encode_chunks(
                worker, source, chunk_size, first, stop, lz4_codec, level, hilo, threads,
                block, index, fill, staging.block_of, staging.offset_of, staging.size_of,
            )  # fmt: skip
            if status == Status.OK:
                return
            if status != Status.ERR_BLOCK_FULL:
                raise RuntimeError(f"chunk {first}: {codec} compression failed ({detail})")
            index, block = staging.new_block(detail)  # it fits: progress
            fill = 0

    return compress

def _staging_writer(staging):
    """A ``store(first, compressed)`` callable for one worker thread: stages
    the list ``compressed`` (``bytes`` from the Python APIs) as chunks
    ``first, first + 1, ...``."""
    index, block, fill = -1, _NO_BYTES, 0

    def store(first, compressed):
        nonlocal index, block, fill
        while True:
            stored, fill = _chunked.stage_chunks(compressed, block, fill, first, staging.offset_of, staging.size_of)
            staging.block_of[first : first + stored] = index
            if stored == len(compressed):
                return
            first, compressed = first + stored, compressed[stored:]
            index, block = staging.new_block(len(compressed[0]))  # it fits: progress
            fill = 0

    return store



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


def _chunk_decompressor(codec):
    """A ``decompress(source, size)`` callable for the calling thread."""
    if codec == "lz4":
        return lambda source, size: lz4.block.decompress(source, uncompressed_size=size)
    decompressor = getattr(_thread_state, "zstd_decompressor", None)
    if decompressor is None:
        # windows up to a whole chunk (at most 2**29 bytes): the native path's one-shot decoding
        # ignores them; larger declared windows are lowered first (_window_within)
        decompressor = _thread_state.zstd_decompressor = zstandard.ZstdDecompressor(max_window_size=1 << 29)
    decompress = decompressor.decompress

    def decompress_chunk(source, size):
        if bytes(source[:4]) != _ZSTD_MAGIC_BYTES or len(source) < 5 or not source[4] & 0x20 or _declares_empty(source):
            # a skippable frame, a frame with a window descriptor or declaring 0 bytes: see _zstd_frames
            return _zstd_frames(decompressor, source, size)
        try:  # one frame (its content size was checked against the declared size): the common case
            # max_output_size only matters for frames without a content size; 0 would
            # mean "unlimited", so an empty chunk gets a limit of 1.
            chunk = decompress(source, max_output_size=max(size, 1), allow_extra_data=False)
        except zstandard.ZstdError:
            return _zstd_frames(decompressor, source, size)
        # zstandard < 0.23 returns the first frame (or a leading skippable frame's nothing)
        # of a chunk with several frames without complaint
        return chunk if len(chunk) == size else _zstd_frames(decompressor, source, size)

    return decompress_chunk


_SKIPPABLE_MAGIC = 0x184D2A50  # the low 4 bits are free
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_MAGIC_BYTES = _ZSTD_MAGIC.to_bytes(4, "little")


def _zstd_frame_end(data, pos):
    """Where the frame at ``pos`` ends, from its header and block headers alone (what
    ``ZSTD_findFrameCompressedSize`` does); skippable frames included."""
    magic = int.from_bytes(data[pos:pos + 4], "little") if len(data) - pos >= 4 else None
    if magic is not None and magic & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:
        if len(data) - pos < 8:
            raise zstandard.ZstdError("truncated skippable frame")
        end = pos + 8 + int.from_bytes(data[pos + 4:pos + 8], "little")
    elif magic == _ZSTD_MAGIC and len(data) - pos >= 5:
        descriptor = data[pos + 4]
        fcs_flag, single_segment = descriptor >> 6, (descriptor >> 5) & 1
        fcs_bytes = single_segment if fcs_flag == 0 else 1 << fcs_flag
        end = pos + 5 + (1 - single_segment) + (0, 1, 2, 4)[descriptor & 3] + fcs_bytes
        while True:
            if end + 3 > len(data):
                raise zstandard.ZstdError("truncated frame")
            block = int.from_bytes(data[end:end + 3], "little")
            end += 3 + (1 if (block >> 1) & 3 == 1 else block >> 3)  # an RLE block stores one byte
            if block & 1:
                break
        end += 4 if descriptor & 0x04 else 0  # content checksum
    else:
        raise zstandard.ZstdError("unknown frame descriptor")
    if end > len(data):
        raise zstandard.ZstdError("truncated frame")
    return end


def _declares_empty(frame):
    """Whether the zstd frame starting ``frame`` declares a content size of 0."""
    try:
        return zstandard.frame_content_size(frame) == 0
    except zstandard.ZstdError:
        return False  # named by the decoder


def _check_empty(decompressor, frame):
    """Decode a frame declaring 0 bytes. zstandard's ``decompress`` returns b"" for one without
    reading its blocks or checksum; libzstd, the native path and libCZI reject a frame that holds
    more than it declares or fails its checksum (issue 51, item 20). The streaming decoder reads
    it (bounded: libzstd stops at the first block beyond the declared size)."""
    stream = decompressor.decompressobj()
    if stream.decompress(frame) or not stream.eof:
        raise zstandard.ZstdError("a frame declaring 0 bytes holds more")


def _window_within(frame, room):
    """``frame`` with its window lowered to the least power of two (at least 1 KiB) holding
    ``room`` bytes, when it declares more. zstd's one-shot ``ZSTD_decompress`` (the native path,
    libCZI) ignores the window: every match lies in the output, at most ``room`` bytes; the
    streaming decoder under zstandard's ``decompress`` refuses a window above 128 MiB (or would
    allocate it), so a frame libCZI decodes was rejected here (issue 51, item 20). A window at
    least as large as the whole output decodes every frame the same."""
    descriptor = frame[4]
    if descriptor & 0x20:  # single segment: the window is the content size, no descriptor
        return frame
    window_byte = frame[5]
    exponent, mantissa = window_byte >> 3, window_byte & 7
    declared = (1 << (10 + exponent)) + ((1 << (10 + exponent)) >> 3) * mantissa
    needed = max(int(room) - 1, 1023).bit_length() - 10  # exponent of the least power of two >= room
    if (1 << (10 + needed)) >= declared:
        return frame
    return frame[:5] + bytes([needed << 3]) + frame[6:]


def _zstd_frames(decompressor, source, size):
    """Every frame of a chunk, as zstd's ``ZSTD_decompress`` reads them: concatenated
    frames, skippable frames skipped, anything else an error. No frame may make more
    than the ``size`` bytes still expected (so allocation stays bounded)."""
    data, parts, produced, pos = bytes(source), [], 0, 0
    while pos < len(data):
        end = _zstd_frame_end(data, pos)
        if int.from_bytes(data[pos:pos + 4], "little") == _ZSTD_MAGIC:
            frame, room = data[pos:end], size - produced
            if zstandard.frame_content_size(frame) > room:
                raise zstandard.ZstdError("the frames hold more than DecompressedSizes")
            if _declares_empty(frame):
                _check_empty(decompressor, frame)
                pos = end
                continue
            part = decompressor.decompress(_window_within(frame, room), max_output_size=max(room, 1))
            parts.append(part)
            produced += len(part)
        pos = end
    return b"".join(parts)


def _hilo_scratch(size):
    scratch = getattr(_thread_state, "hilo_scratch", None)
    if scratch is None or scratch.shape[0] < size:
        scratch = _thread_state.hilo_scratch = np.empty(size, dtype=np.uint8)
    return scratch



class NativeBackend:
    """Whole chunk ranges through the zstd/LZ4 C functions, in the kernels."""

    name = "native"

    def decoder(self, job: DecodeJob) -> StartWorker:
        payload, target, layout, limit = job.payload, job.target, job.layout, job.limit
        codec, hilo = layout.info.codec, layout.info.hilo

        def start_worker():
            worker = chunk_worker()

            def decode_range(first, stop):
                status, i, detail = _chunked.decode_chunks(
                    worker, payload, target, layout.compressed_offsets, layout.decompressed_offsets,
                    first, stop, codec == "lz4", hilo, job.kernel_threads, limit >= STREAM_MIN_BYTES,
                )  # fmt: skip
                if status != Status.OK:
                    raise _chunk_error(status, i, detail, codec, layout)

            return decode_range

        return start_worker

    def encoder(self, job: EncodeJob) -> StartWorker:
        return lambda: _native_compressor(job.staging, job.source, job.chunk_size, job.codec, job.level, job.hilo,
                                          job.kernel_threads)

    def encode_payload(self, source: np.ndarray, chunk_size: int, codec: str, level: int, hilo: bool,
                       kernel_threads: int, chunk_count: int, header_fields: tuple[int, int, int, int],
                       ) -> tuple[int, bytes | None]:
        """``(status, payload)`` of the whole payload on the calling thread, each chunk compressed
        straight to its place (``_chunked.encode_payload``; ``header_fields``: its decompressed
        size, last size, codec and preprocessing); a status other than OK is the header's."""
        sizes = np.empty(chunk_count, np.int64)
        status, payload, i, detail = _chunked.encode_payload(
            chunk_worker(), source, chunk_size, codec == "lz4", level, hilo, kernel_threads, sizes, *header_fields)
        if status == Status.ERR_NO_MEMORY:
            raise MemoryError(f"chunk {i}: no memory for the codec context or scratch")
        if status == Status.ERR_CORRUPT:
            raise RuntimeError(f"chunk {i}: {codec} compression failed ({detail})")
        return status, payload


class PythonBackend:
    """Chunk by chunk through the ``zstandard`` and ``lz4`` Python APIs."""

    name = "python"

    def decoder(self, job: DecodeJob) -> StartWorker:
        payload, target, layout, limit = job.payload, job.target, job.layout, job.limit
        info = layout.info
        codec, hilo, kernel_threads = info.codec, info.hilo, job.kernel_threads
        # Python ints and memoryviews: the per-chunk bookkeeping runs under the GIL.
        compressed_offsets = layout.compressed_offsets.tolist()
        decompressed_offsets = layout.decompressed_offsets.tolist()
        source = payload.data
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
                return ChunkedFormatError(
                    f"chunk {i}: decompressed to {len(chunk)} bytes, DecompressedSizes says {size}"
                )

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

        return start_worker

    def encoder(self, job: EncodeJob) -> StartWorker:
        source, max_chunk_size, codec, level, hilo = job.source, job.chunk_size, job.codec, job.level, job.hilo
        total, kernel_threads, staging = source.shape[0], job.kernel_threads, job.staging
        stream = source.data
        batch_chunks = max(1, _BATCH_BYTES // max_chunk_size)

        def start_worker():
            compress = _compressor(codec, level)
            store = _staging_writer(staging)  # one per worker: it fills its staging blocks densely
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

        return start_worker


NATIVE_AVAILABLE = _libraries.bind()
_BACKENDS: dict[str, Backend] = {"native": NativeBackend(), "python": PythonBackend()}
_DEFAULT = _BACKENDS["native" if NATIVE_AVAILABLE else "python"]
_selected: contextvars.ContextVar[Backend | None] = contextvars.ContextVar("n5mscodecs_czi_backend", default=None)


def current_backend() -> Backend:
    """The back end chunked_decode/chunked_encode use in this context."""
    return _selected.get() or _DEFAULT


@contextlib.contextmanager
def use_backend(name: str) -> Iterator[Backend]:
    """Use back end ``name`` ("native" or "python") inside the block, in this context only."""
    if name not in _BACKENDS:
        raise ConfigurationError(f"backend must be one of {sorted(_BACKENDS)}, got {name!r}")
    if name == "native" and not NATIVE_AVAILABLE:
        raise ConfigurationError("backend 'native': the zstd/LZ4 C functions were not found")
    token = _selected.set(_BACKENDS[name])
    try:
        yield _BACKENDS[name]
    finally:
        _selected.reset(token)
