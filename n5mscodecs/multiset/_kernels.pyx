# cython: freethreading_compatible = True
"""Byte-crunching kernels for label multiset payloads.

Everything here runs without the GIL and only reports problems as status
codes; the Python modules validate arguments, choose layouts and raise.

Columnar model used throughout: ``index[v]`` is the list of voxel ``v``;
list ``i`` owns entries ``list_offsets[i]:list_offsets[i + 1]`` of
``ids``/``counts``.
"""

from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from n5mscodecs.multiset._hash_table cimport HashTable, mix64, table_free, table_grow, table_init, table_slot

import numpy as np

ctypedef fused index_t:
    int32_t
    int64_t

# Status codes shared with the Python layer (see multiset_kernels_errors).
DEF OK = 0
DEF ERR_TRUNCATED_COUNT = 1     # fewer than 4 bytes left for numEntries
DEF ERR_ENTRIES_PAST_END = 2    # numEntries runs past the list data
DEF ERR_NO_MEMORY = 3

cdef uint64_t INVALID = 0xFFFFFFFFFFFFFFFEULL

# OpenMP only pays off on large inputs: a fork/join costs microseconds when all
# cores are idle and whole scheduler slices when another process holds one, and
# zarr/dask already decode many blocks in parallel. Blocks below these sizes
# run on the calling thread.
DEF PARALLEL_VOXELS = 1048576
DEF PARALLEL_LISTS = 65536


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


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------

def scan_list_data(const uint8_t[::1] list_data):
    """Walk the list data once; lists must tile it exactly.

    Returns ``(status, position, n_lists, n_entries)``; ``position`` is the
    byte offset of the first list that does not fit when ``status != 0``.
    """
    cdef Py_ssize_t size = list_data.shape[0]
    cdef Py_ssize_t pos = 0, n_lists = 0, n_entries = 0
    cdef uint64_t n
    cdef int status = OK
    with nogil:
        while pos < size:
            if size - pos < 4:
                status = ERR_TRUNCATED_COUNT
                break
            n = load_u32_le(&list_data[pos])
            if n > <uint64_t>((size - pos - 4) // 12):
                status = ERR_ENTRIES_PAST_END
                break
            n_lists += 1
            n_entries += <Py_ssize_t>n
            pos += 4 + 12 * <Py_ssize_t>n
    return status, pos, n_lists, n_entries


def split_list_data(const uint8_t[::1] list_data, int64_t[::1] list_offsets,
                    uint64_t[::1] ids, uint32_t[::1] counts, int32_t[::1] slot_of_word):
    """Fill the CSR arrays from list data already validated by ``scan_list_data``.

    ``slot_of_word[byte_offset // 4]`` receives the list number for every list
    start (lists are 4 + 12 n bytes, so every start is a multiple of 4); the
    caller pre-fills it with -1.
    """
    cdef Py_ssize_t size = list_data.shape[0]
    cdef Py_ssize_t pos = 0, lst = 0, e = 0, j
    cdef uint32_t n
    with nogil:
        list_offsets[0] = 0
        while pos < size:
            n = load_u32_le(&list_data[pos])
            slot_of_word[pos >> 2] = <int32_t>lst
            pos += 4
            for j in range(n):
                ids[e] = load_u64_le(&list_data[pos])
                counts[e] = load_u32_le(&list_data[pos + 8])
                pos += 12
                e += 1
            lst += 1
            list_offsets[lst] = e


def map_voxel_offsets(const uint8_t[::1] table, bint big_endian, int32_t[::1] slot_of_word,
                      Py_ssize_t list_data_size, int32_t[::1] index, int num_threads):
    """Translate each voxel's byte offset into its list number.

    Bad offsets (negative, past the list data, not a list start) give index -1.
    Returns the number of bad voxels.
    """
    cdef Py_ssize_t n_voxels = index.shape[0]
    cdef Py_ssize_t v
    cdef uint64_t offset
    cdef uint64_t size = <uint64_t>list_data_size
    cdef int32_t slot
    cdef Py_ssize_t bad = 0
    # Java writes signed int32 offsets: a negative one wraps to a huge unsigned
    # value and fails the single range check below, like one past the end
    if big_endian:
        for v in prange(n_voxels, nogil=True, schedule="static", num_threads=num_threads,
                        use_threads_if=n_voxels > PARALLEL_VOXELS):
            offset = <uint64_t><int64_t><int32_t>load_u32_be(&table[4 * v])
            slot = slot_of_word[offset >> 2] if offset < size and (offset & 3) == 0 else -1
            index[v] = slot
            if slot < 0:
                bad += 1
    else:
        for v in prange(n_voxels, nogil=True, schedule="static", num_threads=num_threads,
                        use_threads_if=n_voxels > PARALLEL_VOXELS):
            offset = load_u32_le(&table[4 * v])
            slot = slot_of_word[offset >> 2] if offset < size and (offset & 3) == 0 else -1
            index[v] = slot
            if slot < 0:
                bad += 1
    return bad


def argmax_of_lists(const int64_t[::1] list_offsets, const uint64_t[::1] ids,
                    const uint32_t[::1] counts, bint java_rule, int num_threads):
    """Argmax per list.

    Default rule (data type spec): highest count, ties to the smaller unsigned
    id, empty list -> INVALID. ``java_rule`` mirrors ``LabelUtils.getArgMax``:
    only positive counts compete and ties go to the smaller *signed* id, so a
    list of zero counts also gives INVALID.
    """
    cdef Py_ssize_t n_lists = list_offsets.shape[0] - 1
    result = np.empty(n_lists, dtype=np.uint64)
    cdef uint64_t[::1] out = result
    cdef Py_ssize_t i, e
    cdef uint64_t best, label
    cdef uint32_t best_count, c
    for i in prange(n_lists, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_lists > PARALLEL_LISTS):
        best = INVALID
        best_count = 0
        for e in range(list_offsets[i], list_offsets[i + 1]):
            c = counts[e]
            label = ids[e]
            if java_rule:
                if c > best_count or (c == best_count and c > 0 and <int64_t>label < <int64_t>best):
                    best = label
                    best_count = c
            else:
                if c > best_count or (c == best_count and label < best):
                    best = label
                    best_count = c
        out[i] = best
    return result


# ---------------------------------------------------------------------------
# construction and dedup
# ---------------------------------------------------------------------------

cdef struct LabelNumbering:
    HashTable table
    uint64_t* unique      # distinct labels in first-encounter order (grows by doubling)
    Py_ssize_t n_unique
    Py_ssize_t capacity
    uint64_t last_label   # segmentations come in runs: a repeated label skips the hash
    int64_t last_number


cdef int numbering_init(LabelNumbering* n) noexcept nogil:
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


cdef void numbering_free(LabelNumbering* n) noexcept nogil:
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


cdef object _unique_array(LabelNumbering* n):
    result = np.empty(n.n_unique, dtype=np.uint64)
    cdef uint64_t[::1] view = result
    cdef Py_ssize_t i
    for i in range(n.n_unique):
        view[i] = n.unique[i]
    return result


def first_encounter_labels(const uint64_t[::1] labels, index_t[::1] index):
    """Number the distinct labels in first-encounter order.

    ``index[v]`` receives the number of ``labels[v]``. Returns the distinct
    labels in that order, or None when memory runs out.
    """
    cdef Py_ssize_t n = labels.shape[0]
    cdef Py_ssize_t v
    cdef int64_t number = 0
    cdef LabelNumbering numbering
    if numbering_init(&numbering) != OK:
        return None
    with nogil:
        for v in range(n):
            number = number_of(&numbering, labels[v])
            if number < 0:
                break
            index[v] = <index_t>number
    unique = _unique_array(&numbering) if number >= 0 or n == 0 else None
    numbering_free(&numbering)
    return unique


def encode_singleton_offsets(const uint64_t[::1] labels, uint8_t[::1] table, bint big_endian):
    """Offset table of a singleton payload, written straight into ``table``.

    Every list is ``{label: 1}`` (16 bytes) in first-encounter order, so the
    offset of a voxel is 16 x its label's number. Returns the distinct
    labels (or None when memory runs out).
    """
    cdef Py_ssize_t n = labels.shape[0]
    cdef Py_ssize_t v
    cdef int64_t number = 0
    cdef LabelNumbering numbering
    if numbering_init(&numbering) != OK:
        return None
    with nogil:
        for v in range(n):
            number = number_of(&numbering, labels[v])
            if number < 0:
                break
            if big_endian:
                store_u32_be(&table[4 * v], <uint32_t>(16 * number))
            else:
                store_u32_le(&table[4 * v], <uint32_t>(16 * number))
    unique = _unique_array(&numbering) if number >= 0 else None
    numbering_free(&numbering)
    return unique


cdef inline uint64_t list_hash(const int64_t* list_offsets, const uint64_t* ids,
                               const uint32_t* counts, Py_ssize_t i) noexcept nogil:
    cdef uint64_t h = mix64(<uint64_t>(list_offsets[i + 1] - list_offsets[i]) + 0x9E3779B97F4A7C15ULL)
    cdef Py_ssize_t e
    for e in range(list_offsets[i], list_offsets[i + 1]):
        h = mix64(h ^ ids[e]) + counts[e]
    return h


cdef inline bint lists_equal(const int64_t* list_offsets, const uint64_t* ids,
                             const uint32_t* counts, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    cdef Py_ssize_t n = list_offsets[a + 1] - list_offsets[a]
    cdef Py_ssize_t k, ea = list_offsets[a], eb = list_offsets[b]
    if n != list_offsets[b + 1] - list_offsets[b]:
        return False
    for k in range(n):
        if ids[ea + k] != ids[eb + k] or counts[ea + k] != counts[eb + k]:
            return False
    return True


def representative_lists(const int64_t[::1] list_offsets, const uint64_t[::1] ids,
                         const uint32_t[::1] counts):
    """For each list, the first list with identical content (entry order matters).

    Returns an int64 array, or None when memory runs out.
    """
    cdef Py_ssize_t n_lists = list_offsets.shape[0] - 1
    result = np.empty(n_lists, dtype=np.int64)
    cdef int64_t[::1] rep = result
    cdef Py_ssize_t i, h, cand
    cdef uint64_t key
    cdef HashTable table
    cdef int status
    if n_lists == 0:
        return result
    cdef const int64_t* offsets_ptr = &list_offsets[0]
    # empty id arrays have no element 0; an all-empty-lists input never reads them
    cdef const uint64_t* ids_ptr = &ids[0] if ids.shape[0] else NULL
    cdef const uint32_t* counts_ptr = &counts[0] if counts.shape[0] else NULL
    with nogil:
        status = table_init(&table, n_lists)
        if status == OK:
            for i in range(n_lists):
                key = list_hash(offsets_ptr, ids_ptr, counts_ptr, i)
                h = table_slot(&table, key)
                rep[i] = i
                while table.values[h] >= 0:
                    cand = table.values[h]
                    if table.keys[h] == key and lists_equal(offsets_ptr, ids_ptr, counts_ptr, cand, i):
                        rep[i] = cand
                        break
                    h = (h + 1) & table.mask
                if rep[i] == i:
                    table.keys[h] = key
                    table.values[h] = i
            table_free(&table)
    if status != OK:
        return None
    return result


cdef struct Entry:
    uint64_t id
    uint32_t count


cdef int compare_entries(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const Entry*>a).id
    cdef uint64_t y = (<const Entry*>b).id
    return (x > y) - (x < y)


def canonicalize_lists(const int64_t[::1] list_offsets, uint64_t[::1] ids, uint32_t[::1] counts,
                       int64_t[::1] new_lengths, int num_threads):
    """Sort every list by unsigned id and merge duplicate ids, in place.

    The merged entries of list i are left at the start of its old range and
    its new length goes to ``new_lengths[i]``; the caller compacts. Counts
    that overflow uint32 when merged saturate (Java would wrap; neither is
    meaningful). Returns 0, or ERR_NO_MEMORY.
    """
    cdef Py_ssize_t n_lists = list_offsets.shape[0] - 1
    cdef Py_ssize_t i, e, k, n, start, out_n, j
    cdef Entry* scratch
    cdef Entry tmp
    cdef uint64_t total
    cdef Py_ssize_t failed = 0
    for i in prange(n_lists, nogil=True, schedule="dynamic", num_threads=num_threads,
                    use_threads_if=n_lists > PARALLEL_LISTS):
        start = list_offsets[i]
        n = list_offsets[i + 1] - start
        if n <= 1:
            new_lengths[i] = n
            continue
        scratch = <Entry*>malloc(n * sizeof(Entry))
        if scratch == NULL:
            failed += 1     # in-place op: an OpenMP reduction, not a private copy
            new_lengths[i] = n
            continue
        for k in range(n):
            scratch[k].id = ids[start + k]
            scratch[k].count = counts[start + k]
        if n <= 16:
            # insertion sort: stable and fastest for the short lists that dominate
            for k in range(1, n):
                tmp = scratch[k]
                j = k - 1
                while j >= 0 and scratch[j].id > tmp.id:
                    scratch[j + 1] = scratch[j]
                    j = j - 1
                scratch[j + 1] = tmp
        else:
            qsort(scratch, n, sizeof(Entry), compare_entries)
        out_n = 0
        for k in range(n):
            if out_n > 0 and ids[start + out_n - 1] == scratch[k].id:
                total = <uint64_t>counts[start + out_n - 1] + scratch[k].count
                counts[start + out_n - 1] = <uint32_t>(total if total < 0xFFFFFFFFULL else 0xFFFFFFFFULL)
            else:
                ids[start + out_n] = scratch[k].id
                counts[start + out_n] = scratch[k].count
                out_n = out_n + 1
        new_lengths[i] = out_n
        free(scratch)
    return ERR_NO_MEMORY if failed else OK


def compact_lists(const int64_t[::1] old_offsets, const int64_t[::1] new_offsets,
                  const uint64_t[::1] ids, const uint32_t[::1] counts,
                  uint64_t[::1] new_ids, uint32_t[::1] new_counts, int num_threads):
    """Copy the first ``new_offsets[i+1]-new_offsets[i]`` entries of each old list."""
    cdef Py_ssize_t n_lists = old_offsets.shape[0] - 1
    cdef Py_ssize_t i, k, src, dst
    for i in prange(n_lists, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_lists > PARALLEL_LISTS):
        src = old_offsets[i]
        dst = new_offsets[i]
        for k in range(new_offsets[i + 1] - dst):
            new_ids[dst + k] = ids[src + k]
            new_counts[dst + k] = counts[src + k]


# ---------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------

def assign_list_positions(const index_t[::1] index, const int64_t[::1] representative,
                          const int64_t[::1] list_offsets, int64_t[::1] byte_position,
                          int64_t[::1] write_order):
    """Lay out lists in first-encounter order over ``index`` (Java's order).

    ``byte_position[list]`` (pre-filled with -1) receives the list-data offset
    of each representative list that is used; every other list gets its
    representative's offset. ``write_order`` receives the representatives in
    layout order. Returns ``(n_written, list_data_size)``.
    """
    cdef Py_ssize_t n_voxels = index.shape[0]
    cdef Py_ssize_t n_lists = representative.shape[0]
    cdef Py_ssize_t v, i, r, n_written = 0
    cdef int64_t next_position = 0
    cdef int64_t last = -1
    with nogil:
        for v in range(n_voxels):
            i = index[v]
            if i == last:
                continue
            last = i
            r = representative[i]
            if byte_position[r] < 0:
                byte_position[r] = next_position
                next_position += 4 + 12 * (list_offsets[r + 1] - list_offsets[r])
                write_order[n_written] = r
                n_written += 1
        for i in range(n_lists):
            byte_position[i] = byte_position[representative[i]]
    return n_written, next_position


def write_voxel_offsets(uint8_t[::1] out, Py_ssize_t start, const index_t[::1] index,
                        const int64_t[::1] byte_position, bint big_endian, int num_threads):
    """Write one 32-bit list offset per voxel at ``out[start:]``."""
    cdef Py_ssize_t n_voxels = index.shape[0]
    cdef Py_ssize_t v
    cdef uint32_t position
    for v in prange(n_voxels, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_voxels > PARALLEL_VOXELS):
        position = <uint32_t>byte_position[index[v]]
        if big_endian:
            store_u32_be(&out[start + 4 * v], position)
        else:
            store_u32_le(&out[start + 4 * v], position)


def write_lists(uint8_t[::1] out, Py_ssize_t start, const int64_t[::1] write_order,
                const int64_t[::1] list_offsets, const uint64_t[::1] ids,
                const uint32_t[::1] counts):
    """Append the lists named in ``write_order`` as little-endian list data."""
    cdef Py_ssize_t n = write_order.shape[0]
    cdef Py_ssize_t k, e, r
    cdef Py_ssize_t pos = start
    with nogil:
        for k in range(n):
            r = write_order[k]
            store_u32_le(&out[pos], <uint32_t>(list_offsets[r + 1] - list_offsets[r]))
            pos += 4
            for e in range(list_offsets[r], list_offsets[r + 1]):
                store_u64_le(&out[pos], ids[e])
                store_u32_le(&out[pos + 8], counts[e])
                pos += 12
    return pos


ctypedef fused voxel_t:
    int32_t
    int64_t
    uint64_t

DEF TILE = 8


def c_order_copy_3d(const voxel_t[:, :, :] src, voxel_t[::1] dst, int num_threads):
    """``dst`` = C-order flattening of the strided 3-D ``src``.

    Used for N5 payload order (``array.T`` of a C-ordered array), a swap of
    the first and last axes. Both have power-of-two strides in real volumes,
    so a naive copy thrashes cache sets and the TLB; instead each 8 x 8
    tile of (first, last) is walked along the middle axis, reading and
    writing whole 64-byte lines.
    """
    cdef Py_ssize_t n0 = src.shape[0], n1 = src.shape[1], n2 = src.shape[2]
    cdef Py_ssize_t a0, c0, a, b, c, a_end, c_end
    for a0 in prange(0, n0, TILE, nogil=True, schedule="static", num_threads=num_threads,
                     use_threads_if=n0 * n1 * n2 > PARALLEL_VOXELS):
        a_end = min(a0 + TILE, n0)
        for c0 in range(0, n2, TILE):
            c_end = min(c0 + TILE, n2)
            for b in range(n1):
                for a in range(a0, a_end):
                    for c in range(c0, c_end):
                        dst[(a * n1 + b) * n2 + c] = src[a, b, c]


cimport numpy as cnp
from cpython.ref cimport PyObject, Py_DECREF

cnp.import_array()

cdef extern from *:
    """
    /* Add ``count`` references at once. One Py_INCREF per voxel is a chain of
       dependent read-modify-writes on the same few refcounts (neighbouring
       voxels share an element), about 5 cycles each; one addition per run of
       equal voxels is not. Free-threaded builds split refcounts per thread,
       so they take the plain increments. */
    static inline void n5ms_add_references(PyObject* obj, Py_ssize_t count) {
    #ifdef Py_GIL_DISABLED
        for (; count > 0; count--) Py_INCREF(obj);
    #else
        Py_SET_REFCNT(obj, Py_REFCNT(obj) + count);
    #endif
    }
    """
    void n5ms_add_references(PyObject* obj, Py_ssize_t count)


def gather_objects(cnp.ndarray elements, const index_t[::1] index):
    """A new 1-D object array with ``out[v] = elements[index[v]]``.

    numpy's object ``take`` costs ~10 ns per voxel; chunks of label multisets
    hand zarr one shared element per list, so this loop dominates a zarr read.
    The result starts NULL-filled (numpy's ``empty`` would write and then
    release a None per voxel) and references are added per run of equal
    indices. ``elements`` is a contiguous object array owned by the caller's
    thread; index values are checked by the caller.
    """
    cdef cnp.npy_intp n = index.shape[0]
    cdef cnp.ndarray out = cnp.PyArray_SimpleNew(1, &n, cnp.NPY_OBJECT)
    cdef PyObject** source = <PyObject**>cnp.PyArray_DATA(elements)
    cdef PyObject** target = <PyObject**>cnp.PyArray_DATA(out)
    cdef Py_ssize_t v, run = 0
    cdef index_t current, previous
    if n == 0:
        return out
    previous = index[0]
    for v in range(n):
        current = index[v]
        if current != previous:
            n5ms_add_references(source[previous], run)
            previous, run = current, 0
        run += 1
        if target[v] != NULL:  # numpy versions that pre-fill object arrays with None
            Py_DECREF(<object>target[v])
        target[v] = source[current]
    n5ms_add_references(source[previous], run)
    return out
