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
# blocks for that reason). Lists of 9 to 16 entries are two groups. The caller says
# how many bytes (entries, for the CSR form) may be read, so a group never reads past
# its buffer; longer lists and the last lists of a buffer are taken entry by entry.
#
# In AVX2 a group first finds its top count; when one entry holds it (most lists of
# real data) its id is the label, read as a scalar: the ids' shuffles and the search
# for the least id are only done for ties (1.2x faster on the Java blocks).
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

    #define N5MS_GROUPS 1
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
    #define N5MS_GROUPS 0
    #endif

    /* Argmax label of the n entries (id u64 LE, count u32 LE) of list data at p, of which
       `readable` >= 12 n bytes may be read. */
    static inline uint64_t n5ms_argmax_of_list_data(const uint8_t* p, uint64_t n, uint64_t readable) {
        n5ms_argmax_t best = n5ms_argmax_start();
    #if N5MS_GROUPS
        if (n <= 8 && readable >= 96)
            return n5ms_argmax_label(n5ms_argmax_max(best, n5ms_group_of_list_data(p, n)));
        if (n <= 16 && readable >= 192)
            return n5ms_argmax_label(n5ms_argmax_max(best, n5ms_argmax_max(n5ms_group_of_list_data(p, 8),
                                                                           n5ms_group_of_list_data(p + 96, n - 8))));
    #else
        (void)readable;
    #endif
        for (; n > 0; n--, p += 12)
            best = n5ms_argmax_step(best, n5ms_load_u64_le(p), n5ms_load_u32_le(p + 8));
        return n5ms_argmax_label(best);
    }
    /* Argmax label of entries [start, stop) of CSR arrays of `size` entries. */
    static inline uint64_t n5ms_argmax_of_arrays(const uint64_t* ids, const uint32_t* counts, int64_t start,
                                                 int64_t stop, int64_t size) {
        n5ms_argmax_t best = n5ms_argmax_start();
    #if N5MS_GROUPS
        if (stop - start <= 8 && size - start >= 8)
            return n5ms_argmax_label(n5ms_argmax_max(best, n5ms_group_of_arrays(ids + start, counts + start,
                                                                                (uint64_t)(stop - start))));
        if (stop - start <= 16 && size - start >= 16)
            return n5ms_argmax_label(n5ms_argmax_max(best, n5ms_argmax_max(
                n5ms_group_of_arrays(ids + start, counts + start, 8),
                n5ms_group_of_arrays(ids + start + 8, counts + start + 8, (uint64_t)(stop - start - 8)))));
    #else
        (void)size;
    #endif
        for (; start < stop; start++)
            best = n5ms_argmax_step(best, ids[start], counts[start]);
        return n5ms_argmax_label(best);
    }

    /* The same groups in AVX2, where the CPU has it (chosen at run time by the callers;
       x86-64 with gcc or clang). Max count over the valid lanes, then the smallest id of
       the lanes holding it (unsigned, through a sign flip and signed compares); with no
       count above 0 the spec's start value (count 0, INVALID) wins over larger ids. */
    #if N5MS_GROUPS && (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    #define N5MS_AVX2 1
    #include <immintrin.h>
    #define N5MS_AVX2_TARGET __attribute__((target("avx2")))
    #define N5MS_AVX2_INLINE static inline __attribute__((always_inline)) N5MS_AVX2_TARGET
    /* Lanes below n (n <= 16; lanes of a second group pass n - 8, which may be negative). */
    N5MS_AVX2_INLINE __m256i n5ms_lanes_below_avx2(int64_t n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    /* The largest of the 8 counts in every lane. */
    N5MS_AVX2_INLINE __m256i n5ms_top_count_avx2(__m256i c) {
        __m256i top = _mm256_max_epu32(c, _mm256_permute2x128_si256(c, c, 1));
        top = _mm256_max_epu32(top, _mm256_shuffle_epi32(top, 0x4E));
        return _mm256_max_epu32(top, _mm256_shuffle_epi32(top, 0xB1));
    }
    /* Per 64-bit lane, the smaller of the two sign-flipped ids of `winners` (all ones elsewhere). */
    N5MS_AVX2_INLINE __m256i n5ms_winner_ids_avx2(__m256i winners, __m256i ids_low, __m256i ids_high) {
        const __m256i ones = _mm256_set1_epi64x(-1), sign = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
        __m256i low = _mm256_xor_si256(_mm256_blendv_epi8(ones, ids_low,
                                       _mm256_cvtepi32_epi64(_mm256_castsi256_si128(winners))), sign);
        __m256i high = _mm256_xor_si256(_mm256_blendv_epi8(ones, ids_high,
                                        _mm256_cvtepi32_epi64(_mm256_extracti128_si256(winners, 1))), sign);
        return _mm256_blendv_epi8(low, high, _mm256_cmpgt_epi64(low, high));
    }
    /* The label of a winning id given the top count (0: the start value, INVALID, wins ties). */
    N5MS_AVX2_INLINE uint64_t n5ms_winner_label_avx2(uint64_t label, __m256i top) {
        return (_mm256_extract_epi32(top, 0) == 0 && label > 0xFFFFFFFFFFFFFFFEULL) ? 0xFFFFFFFFFFFFFFFEULL : label;
    }
    /* The label of the least id over the lanes of `least`, given the top count. */
    N5MS_AVX2_INLINE uint64_t n5ms_least_label_avx2(__m256i least, __m256i top) {
        __m256i other = _mm256_permute4x64_epi64(least, 0x4E);
        least = _mm256_blendv_epi8(least, other, _mm256_cmpgt_epi64(least, other));
        other = _mm256_shuffle_epi32(least, 0x4E);
        least = _mm256_blendv_epi8(least, other, _mm256_cmpgt_epi64(least, other));
        return n5ms_winner_label_avx2((uint64_t)_mm256_extract_epi64(least, 0) ^ 0x8000000000000000ULL, top);
    }
    N5MS_AVX2_INLINE uint64_t n5ms_group_label_avx2(__m256i counts, __m256i ids_low, __m256i ids_high, int64_t n) {
        __m256i valid = n5ms_lanes_below_avx2(n), c = _mm256_and_si256(counts, valid);
        __m256i top = n5ms_top_count_avx2(c);
        return n5ms_least_label_avx2(
            n5ms_winner_ids_avx2(_mm256_and_si256(_mm256_cmpeq_epi32(c, top), valid), ids_low, ids_high), top);
    }
    /* Two groups: entries 0..7 and 8..15 of a list of 8 < n <= 16. */
    N5MS_AVX2_INLINE uint64_t n5ms_two_groups_label_avx2(__m256i counts0, __m256i ids_low0, __m256i ids_high0,
                                                        __m256i counts1, __m256i ids_low1, __m256i ids_high1,
                                                        int64_t n) {
        __m256i valid1 = n5ms_lanes_below_avx2(n - 8), c1 = _mm256_and_si256(counts1, valid1);
        __m256i top = n5ms_top_count_avx2(_mm256_max_epu32(counts0, c1));
        __m256i least0 = n5ms_winner_ids_avx2(_mm256_cmpeq_epi32(counts0, top), ids_low0, ids_high0);
        __m256i least1 = n5ms_winner_ids_avx2(_mm256_and_si256(_mm256_cmpeq_epi32(c1, top), valid1), ids_low1,
                                              ids_high1);
        return n5ms_least_label_avx2(_mm256_blendv_epi8(least0, least1, _mm256_cmpgt_epi64(least0, least1)), top);
    }
    /* The counts of the 8 entries (12 bytes each) at p: words 2, 5, ..., 23. */
    N5MS_AVX2_INLINE __m256i n5ms_list_counts_avx2(const uint8_t* p) {
        __m256i r0 = _mm256_loadu_si256((const __m256i*)p), r1 = _mm256_loadu_si256((const __m256i*)(p + 32));
        __m256i r2 = _mm256_loadu_si256((const __m256i*)(p + 64));
        return _mm256_blend_epi32(_mm256_blend_epi32(
            _mm256_permutevar8x32_epi32(r0, _mm256_setr_epi32(2, 5, 0, 0, 0, 0, 0, 0)),
            _mm256_permutevar8x32_epi32(r1, _mm256_setr_epi32(0, 0, 0, 3, 6, 0, 0, 0)), 0x1C),
            _mm256_permutevar8x32_epi32(r2, _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 4, 7)), 0xE0);
    }
    /* The ids of the 8 entries at p, low and high 4 as 64-bit lanes. */
    N5MS_AVX2_INLINE void n5ms_list_ids_avx2(const uint8_t* p, __m256i* ids_low, __m256i* ids_high) {
        __m256i r0 = _mm256_loadu_si256((const __m256i*)p), r1 = _mm256_loadu_si256((const __m256i*)(p + 32));
        __m256i r2 = _mm256_loadu_si256((const __m256i*)(p + 64));
        *ids_low = _mm256_blend_epi32(
            _mm256_permutevar8x32_epi32(r0, _mm256_setr_epi32(0, 1, 3, 4, 6, 7, 0, 0)),
            _mm256_permutevar8x32_epi32(r1, _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 1, 2)), 0xC0);
        *ids_high = _mm256_blend_epi32(
            _mm256_permutevar8x32_epi32(r1, _mm256_setr_epi32(4, 5, 7, 0, 0, 0, 0, 0)),
            _mm256_permutevar8x32_epi32(r2, _mm256_setr_epi32(0, 0, 0, 0, 2, 3, 5, 6)), 0xF8);
    }
    /* Bit i set for each lane i < n of a group of counts that holds the top count. */
    N5MS_AVX2_INLINE uint32_t n5ms_top_lanes_avx2(__m256i counts, __m256i top, int64_t n) {
        return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(
            _mm256_and_si256(_mm256_cmpeq_epi32(counts, top), n5ms_lanes_below_avx2(n))));
    }
    /* Most lists have one entry with the top count: its id is the label (an id above INVALID
       with count 0 still loses to the start value), read without the ids' shuffles. Ties and
       empty lists (no lane or several) go through the full group. */
    #define N5MS_ONE_WINNER(lanes) ((lanes) != 0 && ((lanes) & ((lanes) - 1)) == 0)
    N5MS_AVX2_INLINE uint64_t n5ms_argmax_of_list_data_avx2(const uint8_t* p, uint64_t n, uint64_t readable) {
        __m256i counts0, counts1, top, ids_low0, ids_high0, ids_low1, ids_high1;
        uint32_t lanes;
        if (n <= 8 && readable >= 96) {
            counts0 = _mm256_and_si256(n5ms_list_counts_avx2(p), n5ms_lanes_below_avx2((int64_t)n));
            top = n5ms_top_count_avx2(counts0);
            lanes = n5ms_top_lanes_avx2(counts0, top, (int64_t)n);
            if (N5MS_ONE_WINNER(lanes))
                return n5ms_winner_label_avx2(n5ms_load_u64_le(p + 12 * __builtin_ctz(lanes)), top);
            n5ms_list_ids_avx2(p, &ids_low0, &ids_high0);
            return n5ms_group_label_avx2(counts0, ids_low0, ids_high0, (int64_t)n);
        }
        if (n <= 16 && readable >= 192) {
            counts0 = n5ms_list_counts_avx2(p);
            counts1 = _mm256_and_si256(n5ms_list_counts_avx2(p + 96), n5ms_lanes_below_avx2((int64_t)n - 8));
            top = n5ms_top_count_avx2(_mm256_max_epu32(counts0, counts1));
            lanes = n5ms_top_lanes_avx2(counts0, top, 8) | (n5ms_top_lanes_avx2(counts1, top, (int64_t)n - 8) << 8);
            if (N5MS_ONE_WINNER(lanes))
                return n5ms_winner_label_avx2(n5ms_load_u64_le(p + 12 * __builtin_ctz(lanes)), top);
            n5ms_list_ids_avx2(p, &ids_low0, &ids_high0);
            n5ms_list_ids_avx2(p + 96, &ids_low1, &ids_high1);
            return n5ms_two_groups_label_avx2(counts0, ids_low0, ids_high0, counts1, ids_low1, ids_high1, (int64_t)n);
        }
        return n5ms_argmax_of_list_data(p, n, 0);  /* readable 0: entry by entry */
    }
    N5MS_AVX2_INLINE uint64_t n5ms_argmax_of_arrays_avx2(const uint64_t* ids, const uint32_t* counts, int64_t start,
                                                         int64_t stop, int64_t size) {
        __m256i counts0, counts1, top;
        uint32_t lanes;
        #define N5MS_IDS(at) _mm256_loadu_si256((const __m256i*)(ids + (at))), \
            _mm256_loadu_si256((const __m256i*)(ids + (at) + 4))
        if (stop - start <= 8 && size - start >= 8) {
            counts0 = _mm256_and_si256(_mm256_loadu_si256((const __m256i*)(counts + start)),
                                       n5ms_lanes_below_avx2(stop - start));
            top = n5ms_top_count_avx2(counts0);
            lanes = n5ms_top_lanes_avx2(counts0, top, stop - start);
            if (N5MS_ONE_WINNER(lanes))
                return n5ms_winner_label_avx2(ids[start + __builtin_ctz(lanes)], top);
            return n5ms_group_label_avx2(counts0, N5MS_IDS(start), stop - start);
        }
        if (stop - start <= 16 && size - start >= 16) {
            counts0 = _mm256_loadu_si256((const __m256i*)(counts + start));
            counts1 = _mm256_and_si256(_mm256_loadu_si256((const __m256i*)(counts + start + 8)),
                                       n5ms_lanes_below_avx2(stop - start - 8));
            top = n5ms_top_count_avx2(_mm256_max_epu32(counts0, counts1));
            lanes = n5ms_top_lanes_avx2(counts0, top, 8) | (n5ms_top_lanes_avx2(counts1, top, stop - start - 8) << 8);
            if (N5MS_ONE_WINNER(lanes))
                return n5ms_winner_label_avx2(ids[start + __builtin_ctz(lanes)], top);
            return n5ms_two_groups_label_avx2(counts0, N5MS_IDS(start), counts1, N5MS_IDS(start + 8), stop - start);
        }
        #undef N5MS_IDS
        return n5ms_argmax_of_arrays(ids, counts, start, stop, 0);  /* size 0: entry by entry */
    }
    static inline int n5ms_have_avx2(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx2"); }
    #else
    #define N5MS_AVX2 0
    static inline int n5ms_have_avx2(void) { return 0; }
    #endif

    /* Argmax labels of lists [first, last) of CSR arrays into out[first:last]; the AVX2
       twin is the same loop compiled for AVX2, so that the groups inline into it. */
    #define N5MS_ARGMAX_OF_LISTS(name, target, argmax_of_arrays) \
        target static void name(const int64_t* list_offsets, const uint64_t* ids, const uint32_t* counts, \
                                int64_t size, int64_t first, int64_t last, uint64_t* out) { \
            for (int64_t i = first; i < last; i++) \
                out[i] = argmax_of_arrays(ids, counts, list_offsets[i], list_offsets[i + 1], size); \
        }
    N5MS_ARGMAX_OF_LISTS(n5ms_argmax_of_lists, , n5ms_argmax_of_arrays)
    #if N5MS_AVX2
    N5MS_ARGMAX_OF_LISTS(n5ms_argmax_of_lists_avx2, N5MS_AVX2_TARGET, n5ms_argmax_of_arrays_avx2)
    #else
    #define n5ms_argmax_of_lists_avx2 n5ms_argmax_of_lists
    #endif
    """
    int n5ms_have_avx2() noexcept nogil
    void n5ms_argmax_of_lists(const int64_t* list_offsets, const uint64_t* ids, const uint32_t* counts, int64_t size,
                              int64_t first, int64_t last, uint64_t* out) noexcept nogil
    void n5ms_argmax_of_lists_avx2(const int64_t* list_offsets, const uint64_t* ids, const uint32_t* counts,
                                   int64_t size, int64_t first, int64_t last, uint64_t* out) noexcept nogil
    uint64_t n5ms_argmax_of_list_data(const uint8_t* p, uint64_t n, uint64_t readable) noexcept nogil
    uint64_t n5ms_argmax_of_arrays(const uint64_t* ids, const uint32_t* counts, int64_t start, int64_t stop,
                                   int64_t size) noexcept nogil
