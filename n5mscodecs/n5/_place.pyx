# cython: freethreading_compatible = True, boundscheck = False, wraparound = False, cdivision = True
"""Placing a plain N5 block into a read's result: the block's big-endian values in N5 order
(first axis fastest) copied into a C-ordered region, bytes swapped and axes transposed in one
tiled pass with the GIL released. A 3-D kernel; 1-D and 2-D blocks are 3-D with unit axes."""

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

from n5mscodecs._bytes cimport load_u16_be, load_u32_be, load_u64_be

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


def place_block(const uint8_t[::1] source, tuple source_dims, tuple start, uint8_t[:, :, :] destination,
                Py_ssize_t itemsize):
    """Copy the values ``start : start + count`` of a block of ``source_dims`` (3 dims, N5
    order, first fastest; big-endian values of ``itemsize`` bytes) into ``destination``, a
    byte view of shape ``(count_x, count_y, count_z * itemsize)`` whose last axis is contiguous.

    The caller has checked that the box lies inside the block and ``source`` holds it."""
    cdef Py_ssize_t size_x = source_dims[0], size_y = source_dims[1]
    cdef Py_ssize_t start_x = start[0], start_y = start[1], start_z = start[2]
    cdef Py_ssize_t count_x = destination.shape[0], count_y = destination.shape[1]
    cdef Py_ssize_t count_z = destination.shape[2] // itemsize
    cdef Py_ssize_t step_x = destination.strides[0], step_y = destination.strides[1]
    cdef Py_ssize_t x0, z0, x1, z1, y, z
    cdef const uint8_t* first = &source[0]
    cdef uint8_t* target = &destination[0, 0, 0]
    if count_x == 0 or count_y == 0 or count_z == 0:
        return
    with nogil:
        for y in range(count_y):
            z0 = 0
            while z0 < count_z:
                z1 = z0 + TILE_Z if z0 + TILE_Z < count_z else count_z
                x0 = 0
                while x0 < count_x:
                    x1 = x0 + TILE_X if x0 + TILE_X < count_x else count_x
                    for z in range(z0, z1):
                        swap_run(first + (start_x + x0 + size_x * (start_y + y + size_y * (start_z + z))) * itemsize,
                                 target + x0 * step_x + y * step_y + z * itemsize, x1 - x0, step_x, itemsize)
                    x0 = x1
                z0 = z1
