# cython: freethreading_compatible = True, boundscheck = False, wraparound = False, cdivision = True
"""Placing a plain N5 block into a read's result: the block's big-endian values in N5 order
(first axis fastest) copied into a C-ordered region, bytes swapped and axes transposed in one
tiled pass with the GIL released. A 3-D kernel; 1-D and 2-D blocks are 3-D with unit axes."""

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

from n5mscodecs._bytes cimport load_u16_be, load_u32_be, load_u64_be

cdef extern from *:
    """
    /* 2-, 4- and 8-byte values with AVX2 (x86-64 with gcc or clang, chosen at run time):
       tiles of 16 x 16, 8 x 8 or 4 x 4 values, each source row (32 bytes of x of one z)
       loaded whole, bytes swapped with one shuffle, the tile transposed in registers and
       stored as whole destination rows (32 bytes of z of one x): every load and store a full
       vector, where the portable loop stores each value on its own. */
    #if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    #include <immintrin.h>
    #define N5MS_PLACE_AVX2 1
    #define N5MS_PLACE_TARGET __attribute__((target("avx2")))
    static inline int n5ms_place_have_avx2(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx2"); }
    N5MS_PLACE_TARGET static inline void n5ms_tile_u32(const uint8_t* s, Py_ssize_t s_z, uint8_t* d,
                                                       Py_ssize_t d_x) {
        const __m256i swap = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
                                              3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
        __m256i r[8], t[8], u[8];
        for (int z = 0; z < 8; z++)
            r[z] = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i*)(s + z * s_z)), swap);
        for (int k = 0; k < 8; k += 2) {
            t[k] = _mm256_unpacklo_epi32(r[k], r[k + 1]);
            t[k + 1] = _mm256_unpackhi_epi32(r[k], r[k + 1]);
        }
        for (int k = 0; k < 8; k += 4) {
            u[k] = _mm256_unpacklo_epi64(t[k], t[k + 2]);
            u[k + 1] = _mm256_unpackhi_epi64(t[k], t[k + 2]);
            u[k + 2] = _mm256_unpacklo_epi64(t[k + 1], t[k + 3]);
            u[k + 3] = _mm256_unpackhi_epi64(t[k + 1], t[k + 3]);
        }
        for (int x = 0; x < 4; x++) {
            _mm256_storeu_si256((__m256i*)(d + x * d_x), _mm256_permute2x128_si256(u[x], u[x + 4], 0x20));
            _mm256_storeu_si256((__m256i*)(d + (x + 4) * d_x), _mm256_permute2x128_si256(u[x], u[x + 4], 0x31));
        }
    }
    N5MS_PLACE_TARGET static inline void n5ms_tile_u16(const uint8_t* s, Py_ssize_t s_z, uint8_t* d,
                                                       Py_ssize_t d_x) {
        const __m256i swap = _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,
                                              1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
        __m256i r[16], a[16], b[16], c[16];
        for (int z = 0; z < 16; z++)
            r[z] = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i*)(s + z * s_z)), swap);
        for (int k = 0; k < 16; k += 2) {  /* a[2m]: x 0-3 of z pair m, a[2m + 1]: x 4-7 (lane 1: x + 8) */
            a[k] = _mm256_unpacklo_epi16(r[k], r[k + 1]);
            a[k + 1] = _mm256_unpackhi_epi16(r[k], r[k + 1]);
        }
        for (int p = 0; p < 16; p += 4) {  /* b[p + j]: x 2j and 2j + 1 of z p/4*4 .. +3 */
            b[p] = _mm256_unpacklo_epi32(a[p], a[p + 2]);
            b[p + 1] = _mm256_unpackhi_epi32(a[p], a[p + 2]);
            b[p + 2] = _mm256_unpacklo_epi32(a[p + 1], a[p + 3]);
            b[p + 3] = _mm256_unpackhi_epi32(a[p + 1], a[p + 3]);
        }
        for (int q = 0; q < 16; q += 8)  /* c[q + x]: x of z q .. q + 7 */
            for (int j = 0; j < 4; j++) {
                c[q + 2 * j] = _mm256_unpacklo_epi64(b[q + j], b[q + 4 + j]);
                c[q + 2 * j + 1] = _mm256_unpackhi_epi64(b[q + j], b[q + 4 + j]);
            }
        for (int x = 0; x < 8; x++) {
            _mm256_storeu_si256((__m256i*)(d + x * d_x), _mm256_permute2x128_si256(c[x], c[x + 8], 0x20));
            _mm256_storeu_si256((__m256i*)(d + (x + 8) * d_x), _mm256_permute2x128_si256(c[x], c[x + 8], 0x31));
        }
    }
    N5MS_PLACE_TARGET static inline void n5ms_tile_u64(const uint8_t* s, Py_ssize_t s_z, uint8_t* d,
                                                       Py_ssize_t d_x) {
        const __m256i swap = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
                                              7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
        __m256i r[4], t[4];
        for (int z = 0; z < 4; z++)
            r[z] = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i*)(s + z * s_z)), swap);
        t[0] = _mm256_unpacklo_epi64(r[0], r[1]);
        t[1] = _mm256_unpackhi_epi64(r[0], r[1]);
        t[2] = _mm256_unpacklo_epi64(r[2], r[3]);
        t[3] = _mm256_unpackhi_epi64(r[2], r[3]);
        _mm256_storeu_si256((__m256i*)d, _mm256_permute2x128_si256(t[0], t[2], 0x20));
        _mm256_storeu_si256((__m256i*)(d + d_x), _mm256_permute2x128_si256(t[1], t[3], 0x20));
        _mm256_storeu_si256((__m256i*)(d + 2 * d_x), _mm256_permute2x128_si256(t[0], t[2], 0x31));
        _mm256_storeu_si256((__m256i*)(d + 3 * d_x), _mm256_permute2x128_si256(t[1], t[3], 0x31));
    }
    /* One tile of `itemsize`-byte values. */
    N5MS_PLACE_TARGET static inline void n5ms_tile(const uint8_t* s, Py_ssize_t s_z, uint8_t* d, Py_ssize_t d_x,
                                                   Py_ssize_t itemsize) {
        if (itemsize == 2) n5ms_tile_u16(s, s_z, d, d_x);
        else if (itemsize == 4) n5ms_tile_u32(s, s_z, d, d_x);
        else n5ms_tile_u64(s, s_z, d, d_x);
    }
    /* The whole tiles of one y (a tile is 32 bytes of x by as many z values): x tiles outer, z
       tiles inner (a destination row is written from start to end before the next), two x
       tiles at a time where they fit (whole 64-byte source lines); returns how many x and z
       values the tiles covered (the caller places the rest). */
    N5MS_PLACE_TARGET static void n5ms_place_tiles(const uint8_t* s, Py_ssize_t s_z, uint8_t* d, Py_ssize_t d_x,
                                                   Py_ssize_t count_x, Py_ssize_t count_z, Py_ssize_t itemsize,
                                                   Py_ssize_t* done_x, Py_ssize_t* done_z) {
        Py_ssize_t side = 32 / itemsize, x0 = 0;
        Py_ssize_t whole_x = count_x - count_x % side, whole_z = count_z - count_z % side;
        for (; x0 + 2 * side <= whole_x; x0 += 2 * side)
            for (Py_ssize_t z0 = 0; z0 < whole_z; z0 += side) {
                n5ms_tile(s + x0 * itemsize + z0 * s_z, s_z, d + x0 * d_x + z0 * itemsize, d_x, itemsize);
                n5ms_tile(s + (x0 + side) * itemsize + z0 * s_z, s_z, d + (x0 + side) * d_x + z0 * itemsize, d_x,
                          itemsize);
            }
        for (; x0 < whole_x; x0 += side)
            for (Py_ssize_t z0 = 0; z0 < whole_z; z0 += side)
                n5ms_tile(s + x0 * itemsize + z0 * s_z, s_z, d + x0 * d_x + z0 * itemsize, d_x, itemsize);
        *done_x = whole_x;
        *done_z = whole_z;
    }
    #else
    #define N5MS_PLACE_AVX2 0
    static inline int n5ms_place_have_avx2(void) { return 0; }
    static void n5ms_place_tiles(const uint8_t* s, Py_ssize_t s_z, uint8_t* d, Py_ssize_t d_x, Py_ssize_t count_x,
                                 Py_ssize_t count_z, Py_ssize_t itemsize, Py_ssize_t* done_x, Py_ssize_t* done_z) {
        (void)s; (void)s_z; (void)d; (void)d_x; (void)count_x; (void)count_z; (void)itemsize;
        *done_x = *done_z = 0;
    }
    #endif
    """
    int n5ms_place_have_avx2() nogil
    void n5ms_place_tiles(const uint8_t* s, Py_ssize_t s_z, uint8_t* d, Py_ssize_t d_x, Py_ssize_t count_x,
                          Py_ssize_t count_z, Py_ssize_t itemsize, Py_ssize_t* done_x, Py_ssize_t* done_z) nogil

#: Whether 2-, 4- and 8-byte blocks are placed with AVX2 (``simd=False`` forces the portable loop).
HAVE_AVX2 = bool(n5ms_place_have_avx2())


# tiles of TILE_X x TILE_Z values of one (x, z) plane: their source rows (x runs) and
# destination rows (z runs) stay in L1 while the tile is transposed. Destination rows of
# consecutive x lie a power of two apart in typical arrays, so they share cache sets: few of
# them (TILE_X, within L1's associativity), each long (TILE_Z)
cdef enum:
    TILE_X = 8
    TILE_Z = 64


cdef inline void swap_run(const uint8_t* s, uint8_t* d, Py_ssize_t n, Py_ssize_t step,
                          Py_ssize_t itemsize) noexcept nogil:
    """``n`` values from contiguous ``s`` to ``d`` every ``step`` bytes, big-endian to native."""
    cdef Py_ssize_t i
    cdef uint16_t v16
    cdef uint32_t v32
    cdef uint64_t v64
    if itemsize == 4:
        for i in range(n):
            v32 = load_u32_be(s + 4 * i)
            memcpy(d + i * step, &v32, 4)
    elif itemsize == 8:
        for i in range(n):
            v64 = load_u64_be(s + 8 * i)
            memcpy(d + i * step, &v64, 8)
    elif itemsize == 2:
        for i in range(n):
            v16 = load_u16_be(s + 2 * i)
            memcpy(d + i * step, &v16, 2)
    else:
        for i in range(n):
            d[i * step] = s[i]


cdef void place_portable(const uint8_t* first, Py_ssize_t size_x, Py_ssize_t size_y, Py_ssize_t start_x,
                         Py_ssize_t start_y, Py_ssize_t start_z, uint8_t* target, Py_ssize_t step_x,
                         Py_ssize_t step_y, Py_ssize_t x_from, Py_ssize_t count_x, Py_ssize_t z_from,
                         Py_ssize_t count_z, Py_ssize_t y, Py_ssize_t itemsize) noexcept nogil:
    """Values ``x_from <= x < count_x``, ``z_from <= z < count_z`` of plane ``y``, tile by tile."""
    cdef Py_ssize_t x0, z0, x1, z1, z
    z0 = z_from
    while z0 < count_z:
        z1 = z0 + TILE_Z if z0 + TILE_Z < count_z else count_z
        x0 = x_from
        while x0 < count_x:
            x1 = x0 + TILE_X if x0 + TILE_X < count_x else count_x
            for z in range(z0, z1):
                swap_run(first + (start_x + x0 + size_x * (start_y + y + size_y * (start_z + z))) * itemsize,
                         target + x0 * step_x + y * step_y + z * itemsize, x1 - x0, step_x, itemsize)
            x0 = x1
        z0 = z1


def place_block(const uint8_t[::1] source, tuple source_dims, tuple start, uint8_t[:, :, :] destination,
                Py_ssize_t itemsize, bint simd=True):
    """Copy the values ``start : start + count`` of a block of ``source_dims`` (3 dims, N5
    order, first fastest; big-endian values of ``itemsize`` bytes) into ``destination``, a
    byte view of shape ``(count_x, count_y, count_z * itemsize)`` whose last axis is contiguous
    (2-, 4- and 8-byte values in AVX2 tiles where the CPU has it, unless ``simd`` is False).

    The caller has checked that the box lies inside the block and ``source`` holds it."""
    cdef Py_ssize_t size_x = source_dims[0], size_y = source_dims[1]
    cdef Py_ssize_t start_x = start[0], start_y = start[1], start_z = start[2]
    cdef Py_ssize_t count_x = destination.shape[0], count_y = destination.shape[1]
    cdef Py_ssize_t count_z = destination.shape[2] // itemsize
    cdef Py_ssize_t step_x = destination.strides[0], step_y = destination.strides[1]
    cdef Py_ssize_t y, done_x, done_z, plane = size_x * size_y * itemsize
    cdef const uint8_t* first = &source[0]
    cdef uint8_t* target = &destination[0, 0, 0]
    cdef bint tiles = simd and HAVE_AVX2 and (itemsize == 2 or itemsize == 4 or itemsize == 8)
    if count_x == 0 or count_y == 0 or count_z == 0:
        return
    with nogil:
        for y in range(count_y):
            done_x = done_z = 0
            if tiles:
                n5ms_place_tiles(first + (start_x + size_x * (start_y + y + size_y * start_z)) * itemsize, plane,
                                 target + y * step_y, step_x, count_x, count_z, itemsize, &done_x, &done_z)
            # what the tiles left: the last x rows (all z), then the last z values of the rest
            place_portable(first, size_x, size_y, start_x, start_y, start_z, target, step_x, step_y, done_x, count_x,
                           0, count_z, y, itemsize)
            place_portable(first, size_x, size_y, start_x, start_y, start_z, target, step_x, step_y, 0, done_x,
                           done_z, count_z, y, itemsize)
