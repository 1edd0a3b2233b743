# Unaligned little- and big-endian loads and stores, shared by the kernels (any
# alignment, any host byte order). Loads are one memcpy and, where the host's order
# differs, a byte swap: gcc does not fuse byte-by-byte loads inside every loop (the
# argmax groups of multiset/_argmax.pxd ran at half speed with them). Stores stay
# byte by byte: compilers fuse those.
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(_MSC_VER)
    #include <stdlib.h>
    #define N5MS_BSWAP16(x) _byteswap_ushort(x)
    #define N5MS_BSWAP32(x) _byteswap_ulong(x)
    #define N5MS_BSWAP64(x) _byteswap_uint64(x)
    #else
    #define N5MS_BSWAP16(x) __builtin_bswap16(x)
    #define N5MS_BSWAP32(x) __builtin_bswap32(x)
    #define N5MS_BSWAP64(x) __builtin_bswap64(x)
    #endif
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    #define N5MS_FROM_LE(bits, x) N5MS_BSWAP##bits(x)
    #define N5MS_FROM_BE(bits, x) (x)
    #else
    #define N5MS_FROM_LE(bits, x) (x)
    #define N5MS_FROM_BE(bits, x) N5MS_BSWAP##bits(x)
    #endif
    #define N5MS_LOAD(name, type, bits, order) \\
        static inline type name(const uint8_t* p) { type v; memcpy(&v, p, sizeof v); return N5MS_FROM_##order(bits, v); }
    N5MS_LOAD(n5ms_load_u16_be, uint16_t, 16, BE)
    N5MS_LOAD(n5ms_load_u32_le, uint32_t, 32, LE)
    N5MS_LOAD(n5ms_load_u32_be, uint32_t, 32, BE)
    N5MS_LOAD(n5ms_load_u64_le, uint64_t, 64, LE)
    N5MS_LOAD(n5ms_load_u64_be, uint64_t, 64, BE)
    /* 8 bytes as the host's uint64: for equality tests, where byte order does not matter */
    static inline uint64_t n5ms_load_u64_raw(const uint8_t* p) { uint64_t v; memcpy(&v, p, 8); return v; }
    """
    uint16_t load_u16_be "n5ms_load_u16_be"(const uint8_t* p) noexcept nogil
    uint32_t load_u32_le "n5ms_load_u32_le"(const uint8_t* p) noexcept nogil
    uint32_t load_u32_be "n5ms_load_u32_be"(const uint8_t* p) noexcept nogil
    uint64_t load_u64_le "n5ms_load_u64_le"(const uint8_t* p) noexcept nogil
    uint64_t load_u64_be "n5ms_load_u64_be"(const uint8_t* p) noexcept nogil
    uint64_t load_u64_raw "n5ms_load_u64_raw"(const uint8_t* p) noexcept nogil


cdef inline void store_u32_le(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = (v >> 24) & 0xFF


cdef inline void store_u32_be(uint8_t* p, uint32_t v) noexcept nogil:
    p[3] = v & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[1] = (v >> 16) & 0xFF
    p[0] = (v >> 24) & 0xFF


cdef inline void store_u64_le(uint8_t* p, uint64_t v) noexcept nogil:
    store_u32_le(p, <uint32_t>(v & 0xFFFFFFFFULL))
    store_u32_le(p + 4, <uint32_t>(v >> 32))
