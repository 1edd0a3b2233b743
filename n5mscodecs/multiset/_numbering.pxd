# Numbering distinct uint64 labels in first-encounter order (a growing list plus a
# hash table), shared by the multiset and payload kernels. All inline: no module.

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from n5mscodecs._status cimport ERR_NO_MEMORY, OK
from n5mscodecs.multiset._hash_table cimport HashTable, table_free, table_grow, table_init, table_slot



cdef struct LabelNumbering:
    HashTable table
    uint64_t* unique      # distinct labels in first-encounter order (grows by doubling)
    Py_ssize_t n_unique
    Py_ssize_t capacity
    uint64_t last_label   # segmentations come in runs: a repeated label skips the hash
    int64_t last_number


cdef inline int numbering_init(LabelNumbering* n) noexcept nogil:
    n.n_unique = 0
    n.capacity = 1024
    n.last_number = -1
    n.last_label = 0
    n.unique = <uint64_t*>malloc(n.capacity * sizeof(uint64_t))
    if n.unique == NULL:
        return ERR_NO_MEMORY
    if table_init(&n.table, 1024) != OK:
        free(n.unique)
        return ERR_NO_MEMORY
    return OK


cdef inline void numbering_free(LabelNumbering* n) noexcept nogil:
    table_free(&n.table)
    free(n.unique)


cdef inline int64_t number_of(LabelNumbering* n, uint64_t label) noexcept nogil:
    """The label's number, assigning the next one on first sight; -1 when out of memory."""
    cdef Py_ssize_t h
    cdef int64_t number
    cdef uint64_t* grown
    if n.last_number >= 0 and label == n.last_label:
        return n.last_number
    h = table_slot(&n.table, label)
    while n.table.values[h] >= 0 and n.table.keys[h] != label:
        h = (h + 1) & n.table.mask
    if n.table.values[h] >= 0:
        number = n.table.values[h]
    else:
        if n.n_unique == n.capacity:
            grown = <uint64_t*>realloc(n.unique, 2 * n.capacity * sizeof(uint64_t))
            if grown == NULL:
                return -1
            n.unique = grown
            n.capacity *= 2
        number = n.n_unique
        n.table.keys[h] = label
        n.table.values[h] = number
        n.unique[number] = label
        n.n_unique += 1
        if 2 * n.n_unique > n.table.mask and table_grow(&n.table) != OK:
            return -1
    n.last_label = label
    n.last_number = number
    return number


cdef inline void copy_unique(const LabelNumbering* n, uint64_t[::1] out) noexcept nogil:
    """The distinct labels in first-encounter order into ``out`` (``n.n_unique`` of them)."""
    if n.n_unique:
        memcpy(&out[0], n.unique, n.n_unique * sizeof(uint64_t))
