# Unaligned little- and big-endian loads and stores, shared by the kernels
# (byte by byte: any alignment, any host byte order; compilers fuse them).
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t


cdef inline uint32_t load_u32_le(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint32_t load_u32_be(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[3]) | (<uint32_t>p[2] << 8) | (<uint32_t>p[1] << 16) | (<uint32_t>p[0] << 24)


cdef inline uint64_t load_u64_le(const uint8_t* p) noexcept nogil:
    return (<uint64_t>load_u32_le(p)) | (<uint64_t>load_u32_le(p + 4) << 32)


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


cdef inline uint16_t load_u16_be(const uint8_t* p) noexcept nogil:
    return <uint16_t>((<uint16_t>p[0] << 8) | p[1])


cdef inline uint64_t load_u64_be(const uint8_t* p) noexcept nogil:
    return (<uint64_t>load_u32_be(p) << 32) | (<uint64_t>load_u32_be(p + 4))
