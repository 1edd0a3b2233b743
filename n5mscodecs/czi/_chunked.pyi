"""Type stubs of the CZI chunked kernels (``_chunked.pyx`` with ``_header.pxi``,
``_library.pxi`` and ``_chunks.pxi``).

Buffer arguments are typed memoryviews in the kernels: any C-contiguous buffer of the
element type named in the kernel's signature. Status codes are
:class:`n5mscodecs._status.Status` values as ints. A result slot typed ``Any`` holds an
array when the status is OK and None otherwise.
"""

from typing import Any

from .._buffers import BytesLike

CHUNK_SIZES: int
COMPRESSION_METHOD: int
DECOMPRESSED_SIZES: int
PREPROCESSING: int
LIBRARY_FUNCTIONS: tuple[str, ...]

# header
def max_varint(max_bytes: int) -> int: ...
def scan_header(data: BytesLike, spans: BytesLike) -> tuple[int, int, int]: ...
def read_sizes(data: BytesLike, start: int, stop: int) -> tuple[int, int, Any]: ...
def read_header(data: BytesLike) -> tuple[int, Any]: ...
def first_overexpanded(
    compressed_sizes: BytesLike, decompressed_sizes: BytesLike, max_expansion: int, slack: int
) -> int: ...
def check_zstd_frames(
    data: BytesLike, compressed_offsets: BytesLike, decompressed_sizes: BytesLike
) -> tuple[int, int, int]: ...
def new_payload(
    compressed_sizes: BytesLike, chunk_size: int, last_size: int, codec: int, preprocessing: int, positions: BytesLike
) -> tuple[int, Any]: ...

# the zstd/LZ4 functions of the installed packages
def bind_libraries(addresses: dict[str, int]) -> None: ...
def libraries_bound() -> bool: ...

# chunks
def hilo_pack(src: BytesLike, dst: BytesLike, num_threads: int = 1, chunk_size: int = 0) -> None: ...
def hilo_unpack(src: BytesLike, dst: BytesLike, num_threads: int = 1, chunk_size: int = 0) -> None: ...
def stage_chunks(
    compressed: list[bytes], block: BytesLike, fill: int, first: int, offset_of: BytesLike, size_of: BytesLike
) -> tuple[int, int]: ...
def place_chunks(
    decompressed: list[bytes], target: BytesLike, decompressed_offsets: BytesLike, first: int, hilo: bool
) -> int: ...
def copy_bytes(src: BytesLike, dst: BytesLike) -> None: ...
def copy_staged(
    out: bytes,
    blocks: list[Any],
    block_of: BytesLike,
    offset_of: BytesLike,
    size_of: BytesLike,
    positions: BytesLike,
    first: int,
    stop: int,
    stream: bool = False,
) -> None: ...

class ChunkWorker:
    """Per-thread zstd/LZ4 contexts and scratch memory, reused between calls."""

    @property
    def scratch_bytes(self) -> int: ...

def decode_chunks(
    worker: ChunkWorker,
    payload: BytesLike,
    target: BytesLike,
    compressed_offsets: BytesLike,
    decompressed_offsets: BytesLike,
    first: int,
    stop: int,
    lz4: bool,
    hilo: bool,
    num_threads: int = 1,
    stream: bool = False,
) -> tuple[int, int, Any]: ...
def encode_chunks(
    worker: ChunkWorker,
    source: BytesLike,
    chunk_size: int,
    first: int,
    stop: int,
    lz4: bool,
    level: int,
    hilo: bool,
    num_threads: int,
    block: BytesLike,
    block_index: int,
    fill: int,
    block_of: BytesLike,
    offset_of: BytesLike,
    size_of: BytesLike,
) -> tuple[int, int, int, Any]: ...
def encode_payload(
    worker: ChunkWorker,
    source: BytesLike,
    chunk_size: int,
    lz4: bool,
    level: int,
    hilo: bool,
    num_threads: int,
    size_of: BytesLike,
    decompressed_size: int,
    last_size: int,
    codec: int,
    preprocessing: int,
) -> tuple[int, bytes | None, int, Any]: ...
