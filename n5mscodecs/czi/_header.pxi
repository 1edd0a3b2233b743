# The chunked payload header (included by _chunked.pyx).

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
        used = read_varint(base + pos, n - pos, 3, &length)
        if used == 0:
            status = ERR_LENGTH_TRUNCATED
            break
        pos += used
        if length > n - pos:
            status = ERR_PAYLOAD_PAST_END
            break
        spans[2 * chunk_id[0]] = pos  # a repeated id replaces the earlier one, as libCZI's header walk does
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

    Returns ``(OK, (header_size, codec, preprocessing, compressed_sizes,
    decompressed_sizes, compressed_offsets, decompressed_offsets))`` with
    ``preprocessing`` -1 when absent, or ``(ERR_MALFORMED_HEADER, None)`` when
    anything is malformed: then ``czi/header.py`` walks the header step by step
    (:func:`scan_header`, :func:`read_sizes`: the same routines) to name the problem.
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
        return ERR_MALFORMED_HEADER, None
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
        return ERR_MALFORMED_HEADER, None
    return OK, (header_size, codec, preprocessing, compressed_sizes, decompressed_sizes,
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
    """Check each chunk's first zstd frame header against its declared size.

    A chunk may hold several frames (their contents add up, as zstd's
    ``ZSTD_decompress`` reads them) and skippable frames, so a first frame may
    record less than the declared size but never more; a chunk starting with a
    skippable frame and frames without a content size pass (the decoder checks
    the total). Returns ``(status, chunk_index, content_size)``;
    ``ERR_ZSTD_CONTENT_SIZE`` reports a recorded size above ``decompressed_sizes``.
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
            if avail >= 4 and (load_u32_le(&data[pos]) & 0xFFFFFFF0U) == 0x184D2A50U:
                continue  # a skippable frame first
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
            if value > decompressed_sizes[i]:
                status = ERR_ZSTD_CONTENT_SIZE
                break
    if status == OK:
        return status, chunks, 0
    return status, i, value


cdef inline Py_ssize_t decompressed_sizes_length(Py_ssize_t chunk_size, Py_ssize_t last_size) noexcept nogil:
    """The DecompressedSizes payload's length: ``[chunk_size]``, or ``[chunk_size, last_size]``
    when ``last_size >= 0``."""
    return varint_length(<uint32_t>chunk_size, 4) + (varint_length(<uint32_t>last_size, 4) if last_size >= 0 else 0)


cdef int header_layout(const int64_t* compressed_sizes, Py_ssize_t chunks, Py_ssize_t chunk_size,
                       Py_ssize_t last_size, int codec, int preprocessing, Py_ssize_t* sizes_length,
                       Py_ssize_t* header_size, Py_ssize_t* total) noexcept nogil:
    """The header's ChunkSizes length, its whole size and the compressed total for these
    sizes (decompressed sizes within the 4-byte varint maximum: checked by the callers):
    OK, ``CHUNK_TOO_LARGE`` (a compressed size above that maximum) or ``PAYLOAD_TOO_LONG``
    (ChunkSizes above its 3-byte length)."""
    cdef Py_ssize_t i, values_length
    sizes_length[0] = 0
    total[0] = 0
    for i in range(chunks):
        if not 0 <= compressed_sizes[i] <= MAX_VARINT_4:
            return ERR_CHUNK_TOO_LARGE
        sizes_length[0] += varint_length(<uint32_t>compressed_sizes[i], 4)
        total[0] += compressed_sizes[i]
    if sizes_length[0] > (1 << 22) - 1:
        return ERR_PAYLOAD_TOO_LONG
    values_length = decompressed_sizes_length(chunk_size, last_size)
    header_size[0] = (varint_length(ID_CHUNK_SIZES, 2) + varint_length(<uint32_t>sizes_length[0], 3)
                      + sizes_length[0] + varint_length(ID_DECOMPRESSED_SIZES, 2)
                      + varint_length(<uint32_t>values_length, 3) + values_length + (3 if codec != 0 else 0)
                      + (3 if preprocessing >= 0 else 0) + 1)
    return OK


cdef void write_header(uint8_t* out, const int64_t* compressed_sizes, Py_ssize_t chunks, Py_ssize_t sizes_length,
                       Py_ssize_t chunk_size, Py_ssize_t last_size, int codec, int preprocessing) noexcept nogil:
    """The header of :func:`header_layout` (which checked the values) at ``out``."""
    cdef Py_ssize_t i, pos = 0
    pos += write_varint(out + pos, ID_CHUNK_SIZES, 2)
    pos += write_varint(out + pos, <uint32_t>sizes_length, 3)
    for i in range(chunks):
        pos += write_varint(out + pos, <uint32_t>compressed_sizes[i], 4)
    pos += write_varint(out + pos, ID_DECOMPRESSED_SIZES, 2)
    pos += write_varint(out + pos, <uint32_t>decompressed_sizes_length(chunk_size, last_size), 3)
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


cdef int check_decompressed_sizes(Py_ssize_t chunk_size, Py_ssize_t last_size) except -1:
    if not (0 <= chunk_size <= MAX_VARINT_4 and last_size <= MAX_VARINT_4):
        raise ValueError("decompressed size above the varint maximum")
    return 0


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
    ``CHUNK_TOO_LARGE`` (a compressed size above the 4-byte varint
    maximum) and ``PAYLOAD_TOO_LONG`` (ChunkSizes above its 3-byte
    length) come with ``None``.
    """
    cdef Py_ssize_t chunks = compressed_sizes.shape[0], i
    cdef Py_ssize_t sizes_length, header_size, total
    cdef const int64_t* sizes = &compressed_sizes[0] if chunks else NULL
    cdef int status
    cdef object result
    cdef uint8_t* out
    if positions.shape[0] < chunks:
        raise IndexError("new_payload: positions shorter than compressed_sizes")
    check_decompressed_sizes(chunk_size, last_size)
    status = header_layout(sizes, chunks, chunk_size, last_size, codec, preprocessing, &sizes_length, &header_size,
                           &total)
    if status != OK:
        return status, None
    result = PyBytes_FromStringAndSize(NULL, header_size + total)
    out = <uint8_t*>PyBytes_AS_STRING(result)
    with nogil:
        if header_size + total >= (1 << 22):
            n5ms_advise_huge_pages(out, header_size + total)
        write_header(out, sizes, chunks, sizes_length, chunk_size, last_size, codec, preprocessing)
        for i in range(chunks):
            positions[i] = header_size
            header_size += compressed_sizes[i]
    return OK, result
