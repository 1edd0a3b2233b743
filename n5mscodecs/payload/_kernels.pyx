# cython: freethreading_compatible = True
"""Kernels for label multiset payloads (N5 legacy and zarr-native layouts): list
data scanning and splitting, offset tables (big- or little-endian) and writing.

Everything here runs without the GIL and reports problems only as ``Status``
codes; ``payload/layout.py`` validates arguments, chooses layouts and raises.
"""

from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from libc.string cimport memcpy

from n5mscodecs._bytes cimport load_u32_be, load_u32_le, load_u64_le, load_u64_raw, store_u32_be, store_u32_le, store_u64_le
from n5mscodecs._status cimport ERR_ENTRIES_PAST_END, ERR_NO_MEMORY, ERR_TRUNCATED_COUNT, OK
from n5mscodecs.multiset._argmax cimport n5ms_have_avx2
from n5mscodecs.multiset._numbering cimport LabelNumbering, number_of, numbering_free, numbering_init, copy_unique

import numpy as np

cdef extern from *:
    """
    /* Builds for any x86-64 have no popcnt instruction; the builtin is then a libgcc call,
       slower than these few instructions. */
    #if defined(__POPCNT__) || defined(__ARM_NEON) || defined(__aarch64__)
    static inline int n5ms_popcount64(unsigned long long x) { return __builtin_popcountll(x); }
    #else
    static inline int n5ms_popcount64(unsigned long long x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    #endif
    """
    int n5ms_popcount64(unsigned long long x) nogil

cdef extern from *:
    """
    /* The walk of scan_list_data (lists must tile the list data), in C so that it exists
       twice: as is, and compiled for AVX2 with the AVX2 argmax groups inlined. Returns 0,
       1 (fewer than 4 bytes for numEntries at *position) or 2 (numEntries runs past the
       data); *position, *lists and *entries tell how far it got. */
    #define N5MS_SCAN_WALK(name, target, argmax_of_list_data) \
        target static int name(const uint8_t* data, int64_t size, uint64_t* start_bits, uint64_t* label_of_list, \
                               int64_t capacity, int64_t* position, int64_t* lists, int64_t* entries) { \
            int64_t pos = 0, n_lists = 0, n_entries = 0; \
            int status = 0; \
            while (pos < size) { \
                uint64_t n; \
                if (size - pos < 4) { status = 1; break; } \
                n = n5ms_load_u32_le(data + pos); \
                if (n > (uint64_t)((size - pos - 4) / 12)) { status = 2; break; } \
                if (start_bits) start_bits[pos >> 8] |= 1ULL << ((pos >> 2) & 63); \
                if (n_lists < capacity) \
                    label_of_list[n_lists] = argmax_of_list_data(data + pos + 4, n, (uint64_t)(size - pos - 4)); \
                n_lists++; \
                n_entries += (int64_t)n; \
                pos += 4 + 12 * (int64_t)n; \
            } \
            *position = pos; *lists = n_lists; *entries = n_entries; \
            return status; \
        }
    N5MS_SCAN_WALK(n5ms_scan_walk, , n5ms_argmax_of_list_data)
    #if N5MS_AVX2
    N5MS_SCAN_WALK(n5ms_scan_walk_avx2, N5MS_AVX2_TARGET, n5ms_argmax_of_list_data_avx2)
    #else
    #define n5ms_scan_walk_avx2 n5ms_scan_walk
    #endif
    """
    int n5ms_scan_walk(const uint8_t* data, int64_t size, uint64_t* start_bits, uint64_t* label_of_list,
                       int64_t capacity, int64_t* position, int64_t* lists, int64_t* entries) nogil
    int n5ms_scan_walk_avx2(const uint8_t* data, int64_t size, uint64_t* start_bits, uint64_t* label_of_list,
                            int64_t capacity, int64_t* position, int64_t* lists, int64_t* entries) nogil

#: Whether this CPU runs the AVX2 argmax groups (``simd=False`` forces the portable code).
HAVE_AVX2 = bool(n5ms_have_avx2())


ctypedef fused index_t:
    int32_t
    int64_t

# OpenMP only pays off on large inputs (see multiset/_kernels.pyx); blocks below
# this size run on the calling thread.
DEF PARALLEL_VOXELS = 1048576


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------

DEF LABEL_RUN = 4096  # voxels per task of labels_of_voxels and map_voxel_offsets (a run cache per task)
# no offset: tables hold 32-bit values (BE ones sign-extended, so >= 2**64 - 2**31)
DEF NO_OFFSET = 1ULL << 63
DEF RECENT_LISTS = 16

# List starts are indexed by a bitmap over the 4-byte words of the list data
# (lists are 4 + 12 n bytes, so every start is a word) and, per 64-word group, the
# number of starts before it: the list number of a start is a rank query. That is
# 1/32 of the list data in size (it stays in the caches and is cheap to zero),
# where a table with one slot per word was as large as the list data itself.

def list_start_words(Py_ssize_t list_data_size):
    """The length of the ``start_bits`` and ``rank`` arrays for ``list_data_size`` bytes."""
    return list_data_size // 256 + 1


cdef inline bint is_list_start(const uint64_t* start_bits, uint64_t word) noexcept nogil:
    return (start_bits[word >> 6] >> (word & 63)) & 1


cdef inline int64_t list_number(const uint64_t* start_bits, const int64_t* rank, uint64_t word) noexcept nogil:
    """The number of the list starting at ``word`` (which must be a start)."""
    return rank[word >> 6] + n5ms_popcount64(start_bits[word >> 6] & ((1ULL << (word & 63)) - 1))


cdef struct ListIndex:
    const uint8_t* list_data
    const uint64_t* start_bits
    const int64_t* rank
    uint64_t size  # of the list data
    # The list after the furthest one found so far. Writers lay lists out in
    # first-encounter order along the voxels, so a voxel's new list is almost
    # always this one: found with a compare, no rank query.
    uint64_t next_offset
    int64_t next_number
    # Lists found by a rank query, by offset / 16 (a singleton list's size): voxels
    # go back to a few lists again and again (the next row of the same cells).
    uint64_t recent_offset[RECENT_LISTS]
    int64_t recent_number[RECENT_LISTS]


cdef inline ListIndex list_index(const uint8_t* list_data, uint64_t size, const uint64_t* start_bits,
                                 const int64_t* rank) noexcept nogil:
    cdef ListIndex index
    cdef int k
    index.list_data, index.size, index.start_bits, index.rank = list_data, size, start_bits, rank
    index.next_offset, index.next_number = 0, 0
    for k in range(RECENT_LISTS):
        index.recent_offset[k] = NO_OFFSET
    return index


cdef inline bint list_of_offset(ListIndex* index, uint64_t offset, int64_t* number) noexcept nogil:
    """The list number of byte ``offset`` into ``number``; False unless a list starts there."""
    cdef int slot = (offset >> 4) & (RECENT_LISTS - 1)
    if offset == index.recent_offset[slot]:  # never true for NO_OFFSET: offsets are below 2**63
        number[0] = index.recent_number[slot]
        return True
    if offset >= index.size:
        return False
    if offset == index.next_offset:
        number[0] = index.next_number
    elif (offset & 3) != 0 or not is_list_start(index.start_bits, offset >> 2):
        return False
    else:
        number[0] = list_number(index.start_bits, index.rank, offset >> 2)
        index.recent_offset[slot], index.recent_number[slot] = offset, number[0]
        if number[0] < index.next_number:
            return True
    index.next_number = number[0] + 1
    index.next_offset = offset + 4 + 12 * <uint64_t>load_u32_le(&index.list_data[offset])
    return True


def scan_list_data(const uint8_t[::1] list_data, uint64_t[::1] start_bits=None, int64_t[::1] rank=None,
                   uint64_t[::1] label_of_list=None, bint simd=True):
    """Walk the list data once; lists must tile it exactly.

    With ``start_bits`` (zero-filled) and ``rank``, both of
    ``list_start_words(list_data.size)`` values, also index the list starts
    for ``map_voxel_offsets`` and ``labels_of_voxels``. With ``label_of_list``,
    also store the argmax of the first ``len(label_of_list)`` lists, in stored
    order (highest count, ties to the smaller unsigned id, empty list INVALID:
    the rule of ``argmax_of_lists``), in the same pass (with AVX2 where the CPU
    has it, unless ``simd`` is False).
    Returns ``(status, position, n_lists, n_entries)``; ``position`` is the
    byte offset of the first list that does not fit when ``status != 0``.
    """
    cdef Py_ssize_t size = list_data.shape[0], g, groups = size // 256 + 1
    cdef Py_ssize_t capacity = label_of_list.shape[0] if label_of_list is not None else 0
    cdef int64_t pos = 0, n_lists = 0, n_entries = 0
    cdef uint64_t n
    cdef int walk
    cdef bint index = start_bits is not None
    cdef uint64_t* bits = &start_bits[0] if index else NULL
    cdef uint64_t* labels = &label_of_list[0] if capacity else NULL
    cdef const uint8_t* data = &list_data[0] if size else NULL
    cdef bint avx2 = simd and HAVE_AVX2
    if index and (rank is None or start_bits.shape[0] < groups or rank.shape[0] < groups):
        raise ValueError("scan_list_data: start_bits and rank need list_start_words(size) values")
    with nogil:
        if avx2:
            walk = n5ms_scan_walk_avx2(data, size, bits, labels, capacity, &pos, &n_lists, &n_entries)
        else:
            walk = n5ms_scan_walk(data, size, bits, labels, capacity, &pos, &n_lists, &n_entries)
        if index:
            n = 0
            for g in range(groups):
                rank[g] = <int64_t>n
                n += n5ms_popcount64(start_bits[g])
    status = (OK, ERR_TRUNCATED_COUNT, ERR_ENTRIES_PAST_END)[walk]
    return status, pos, n_lists, n_entries


def split_list_data(const uint8_t[::1] list_data, int64_t[::1] list_offsets,
                    uint64_t[::1] ids, uint32_t[::1] counts):
    """Fill the CSR arrays from list data already validated by ``scan_list_data``.

    ``ids`` and ``counts`` may be longer than the entries: a list of up to 8 entries is
    then copied as 8 (the ones past it overwritten by the next list or left in the
    slack), so that a list costs no loop exit, mispredicted on most lists of real data.
    """
    cdef Py_ssize_t size = list_data.shape[0], capacity = min(ids.shape[0], counts.shape[0])
    cdef Py_ssize_t pos = 0, lst = 0, e = 0, j
    cdef uint32_t n
    with nogil:
        list_offsets[0] = 0
        while pos < size:
            n = load_u32_le(&list_data[pos])
            pos += 4
            if n <= 8 and size - pos >= 96 and capacity - e >= 8:
                for j in range(8):
                    ids[e + j] = load_u64_le(&list_data[pos + 12 * j])
                    counts[e + j] = load_u32_le(&list_data[pos + 12 * j + 8])
                pos += 12 * <Py_ssize_t>n
                e += n
            else:
                for j in range(n):
                    ids[e] = load_u64_le(&list_data[pos])
                    counts[e] = load_u32_le(&list_data[pos + 8])
                    pos += 12
                    e += 1
            lst += 1
            list_offsets[lst] = e


cdef inline uint64_t voxel_offset(const uint8_t* table, Py_ssize_t v, bint big_endian) noexcept nogil:
    """Table entry ``v``. Java writes signed int32 offsets: a negative one is sign-extended to a
    huge unsigned value and fails the range check, like one past the end."""
    if big_endian:
        return <uint64_t><int64_t><int32_t>load_u32_be(&table[4 * v])
    return load_u32_le(&table[4 * v])


cdef inline uint64_t doubled_word(const uint8_t* table, Py_ssize_t v) noexcept nogil:
    """Table entry ``v``'s raw 32-bit word twice, as ``four_repeat`` compares it."""
    cdef uint8_t word_twice[8]
    memcpy(word_twice, &table[4 * v], 4)
    memcpy(&word_twice[4], &table[4 * v], 4)
    return load_u64_raw(word_twice)


cdef inline bint four_repeat(const uint8_t* table, Py_ssize_t v, Py_ssize_t stop, uint64_t pair) noexcept nogil:
    """Whether table entries ``v:v + 4`` all exist and are the word doubled in ``pair``."""
    return v + 4 <= stop and load_u64_raw(&table[4 * v]) == pair and load_u64_raw(&table[4 * v + 8]) == pair


# Segmentations hold long runs of voxels on one list. Once a voxel repeats the offset
# before it, the run is taken four voxels (two 8-byte compares) at a time; voxels that
# each have their own list never pay for that test.

cdef inline Py_ssize_t lists_in_order(const uint8_t* table, bint big_endian, Py_ssize_t start, Py_ssize_t stop,
                                      ListIndex lists, int32_t* index) noexcept nogil:
    """List numbers of voxels ``start:stop`` (-1 for a bad offset); returns the number of bad
    offsets. Neighbours mostly share a list, so a repeated offset is not looked up again."""
    cdef Py_ssize_t v = start, bad = 0
    cdef uint64_t offset, last_offset = NO_OFFSET, pair
    cdef int64_t number = -1
    while v < stop:
        offset = voxel_offset(table, v, big_endian)
        if offset == last_offset:  # never after a bad offset: last_offset is NO_OFFSET then
            pair = doubled_word(table, v)
            index[v] = <int32_t>number
            v += 1
            while four_repeat(table, v, stop, pair):
                index[v] = index[v + 1] = index[v + 2] = index[v + 3] = <int32_t>number
                v += 4
            continue
        last_offset = offset
        if not list_of_offset(&lists, offset, &number):
            number, last_offset = -1, NO_OFFSET
            bad += 1
        index[v] = <int32_t>number
        v += 1
    return bad


cdef Py_ssize_t lists_of_run(const uint8_t* table, bint big_endian, Py_ssize_t start, Py_ssize_t stop,
                             ListIndex lists, int32_t* index) noexcept nogil:
    # one loop per byte order (a constant there): no per-voxel test of it
    if big_endian:
        return lists_in_order(table, True, start, stop, lists, index)
    return lists_in_order(table, False, start, stop, lists, index)


def map_voxel_offsets(const uint8_t[::1] table, bint big_endian, const uint8_t[::1] list_data,
                      const uint64_t[::1] start_bits, const int64_t[::1] rank, int32_t[::1] index, int num_threads):
    """Translate each voxel's byte offset into its list number (through the list-start
    index of ``scan_list_data`` over ``list_data``).

    Bad offsets (negative, past the list data, not a list start) give index -1.
    Returns the number of bad voxels.
    """
    cdef Py_ssize_t n_voxels = index.shape[0]
    cdef Py_ssize_t n_runs = (n_voxels + LABEL_RUN - 1) // LABEL_RUN
    cdef Py_ssize_t r, bad = 0
    cdef ListIndex lists = list_index(&list_data[0] if list_data.shape[0] else NULL, list_data.shape[0],
                                      &start_bits[0], &rank[0])
    for r in prange(n_runs, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_voxels > PARALLEL_VOXELS):
        bad += lists_of_run(&table[0], big_endian, r * LABEL_RUN, min((r + 1) * LABEL_RUN, n_voxels),
                            lists, &index[0])
    return bad


cdef uint64_t INVALID = 0xFFFFFFFFFFFFFFFEULL


cdef Py_ssize_t labels_of_run(const uint8_t* table, bint big_endian, Py_ssize_t start, Py_ssize_t stop,
                              const uint64_t* label_of_list, ListIndex lists, uint64_t* out) noexcept nogil:
    """Labels of voxels ``start:stop`` in table order into ``out[0:stop - start]``; returns the
    number of bad offsets."""
    if big_endian:
        return labels_in_order(table, True, start, stop, label_of_list, lists, out)
    return labels_in_order(table, False, start, stop, label_of_list, lists, out)


cdef inline Py_ssize_t labels_in_order(const uint8_t* table, bint big_endian, Py_ssize_t start, Py_ssize_t stop,
                                       const uint64_t* label_of_list, ListIndex lists, uint64_t* out) noexcept nogil:
    """``labels_of_run`` with the byte order a constant; a bad offset gives label 0."""
    cdef Py_ssize_t v = start, bad = 0
    cdef uint64_t offset, last_offset = NO_OFFSET, pair, label = 0
    cdef int64_t number
    cdef uint64_t* at
    while v < stop:
        offset = voxel_offset(table, v, big_endian)
        if offset == last_offset:  # a run (see lists_in_order)
            pair = doubled_word(table, v)
            out[v - start] = label
            v += 1
            while four_repeat(table, v, stop, pair):
                at = &out[v - start]
                at[0] = at[1] = at[2] = at[3] = label
                v += 4
            continue
        last_offset = offset
        if list_of_offset(&lists, offset, &number):
            label = label_of_list[number]
        else:
            label, last_offset = 0, NO_OFFSET
            bad += 1
        out[v - start] = label
        v += 1
    return bad


def labels_of_voxels(const uint8_t[::1] table, bint big_endian, const uint64_t[::1] label_of_list,
                     const uint8_t[::1] list_data, const uint64_t[::1] start_bits, const int64_t[::1] rank,
                     uint64_t[::1] out, int num_threads):
    """Each voxel's list argmax (``label_of_list`` and the list index from ``scan_list_data``)
    in table order.

    Bad offsets (negative, past the list data, not a list start) give 0;
    returns their number (the caller raises naming the first one).
    """
    cdef Py_ssize_t n_voxels = out.shape[0]
    cdef Py_ssize_t n_runs = (n_voxels + LABEL_RUN - 1) // LABEL_RUN
    cdef Py_ssize_t r, bad = 0
    cdef ListIndex lists = list_index(&list_data[0] if list_data.shape[0] else NULL, list_data.shape[0],
                                      &start_bits[0], &rank[0])
    for r in prange(n_runs, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_voxels > PARALLEL_VOXELS):
        bad += labels_of_run(&table[0], big_endian, r * LABEL_RUN, min((r + 1) * LABEL_RUN, n_voxels),
                             &label_of_list[0], lists, &out[r * LABEL_RUN])
    return bad


def encode_singleton_offsets(const uint64_t[::1] labels, uint8_t[::1] table, bint big_endian):
    """Offset table of a singleton payload, written straight into ``table``.

    Every list is ``{label: 1}`` (16 bytes) in first-encounter order, so the
    offset of a voxel is 16 x its label's number. Returns ``(status, the
    distinct labels)``; the labels are None unless status is OK.
    """
    cdef Py_ssize_t n = labels.shape[0]
    cdef Py_ssize_t v
    cdef int64_t number = 0
    cdef LabelNumbering numbering
    if numbering_init(&numbering) != OK:
        return ERR_NO_MEMORY, None
    with nogil:
        for v in range(n):
            number = number_of(&numbering, labels[v])
            if number < 0:
                break
            if big_endian:
                store_u32_be(&table[4 * v], <uint32_t>(16 * number))
            else:
                store_u32_le(&table[4 * v], <uint32_t>(16 * number))
    unique = np.empty(numbering.n_unique, np.uint64) if number >= 0 else None
    if unique is not None:
        copy_unique(&numbering, unique)
    numbering_free(&numbering)
    return (OK if number >= 0 else ERR_NO_MEMORY), unique


# ---------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------

def assign_list_positions(const index_t[::1] index, const int64_t[::1] representative,
                          const int64_t[::1] list_offsets, int64_t[::1] byte_position,
                          int64_t[::1] write_order):
    """Lay out lists in first-encounter order over ``index`` (Java's order).

    ``byte_position[list]`` (pre-filled with -1) receives the list-data offset
    of each representative list that is used; every other list gets its
    representative's offset. ``write_order`` receives the representatives in
    layout order. Returns ``(n_written, list_data_size)``.
    """
    cdef Py_ssize_t n_voxels = index.shape[0]
    cdef Py_ssize_t n_lists = representative.shape[0]
    cdef Py_ssize_t v, i, r, n_written = 0
    cdef int64_t next_position = 0
    cdef int64_t last = -1
    with nogil:
        for v in range(n_voxels):
            i = index[v]
            if i == last:
                continue
            last = i
            r = representative[i]
            if byte_position[r] < 0:
                byte_position[r] = next_position
                next_position += 4 + 12 * (list_offsets[r + 1] - list_offsets[r])
                write_order[n_written] = r
                n_written += 1
        for i in range(n_lists):
            byte_position[i] = byte_position[representative[i]]
    return n_written, next_position


def write_voxel_offsets(uint8_t[::1] out, Py_ssize_t start, const index_t[::1] index,
                        const int64_t[::1] byte_position, bint big_endian, int num_threads):
    """Write one 32-bit list offset per voxel at ``out[start:]``."""
    cdef Py_ssize_t n_voxels = index.shape[0]
    cdef Py_ssize_t v
    cdef uint32_t position
    for v in prange(n_voxels, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_voxels > PARALLEL_VOXELS):
        position = <uint32_t>byte_position[index[v]]
        if big_endian:
            store_u32_be(&out[start + 4 * v], position)
        else:
            store_u32_le(&out[start + 4 * v], position)


def write_lists(uint8_t[::1] out, Py_ssize_t start, const int64_t[::1] write_order,
                const int64_t[::1] list_offsets, const uint64_t[::1] ids,
                const uint32_t[::1] counts):
    """Append the lists named in ``write_order`` as little-endian list data."""
    cdef Py_ssize_t n = write_order.shape[0]
    cdef Py_ssize_t k, e, r
    cdef Py_ssize_t pos = start
    with nogil:
        for k in range(n):
            r = write_order[k]
            store_u32_le(&out[pos], <uint32_t>(list_offsets[r + 1] - list_offsets[r]))
            pos += 4
            for e in range(list_offsets[r], list_offsets[r + 1]):
                store_u64_le(&out[pos], ids[e])
                store_u32_le(&out[pos + 8], counts[e])
                pos += 12
    return pos


ctypedef fused voxel_t:
    int32_t
    int64_t
    uint64_t


DEF TILE = 8


def c_order_copy_3d(const voxel_t[:, :, :] src, voxel_t[::1] dst, int num_threads):
    """``dst`` = C-order flattening of the strided 3-D ``src``.

    Used for N5 payload order (``array.T`` of a C-ordered array), a swap of
    the first and last axes. Both have power-of-two strides in real volumes,
    so a naive copy thrashes cache sets and the TLB; instead each 8 x 8
    tile of (first, last) is walked along the middle axis, reading and
    writing whole 64-byte lines.
    """
    cdef Py_ssize_t n0 = src.shape[0], n1 = src.shape[1], n2 = src.shape[2]
    cdef Py_ssize_t a0, c0, a, b, c, a_end, c_end
    for a0 in prange(0, n0, TILE, nogil=True, schedule="static", num_threads=num_threads,
                     use_threads_if=n0 * n1 * n2 > PARALLEL_VOXELS):
        a_end = min(a0 + TILE, n0)
        for c0 in range(0, n2, TILE):
            c_end = min(c0 + TILE, n2)
            for b in range(n1):
                for a in range(a0, a_end):
                    for c in range(c0, c_end):
                        dst[(a * n1 + b) * n2 + c] = src[a, b, c]




# A slab's planes are this many values apart beyond their size: real blocks have
# power-of-two planes, and columns read 2^k bytes apart all fall in one cache set.
DEF SLAB_PAD = 8


def c_order_slab_values(Py_ssize_t n0, Py_ssize_t n1, int num_threads):
    """The length of the ``slabs`` scratch of ``labels_of_voxels_c_order``."""
    return max(num_threads, 1) * TILE * (n0 * n1 + SLAB_PAD)


cdef void slab_to_c_order(const uint64_t* slab, Py_ssize_t c0, Py_ssize_t c_end, Py_ssize_t n0, Py_ssize_t n1,
                          Py_ssize_t n2, uint64_t* out) noexcept nogil:
    """Write the labels of table planes ``c0 <= c < c_end`` (``slab``, one plane per
    ``n0 * n1 + SLAB_PAD`` values) to their places in the C-order ``out``: up to 8
    consecutive values (one cache line) per (a, b)."""
    cdef Py_ssize_t a, b, c, plane = n0 * n1 + SLAB_PAD, width = c_end - c0
    cdef uint64_t* line
    cdef const uint64_t* column
    if width == TILE:  # all but the last slab of a block: a constant trip count, unrolled
        for a in range(n0):
            for b in range(n1):
                line = &out[(a * n1 + b) * n2 + c0]
                column = &slab[a + n0 * b]
                line[0], line[1], line[2], line[3] = column[0], column[plane], column[2 * plane], column[3 * plane]
                line[4], line[5], line[6], line[7] = (column[4 * plane], column[5 * plane], column[6 * plane],
                                                      column[7 * plane])
        return
    for a in range(n0):
        for b in range(n1):
            line = &out[(a * n1 + b) * n2 + c0]
            column = &slab[a + n0 * b]
            for c in range(width):
                line[c] = column[c * plane]


def labels_of_voxels_c_order(const uint8_t[::1] table, bint big_endian, const uint64_t[::1] label_of_list,
                             const uint8_t[::1] list_data, const uint64_t[::1] start_bits, const int64_t[::1] rank,
                             uint64_t[::1] out, Py_ssize_t n0, Py_ssize_t n1, Py_ssize_t n2, uint64_t[::1] slabs,
                             int num_threads):
    """``labels_of_voxels`` of a 3-D first-axis-fastest table (N5), written in C order of shape
    ``(n0, n1, n2)``. Returns the number of bad offsets.

    The table is looked up in its own order (neighbours share lists, and new lists come in
    stored order: the cheap cases of ``list_of_offset``), 8 planes of the last axis at a
    time into a slab that stays in the caches (``slabs``: ``c_order_slab_values`` values,
    one slab per thread), and each slab is then written out a cache line at a time.
    """
    cdef Py_ssize_t c0, c, bad = 0, plane = n0 * n1, slab_values = TILE * (n0 * n1 + SLAB_PAD)
    cdef ListIndex lists = list_index(&list_data[0] if list_data.shape[0] else NULL, list_data.shape[0],
                                      &start_bits[0], &rank[0])
    cdef uint64_t* slab
    if n0 * n1 * n2 == 0:
        return 0
    if slabs.shape[0] < max(num_threads, 1) * slab_values:
        raise ValueError("labels_of_voxels_c_order: slabs needs c_order_slab_values(n0, n1, num_threads) values")
    for c0 in prange(0, n2, TILE, nogil=True, schedule="static", num_threads=num_threads,
                     use_threads_if=n0 * n1 * n2 > PARALLEL_VOXELS):
        slab = &slabs[threadid() * slab_values]
        for c in range(c0, min(c0 + TILE, n2)):
            bad += labels_of_run(&table[0], big_endian, plane * c, plane * (c + 1), &label_of_list[0], lists,
                                 &slab[(c - c0) * (plane + SLAB_PAD)])
        slab_to_c_order(slab, c0, min(c0 + TILE, n2), n0, n1, n2, &out[0])
    return bad
