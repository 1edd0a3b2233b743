# hi/lo packing, staging and the chunk loops (included by _chunked.pyx).

cdef enum:
    MAX_CODEC_INPUT = 0x7E000000  # LZ4_MAX_INPUT_SIZE; far above the format's chunk sizes
    SCRATCH_KEEP = 1 << 22  # a worker frees larger scratch after each call

# An empty chunk still needs a valid pointer for the libraries.
cdef uint8_t empty_buffer[1]


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
    zstd's error text or LZ4's (negative) result for ``CORRUPT``, the
    decompressed size for ``CHUNK_SIZE``.
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
                    # all frames of the chunk, skippable ones skipped, as libCZI's ZSTD_decompress
                    # reads them; bytes that are no frame are an error, output is bounded by size
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


cdef int compress_chunk(ChunkWorker worker, const uint8_t* chunk, Py_ssize_t n, bint lz4, int level, bint hilo,
                        int num_threads, uint8_t* destination, Py_ssize_t capacity, size_t* result) noexcept nogil:
    """One chunk of ``n`` bytes (hi/lo-packed into the worker's scratch first when ``hilo``)
    into ``destination`` (``capacity`` bytes, at least its compress bound): zstd, one frame at
    ``level`` with its content size; LZ4, one raw block at acceleration ``level``. Returns OK
    (``result``: the compressed size), ``NO_MEMORY`` or ``CORRUPT`` (``result``: zstd's error
    code)."""
    cdef uint8_t* packed
    cdef void* context
    if hilo and n > 1:
        packed = worker.reserve(n)
        if packed == NULL:
            return ERR_NO_MEMORY
        hilo_chunks(chunk, packed, n, 0, num_threads, True)
        chunk = packed
    context = worker.lz4_compression_state() if lz4 else worker.zstd_cctx()
    if context == NULL:
        return ERR_NO_MEMORY
    if lz4:
        result[0] = <size_t>lib.LZ4_compress_fast_extState(
            context, <const char*>chunk, <char*>destination, <int>n, <int>min(capacity, 0x7FFFFFFF), level)
        return OK if result[0] != 0 else ERR_CORRUPT
    result[0] = lib.ZSTD_compressCCtx(context, destination, capacity, chunk, n, level)
    return ERR_CORRUPT if lib.ZSTD_isError(result[0]) else OK


def encode_chunks(ChunkWorker worker, const uint8_t[::1] source, Py_ssize_t chunk_size,
                  Py_ssize_t first, Py_ssize_t stop, bint lz4, int level, bint hilo, int num_threads,
                  uint8_t[::1] block, int32_t block_index, Py_ssize_t fill,
                  int32_t[::1] block_of, int64_t[::1] offset_of, int64_t[::1] size_of):
    """Compress chunks ``first:stop`` of ``source`` (``chunk_size`` bytes each,
    the last may be shorter; empty ``source``: one empty chunk) into ``block``
    from ``fill`` on, recording block, offset and size of each.

    zstd: one frame at ``level`` with its content size; LZ4: one raw block,
    ``level`` is the acceleration. hi/lo packs each chunk first. Returns
    ``(status, next_chunk, fill, detail)``; ``BLOCK_FULL`` stops before
    a chunk whose worst case (``detail`` bytes) does not fit.
    """
    cdef Py_ssize_t total = source.shape[0], capacity = block.shape[0]
    cdef Py_ssize_t i, begin, n, bound
    cdef int64_t detail = 0
    cdef size_t result
    cdef int status = OK
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
                status = compress_chunk(worker, source_start + begin, n, lz4, level, hilo, num_threads,
                                        block_start + fill, bound, &result)
                if status != OK:
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


def encode_payload(ChunkWorker worker, const uint8_t[::1] source, Py_ssize_t chunk_size, bint lz4, int level,
                   bint hilo, int num_threads, int64_t[::1] size_of, Py_ssize_t decompressed_size,
                   Py_ssize_t last_size, int codec, int preprocessing):
    """The whole payload on one thread, each chunk compressed straight to its place in the
    result: :func:`encode_chunks` and :func:`new_payload` without staging or a final copy.

    Chunks of ``chunk_size`` bytes of ``source`` (empty: one empty chunk; ``size_of`` has a
    value per chunk and receives the compressed sizes); the header is :func:`new_payload`'s
    (``decompressed_size``, ``last_size``, ``codec``, ``preprocessing``). The chunks start
    where the largest header these chunks can need ends (every compressed size at its
    bound): where the header comes out shorter, the chunks move down to it once. Returns
    ``(status, payload, chunk, detail)``: OK with the ``bytes``, else None and
    ``CHUNK_TOO_LARGE``, ``PAYLOAD_TOO_LONG``, ``NO_MEMORY`` or ``CORRUPT`` (the chunk,
    and zstd's error text) as the two calls report them.
    """
    cdef Py_ssize_t total = source.shape[0], chunks = size_of.shape[0]
    cdef Py_ssize_t i, begin, n, bound, fill = 0, capacity = 0
    cdef Py_ssize_t sizes_length, header_bound, header_size, compressed
    cdef size_t result = 0
    cdef int status = OK
    cdef uint8_t* out
    cdef uint8_t* data
    cdef PyObject* payload
    cdef object finished
    cdef const uint8_t* source_start = &source[0] if total else empty_buffer
    if not (0 < chunk_size <= MAX_CODEC_INPUT and chunks == max(1, (total + chunk_size - 1) // chunk_size)):
        raise IndexError("encode_payload: chunk size or count out of bounds")
    check_decompressed_sizes(decompressed_size, last_size)
    # the bounds first: the header these chunks need at most, and room for every chunk's worst case
    for i in range(chunks):
        n = min(chunk_size, total - i * chunk_size)
        bound = lib.LZ4_compressBound(<int>n) if lz4 else <Py_ssize_t>lib.ZSTD_compressBound(n)
        size_of[i] = min(bound, <Py_ssize_t>MAX_VARINT_4)
        capacity += bound
    status = header_layout(&size_of[0], chunks, decompressed_size, last_size, codec, preprocessing, &sizes_length,
                           &header_bound, &compressed)
    if status != OK:
        return status, None, 0, 0
    worker.enter()
    try:
        payload = new_bytes(NULL, header_bound + capacity)
        if payload == NULL:
            raise MemoryError()
        out = <uint8_t*>PyBytes_AS_STRING(<object>payload)
        with nogil:
            if header_bound + capacity >= (1 << 22):
                n5ms_advise_huge_pages(out, header_bound + capacity)
            data = out + header_bound
            for i in range(chunks):
                begin = i * chunk_size
                n = min(chunk_size, total - begin)
                status = compress_chunk(worker, source_start + begin, n, lz4, level, hilo, num_threads, data + fill,
                                        capacity - fill, &result)
                if status != OK:
                    break
                size_of[i] = <int64_t>result
                fill += <Py_ssize_t>result
            if status == OK:
                status = header_layout(&size_of[0], chunks, decompressed_size, last_size, codec, preprocessing,
                                       &sizes_length, &header_size, &compressed)
            if status == OK:
                if header_size < header_bound:
                    memmove(out + header_size, data, fill)
                write_header(out, &size_of[0], chunks, sizes_length, decompressed_size, last_size, codec,
                             preprocessing)
    finally:
        worker.leave()
    if status != OK:
        Py_DECREF(<object>payload)
        if status == ERR_CORRUPT and not lz4:
            return status, None, i, lib.ZSTD_getErrorName(result).decode("ascii", "replace")
        return status, None, i, 0
    # shrinking in place: a large result keeps its pages (the allocator remaps, never copies them)
    resize_bytes(&payload, header_size + fill)
    finished = <object>payload
    Py_DECREF(finished)
    return OK, finished, chunks, 0
