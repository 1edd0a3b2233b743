# The argmax of one list under the spec rule (highest count, ties to the smaller
# unsigned id, an empty list INVALID), inline and shared by the kernels.
#
# (count, ~id) as one 128-bit unsigned key orders entries exactly as the rule
# does, so a list's argmax is a running maximum: a compare and two conditional
# moves per entry, and no branch, which would be mispredicted about every other
# entry (the winning counts come in random order). The start value, count 0 with
# ~INVALID, makes an empty list give INVALID. Without 128-bit integers (MSVC)
# the same rule is a plain comparison.
from libc.stdint cimport uint32_t, uint64_t

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__SIZEOF_INT128__)
    typedef unsigned __int128 n5ms_argmax_t;
    static inline n5ms_argmax_t n5ms_argmax_start(void) { return 1; }
    static inline n5ms_argmax_t n5ms_argmax_step(n5ms_argmax_t best, uint64_t label, uint32_t count) {
        n5ms_argmax_t key = ((n5ms_argmax_t)count << 64) | (uint64_t)~label;
        return key > best ? key : best;
    }
    static inline uint64_t n5ms_argmax_label(n5ms_argmax_t best) { return ~(uint64_t)best; }
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
    #endif
    """
    ctypedef struct n5ms_argmax_t:
        pass
    n5ms_argmax_t n5ms_argmax_start() noexcept nogil
    n5ms_argmax_t n5ms_argmax_step(n5ms_argmax_t best, uint64_t label, uint32_t count) noexcept nogil
    uint64_t n5ms_argmax_label(n5ms_argmax_t best) noexcept nogil
