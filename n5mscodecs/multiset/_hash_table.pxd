# An open-addressing table uint64 key -> int64 value shared by the kernels
# (label numbering, list dedup, downsampling). All inline: no extension module.

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from n5mscodecs._status cimport ERR_NO_MEMORY, OK


cdef struct HashTable:
    uint64_t* keys
    int64_t* values     # -1 marks an empty slot
    Py_ssize_t mask


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    # splitmix64 finaliser: cheap and spreads sequential label ids well
    x ^= x >> 30
    x *= 0xBF58476D1CE4E5B9ULL
    x ^= x >> 27
    x *= 0x94D049BB133111EBULL
    x ^= x >> 31
    return x


cdef inline Py_ssize_t table_slot(const HashTable* t, uint64_t key) noexcept nogil:
    """First slot to probe for ``key`` (linear probing from there)."""
    return <Py_ssize_t>(mix64(key) & <uint64_t>t.mask)


cdef inline int table_init(HashTable* t, Py_ssize_t expected) noexcept nogil:
    """Room for ``expected`` keys at load <= 1/2. Returns OK or ERR_NO_MEMORY."""
    cdef Py_ssize_t capacity = 64
    while capacity < 2 * expected:
        capacity <<= 1
    t.keys = <uint64_t*>malloc(capacity * sizeof(uint64_t))
    t.values = <int64_t*>malloc(capacity * sizeof(int64_t))
    if t.keys == NULL or t.values == NULL:
        free(t.keys)
        free(t.values)
        t.keys = NULL
        t.values = NULL
        return ERR_NO_MEMORY
    memset(t.values, 0xFF, capacity * sizeof(int64_t))
    t.mask = capacity - 1
    return OK


cdef inline void table_free(HashTable* t) noexcept nogil:
    free(t.keys)
    free(t.values)
    t.keys = NULL
    t.values = NULL


cdef inline int table_grow(HashTable* t) noexcept nogil:
    """Double the capacity. Returns OK, or ERR_NO_MEMORY (the table is kept)."""
    cdef HashTable bigger
    cdef Py_ssize_t i, h
    if table_init(&bigger, t.mask + 1) != OK:
        return ERR_NO_MEMORY
    for i in range(t.mask + 1):
        if t.values[i] >= 0:
            h = table_slot(&bigger, t.keys[i])
            while bigger.values[h] >= 0:
                h = (h + 1) & bigger.mask
            bigger.keys[h] = t.keys[i]
            bigger.values[h] = t.values[i]
    table_free(t)
    t[0] = bigger
    return OK
