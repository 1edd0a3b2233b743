# cython: freethreading_compatible = True
"""Byte-crunching kernels for CZI chunked (mode 7) payloads.

Everything here runs without the GIL and reports problems only as status
codes plus a byte position; ``czi_chunked.py`` turns them into messages. The
chunk loops (``decode_chunks``, ``encode_chunks``) call the zstd and LZ4 C
functions that ``_chunk_libraries`` binds at import.

Header varints are little-endian 7-bit groups with a continuation bit, bounded
to ``max_bytes``; the last allowed byte carries 8 value bits.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

import numpy as np

cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #include <stdint.h>
    /* Ask for transparent huge pages on a fresh large allocation: first-touch
       page faults otherwise dominate copying tens of MiB into new memory. */
    static void n5ms_advise_huge_pages(void* start, size_t size) {
        const uintptr_t huge = (uintptr_t)1 << 21;
        uintptr_t first = ((uintptr_t)start + huge - 1) & ~(huge - 1);
        uintptr_t last = ((uintptr_t)start + size) & ~(huge - 1);
        if (last > first) madvise((void*)first, last - first, MADV_HUGEPAGE);
    }
    #else
    static void n5ms_advise_huge_pages(void* start, size_t size) { (void)start; (void)size; }
    #endif
    """
    void n5ms_advise_huge_pages(void* start, size_t size) nogil

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
    #include <emmintrin.h>
    /* Streaming (non-temporal) stores for output far larger than the caches:
       they skip reading each destination line first, which halves the memory
       traffic of writing it. */
    static void n5ms_join_words_stream(const uint8_t* low, const uint8_t* high, uint8_t* dst,
                                       Py_ssize_t words) {
        Py_ssize_t i = 0;
        for (; i < words && ((uintptr_t)(dst + 2 * i) & 15); i++) {
            dst[2 * i] = low[i];
            dst[2 * i + 1] = high[i];
        }
        for (; i + 16 <= words; i += 16) {
            __m128i l = _mm_loadu_si128((const __m128i*)(low + i));
            __m128i h = _mm_loadu_si128((const __m128i*)(high + i));
            _mm_stream_si128((__m128i*)(dst + 2 * i), _mm_unpacklo_epi8(l, h));
            _mm_stream_si128((__m128i*)(dst + 2 * i + 16), _mm_unpackhi_epi8(l, h));
        }
        for (; i < words; i++) {
            dst[2 * i] = low[i];
            dst[2 * i + 1] = high[i];
        }
    }
    static void n5ms_copy_stream(uint8_t* dst, const uint8_t* src, Py_ssize_t n) {
        Py_ssize_t i = 0;
        for (; i < n && ((uintptr_t)(dst + i) & 15); i++) dst[i] = src[i];
        for (; i + 64 <= n; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i*)(src + i));
            __m128i b = _mm_loadu_si128((const __m128i*)(src + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i*)(src + i + 32));
            __m128i d = _mm_loadu_si128((const __m128i*)(src + i + 48));
            _mm_stream_si128((__m128i*)(dst + i), a);
            _mm_stream_si128((__m128i*)(dst + i + 16), b);
            _mm_stream_si128((__m128i*)(dst + i + 32), c);
            _mm_stream_si128((__m128i*)(dst + i + 48), d);
        }
        if (i < n) memcpy(dst + i, src + i, (size_t)(n - i));
    }
    /* Streaming stores are weakly ordered: fence before the data is handed on. */
    static void n5ms_store_fence(void) { _mm_sfence(); }
    #else
    static void n5ms_join_words_stream(const uint8_t* low, const uint8_t* high, uint8_t* dst,
                                       Py_ssize_t words) {
        for (Py_ssize_t i = 0; i < words; i++) {
            dst[2 * i] = low[i];
            dst[2 * i + 1] = high[i];
        }
    }
    static void n5ms_copy_stream(uint8_t* dst, const uint8_t* src, Py_ssize_t n) {
        memcpy(dst, src, (size_t)n);
    }
    static void n5ms_store_fence(void) {}
    #endif
    """
    void n5ms_join_words_stream(const uint8_t* low, const uint8_t* high, uint8_t* dst, Py_ssize_t words) nogil
    void n5ms_copy_stream(uint8_t* dst, const uint8_t* src, Py_ssize_t n) nogil
    void n5ms_store_fence() nogil

cdef enum:
    # Header chunk ids.
    ID_END_OF_HEADER = 0
    ID_CHUNK_SIZES = 1
    ID_COMPRESSION_METHOD = 2
    ID_DECOMPRESSED_SIZES = 3
    ID_PREPROCESSING = 4

CHUNK_SIZES = ID_CHUNK_SIZES
COMPRESSION_METHOD = ID_COMPRESSION_METHOD
DECOMPRESSED_SIZES = ID_DECOMPRESSED_SIZES
PREPROCESSING = ID_PREPROCESSING

# Status codes; czi_chunked.py turns them into messages.
cdef enum:
    OK = 0
    ERR_ID_TRUNCATED = 1        # data ends inside (or before) a header chunk id
    ERR_LENGTH_TRUNCATED = 2    # data ends inside a payload length
    ERR_PAYLOAD_PAST_END = 3    # payload length runs past the data
    ERR_UNKNOWN_ID = 4
    ERR_DUPLICATE_ID = 5
    ERR_SIZE_TRUNCATED = 6      # a size varint runs past its payload
    ERR_PAYLOAD_TOO_LONG = 7    # writer: payload length above the 3-byte maximum
    ERR_ZSTD_MAGIC = 8          # chunk does not start with a zstd frame magic
    ERR_ZSTD_HEADER = 9         # zstd frame header truncated or reserved bit set
    ERR_ZSTD_CONTENT_SIZE = 10  # zstd frame content size differs from DecompressedSizes
    ERR_CORRUPT = 11            # the codec rejected a chunk (detail: its error code)
    ERR_EXTRA_DATA = 12         # a zstd chunk holds more than one frame
    ERR_CHUNK_SIZE = 13         # a chunk decompressed to another size (detail: the size)
    ERR_BLOCK_FULL = 14         # encode: the staging block is full (detail: bytes needed)
    ERR_NO_MEMORY = 15
    ERR_CHUNK_TOO_LARGE = 16    # writer: a compressed size above the 4-byte varint maximum

STATUS_OK = OK
STATUS_ID_TRUNCATED = ERR_ID_TRUNCATED
STATUS_LENGTH_TRUNCATED = ERR_LENGTH_TRUNCATED
STATUS_PAYLOAD_PAST_END = ERR_PAYLOAD_PAST_END
STATUS_UNKNOWN_ID = ERR_UNKNOWN_ID
STATUS_DUPLICATE_ID = ERR_DUPLICATE_ID
STATUS_SIZE_TRUNCATED = ERR_SIZE_TRUNCATED
STATUS_PAYLOAD_TOO_LONG = ERR_PAYLOAD_TOO_LONG
STATUS_ZSTD_MAGIC = ERR_ZSTD_MAGIC
STATUS_ZSTD_HEADER = ERR_ZSTD_HEADER
STATUS_ZSTD_CONTENT_SIZE = ERR_ZSTD_CONTENT_SIZE
STATUS_CORRUPT = ERR_CORRUPT
STATUS_EXTRA_DATA = ERR_EXTRA_DATA
STATUS_CHUNK_SIZE = ERR_CHUNK_SIZE
STATUS_BLOCK_FULL = ERR_BLOCK_FULL
STATUS_NO_MEMORY = ERR_NO_MEMORY
STATUS_CHUNK_TOO_LARGE = ERR_CHUNK_TOO_LARGE

cdef enum:
    # hi/lo (un)packing handles this many 16-bit words per prange iteration.
    HILO_BLOCK_WORDS = 32768


cdef inline Py_ssize_t read_varint(const uint8_t* p, Py_ssize_t avail, int max_bytes,
                                   uint32_t* value) noexcept nogil:
    """Decode one bounded varint; return the bytes used, 0 if ``avail`` is too short."""
    cdef uint32_t v = 0
    cdef int i
    for i in range(max_bytes):
        if i >= avail:
            return 0
        if i == max_bytes - 1:
            v |= (<uint32_t>p[i]) << (7 * i)
            value[0] = v
            return i + 1
        v |= (<uint32_t>(p[i] & 0x7F)) << (7 * i)
        if not (p[i] & 0x80):
            value[0] = v
            return i + 1
    return 0


cdef inline uint32_t load_u32_le(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline Py_ssize_t varint_length(uint32_t value, int max_bytes) noexcept nogil:
    cdef int i
    for i in range(1, max_bytes):
        if value < (<uint32_t>1 << (7 * i)):
            return i
    return max_bytes


cdef inline Py_ssize_t write_varint(uint8_t* p, uint32_t value, int max_bytes) noexcept nogil:
    """Minimal encoding of ``value`` (caller ensures it fits); return bytes written."""
    cdef int i
    for i in range(max_bytes - 1):
        if value < 0x80:
            p[i] = <uint8_t>value
            return i + 1
        p[i] = <uint8_t>((value & 0x7F) | 0x80)
        value >>= 7
    p[max_bytes - 1] = <uint8_t>value
    return max_bytes


def max_varint(int max_bytes):
    """Largest value a ``max_bytes`` varint holds (7 bits per byte, 8 in the last)."""
    return (1 << (7 * (max_bytes - 1) + 8)) - 1


cdef int walk_header(const uint8_t* base, Py_ssize_t n, int64_t* spans, Py_ssize_t* position,
                     uint32_t* chunk_id) noexcept nogil:
    """Walk the header chunks up to EndOfHeader (see :func:`scan_header`)."""
    cdef Py_ssize_t pos = 0, used
    cdef uint32_t length = 0
    cdef int status = OK
    chunk_id[0] = 0
    while True:
        used = read_varint(base + pos, n - pos, 2, chunk_id)
        if used == 0:
            status = ERR_ID_TRUNCATED
            break
        pos += used
        if chunk_id[0] == ID_END_OF_HEADER:
            break
        if chunk_id[0] > ID_PREPROCESSING:
            status = ERR_UNKNOWN_ID
            pos -= used
            break
        if spans[2 * chunk_id[0]] != -1:
            status = ERR_DUPLICATE_ID
            pos -= used
            break
        used = read_varint(base + pos, n - pos, 3, &length)
        if used == 0:
            status = ERR_LENGTH_TRUNCATED
            break
        pos += used
        if length > n - pos:
            status = ERR_PAYLOAD_PAST_END
            break
        spans[2 * chunk_id[0]] = pos
        spans[2 * chunk_id[0] + 1] = length
        pos += length
    position[0] = pos
    return status


cdef Py_ssize_t count_sizes(const uint8_t* base, Py_ssize_t start, Py_ssize_t stop,
                            Py_ssize_t* position) noexcept nogil:
    """Number of 4-byte-bounded varints in ``base[start:stop]``, or -1 with
    ``position`` at a truncated one."""
    cdef Py_ssize_t pos = start, used, count = 0
    cdef uint32_t value
    while pos < stop:
        used = read_varint(base + pos, stop - pos, 4, &value)
        if used == 0:
            position[0] = pos
            return -1
        pos += used
        count += 1
    position[0] = pos
    return count


cdef void decode_sizes(const uint8_t* base, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t count,
                       uint32_t* values) noexcept nogil:
    """The ``count`` varints :func:`count_sizes` found in ``base[start:stop]``."""
    cdef Py_ssize_t pos = start, i
    for i in range(count):
        pos += read_varint(base + pos, stop - pos, 4, &values[i])


cdef void build_table(const uint32_t* compressed_sizes, Py_ssize_t chunks, const uint32_t* values,
                      Py_ssize_t listed, Py_ssize_t header_size, uint32_t* decompressed_sizes,
                      int64_t* compressed_offsets, int64_t* decompressed_offsets) noexcept nogil:
    """Expand the suffix form (``1 <= listed <= chunks``) and build both offset tables."""
    cdef Py_ssize_t implicit = chunks - listed, i
    cdef uint32_t repeated = values[listed - 2] if listed > 1 else values[0]
    for i in range(chunks):
        decompressed_sizes[i] = repeated if i < implicit else values[i - implicit]
    compressed_offsets[0] = header_size
    decompressed_offsets[0] = 0
    for i in range(chunks):
        compressed_offsets[i + 1] = compressed_offsets[i] + compressed_sizes[i]
        decompressed_offsets[i + 1] = decompressed_offsets[i] + decompressed_sizes[i]


def scan_header(const uint8_t[::1] data, int64_t[::1] spans):
    """Walk the header chunks up to EndOfHeader.

    ``spans`` (10 entries) receives ``offset, length`` of the payload of each
    known id at ``2 * id``; absent ids keep ``-1``. Returns
    ``(status, position, chunk_id)``; on success ``position`` is the header size.
    """
    cdef Py_ssize_t n = data.shape[0], position = 0
    cdef uint32_t chunk_id = 0
    cdef int status
    if spans.shape[0] < 10:
        raise IndexError("scan_header: spans needs 10 entries")
    with nogil:
        status = walk_header(&data[0] if n > 0 else NULL, n, &spans[0], &position, &chunk_id)
    return status, position, chunk_id


def read_sizes(const uint8_t[::1] data, Py_ssize_t start, Py_ssize_t stop):
    """Decode the 4-byte-bounded varints of ``data[start:stop]``.

    Returns ``(status, position, values)``: ``values`` is a new uint32 array;
    on ``ERR_SIZE_TRUNCATED`` it is ``None`` and ``position`` locates the
    truncated varint.
    """
    cdef Py_ssize_t count, position = start
    cdef uint32_t[::1] out
    if not 0 <= start <= stop <= data.shape[0]:
        raise IndexError("read_sizes: range out of bounds")
    if start == stop:
        return OK, start, np.empty(0, dtype=np.uint32)
    with nogil:
        count = count_sizes(&data[0], start, stop, &position)
    if count < 0:
        return ERR_SIZE_TRUNCATED, position, None
    values = np.empty(count, dtype=np.uint32)
    if count:
        out = values
        with nogil:
            decode_sizes(&data[0], start, stop, count, &out[0])
    return OK, stop, values


cdef int byte_field(const uint8_t* base, const int64_t* spans, int chunk_id, int absent) noexcept nogil:
    """The one-byte value of header chunk ``chunk_id`` if it is 0 or 1,
    ``absent`` without the chunk, -2 otherwise."""
    if spans[2 * chunk_id] < 0:
        return absent
    if spans[2 * chunk_id + 1] != 1 or base[spans[2 * chunk_id]] > 1:
        return -2
    return base[spans[2 * chunk_id]]


def read_header(const uint8_t[::1] data):
    """The whole header in one call, for well-formed payloads.

    Returns ``(header_size, codec, preprocessing, compressed_sizes,
    decompressed_sizes, compressed_offsets, decompressed_offsets)`` with
    ``preprocessing`` -1 when absent, or ``None`` when anything is malformed:
    then ``czi_chunked`` walks the header step by step (:func:`scan_header`,
    :func:`read_sizes`: the same routines) to name the problem.
    """
    cdef Py_ssize_t n = data.shape[0], header_size = 0, position = 0, chunks, listed
    cdef const uint8_t* base = &data[0] if n > 0 else NULL
    cdef int64_t[10] spans
    cdef uint32_t chunk_id = 0
    cdef int codec, preprocessing, k
    cdef uint32_t[::1] compressed_view, decompressed_view, values_view
    cdef int64_t[::1] compressed_offsets_view, decompressed_offsets_view
    for k in range(10):
        spans[k] = -1
    chunks = listed = 0
    codec = preprocessing = -2
    with nogil:
        if (walk_header(base, n, spans, &header_size, &chunk_id) == OK
                and spans[2 * ID_CHUNK_SIZES] >= 0 and spans[2 * ID_DECOMPRESSED_SIZES] >= 0):
            chunks = count_sizes(base, spans[2 * ID_CHUNK_SIZES],
                                 spans[2 * ID_CHUNK_SIZES] + spans[2 * ID_CHUNK_SIZES + 1], &position)
            listed = count_sizes(base, spans[2 * ID_DECOMPRESSED_SIZES],
                                 spans[2 * ID_DECOMPRESSED_SIZES] + spans[2 * ID_DECOMPRESSED_SIZES + 1], &position)
            codec = byte_field(base, spans, ID_COMPRESSION_METHOD, 0)
            preprocessing = byte_field(base, spans, ID_PREPROCESSING, -1)
    if chunks < 1 or listed < 1 or listed > chunks or codec == -2 or preprocessing == -2:
        return None
    compressed_sizes = np.empty(chunks, dtype=np.uint32)
    decompressed_sizes = np.empty(chunks, dtype=np.uint32)
    decompressed_values = np.empty(listed, dtype=np.uint32)
    compressed_offsets = np.empty(chunks + 1, dtype=np.int64)
    decompressed_offsets = np.empty(chunks + 1, dtype=np.int64)
    compressed_view, decompressed_view, values_view = compressed_sizes, decompressed_sizes, decompressed_values
    compressed_offsets_view, decompressed_offsets_view = compressed_offsets, decompressed_offsets
    with nogil:
        decode_sizes(base, spans[2 * ID_CHUNK_SIZES], spans[2 * ID_CHUNK_SIZES] + spans[2 * ID_CHUNK_SIZES + 1],
                     chunks, &compressed_view[0])
        decode_sizes(base, spans[2 * ID_DECOMPRESSED_SIZES],
                     spans[2 * ID_DECOMPRESSED_SIZES] + spans[2 * ID_DECOMPRESSED_SIZES + 1], listed, &values_view[0])
        build_table(&compressed_view[0], chunks, &values_view[0], listed, header_size, &decompressed_view[0],
                    &compressed_offsets_view[0], &decompressed_offsets_view[0])
    if compressed_offsets_view[chunks] > n:
        return None
    return (header_size, codec, preprocessing, compressed_sizes, decompressed_sizes,
            compressed_offsets, decompressed_offsets)


def first_overexpanded(const uint32_t[::1] compressed_sizes, const uint32_t[::1] decompressed_sizes,
                       int64_t max_expansion, int64_t slack):
    """Index of the first chunk whose decompressed size exceeds
    ``compressed * max_expansion + slack``, or -1."""
    cdef Py_ssize_t i, found = -1
    with nogil:
        for i in range(compressed_sizes.shape[0]):
            if <int64_t>decompressed_sizes[i] > <int64_t>compressed_sizes[i] * max_expansion + slack:
                found = i
                break
    return found


def check_zstd_frames(const uint8_t[::1] data, const int64_t[::1] compressed_offsets,
                      const uint32_t[::1] decompressed_sizes):
    """Check each chunk's zstd frame header against its declared size.

    Frames that do not record a content size pass. Returns
    ``(status, chunk_index, content_size)``; ``ERR_ZSTD_CONTENT_SIZE`` reports
    a recorded size that differs from ``decompressed_sizes``.
    """
    cdef Py_ssize_t chunks = decompressed_sizes.shape[0], i, pos, avail, need
    cdef Py_ssize_t fcs_bytes, dict_bytes
    cdef uint8_t descriptor, fcs_flag, single_segment
    cdef uint64_t value = 0
    cdef int status = OK, k
    cdef Py_ssize_t[4] dict_id_bytes = [0, 1, 2, 4]
    with nogil:
        for i in range(chunks):
            pos = compressed_offsets[i]
            avail = compressed_offsets[i + 1] - pos
            if avail < 4 or load_u32_le(&data[pos]) != 0xFD2FB528U:
                status = ERR_ZSTD_MAGIC
                break
            if avail < 5 or data[pos + 4] & 0x08:
                status = ERR_ZSTD_HEADER
                break
            descriptor = data[pos + 4]
            fcs_flag = descriptor >> 6
            single_segment = (descriptor >> 5) & 1
            dict_bytes = dict_id_bytes[descriptor & 3]
            if fcs_flag == 0:
                fcs_bytes = single_segment
            else:
                fcs_bytes = 1 << fcs_flag
            need = 5 + (1 - single_segment) + dict_bytes + fcs_bytes
            if avail < need:
                status = ERR_ZSTD_HEADER
                break
            if fcs_bytes == 0:
                continue
            pos += need - fcs_bytes
            value = 0
            for k in range(fcs_bytes):
                value |= (<uint64_t>data[pos + k]) << (8 * k)
            if fcs_bytes == 2:
                value += 256
            if value != decompressed_sizes[i]:
                status = ERR_ZSTD_CONTENT_SIZE
                break
    if status == OK:
        return status, chunks, 0
    return status, i, value


cdef inline void split_words(const uint8_t* src, uint8_t* low, uint8_t* high,
                             Py_ssize_t words) noexcept nogil:
    # Raw pointers in locals (not memoryview fields) let the compiler vectorize.
    cdef Py_ssize_t i
    for i in range(words):
        low[i] = src[2 * i]
        high[i] = src[2 * i + 1]


cdef inline void join_words(const uint8_t* low, const uint8_t* high, uint8_t* dst,
                            Py_ssize_t words) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(words):
        dst[2 * i] = low[i]
        dst[2 * i + 1] = high[i]


cdef inline void hilo_piece(const uint8_t* src, uint8_t* dst, Py_ssize_t n, Py_ssize_t chunk_size,
                            Py_ssize_t blocks_per_chunk, Py_ssize_t piece, bint pack) noexcept nogil:
    """(Un)pack block ``piece`` of the ``chunk_size``-byte chunks of ``src`` (``n`` bytes)."""
    cdef Py_ssize_t chunk = piece // blocks_per_chunk
    cdef Py_ssize_t offset = chunk * chunk_size
    cdef Py_ssize_t length = min(chunk_size, n - offset), half = length // 2
    cdef Py_ssize_t first = (piece % blocks_per_chunk) * HILO_BLOCK_WORDS
    cdef Py_ssize_t words = min(<Py_ssize_t>HILO_BLOCK_WORDS, half - first)
    if words > 0:
        if pack:
            split_words(src + offset + 2 * first, dst + offset + first, dst + offset + half + first, words)
        else:
            join_words(src + offset + first, src + offset + half + first, dst + offset + 2 * first, words)
    if first == 0 and length & 1:  # an odd trailing byte stays in place
        dst[offset + length - 1] = src[offset + length - 1]


cdef void hilo_chunks(const uint8_t* src, uint8_t* dst, Py_ssize_t n, Py_ssize_t chunk_size,
                      int num_threads, bint pack) noexcept nogil:
    cdef Py_ssize_t chunks, blocks_per_chunk, piece
    if n == 0:
        return
    if chunk_size <= 0 or chunk_size > n:
        chunk_size = n
    chunks = (n + chunk_size - 1) // chunk_size
    blocks_per_chunk = max(1, (chunk_size // 2 + HILO_BLOCK_WORDS - 1) // HILO_BLOCK_WORDS)
    if num_threads <= 1:  # no OpenMP region for the small per-batch calls
        for piece in range(chunks * blocks_per_chunk):
            hilo_piece(src, dst, n, chunk_size, blocks_per_chunk, piece, pack)
    else:
        for piece in prange(chunks * blocks_per_chunk, num_threads=num_threads, schedule="static"):
            hilo_piece(src, dst, n, chunk_size, blocks_per_chunk, piece, pack)


def hilo_pack(const uint8_t[::1] src, uint8_t[::1] dst, int num_threads=1, Py_ssize_t chunk_size=0):
    """Split 16-bit words into all low bytes, then all high bytes.

    Each ``chunk_size`` bytes of ``src`` (the last piece may be shorter; 0:
    all of it) are packed on their own, as the format stores them; an odd
    trailing byte of a piece is copied as is. ``dst`` has the length of ``src``.
    """
    assert dst.shape[0] >= src.shape[0]  # callers size dst; with boundscheck off this guards memory
    if src.shape[0] == 0:
        return
    with nogil:
        hilo_chunks(&src[0], &dst[0], src.shape[0], chunk_size, num_threads, True)


def hilo_unpack(const uint8_t[::1] src, uint8_t[::1] dst, int num_threads=1, Py_ssize_t chunk_size=0):
    """Inverse of :func:`hilo_pack`: interleave low and high byte planes again."""
    assert dst.shape[0] >= src.shape[0]  # callers size dst; with boundscheck off this guards memory
    if src.shape[0] == 0:
        return
    with nogil:
        hilo_chunks(&src[0], &dst[0], src.shape[0], chunk_size, num_threads, False)


def stage_chunks(list compressed, uint8_t[::1] block, Py_ssize_t fill, Py_ssize_t first,
                 int64_t[::1] offset_of, int64_t[::1] size_of):
    """Copy the ``bytes`` in ``compressed`` (chunks ``first, first + 1, ...``) into
    ``block`` from ``fill`` on, recording each one's offset and size.

    Stops at the first that does not fit. Returns ``(stored, fill)``. One call
    per batch: per-chunk buffer acquisitions and GIL hand-offs cost more than
    the copies.
    """
    cdef Py_ssize_t count = len(compressed), stored = 0, size, capacity = block.shape[0], j
    cdef object item
    cdef const char** sources = <const char**>malloc(max(1, count) * sizeof(char*))
    if sources == NULL:
        raise MemoryError()
    try:
        if first < 0 or first + count > size_of.shape[0] or offset_of.shape[0] < size_of.shape[0]:
            raise IndexError("stage_chunks: chunk index out of range")
        for item in compressed:
            if not isinstance(item, bytes):
                raise TypeError(f"stage_chunks: expected bytes, got {type(item).__name__}")
            size = PyBytes_GET_SIZE(item)
            if fill + size > capacity:
                break
            sources[stored] = PyBytes_AS_STRING(item)
            offset_of[first + stored] = fill
            size_of[first + stored] = size
            fill += size
            stored += 1
        with nogil:  # the list keeps the bytes alive
            for j in range(stored):
                memcpy(&block[offset_of[first + j]], sources[j], size_of[first + j])
    finally:
        free(sources)
    return stored, fill


def place_chunks(list decompressed, uint8_t[::1] target, const int64_t[::1] decompressed_offsets,
                 Py_ssize_t first, bint hilo):
    """Write the ``bytes`` in ``decompressed`` (chunks ``first, first + 1, ...``)
    to ``target[decompressed_offsets[i]:decompressed_offsets[i + 1]]``,
    undoing hi/lo packing when ``hilo``.

    Returns -1, or the position in the list of the first chunk whose length
    differs from its slot (nothing is written then). One call per batch.
    """
    cdef Py_ssize_t count = len(decompressed), j, start, length
    cdef object item
    cdef const uint8_t** sources
    if count == 0:
        return -1
    if first < 0 or first + count >= decompressed_offsets.shape[0]:
        raise IndexError("place_chunks: chunk index out of range")
    if decompressed_offsets[first] < 0 or decompressed_offsets[first + count] > target.shape[0]:
        raise IndexError("place_chunks: chunks end past the target")
    sources = <const uint8_t**>malloc(count * sizeof(uint8_t*))
    if sources == NULL:
        raise MemoryError()
    try:
        for j in range(count):
            item = decompressed[j]
            if not isinstance(item, bytes):
                raise TypeError(f"place_chunks: expected bytes, got {type(item).__name__}")
            if PyBytes_GET_SIZE(item) != decompressed_offsets[first + j + 1] - decompressed_offsets[first + j]:
                return j
            sources[j] = <const uint8_t*>PyBytes_AS_STRING(item)
        with nogil:  # the list keeps the bytes alive
            for j in range(count):
                start = decompressed_offsets[first + j]
                length = decompressed_offsets[first + j + 1] - start
                if length == 0:
                    continue
                if hilo:
                    hilo_chunks(sources[j], &target[start], length, 0, 1, False)
                else:
                    memcpy(&target[start], sources[j], length)
    finally:
        free(sources)
    return -1


def copy_bytes(const uint8_t[::1] src, uint8_t[::1] dst):
    """``dst[:len(src)] = src`` without holding the GIL."""
    assert dst.shape[0] >= src.shape[0]
    if src.shape[0] == 0:
        return
    with nogil:
        memcpy(&dst[0], &src[0], src.shape[0])


def new_payload(const int64_t[::1] compressed_sizes, Py_ssize_t chunk_size, Py_ssize_t last_size,
                int codec, int preprocessing, int64_t[::1] positions):
    """A new ``bytes`` for an encoded payload with its header written; the
    chunks are for :func:`copy_staged` to fill in before the object is shared.

    Header in libCZI's writer order: ChunkSizes; DecompressedSizes
    ``[chunk_size]``, or ``[chunk_size, last_size]`` when ``last_size >= 0``;
    CompressionMethod only when ``codec`` is not 0; Preprocessing only when
    ``preprocessing >= 0``; EndOfHeader. ``positions[i]`` receives where chunk
    ``i`` starts. A large payload gets a huge-page hint (first-touch faults of
    4 KiB pages cost more than the copy). Returns ``(status, payload)``;
    ``STATUS_CHUNK_TOO_LARGE`` (a compressed size above the 4-byte varint
    maximum) and ``STATUS_PAYLOAD_TOO_LONG`` (ChunkSizes above its 3-byte
    length) come with ``None``.
    """
    cdef Py_ssize_t chunks = compressed_sizes.shape[0], i, pos = 0
    cdef Py_ssize_t sizes_length = 0, values_length, header_size, total
    cdef uint32_t max_size = <uint32_t>((1 << 29) - 1)  # max_varint(4)
    cdef object result
    cdef uint8_t* out
    if positions.shape[0] < chunks:
        raise IndexError("new_payload: positions shorter than compressed_sizes")
    if not (0 <= chunk_size <= max_size and last_size <= max_size):
        raise ValueError("new_payload: decompressed size above the varint maximum")
    total = 0
    for i in range(chunks):
        if not 0 <= compressed_sizes[i] <= max_size:
            return ERR_CHUNK_TOO_LARGE, None
        sizes_length += varint_length(<uint32_t>compressed_sizes[i], 4)
        total += compressed_sizes[i]
    if sizes_length > (1 << 22) - 1:
        return ERR_PAYLOAD_TOO_LONG, None
    values_length = varint_length(<uint32_t>chunk_size, 4)
    if last_size >= 0:
        values_length += varint_length(<uint32_t>last_size, 4)
    header_size = (varint_length(ID_CHUNK_SIZES, 2) + varint_length(<uint32_t>sizes_length, 3) + sizes_length
                   + varint_length(ID_DECOMPRESSED_SIZES, 2) + varint_length(<uint32_t>values_length, 3)
                   + values_length + (3 if codec != 0 else 0) + (3 if preprocessing >= 0 else 0) + 1)
    result = PyBytes_FromStringAndSize(NULL, header_size + total)
    out = <uint8_t*>PyBytes_AS_STRING(result)
    with nogil:
        if header_size + total >= (1 << 22):
            n5ms_advise_huge_pages(out, header_size + total)
        pos += write_varint(out + pos, ID_CHUNK_SIZES, 2)
        pos += write_varint(out + pos, <uint32_t>sizes_length, 3)
        for i in range(chunks):
            pos += write_varint(out + pos, <uint32_t>compressed_sizes[i], 4)
        pos += write_varint(out + pos, ID_DECOMPRESSED_SIZES, 2)
        pos += write_varint(out + pos, <uint32_t>values_length, 3)
        pos += write_varint(out + pos, <uint32_t>chunk_size, 4)
        if last_size >= 0:
            pos += write_varint(out + pos, <uint32_t>last_size, 4)
        if codec != 0:
            out[pos] = ID_COMPRESSION_METHOD
            out[pos + 1] = 1
            out[pos + 2] = <uint8_t>codec
            pos += 3
        if preprocessing >= 0:
            out[pos] = ID_PREPROCESSING
            out[pos + 1] = 1
            out[pos + 2] = <uint8_t>preprocessing
            pos += 3
        out[pos] = ID_END_OF_HEADER
        for i in range(chunks):
            positions[i] = header_size
            header_size += compressed_sizes[i]
    return OK, result


def copy_staged(bytes out, list blocks, const int32_t[::1] block_of, const int64_t[::1] offset_of,
                const int64_t[::1] size_of, const int64_t[::1] positions, Py_ssize_t first, Py_ssize_t stop,
                bint stream=False):
    """Copy staged chunks ``first:stop`` into ``out`` (from :func:`new_payload`),
    chunk ``i`` from ``blocks[block_of[i]][offset_of[i]:][:size_of[i]]`` to
    ``positions[i]``. Workers call it on disjoint ranges at once. ``stream``:
    streaming stores (for an ``out`` much larger than the caches)."""
    cdef Py_ssize_t i, block_count = len(blocks), out_size = PyBytes_GET_SIZE(out)
    cdef uint8_t* target = <uint8_t*>PyBytes_AS_STRING(out)
    cdef const uint8_t[::1] block
    cdef const uint8_t** starts
    cdef int64_t* lengths
    if first < 0 or stop > block_of.shape[0] or stop > offset_of.shape[0] or stop > size_of.shape[0] \
            or stop > positions.shape[0]:
        raise IndexError("copy_staged: chunk range out of bounds")
    starts = <const uint8_t**>malloc(max(1, block_count) * sizeof(uint8_t*))
    lengths = <int64_t*>malloc(max(1, block_count) * sizeof(int64_t))
    if starts == NULL or lengths == NULL:
        free(starts)
        free(lengths)
        raise MemoryError()
    try:
        for i in range(block_count):
            block = blocks[i]
            starts[i] = &block[0] if block.shape[0] else NULL
            lengths[i] = block.shape[0]
        for i in range(first, stop):
            if not (0 <= block_of[i] < block_count and 0 <= offset_of[i] and 0 <= size_of[i]
                    and offset_of[i] + size_of[i] <= lengths[block_of[i]]
                    and 0 <= positions[i] and positions[i] + size_of[i] <= out_size):
                raise IndexError(f"copy_staged: chunk {i} out of bounds")
        with nogil:  # the list keeps the blocks alive
            for i in range(first, stop):
                if size_of[i] == 0:
                    continue
                if stream:
                    n5ms_copy_stream(target + positions[i], starts[block_of[i]] + offset_of[i], size_of[i])
                else:
                    memcpy(target + positions[i], starts[block_of[i]] + offset_of[i], size_of[i])
            if stream:
                n5ms_store_fence()
    finally:
        free(starts)
        free(lengths)


# --- whole chunk ranges through the zstd / LZ4 C functions -------------------------
#
# The zstandard and lz4 packages compile those libraries into their extension
# modules; _chunk_libraries.py looks the functions up there and binds them
# here once. Called from these loops, a chunk costs no Python call, no bytes
# object and no GIL hand-off, and lands straight in its place in the output.

ctypedef unsigned (*zstd_is_error_t)(size_t) noexcept nogil
ctypedef const char* (*zstd_get_error_name_t)(size_t) noexcept nogil
ctypedef void* (*zstd_create_t)() noexcept nogil
ctypedef size_t (*zstd_free_t)(void*) noexcept nogil
ctypedef size_t (*zstd_decompress_dctx_t)(void*, void*, size_t, const void*, size_t) noexcept nogil
ctypedef size_t (*zstd_find_frame_compressed_size_t)(const void*, size_t) noexcept nogil
ctypedef size_t (*zstd_compress_cctx_t)(void*, void*, size_t, const void*, size_t, int) noexcept nogil
ctypedef size_t (*zstd_compress_bound_t)(size_t) noexcept nogil
ctypedef int (*lz4_sizeof_state_t)() noexcept nogil
ctypedef int (*lz4_compress_fast_ext_state_t)(void*, const char*, char*, int, int, int) noexcept nogil
ctypedef int (*lz4_decompress_safe_t)(const char*, char*, int, int) noexcept nogil
ctypedef int (*lz4_compress_bound_t)(int) noexcept nogil

cdef struct Library:
    zstd_is_error_t ZSTD_isError
    zstd_get_error_name_t ZSTD_getErrorName
    zstd_create_t ZSTD_createDCtx
    zstd_free_t ZSTD_freeDCtx
    zstd_decompress_dctx_t ZSTD_decompressDCtx
    zstd_find_frame_compressed_size_t ZSTD_findFrameCompressedSize
    zstd_create_t ZSTD_createCCtx
    zstd_free_t ZSTD_freeCCtx
    zstd_compress_cctx_t ZSTD_compressCCtx
    zstd_compress_bound_t ZSTD_compressBound
    lz4_sizeof_state_t LZ4_sizeofState
    lz4_compress_fast_ext_state_t LZ4_compress_fast_extState
    lz4_decompress_safe_t LZ4_decompress_safe
    lz4_compress_bound_t LZ4_compressBound

cdef Library lib
cdef bint lib_bound = False

LIBRARY_FUNCTIONS = (
    "ZSTD_isError", "ZSTD_getErrorName", "ZSTD_createDCtx", "ZSTD_freeDCtx", "ZSTD_decompressDCtx",
    "ZSTD_findFrameCompressedSize", "ZSTD_createCCtx", "ZSTD_freeCCtx", "ZSTD_compressCCtx",
    "ZSTD_compressBound", "LZ4_sizeofState", "LZ4_compress_fast_extState", "LZ4_decompress_safe",
    "LZ4_compressBound",
)

cdef enum:
    MAX_CODEC_INPUT = 0x7E000000  # LZ4_MAX_INPUT_SIZE; far above the format's chunk sizes
    SCRATCH_KEEP = 1 << 22  # a worker frees larger scratch after each call

# An empty chunk still needs a valid pointer for the libraries.
cdef uint8_t empty_buffer[1]


def bind_libraries(dict addresses):
    """Bind the C functions named in ``LIBRARY_FUNCTIONS`` (name -> address).

    Called once, at import; every address must be non-zero.
    """
    global lib, lib_bound
    cdef Library bound
    cdef size_t[14] values
    if lib_bound:
        raise RuntimeError("bind_libraries: already bound")
    for k, name in enumerate(LIBRARY_FUNCTIONS):
        value = addresses.get(name)
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"bind_libraries: no address for {name}")
        values[k] = value
    bound.ZSTD_isError = <zstd_is_error_t>values[0]
    bound.ZSTD_getErrorName = <zstd_get_error_name_t>values[1]
    bound.ZSTD_createDCtx = <zstd_create_t>values[2]
    bound.ZSTD_freeDCtx = <zstd_free_t>values[3]
    bound.ZSTD_decompressDCtx = <zstd_decompress_dctx_t>values[4]
    bound.ZSTD_findFrameCompressedSize = <zstd_find_frame_compressed_size_t>values[5]
    bound.ZSTD_createCCtx = <zstd_create_t>values[6]
    bound.ZSTD_freeCCtx = <zstd_free_t>values[7]
    bound.ZSTD_compressCCtx = <zstd_compress_cctx_t>values[8]
    bound.ZSTD_compressBound = <zstd_compress_bound_t>values[9]
    bound.LZ4_sizeofState = <lz4_sizeof_state_t>values[10]
    bound.LZ4_compress_fast_extState = <lz4_compress_fast_ext_state_t>values[11]
    bound.LZ4_decompress_safe = <lz4_decompress_safe_t>values[12]
    bound.LZ4_compressBound = <lz4_compress_bound_t>values[13]
    lib = bound
    lib_bound = True


def libraries_bound():
    return lib_bound


cdef class ChunkWorker:
    """One thread's codec contexts and scratch buffer for :func:`decode_chunks`
    and :func:`encode_chunks`. Not shareable: each worker thread keeps its own
    (contexts are created on first use and reused across calls)."""

    cdef void* dctx
    cdef void* cctx
    cdef void* lz4_state
    cdef uint8_t* scratch
    cdef Py_ssize_t scratch_size
    cdef bint busy

    def __cinit__(self):
        if not lib_bound:
            raise RuntimeError("ChunkWorker: the zstd/LZ4 functions are not bound")

    def __dealloc__(self):
        if self.dctx != NULL:
            lib.ZSTD_freeDCtx(self.dctx)
        if self.cctx != NULL:
            lib.ZSTD_freeCCtx(self.cctx)
        PyMem_RawFree(self.lz4_state)
        PyMem_RawFree(self.scratch)

    @property
    def scratch_bytes(self):
        """Bytes of scratch held between calls."""
        return self.scratch_size

    cdef int enter(self) except -1:
        if self.busy:
            raise RuntimeError("ChunkWorker is in use by another call")
        self.busy = True
        return 0

    cdef void leave(self) noexcept:
        # A thread's worker lives as long as the thread: keep no huge scratch.
        if self.scratch_size > SCRATCH_KEEP:
            PyMem_RawFree(self.scratch)
            self.scratch, self.scratch_size = NULL, 0
        self.busy = False

    cdef void* zstd_dctx(self) noexcept nogil:
        """The zstd decompression context, created on first use (NULL: no memory)."""
        if self.dctx == NULL:
            self.dctx = lib.ZSTD_createDCtx()
        return self.dctx

    cdef void* zstd_cctx(self) noexcept nogil:
        """The zstd compression context, created on first use (NULL: no memory)."""
        if self.cctx == NULL:
            self.cctx = lib.ZSTD_createCCtx()
        return self.cctx

    cdef void* lz4_compression_state(self) noexcept nogil:
        """The LZ4 compression state, allocated on first use (NULL: no memory);
        ``LZ4_compress_fast_extState`` resets it for each block."""
        if self.lz4_state == NULL:
            self.lz4_state = PyMem_RawMalloc(lib.LZ4_sizeofState())
        return self.lz4_state

    cdef uint8_t* reserve(self, Py_ssize_t size) noexcept nogil:
        """Scratch of at least ``size`` bytes (bounded by the caller's chunk sizes), or NULL."""
        if size <= 0:
            return empty_buffer
        if size > self.scratch_size:
            PyMem_RawFree(self.scratch)
            self.scratch = <uint8_t*>PyMem_RawMalloc(size)
            self.scratch_size = size if self.scratch != NULL else 0
        return self.scratch


cdef inline void unpack_prefix(const uint8_t* packed, uint8_t* dst, Py_ssize_t n, Py_ssize_t keep,
                               int num_threads, bint stream) noexcept nogil:
    """The first ``keep`` bytes of the hi/lo-packed ``n``-byte chunk ``packed``."""
    if keep == n and stream and num_threads <= 1:
        n5ms_join_words_stream(packed, packed + n // 2, dst, n // 2)
        if n & 1:
            dst[n - 1] = packed[n - 1]
        return
    if keep == n:
        hilo_chunks(packed, dst, n, 0, num_threads, False)
        return
    join_words(packed, packed + n // 2, dst, keep // 2)
    if keep & 1:  # keep < n, so this is a low byte, never the odd trailing one
        dst[keep - 1] = packed[keep // 2]


def decode_chunks(ChunkWorker worker, const uint8_t[::1] payload, uint8_t[::1] target,
                  const int64_t[::1] compressed_offsets, const int64_t[::1] decompressed_offsets,
                  Py_ssize_t first, Py_ssize_t stop, bint lz4, bint hilo, int num_threads=1,
                  bint stream=False):
    """Decompress chunks ``first:stop`` into ``target``.

    Chunk ``i`` is ``payload[compressed_offsets[i]:compressed_offsets[i + 1]]``
    and goes to ``target[decompressed_offsets[i]:decompressed_offsets[i + 1]]``,
    hi/lo-unpacked when ``hilo`` (with ``num_threads`` for a large chunk);
    only the part before the end of ``target`` is written. Each zstd chunk
    must be exactly one frame. ``stream``: write unpacked chunks with
    streaming stores (for a ``target`` much larger than the caches). Returns ``(status, chunk, detail)``: detail is
    zstd's error text or LZ4's (negative) result for ``STATUS_CORRUPT``, the
    decompressed size for ``STATUS_CHUNK_SIZE``.
    """
    cdef Py_ssize_t payload_size = payload.shape[0], target_size = target.shape[0]
    cdef Py_ssize_t i, source_start, source_size, start, size, keep
    cdef int64_t detail = 0
    cdef size_t result
    cdef int produced, status = OK
    cdef const uint8_t* source
    cdef uint8_t* destination
    cdef void* context
    cdef const uint8_t* payload_start = &payload[0] if payload_size else empty_buffer
    cdef uint8_t* target_start = &target[0] if target_size else empty_buffer
    if not (0 <= first <= stop and stop < compressed_offsets.shape[0] and stop < decompressed_offsets.shape[0]):
        raise IndexError("decode_chunks: chunk range out of bounds")
    for i in range(first, stop):  # every offset and length before anything is read
        if not (0 <= compressed_offsets[i] <= compressed_offsets[i + 1] <= payload_size
                and compressed_offsets[i + 1] - compressed_offsets[i] <= MAX_CODEC_INPUT
                and 0 <= decompressed_offsets[i] <= decompressed_offsets[i + 1]
                and decompressed_offsets[i + 1] - decompressed_offsets[i] <= MAX_CODEC_INPUT):
            raise IndexError(f"decode_chunks: chunk {i} out of bounds")
    worker.enter()
    try:
        with nogil:
            for i in range(first, stop):
                source_start = compressed_offsets[i]
                source_size = compressed_offsets[i + 1] - source_start
                source = payload_start + source_start
                start = decompressed_offsets[i]
                size = decompressed_offsets[i + 1] - start
                keep = max(0, min(size, target_size - start))
                if keep == 0 and size > 0:
                    continue  # wholly past the end of target
                if size == 0:
                    destination = empty_buffer
                elif keep == size and not hilo:
                    destination = target_start + start
                else:  # hi/lo or cut by the end of target: whole chunk to scratch first
                    destination = worker.reserve(size)
                    if destination == NULL:
                        status = ERR_NO_MEMORY
                        break
                if lz4:
                    produced = lib.LZ4_decompress_safe(<const char*>source, <char*>destination,
                                                       <int>source_size, <int>size)
                    if produced < 0:
                        status, detail = ERR_CORRUPT, produced
                        break
                    result = <size_t>produced
                else:
                    context = worker.zstd_dctx()
                    if context == NULL:
                        status = ERR_NO_MEMORY
                        break
                    result = lib.ZSTD_findFrameCompressedSize(source, source_size)
                    if lib.ZSTD_isError(result):
                        status = ERR_CORRUPT
                        break
                    if result != <size_t>source_size:
                        status = ERR_EXTRA_DATA
                        break
                    result = lib.ZSTD_decompressDCtx(context, destination, size, source, source_size)
                    if lib.ZSTD_isError(result):
                        status = ERR_CORRUPT
                        break
                if result != <size_t>size:
                    status, detail = ERR_CHUNK_SIZE, <int64_t>result
                    break
                if size == 0 or destination == target_start + start:
                    continue
                if hilo:
                    unpack_prefix(destination, target_start + start, size, keep, num_threads, stream)
                elif keep > 0:
                    memcpy(target_start + start, destination, keep)
            if stream:
                n5ms_store_fence()
    finally:
        worker.leave()
    if status == ERR_CORRUPT and not lz4:
        return status, i, lib.ZSTD_getErrorName(result).decode("ascii", "replace")
    return status, (i if status != OK else stop), detail


def encode_chunks(ChunkWorker worker, const uint8_t[::1] source, Py_ssize_t chunk_size,
                  Py_ssize_t first, Py_ssize_t stop, bint lz4, int level, bint hilo, int num_threads,
                  uint8_t[::1] block, int32_t block_index, Py_ssize_t fill,
                  int32_t[::1] block_of, int64_t[::1] offset_of, int64_t[::1] size_of):
    """Compress chunks ``first:stop`` of ``source`` (``chunk_size`` bytes each,
    the last may be shorter; empty ``source``: one empty chunk) into ``block``
    from ``fill`` on, recording block, offset and size of each.

    zstd: one frame at ``level`` with its content size; LZ4: one raw block,
    ``level`` is the acceleration. hi/lo packs each chunk first. Returns
    ``(status, next_chunk, fill, detail)``; ``STATUS_BLOCK_FULL`` stops before
    a chunk whose worst case (``detail`` bytes) does not fit.
    """
    cdef Py_ssize_t total = source.shape[0], capacity = block.shape[0]
    cdef Py_ssize_t i, begin, n, bound
    cdef int64_t detail = 0
    cdef size_t result
    cdef int status = OK
    cdef const uint8_t* chunk
    cdef uint8_t* packed
    cdef void* context
    cdef const uint8_t* source_start = &source[0] if total else empty_buffer
    cdef uint8_t* block_start = &block[0] if capacity else empty_buffer
    if not (0 < chunk_size <= MAX_CODEC_INPUT and 0 <= first <= stop and stop <= size_of.shape[0]
            and stop <= offset_of.shape[0] and stop <= block_of.shape[0] and 0 <= fill <= capacity
            and (stop == 0 or (stop - 1) * chunk_size < max(total, 1))):
        raise IndexError("encode_chunks: chunk range or block out of bounds")
    worker.enter()
    try:
        with nogil:
            for i in range(first, stop):
                begin = i * chunk_size
                n = min(chunk_size, total - begin)
                bound = lib.LZ4_compressBound(<int>n) if lz4 else <Py_ssize_t>lib.ZSTD_compressBound(n)
                if fill + bound > capacity:
                    status, detail = ERR_BLOCK_FULL, bound
                    break
                chunk = source_start + begin
                if hilo and n > 1:
                    packed = worker.reserve(n)
                    if packed == NULL:
                        status = ERR_NO_MEMORY
                        break
                    hilo_chunks(chunk, packed, n, 0, num_threads, True)
                    chunk = packed
                context = worker.lz4_compression_state() if lz4 else worker.zstd_cctx()
                if context == NULL:
                    status = ERR_NO_MEMORY
                    break
                if lz4:
                    result = <size_t>lib.LZ4_compress_fast_extState(
                        context, <const char*>chunk, <char*>(block_start + fill), <int>n, <int>bound, level)
                    if result == 0:
                        status = ERR_CORRUPT
                        break
                else:
                    result = lib.ZSTD_compressCCtx(context, block_start + fill, bound, chunk, n, level)
                    if lib.ZSTD_isError(result):
                        status = ERR_CORRUPT
                        break
                block_of[i] = block_index
                offset_of[i] = fill
                size_of[i] = <int64_t>result
                fill += <Py_ssize_t>result
    finally:
        worker.leave()
    if status == ERR_CORRUPT and not lz4:
        return status, i, fill, lib.ZSTD_getErrorName(result).decode("ascii", "replace")
    return status, (i if status != OK else stop), fill, detail
