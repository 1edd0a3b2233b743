"""The chunked payload header: varint ChunkSizes, DecompressedSizes, CompressionMethod,
Preprocessing and EndOfHeader items, parsed in one kernel call (``_chunked.read_header``)
and, for a rejected one, step by step to name what is wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._buffers import read_bytes
from .._status import Status
from ..errors import ChunkedFormatError
from . import _chunked

if TYPE_CHECKING:
    from .._buffers import BytesLike

CODECS = ("zstd", "lz4")  # index = CompressionMethod value
MAX_CHUNK_SIZE = _chunked.max_varint(4)  # 536,870,911: a 4-byte size varint
MAX_CHUNK_SIZES_PAYLOAD = _chunked.max_varint(3)  # 4,194,303: a 3-byte length varint
PREPROCESSING_NONE = 0
PREPROCESSING_HILO = 1
# "libczi": the Preprocessing item always (libCZI's writer); "minimal": only with hi/lo (imagecodecs)
HEADER_FORMS = ("libczi", "minimal")

# Most bytes one compressed byte can stand for. LZ4: 255 (match-length bytes).
# zstd: a 4-byte RLE block (3-byte header + 1 byte) yields up to 128 KiB.
_MAX_EXPANSION = {"zstd": 32768, "lz4": 255}
_LZ4_SLACK = 16  # tiny blocks: literal-only tails add a few bytes either way


NO_SPANS = np.full(10, -1, dtype=np.int64)  # payload offset, length per header id

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
    header_form : str
        ``"libczi"`` when the header has the Preprocessing item (what libCZI's
        writer always emits; also any hi/lo payload), ``"minimal"`` when it has
        none (imagecodecs without hi/lo); see ``chunked_encode(header=...)``.
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

    @property
    def header_form(self) -> str:
        return "minimal" if self.preprocessing is None else "libczi"


@dataclass(frozen=True, eq=False)
class ChunkLayout:
    """A parsed header and the chunks' absolute offsets."""

    info: ChunkedInfo
    compressed_offsets: np.ndarray  # int64, chunk_count + 1, absolute in the payload
    decompressed_offsets: np.ndarray  # int64, chunk_count + 1


def _header_error(status, position, chunk_id, size):
    name = _HEADER_NAMES.get(chunk_id, f"id {chunk_id}")
    if status == Status.ERR_ID_TRUNCATED:
        return f"header: data ends at byte {size} before EndOfHeader (truncated header chunk id)"
    if status == Status.ERR_LENGTH_TRUNCATED:
        return f"header: {name} payload length varint truncated at byte {position}"
    if status == Status.ERR_PAYLOAD_PAST_END:
        return f"header: {name} payload starting at byte {position} runs past the end of the data ({size} bytes)"
    if status == Status.ERR_UNKNOWN_ID:
        return f"header: unknown header chunk id {chunk_id} at byte {position}"
    return f"header: malformed (status {status}) at byte {position}"


def _read_size_list(payload, spans, chunk_id):
    name = _HEADER_NAMES[chunk_id]
    start, length = int(spans[2 * chunk_id]), int(spans[2 * chunk_id + 1])
    if start < 0:
        raise ChunkedFormatError(f"header: required {name} header chunk (id {chunk_id}) is missing")
    status, position, values = _chunked.read_sizes(payload, start, start + length)
    if status != Status.OK:
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


def _walk_header(payload: np.ndarray) -> ChunkLayout | Exception:
    """A header :func:`_chunked.read_header` rejected, walked with the same checks one step
    at a time: the error naming what is wrong, or the layout of a payload with zero chunks
    (empty ChunkSizes, one DecompressedSizes value: imagecodecs' form for empty input, which
    libCZI's rules allow), which decodes to nothing."""
    size = payload.shape[0]
    spans = NO_SPANS.copy()
    status, header_size, chunk_id = _chunked.scan_header(payload, spans)
    if status != Status.OK:
        return ChunkedFormatError(_header_error(status, header_size, chunk_id, size))
    try:
        compressed_sizes = _read_size_list(payload, spans, _chunked.CHUNK_SIZES)
        decompressed_values = _read_size_list(payload, spans, _chunked.DECOMPRESSED_SIZES)
        codec = _read_byte_field(payload, spans, _chunked.COMPRESSION_METHOD, {0, 1})
        preprocessing = _read_byte_field(payload, spans, _chunked.PREPROCESSING,
                                         {PREPROCESSING_NONE, PREPROCESSING_HILO})
    except ChunkedFormatError as error:
        return error
    chunk_count, listed = compressed_sizes.shape[0], decompressed_values.shape[0]
    if chunk_count == 0 and listed == 1:
        return _layout(payload, header_size, codec or 0, -1 if preprocessing is None else preprocessing,
                       compressed_sizes, compressed_sizes, np.full(1, header_size, np.int64), np.zeros(1, np.int64))
    if chunk_count == 0:
        return ChunkedFormatError(f"ChunkSizes: zero chunks, with {listed} DecompressedSizes values (1 expected)")
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


def _layout(payload, header_size, codec, preprocessing, compressed_sizes, decompressed_sizes, compressed_offsets,
            decompressed_offsets):
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
    return ChunkLayout(info, compressed_offsets, decompressed_offsets)


def parse_header(payload: np.ndarray) -> ChunkLayout:
    status, header = _chunked.read_header(payload)
    if status == Status.OK:
        return _layout(payload, *header)
    walked = _walk_header(payload)
    if isinstance(walked, Exception):
        raise walked
    return walked


def chunked_info(data: BytesLike) -> ChunkedInfo:
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
    >>> from n5mscodecs import chunked_encode
    >>> info = chunked_info(chunked_encode(bytes(150), codec="lz4", max_chunk_size=100))
    >>> info.codec, info.chunk_count, info.decompressed_sizes.tolist()
    ('lz4', 2, [100, 50])
    """
    return parse_header(read_bytes(data)).info


def check_expansion(layout: ChunkLayout, payload: np.ndarray) -> None:
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
        if status == Status.ERR_ZSTD_MAGIC:
            raise ChunkedFormatError(f"chunk {i}: not a zstd frame (bad magic number)")
        if status == Status.ERR_ZSTD_CONTENT_SIZE:
            raise ChunkedFormatError(
                f"chunk {i}: zstd frame content size {content_size} exceeds "
                f"DecompressedSizes {info.decompressed_sizes[i]}"
            )
        if status != Status.OK:
            raise ChunkedFormatError(f"chunk {i}: corrupt zstd frame header")
