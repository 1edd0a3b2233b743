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
    #define N5MS_AVX2_INLINE static inline N5MS_AVX2_TARGET
    N5MS_AVX2_INLINE uint64_t n5ms_group_label_avx2(__m256i counts, __m256i ids_low, __m256i ids_high, uint64_t n) {
        const __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256i ones = _mm256_set1_epi64x(-1), sign = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
        __m256i c = _mm256_and_si256(counts, valid);
        __m256i top = _mm256_max_epu32(c, _mm256_permute2x128_si256(c, c, 1));
        top = _mm256_max_epu32(top, _mm256_shuffle_epi32(top, 0x4E));
        top = _mm256_max_epu32(top, _mm256_shuffle_epi32(top, 0xB1));
        __m256i winners = _mm256_and_si256(_mm256_cmpeq_epi32(c, top), valid);
        __m256i low = _mm256_xor_si256(_mm256_blendv_epi8(ones, ids_low,
                                       _mm256_cvtepi32_epi64(_mm256_castsi256_si128(winners))), sign);
        __m256i high = _mm256_xor_si256(_mm256_blendv_epi8(ones, ids_high,
                                        _mm256_cvtepi32_epi64(_mm256_extracti128_si256(winners, 1))), sign);
        __m256i least = _mm256_blendv_epi8(low, high, _mm256_cmpgt_epi64(low, high));
        __m256i other = _mm256_permute4x64_epi64(least, 0x4E);
        least = _mm256_blendv_epi8(least, other, _mm256_cmpgt_epi64(least, other));
        other = _mm256_shuffle_epi32(least, 0x4E);
        least = _mm256_blendv_epi8(least, other, _mm256_cmpgt_epi64(least, other));
        uint64_t label = (uint64_t)_mm256_extract_epi64(least, 0) ^ 0x8000000000000000ULL;
        return (_mm256_extract_epi32(top, 0) == 0 && label > 0xFFFFFFFFFFFFFFFEULL) ? 0xFFFFFFFFFFFFFFFEULL : label;
    }
    N5MS_AVX2_INLINE uint64_t n5ms_argmax_of_list_data_avx2(const uint8_t* p, uint64_t n, uint64_t readable) {
        if (n <= 8 && readable >= 96) {  /* 8 entries of 12 bytes: counts are words 2, 5, ..., 23 */
            __m256i r0 = _mm256_loadu_si256((const __m256i*)p), r1 = _mm256_loadu_si256((const __m256i*)(p + 32));
            __m256i r2 = _mm256_loadu_si256((const __m256i*)(p + 64));
            __m256i counts = _mm256_blend_epi32(_mm256_blend_epi32(
                _mm256_permutevar8x32_epi32(r0, _mm256_setr_epi32(2, 5, 0, 0, 0, 0, 0, 0)),
                _mm256_permutevar8x32_epi32(r1, _mm256_setr_epi32(0, 0, 0, 3, 6, 0, 0, 0)), 0x1C),
                _mm256_permutevar8x32_epi32(r2, _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 4, 7)), 0xE0);
            __m256i ids_low = _mm256_blend_epi32(
                _mm256_permutevar8x32_epi32(r0, _mm256_setr_epi32(0, 1, 3, 4, 6, 7, 0, 0)),
                _mm256_permutevar8x32_epi32(r1, _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 1, 2)), 0xC0);
            __m256i ids_high = _mm256_blend_epi32(
                _mm256_permutevar8x32_epi32(r1, _mm256_setr_epi32(4, 5, 7, 0, 0, 0, 0, 0)),
                _mm256_permutevar8x32_epi32(r2, _mm256_setr_epi32(0, 0, 0, 0, 2, 3, 5, 6)), 0xF8);
            return n5ms_group_label_avx2(counts, ids_low, ids_high, n);
        }
        return n5ms_argmax_of_list_data(p, n, 0);  /* readable 0: entry by entry */
    }
    N5MS_AVX2_INLINE uint64_t n5ms_argmax_of_arrays_avx2(const uint64_t* ids, const uint32_t* counts, int64_t start,
                                                         int64_t stop, int64_t size) {
        if (stop - start <= 8 && size - start >= 8)
            return n5ms_group_label_avx2(_mm256_loadu_si256((const __m256i*)(counts + start)),
                                         _mm256_loadu_si256((const __m256i*)(ids + start)),
                                         _mm256_loadu_si256((const __m256i*)(ids + start + 4)), (uint64_t)(stop - start));
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
