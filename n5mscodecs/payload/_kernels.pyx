# cython: freethreading_compatible = True
"""Kernels for label multiset payloads (N5 legacy and zarr-native layouts): list
data scanning and splitting, offset tables (big- or little-endian) and writing.

Everything here runs without the GIL and reports problems only as ``Status``
codes; ``payload/layout.py`` validates arguments, chooses layouts and raises.
"""

from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from n5mscodecs._bytes cimport load_u32_le, load_u64_le, store_u32_be, store_u32_le, store_u64_le
from n5mscodecs._status cimport ERR_ENTRIES_PAST_END, ERR_NO_MEMORY, ERR_TRUNCATED_COUNT, OK
from n5mscodecs.multiset._argmax cimport n5ms_have_avx2
from n5mscodecs.multiset._numbering cimport LabelNumbering, number_of, numbering_free, numbering_init, copy_unique

import numpy as np

cdef extern from *:
    """
    /* Builds for any x86-64 have no popcnt instruction; the builtin is then a libgcc call,
       slower than these few instructions. The kernels that count bits exist twice, the
       second compiled for the instruction (x86-64 with gcc or clang) and chosen at run time. */
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
    #if !defined(__POPCNT__) && (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    #define N5MS_POPCNT_TWINS 1
    #define N5MS_POPCNT_TARGET __attribute__((target("popcnt")))
    static inline int n5ms_have_popcnt(void) { __builtin_cpu_init(); return __builtin_cpu_supports("popcnt"); }
    #else
    #define N5MS_POPCNT_TWINS 0
    static inline int n5ms_have_popcnt(void) { return 0; }
    #endif

    /* The walk of scan_list_data (lists must tile the list data), in C so that it exists
       twice: as is, and compiled for AVX2 (and popcnt) with the AVX2 argmax groups inlined.
       With start_bits, also sets a bit per list start and fills rank (the starts before each
       64 words). Returns 0, 1 (fewer than 4 bytes for numEntries at *position) or 2
       (numEntries runs past the data); *position, *lists and *entries tell how far it got. */
    #define N5MS_SCAN_WALK(name, target, argmax_of_list_data, popcount) \
        target static int name(const uint8_t* data, int64_t size, uint64_t* start_bits, int64_t* rank, \
                               uint64_t* label_of_list, int64_t capacity, int64_t* position, int64_t* lists, \
                               int64_t* entries) { \
            int64_t pos = 0, n_lists = 0, n_entries = 0, starts = 0; \
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
            if (start_bits) \
                for (int64_t g = 0; g <= size / 256; g++) { \
                    rank[g] = starts; \
                    starts += popcount(start_bits[g]); \
                } \
            *position = pos; *lists = n_lists; *entries = n_entries; \
            return status; \
        }
    N5MS_SCAN_WALK(n5ms_scan_walk, , n5ms_argmax_of_list_data, n5ms_popcount64)
    #if N5MS_AVX2
    N5MS_SCAN_WALK(n5ms_scan_walk_avx2, __attribute__((target("avx2,popcnt"))), n5ms_argmax_of_list_data_avx2,
                   __builtin_popcountll)
    #else
    #define n5ms_scan_walk_avx2 n5ms_scan_walk
    #endif

    /* The list split (split_list_data), twice like the walk: a list of up to 8 entries
       (16: two groups) is copied as 8 (16) into arrays with that much slack, so that a
       list costs no loop exit, mispredicted on most lists of real data; in AVX2 a group
       is three loads, the shuffles of the argmax groups and three stores. With start_bits
       (zeroed), also the list-start index of the scan walk: decoding to elements then
       walks the chain of list lengths once. Returns the number of lists, -1 when the data
       does not tile or does not fit the arrays. */
    static inline void n5ms_copy_group(const uint8_t* p, uint64_t* ids, uint32_t* counts) {
        for (int j = 0; j < 8; j++) {
            ids[j] = n5ms_load_u64_le(p + 12 * j);
            counts[j] = n5ms_load_u32_le(p + 12 * j + 8);
        }
    }
    #define N5MS_SPLIT_WALK(name, target, copy_group, popcount) \
        target static int64_t name(const uint8_t* data, int64_t size, int64_t* list_offsets, int64_t max_lists, \
                                   uint64_t* ids, uint32_t* counts, int64_t capacity, uint64_t* start_bits, \
                                   int64_t* rank) { \
            int64_t pos = 0, lists = 0, e = 0, n, starts = 0; \
            list_offsets[0] = 0; \
            while (pos < size) { \
                if (size - pos < 4 || lists == max_lists) return -1; \
                n = (int64_t)n5ms_load_u32_le(data + pos); \
                if (start_bits) start_bits[pos >> 8] |= 1ULL << ((pos >> 2) & 63); \
                pos += 4; \
                if (n > (size - pos) / 12 || n > capacity - e) return -1; \
                if (n <= 8 && size - pos >= 96 && capacity - e >= 8) { \
                    copy_group(data + pos, ids + e, counts + e); \
                } else if (n <= 16 && size - pos >= 192 && capacity - e >= 16) { \
                    copy_group(data + pos, ids + e, counts + e); \
                    copy_group(data + pos + 96, ids + e + 8, counts + e + 8); \
                } else { \
                    for (int64_t j = 0; j < n; j++) { \
                        ids[e + j] = n5ms_load_u64_le(data + pos + 12 * j); \
                        counts[e + j] = n5ms_load_u32_le(data + pos + 12 * j + 8); \
                    } \
                } \
                pos += 12 * n; \
                e += n; \
                list_offsets[++lists] = e; \
            } \
            if (start_bits) \
                for (int64_t g = 0; g <= size / 256; g++) { \
                    rank[g] = starts; \
                    starts += popcount(start_bits[g]); \
                } \
            return lists; \
        }
    N5MS_SPLIT_WALK(n5ms_split_walk, , n5ms_copy_group, n5ms_popcount64)
    #if N5MS_AVX2
    N5MS_AVX2_INLINE void n5ms_copy_group_avx2(const uint8_t* p, uint64_t* ids, uint32_t* counts) {
        __m256i low, high;
        n5ms_list_ids_avx2(p, &low, &high);
        _mm256_storeu_si256((__m256i*)ids, low);
        _mm256_storeu_si256((__m256i*)(ids + 4), high);
        _mm256_storeu_si256((__m256i*)counts, n5ms_list_counts_avx2(p));
    }
    N5MS_SPLIT_WALK(n5ms_split_walk_avx2, __attribute__((target("avx2,popcnt"))), n5ms_copy_group_avx2,
                    __builtin_popcountll)
    #else
    #define n5ms_split_walk_avx2 n5ms_split_walk
    #endif

    /* Voxel lookups. A voxel's offset names its list by the list's first byte; the list's
       number is the rank of that start among all starts (start_bits and rank), taken for
       every voxel that does not repeat the one before: with a popcount instruction that is
       a few instructions, where guessing the next list (the one after the last, or a recent
       one) and checking the guess mispredicts on real blocks, whose voxels go back to
       earlier lists in no learnable order (one voxel in nine of the Java blocks; 1.4x
       faster on them). -1: no list starts at `offset`. */
    #define N5MS_NO_OFFSET (1ULL << 63)
    #define N5MS_LIST_OF_OFFSET(name, target, popcount) \
        target static inline int64_t name(const uint64_t* start_bits, const int64_t* rank, uint64_t size, \
                                          uint64_t offset) { \
            uint64_t word = offset >> 2, bits; \
            if (offset >= size || (offset & 3)) return -1; \
            bits = start_bits[word >> 6]; \
            if (!((bits >> (word & 63)) & 1)) return -1; \
            return rank[word >> 6] + popcount(bits & ((1ULL << (word & 63)) - 1)); \
        }
    /* Table entry v. Java writes signed int32 offsets: a negative one is sign-extended to a
       huge unsigned value and fails the range check, like one past the end. */
    static inline uint64_t n5ms_voxel_offset(const uint8_t* table, int64_t v, int big_endian) {
        return big_endian ? (uint64_t)(int64_t)(int32_t)n5ms_load_u32_be(table + 4 * v) : n5ms_load_u32_le(table + 4 * v);
    }
    /* Voxels [start, stop) into out[0:stop - start]: value_of(list number), or bad_value
       (counted) where no list starts. Segmentations hold long runs of voxels on one list:
       a voxel that repeats the offset before it is not looked up, and the run goes on four
       voxels (two 8-byte compares of the raw table) at a time. */
    #define N5MS_LOOKUP_RUN(name, target, list_of_offset, big_endian, out_t, value_of, bad_value) \
        target static int64_t name(const uint8_t* table, int64_t start, int64_t stop, const uint64_t* start_bits, \
                                   const int64_t* rank, uint64_t size, const uint64_t* label_of_list, out_t* out) { \
            int64_t v = start, bad = 0, number; \
            uint64_t offset, last_offset = N5MS_NO_OFFSET, pair; \
            out_t value = bad_value; \
            (void)label_of_list; \
            while (v < stop) { \
                offset = n5ms_voxel_offset(table, v, big_endian); \
                if (offset == last_offset) { \
                    memcpy(&pair, table + 4 * v, 4); \
                    memcpy((uint8_t*)&pair + 4, table + 4 * v, 4); \
                    out[v++ - start] = value; \
                    while (v + 4 <= stop && n5ms_load_u64_raw(table + 4 * v) == pair \
                           && n5ms_load_u64_raw(table + 4 * v + 8) == pair) { \
                        out[v - start] = out[v + 1 - start] = out[v + 2 - start] = out[v + 3 - start] = value; \
                        v += 4; \
                    } \
                    continue; \
                } \
                number = list_of_offset(start_bits, rank, size, offset); \
                if (number >= 0) { value = value_of(number); last_offset = offset; } \
                else { value = bad_value; last_offset = N5MS_NO_OFFSET; bad++; } \
                out[v++ - start] = value; \
            } \
            return bad; \
        }
    #define N5MS_LABEL_OF_LIST(number) label_of_list[number]
    #define N5MS_NUMBER_OF_LIST(number) ((int32_t)(number))
    #define N5MS_LOOKUPS(suffix, target, popcount) \
        N5MS_LIST_OF_OFFSET(n5ms_list_of_offset##suffix, target, popcount) \
        N5MS_LOOKUP_RUN(n5ms_labels_be##suffix, target, n5ms_list_of_offset##suffix, 1, uint64_t, N5MS_LABEL_OF_LIST, 0) \
        N5MS_LOOKUP_RUN(n5ms_labels_le##suffix, target, n5ms_list_of_offset##suffix, 0, uint64_t, N5MS_LABEL_OF_LIST, 0) \
        N5MS_LOOKUP_RUN(n5ms_lists_be##suffix, target, n5ms_list_of_offset##suffix, 1, int32_t, N5MS_NUMBER_OF_LIST, -1) \
        N5MS_LOOKUP_RUN(n5ms_lists_le##suffix, target, n5ms_list_of_offset##suffix, 0, int32_t, N5MS_NUMBER_OF_LIST, -1)
    N5MS_LOOKUPS(, , n5ms_popcount64)
    #if N5MS_POPCNT_TWINS
    N5MS_LOOKUPS(_popcnt, N5MS_POPCNT_TARGET, __builtin_popcountll)
    #else
    #define n5ms_labels_be_popcnt n5ms_labels_be
    #define n5ms_labels_le_popcnt n5ms_labels_le
    #define n5ms_lists_be_popcnt n5ms_lists_be
    #define n5ms_lists_le_popcnt n5ms_lists_le
    #endif
    /* Each voxel's label (label_of_list[number], 0 when bad) or list number (-1 when bad). */
    static int64_t n5ms_labels_of_run(int popcnt, int big_endian, const uint8_t* table, int64_t start, int64_t stop,
                                      const uint64_t* start_bits, const int64_t* rank, uint64_t size,
                                      const uint64_t* label_of_list, uint64_t* out) {
        if (popcnt)
            return (big_endian ? n5ms_labels_be_popcnt : n5ms_labels_le_popcnt)(table, start, stop, start_bits, rank,
                                                                                 size, label_of_list, out);
        return (big_endian ? n5ms_labels_be : n5ms_labels_le)(table, start, stop, start_bits, rank, size,
                                                               label_of_list, out);
    }
    static int64_t n5ms_lists_of_run(int popcnt, int big_endian, const uint8_t* table, int64_t start, int64_t stop,
                                     const uint64_t* start_bits, const int64_t* rank, uint64_t size, int32_t* out) {
        if (popcnt)
            return (big_endian ? n5ms_lists_be_popcnt : n5ms_lists_le_popcnt)(table, start, stop, start_bits, rank,
                                                                               size, NULL, out);
        return (big_endian ? n5ms_lists_be : n5ms_lists_le)(table, start, stop, start_bits, rank, size, NULL, out);
    }
    """
    int n5ms_popcount64(unsigned long long x) nogil
    int n5ms_have_popcnt() nogil
    int n5ms_scan_walk(const uint8_t* data, int64_t size, uint64_t* start_bits, int64_t* rank, uint64_t* label_of_list,
                       int64_t capacity, int64_t* position, int64_t* lists, int64_t* entries) nogil
    int n5ms_scan_walk_avx2(const uint8_t* data, int64_t size, uint64_t* start_bits, int64_t* rank,
                            uint64_t* label_of_list, int64_t capacity, int64_t* position, int64_t* lists,
                            int64_t* entries) nogil
    int64_t n5ms_split_walk(const uint8_t* data, int64_t size, int64_t* list_offsets, int64_t max_lists,
                            uint64_t* ids, uint32_t* counts, int64_t capacity, uint64_t* start_bits,
                            int64_t* rank) nogil
    int64_t n5ms_split_walk_avx2(const uint8_t* data, int64_t size, int64_t* list_offsets, int64_t max_lists,
                                 uint64_t* ids, uint32_t* counts, int64_t capacity, uint64_t* start_bits,
                                 int64_t* rank) nogil
    int64_t n5ms_labels_of_run(int popcnt, int big_endian, const uint8_t* table, int64_t start, int64_t stop,
                               const uint64_t* start_bits, const int64_t* rank, uint64_t size,
                               const uint64_t* label_of_list, uint64_t* out) nogil
    int64_t n5ms_lists_of_run(int popcnt, int big_endian, const uint8_t* table, int64_t start, int64_t stop,
                              const uint64_t* start_bits, const int64_t* rank, uint64_t size, int32_t* out) nogil

#: Whether this CPU runs the AVX2 argmax groups (``simd=False`` forces the portable code).
HAVE_AVX2 = bool(n5ms_have_avx2())
#: Whether the voxel lookups run with the popcount instruction (``simd=False``: portable).
HAVE_POPCNT = bool(n5ms_have_popcnt())


ctypedef fused index_t:
    int32_t
    int64_t

# OpenMP only pays off on large inputs (see multiset/_kernels.pyx); blocks below
# this size run on the calling thread.
DEF PARALLEL_VOXELS = 1048576


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------

DEF LABEL_RUN = 4096  # voxels per task of labels_of_voxels and map_voxel_offsets

# List starts are indexed by a bitmap over the 4-byte words of the list data
# (lists are 4 + 12 n bytes, so every start is a word) and, per 64-word group, the
# number of starts before it: the list number of a start is a rank query. That is
# 1/32 of the list data in size (it stays in the caches and is cheap to zero),
# where a table with one slot per word was as large as the list data itself.

def list_start_words(Py_ssize_t list_data_size):
    """The length of the ``start_bits`` and ``rank`` arrays for ``list_data_size`` bytes."""
    return list_data_size // 256 + 1


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
    cdef Py_ssize_t size = list_data.shape[0], groups = size // 256 + 1
    cdef Py_ssize_t capacity = label_of_list.shape[0] if label_of_list is not None else 0
    cdef int64_t pos = 0, n_lists = 0, n_entries = 0
    cdef int walk
    cdef bint index = start_bits is not None
    cdef uint64_t* bits = &start_bits[0] if index else NULL
    cdef int64_t* ranks = NULL
    cdef uint64_t* labels = &label_of_list[0] if capacity else NULL
    cdef const uint8_t* data = &list_data[0] if size else NULL
    cdef bint avx2 = simd and HAVE_AVX2
    if index and (rank is None or start_bits.shape[0] < groups or rank.shape[0] < groups):
        raise ValueError("scan_list_data: start_bits and rank need list_start_words(size) values")
    if index:
        ranks = &rank[0]
    with nogil:
        if avx2:
            walk = n5ms_scan_walk_avx2(data, size, bits, ranks, labels, capacity, &pos, &n_lists, &n_entries)
        else:
            walk = n5ms_scan_walk(data, size, bits, ranks, labels, capacity, &pos, &n_lists, &n_entries)
    status = (OK, ERR_TRUNCATED_COUNT, ERR_ENTRIES_PAST_END)[walk]
    return status, pos, n_lists, n_entries


def split_list_data(const uint8_t[::1] list_data, int64_t[::1] list_offsets,
                    uint64_t[::1] ids, uint32_t[::1] counts, uint64_t[::1] start_bits=None,
                    int64_t[::1] rank=None, bint simd=True):
    """Fill the CSR arrays from list data (validated by ``scan_list_data``; checked again
    against the arrays' sizes): ``list_offsets`` holds one value per list and one more.

    ``ids`` and ``counts`` may be longer than the entries: a list of up to 8 (16)
    entries is then copied as 8 (16), the ones past it overwritten by the next list or
    left in the slack (with AVX2 where the CPU has it, unless ``simd`` is False).
    Returns the number of lists.

    With ``start_bits`` (zero-filled) and ``rank`` (``list_start_words(list_data.size)``
    values each), the list data need not be validated: the same walk also builds the
    list-start index of ``scan_list_data``, and -1 is returned (nothing raised) when the
    lists do not tile the data or do not fit the arrays; ``scan_list_data`` then tells why.
    """
    cdef Py_ssize_t size = list_data.shape[0], capacity = min(ids.shape[0], counts.shape[0])
    cdef Py_ssize_t groups = size // 256 + 1
    cdef const uint8_t* data = &list_data[0] if size else NULL
    cdef uint64_t* ids_start = &ids[0] if ids.shape[0] else NULL
    cdef uint32_t* counts_start = &counts[0] if counts.shape[0] else NULL
    cdef bint index = start_bits is not None
    cdef uint64_t* bits = NULL
    cdef int64_t* ranks = NULL
    cdef bint avx2 = simd and HAVE_AVX2
    cdef int64_t lists
    if list_offsets.shape[0] < 1:
        raise ValueError("split_list_data: list_offsets needs one value per list and one more")
    if index:
        if rank is None or start_bits.shape[0] < groups or rank.shape[0] < groups:
            raise ValueError("split_list_data: start_bits and rank need list_start_words(size) values")
        bits, ranks = &start_bits[0], &rank[0]
    with nogil:
        if avx2:
            lists = n5ms_split_walk_avx2(data, size, &list_offsets[0], list_offsets.shape[0] - 1, ids_start,
                                         counts_start, capacity, bits, ranks)
        else:
            lists = n5ms_split_walk(data, size, &list_offsets[0], list_offsets.shape[0] - 1, ids_start,
                                    counts_start, capacity, bits, ranks)
    if lists < 0 and not index:
        raise ValueError("split_list_data: the list data does not fit list_offsets, ids and counts "
                         "(not validated by scan_list_data?)")
    return lists


cdef int64_t indexed_lists(const uint8_t[::1] list_data, const uint64_t[::1] start_bits,
                           const int64_t[::1] rank) except -1:
    """The number of lists in the index of ``scan_list_data`` (checked to cover the list data)."""
    cdef Py_ssize_t last = list_data.shape[0] // 256
    if start_bits.shape[0] <= last or rank.shape[0] <= last:
        raise ValueError("start_bits and rank need list_start_words(len(list_data)) values")
    return rank[last] + n5ms_popcount64(start_bits[last])


def map_voxel_offsets(const uint8_t[::1] table, bint big_endian, const uint8_t[::1] list_data,
                      const uint64_t[::1] start_bits, const int64_t[::1] rank, int32_t[::1] index, int num_threads,
                      bint simd=True):
    """Translate each voxel's byte offset into its list number (through the list-start
    index of ``scan_list_data`` over ``list_data``; with the popcount instruction where
    the CPU has it, unless ``simd`` is False).

    Bad offsets (negative, past the list data, not a list start) give index -1.
    Returns the number of bad voxels.
    """
    cdef Py_ssize_t n_voxels = index.shape[0]
    cdef Py_ssize_t n_runs = (n_voxels + LABEL_RUN - 1) // LABEL_RUN
    cdef Py_ssize_t r, bad = 0
    cdef int popcnt = simd and HAVE_POPCNT
    indexed_lists(list_data, start_bits, rank)
    if table.shape[0] < 4 * n_voxels:
        raise ValueError("map_voxel_offsets: the table holds fewer offsets than index has voxels")
    for r in prange(n_runs, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_voxels > PARALLEL_VOXELS):
        bad += n5ms_lists_of_run(popcnt, big_endian, &table[0], r * LABEL_RUN, min((r + 1) * LABEL_RUN, n_voxels),
                                 &start_bits[0], &rank[0], list_data.shape[0], &index[r * LABEL_RUN])
    return bad


cdef int64_t check_labels_args(const uint8_t[::1] table, const uint64_t[::1] label_of_list,
                               const uint8_t[::1] list_data, const uint64_t[::1] start_bits, const int64_t[::1] rank,
                               Py_ssize_t n_voxels) except -1:
    if label_of_list.shape[0] < indexed_lists(list_data, start_bits, rank):
        raise ValueError("labels_of_voxels: label_of_list holds fewer labels than there are lists")
    if table.shape[0] < 4 * n_voxels:
        raise ValueError("labels_of_voxels: the table holds fewer offsets than out has voxels")
    return 0


def labels_of_voxels(const uint8_t[::1] table, bint big_endian, const uint64_t[::1] label_of_list,
                     const uint8_t[::1] list_data, const uint64_t[::1] start_bits, const int64_t[::1] rank,
                     uint64_t[::1] out, int num_threads, bint simd=True):
    """Each voxel's list argmax (``label_of_list`` and the list index from ``scan_list_data``)
    in table order (``simd`` as in ``map_voxel_offsets``).

    Bad offsets (negative, past the list data, not a list start) give 0;
    returns their number (the caller raises naming the first one).
    """
    cdef Py_ssize_t n_voxels = out.shape[0]
    cdef Py_ssize_t n_runs = (n_voxels + LABEL_RUN - 1) // LABEL_RUN
    cdef Py_ssize_t r, bad = 0
    cdef int popcnt = simd and HAVE_POPCNT
    check_labels_args(table, label_of_list, list_data, start_bits, rank, n_voxels)
    for r in prange(n_runs, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_voxels > PARALLEL_VOXELS):
        bad += n5ms_labels_of_run(popcnt, big_endian, &table[0], r * LABEL_RUN, min((r + 1) * LABEL_RUN, n_voxels),
                                  &start_bits[0], &rank[0], list_data.shape[0], &label_of_list[0],
                                  &out[r * LABEL_RUN])
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
                             int num_threads, bint simd=True):
    """``labels_of_voxels`` of a 3-D first-axis-fastest table (N5), written in C order of shape
    ``(n0, n1, n2)``. Returns the number of bad offsets.

    The table is looked up in its own order (neighbours share lists: runs are cheap),
    8 planes of the last axis at a time into a slab that stays in the caches (``slabs``:
    ``c_order_slab_values`` values, one slab per thread), and each slab is then written
    out a cache line at a time.
    """
    cdef Py_ssize_t c0, c, bad = 0, plane = n0 * n1, slab_values = TILE * (n0 * n1 + SLAB_PAD)
    cdef int popcnt = simd and HAVE_POPCNT
    cdef uint64_t* slab
    if n0 * n1 * n2 == 0:
        return 0
    check_labels_args(table, label_of_list, list_data, start_bits, rank, n0 * n1 * n2)
    if out.shape[0] < n0 * n1 * n2:
        raise ValueError("labels_of_voxels_c_order: out needs n0 * n1 * n2 values")
    if slabs.shape[0] < max(num_threads, 1) * slab_values:
        raise ValueError("labels_of_voxels_c_order: slabs needs c_order_slab_values(n0, n1, num_threads) values")
    for c0 in prange(0, n2, TILE, nogil=True, schedule="static", num_threads=num_threads,
                     use_threads_if=n0 * n1 * n2 > PARALLEL_VOXELS):
        slab = &slabs[threadid() * slab_values]
        for c in range(c0, min(c0 + TILE, n2)):
            bad += n5ms_labels_of_run(popcnt, big_endian, &table[0], plane * c, plane * (c + 1), &start_bits[0],
                                      &rank[0], list_data.shape[0], &label_of_list[0],
                                      &slab[(c - c0) * (plane + SLAB_PAD)])
        slab_to_c_order(slab, c0, min(c0 + TILE, n2), n0, n1, n2, &out[0])
    return bad
