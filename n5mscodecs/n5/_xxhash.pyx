# cython: freethreading_compatible = True
"""xxHash32, for the block checksums of N5's lz4 framing (Java's LZ4BlockOutputStream)."""

from libc.stdint cimport uint8_t, uint32_t

from n5mscodecs._bytes cimport load_u32_le

cdef uint32_t P1 = 2654435761U
cdef uint32_t P2 = 2246822519U
cdef uint32_t P3 = 3266489917U
cdef uint32_t P4 = 668265263U
cdef uint32_t P5 = 374761393U


cdef inline uint32_t rotl(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef inline uint32_t round32(uint32_t acc, uint32_t lane) noexcept nogil:
    acc = acc + lane * P2
    return rotl(acc, 13) * P1


def xxh32(const uint8_t[::1] data, uint32_t seed=0):
    """The 32-bit xxHash of ``data``."""
    cdef Py_ssize_t n = data.shape[0], i = 0
    cdef const uint8_t* p = &data[0] if n else NULL
    cdef uint32_t v1, v2, v3, v4, h
    with nogil:
        if n >= 16:
            v1 = seed + P1 + P2
            v2 = seed + P2
            v3 = seed
            v4 = seed - P1
            while i + 16 <= n:
                v1 = round32(v1, load_u32_le(p + i))
                v2 = round32(v2, load_u32_le(p + i + 4))
                v3 = round32(v3, load_u32_le(p + i + 8))
                v4 = round32(v4, load_u32_le(p + i + 12))
                i += 16
            h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)
        else:
            h = seed + P5
        h = h + <uint32_t>n
        while i + 4 <= n:
            h = rotl(h + load_u32_le(p + i) * P3, 17) * P4
            i += 4
        while i < n:
            h = rotl(h + p[i] * P5, 11) * P1
            i += 1
        h ^= h >> 15
        h *= P2
        h ^= h >> 13
        h *= P3
        h ^= h >> 16
    return h
