# The argmax of one list under the spec rule (highest count, ties to the smaller
# unsigned id, an empty list INVALID), inline and shared by the kernels.
#
# (count, ~id) as one 128-bit unsigned key orders entries exactly as the rule
# does, so a list's argmax is a maximum of keys. The start value, count 0 with
# ~INVALID, makes an empty list give INVALID. Without 128-bit integers (MSVC)
# the same rule is a plain comparison, entry by entry.
#
# Lists of real data hold a few entries each, in random numbers: a loop over a
# list's entries mispredicts its exit on most lists. So a list of up to 8 entries
# is one group: all eight keys are read (those past the list masked to key 0, which
# never wins) and reduced without a branch per entry. On the real Java blocks,
# decoded in turn, that is 9% faster than the loop with gcc and 1.7x with clang
# (whose loop is slow); a block decoded again and again looks 2x faster with
# either form, as the branch predictor learns its list lengths (benchmarks rotate
# blocks for that reason). The caller says how many bytes (entries, for the CSR
# form) may be read, so a group never reads past its buffer; longer lists and the
# last lists of a buffer are taken entry by entry.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

# the C below calls the loads of _bytes.pxd by their C names (n5ms_load_u64_le, ...)
from n5mscodecs._bytes cimport load_u32_le, load_u64_le

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__SIZEOF_INT128__)
    /* gcc would call a group out of line where it is used three times */
    #define N5MS_GROUP_INLINE static inline __attribute__((always_inline))
    typedef unsigned __int128 n5ms_argmax_t;
    static inline n5ms_argmax_t n5ms_argmax_start(void) { return 1; }
    static inline n5ms_argmax_t n5ms_argmax_key(uint64_t label, uint32_t count) {
        return ((n5ms_argmax_t)count << 64) | (uint64_t)~label;
    }
    static inline n5ms_argmax_t n5ms_argmax_max(n5ms_argmax_t a, n5ms_argmax_t b) { return a > b ? a : b; }
    static inline n5ms_argmax_t n5ms_argmax_step(n5ms_argmax_t best, uint64_t label, uint32_t count) {
        return n5ms_argmax_max(best, n5ms_argmax_key(label, count));
    }
    static inline uint64_t n5ms_argmax_label(n5ms_argmax_t best) { return ~(uint64_t)best; }

    /* Max key of the first n <= 8 entries of a group, as a tree. Keys past the list are
       masked to 0 (never wins) by arithmetic, not a compare: gcc turns a compare there back
       into a branch on n. */
    N5MS_GROUP_INLINE n5ms_argmax_t n5ms_group_key(uint64_t j, uint64_t n, uint64_t label, uint32_t count) {
        uint64_t mask = (uint64_t)((int64_t)(j - n) >> 63);  /* all ones when j < n <= 8 */
        return ((n5ms_argmax_t)(count & mask) << 64) | (~label & mask);
    }
    #define N5MS_GROUP_MAX(label_of, count_of) \
        n5ms_argmax_t k[8]; \
        for (uint64_t j = 0; j < 8; j++) k[j] = n5ms_group_key(j, n, label_of(j), count_of(j)); \
        return n5ms_argmax_max(n5ms_argmax_max(n5ms_argmax_max(k[0], k[1]), n5ms_argmax_max(k[2], k[3])), \
                               n5ms_argmax_max(n5ms_argmax_max(k[4], k[5]), n5ms_argmax_max(k[6], k[7])));

    /* Max key of the first n <= 8 entries of list data at p (96 bytes readable). */
    N5MS_GROUP_INLINE n5ms_argmax_t n5ms_group_of_list_data(const uint8_t* p, uint64_t n) {
        #define N5MS_LIST_DATA_LABEL(j) n5ms_load_u64_le(p + 12 * (j))
        #define N5MS_LIST_DATA_COUNT(j) n5ms_load_u32_le(p + 12 * (j) + 8)
        N5MS_GROUP_MAX(N5MS_LIST_DATA_LABEL, N5MS_LIST_DATA_COUNT)
        #undef N5MS_LIST_DATA_LABEL
        #undef N5MS_LIST_DATA_COUNT
    }
    /* Max key of the first n <= 8 entries of CSR arrays (8 entries readable). */
    N5MS_GROUP_INLINE n5ms_argmax_t n5ms_group_of_arrays(const uint64_t* ids, const uint32_t* counts, uint64_t n) {
        #define N5MS_ARRAY_LABEL(j) ids[j]
        #define N5MS_ARRAY_COUNT(j) counts[j]
        N5MS_GROUP_MAX(N5MS_ARRAY_LABEL, N5MS_ARRAY_COUNT)
        #undef N5MS_ARRAY_LABEL
        #undef N5MS_ARRAY_COUNT
    }

    /* Argmax label of the n entries (id u64 LE, count u32 LE) of list data at p, of which
       `readable` >= 12 n bytes may be read. */
    static inline uint64_t n5ms_argmax_of_list_data(const uint8_t* p, uint64_t n, uint64_t readable) {
        n5ms_argmax_t best = n5ms_argmax_start();
        if (n <= 8 && readable >= 96)
            return n5ms_argmax_label(n5ms_argmax_max(best, n5ms_group_of_list_data(p, n)));
        for (; n > 0; n--, p += 12)
            best = n5ms_argmax_step(best, n5ms_load_u64_le(p), n5ms_load_u32_le(p + 8));
        return n5ms_argmax_label(best);
    }
    /* Argmax label of entries [start, stop) of CSR arrays of `size` entries. */
    static inline uint64_t n5ms_argmax_of_arrays(const uint64_t* ids, const uint32_t* counts, int64_t start,
                                                 int64_t stop, int64_t size) {
        n5ms_argmax_t best = n5ms_argmax_start();
        if (stop - start <= 8 && size - start >= 8)
            return n5ms_argmax_label(n5ms_argmax_max(best, n5ms_group_of_arrays(ids + start, counts + start,
                                                                                (uint64_t)(stop - start))));
        for (; start < stop; start++)
            best = n5ms_argmax_step(best, ids[start], counts[start]);
        return n5ms_argmax_label(best);
    }
    #else
    typedef struct { uint64_t label; uint32_t count; } n5ms_argmax_t;
    static inline n5ms_argmax_t n5ms_argmax_start(void) {
        n5ms_argmax_t start = {0xFFFFFFFFFFFFFFFEULL, 0};
        return start;
    }
    static inline n5ms_argmax_t n5ms_argmax_step(n5ms_argmax_t best, uint64_t label, uint32_t count) {
        if (count > best.count || (count == best.count && label < best.label)) {
            best.label = label;
            best.count = count;
        }
        return best;
    }
    static inline uint64_t n5ms_argmax_label(n5ms_argmax_t best) { return best.label; }
    static inline uint64_t n5ms_argmax_of_list_data(const uint8_t* p, uint64_t n, uint64_t readable) {
        n5ms_argmax_t best = n5ms_argmax_start();
        (void)readable;
        for (; n > 0; n--, p += 12)
            best = n5ms_argmax_step(best, n5ms_load_u64_le(p), n5ms_load_u32_le(p + 8));
        return n5ms_argmax_label(best);
    }
    static inline uint64_t n5ms_argmax_of_arrays(const uint64_t* ids, const uint32_t* counts, int64_t start,
                                                 int64_t stop, int64_t size) {
        n5ms_argmax_t best = n5ms_argmax_start();
        (void)size;
        for (; start < stop; start++)
            best = n5ms_argmax_step(best, ids[start], counts[start]);
        return n5ms_argmax_label(best);
    }
    #endif
    """
    uint64_t n5ms_argmax_of_list_data(const uint8_t* p, uint64_t n, uint64_t readable) noexcept nogil
    uint64_t n5ms_argmax_of_arrays(const uint64_t* ids, const uint32_t* counts, int64_t start, int64_t stop,
                                   int64_t size) noexcept nogil
