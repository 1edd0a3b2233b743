# cython: freethreading_compatible = True
"""Byte-crunching kernel for downsampling label multisets (multiset union per window).

Runs without the GIL and reports problems as status codes; the Python layer
(``LabelMultisetArray.downsample``) validates arguments and raises.

Columnar model: ``index[v]`` is the list of voxel ``v``; list ``i`` owns
entries ``list_offsets[i]:list_offsets[i + 1]`` of ``ids``/``counts``.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy

from n5mscodecs._status cimport ERR_NO_MEMORY, OK
from n5mscodecs.multiset._hash_table cimport HashTable, mix64, table_free, table_grow, table_init, table_slot

import numpy as np

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused out_index_t:
    int32_t
    int64_t


DEF INSERTION_SORT_MAX = 16
cdef uint64_t SIGN_BIT = 0x8000000000000000ULL   # flips signed int64 order to unsigned order


cdef struct Entry:
    uint64_t id
    uint64_t count      # summed in 64 bits, saturated to uint32 on output


cdef struct Buffer:
    Entry* data
    Py_ssize_t size
    Py_ssize_t capacity


cdef int buffer_reserve(Buffer* b, Py_ssize_t needed) noexcept nogil:
    cdef Py_ssize_t capacity = b.capacity if b.capacity > 0 else 64
    cdef Entry* grown
    if needed <= b.capacity:
        return OK
    while capacity < needed:
        capacity *= 2
    grown = <Entry*>realloc(b.data, capacity * sizeof(Entry))
    if grown == NULL:
        return ERR_NO_MEMORY
    b.data = grown
    b.capacity = capacity
    return OK


cdef int compare_by_id(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const Entry*>a).id
    cdef uint64_t y = (<const Entry*>b).id
    return (x > y) - (x < y)


cdef inline bint before_highest(const Entry* a, const Entry* b) noexcept nogil:
    # higher count first, ties: smaller id first
    return a.count > b.count or (a.count == b.count and a.id < b.id)


cdef inline bint before_lowest(const Entry* a, const Entry* b) noexcept nogil:
    # lower count first, ties: smaller id first (Java's increasing sort of an id-sorted list)
    return a.count < b.count or (a.count == b.count and a.id < b.id)


cdef int compare_java_cut(const void* a, const void* b) noexcept nogil:
    # Java's LabelMultisetEntryList.sortByCount: int32 count ascending, ties: larger signed id first
    cdef int32_t x = <int32_t>(<const Entry*>a).count
    cdef int32_t y = <int32_t>(<const Entry*>b).count
    cdef int64_t i = <int64_t>(<const Entry*>a).id
    cdef int64_t j = <int64_t>(<const Entry*>b).id
    if x != y:
        return -1 if x < y else 1
    return (i < j) - (i > j)


cdef int compare_highest(const void* a, const void* b) noexcept nogil:
    if before_highest(<const Entry*>a, <const Entry*>b):
        return -1
    return 1 if before_highest(<const Entry*>b, <const Entry*>a) else 0


cdef int compare_lowest(const void* a, const void* b) noexcept nogil:
    if before_lowest(<const Entry*>a, <const Entry*>b):
        return -1
    return 1 if before_lowest(<const Entry*>b, <const Entry*>a) else 0


cdef void sort_by_id(Entry* e, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k, j
    cdef Entry tmp
    if n > INSERTION_SORT_MAX:
        qsort(e, n, sizeof(Entry), compare_by_id)
        return
    for k in range(1, n):
        tmp = e[k]
        j = k - 1
        while j >= 0 and e[j].id > tmp.id:
            e[j + 1] = e[j]
            j -= 1
        e[j + 1] = tmp


cdef void sort_by_signed_id(Entry* e, Py_ssize_t n) noexcept nogil:
    """Sort by id compared as Java's signed int64 (flipping the sign bit maps that order to unsigned)."""
    cdef Py_ssize_t k
    for k in range(n):
        e[k].id ^= SIGN_BIT
    sort_by_id(e, n)
    for k in range(n):
        e[k].id ^= SIGN_BIT


cdef Py_ssize_t java_entries(Entry* e, Py_ssize_t n, Py_ssize_t max_num_entries) noexcept nogil:
    """``LabelMultisetTypeDownscaler``'s list of one window: ids merged in signed order with int32
    counts that wrap, cut to the first ``max_num_entries`` of Java's count order; an empty
    window becomes ``{0: 0}``. Returns the new length (``e`` holds room for one entry)."""
    cdef Py_ssize_t k
    if n == 0:
        e[0].id = 0
        e[0].count = 0
        return 1
    sort_by_signed_id(e, n)
    n = merge_sorted(e, n)
    for k in range(n):
        e[k].count &= 0xFFFFFFFFULL
    if max_num_entries > 0 and n > max_num_entries:
        qsort(e, n, sizeof(Entry), compare_java_cut)
        n = max_num_entries
        sort_by_signed_id(e, n)
    return n


cdef Py_ssize_t merge_sorted(Entry* e, Py_ssize_t n) noexcept nogil:
    """Sum the counts of equal ids of an id-sorted run; returns the new length."""
    cdef Py_ssize_t k, out_n = 0
    for k in range(n):
        if out_n > 0 and e[out_n - 1].id == e[k].id:
            e[out_n - 1].count += e[k].count
        else:
            e[out_n] = e[k]
            out_n += 1
    return out_n


cdef Py_ssize_t keep_entries(Entry* e, Py_ssize_t n, Py_ssize_t max_num_entries,
                             bint keep_lowest) noexcept nogil:
    """Keep ``max_num_entries`` entries by count (highest, or lowest), re-sorted by id."""
    if max_num_entries <= 0 or n <= max_num_entries:
        return n
    qsort(e, n, sizeof(Entry), compare_lowest if keep_lowest else compare_highest)
    sort_by_id(e, max_num_entries)
    return max_num_entries


cdef inline uint64_t entries_hash(const Entry* e, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = mix64(<uint64_t>n + 0x9E3779B97F4A7C15ULL)
    cdef Py_ssize_t k
    for k in range(n):
        h = mix64(h ^ e[k].id) + e[k].count
    return mix64(h)


cdef struct OutputLists:
    HashTable table
    Buffer entries          # all output lists back to back
    int64_t* offsets        # n_lists + 1 boundaries into entries
    Py_ssize_t n_lists
    Py_ssize_t offsets_capacity


cdef int output_init(OutputLists* o, Py_ssize_t expected_lists) noexcept nogil:
    o.entries.data = NULL
    o.entries.size = 0
    o.entries.capacity = 0
    o.n_lists = 0
    o.offsets_capacity = 1024
    o.offsets = <int64_t*>malloc(o.offsets_capacity * sizeof(int64_t))
    if o.offsets == NULL:
        return ERR_NO_MEMORY
    o.offsets[0] = 0
    if table_init(&o.table, expected_lists) != OK:
        free(o.offsets)
        o.offsets = NULL
        return ERR_NO_MEMORY
    return OK


cdef void output_free(OutputLists* o) noexcept nogil:
    table_free(&o.table)
    free(o.entries.data)
    free(o.offsets)


cdef int64_t output_list_number(OutputLists* o, const Entry* e, Py_ssize_t n) noexcept nogil:
    """The number of the output list equal to ``e[:n]``, appending it when new; -1 out of memory."""
    cdef uint64_t key = entries_hash(e, n)
    cdef Py_ssize_t h = table_slot(&o.table, key)
    cdef int64_t candidate, start
    cdef Py_ssize_t k
    cdef bint same
    cdef int64_t* grown
    while o.table.values[h] >= 0:
        candidate = o.table.values[h]
        if o.table.keys[h] == key and o.offsets[candidate + 1] - o.offsets[candidate] == n:
            start = o.offsets[candidate]
            same = True
            for k in range(n):
                if o.entries.data[start + k].id != e[k].id or o.entries.data[start + k].count != e[k].count:
                    same = False
                    break
            if same:
                return candidate
        h = (h + 1) & o.table.mask
    if buffer_reserve(&o.entries, o.entries.size + n) != OK:
        return -1
    if o.n_lists + 2 > o.offsets_capacity:
        grown = <int64_t*>realloc(o.offsets, 2 * o.offsets_capacity * sizeof(int64_t))
        if grown == NULL:
            return -1
        o.offsets = grown
        o.offsets_capacity *= 2
    if n:
        memcpy(&o.entries.data[o.entries.size], e, n * sizeof(Entry))
    o.entries.size += n
    candidate = o.n_lists
    o.n_lists += 1
    o.offsets[o.n_lists] = o.entries.size
    o.table.keys[h] = key
    o.table.values[h] = candidate
    if 2 * o.n_lists > o.table.mask and table_grow(&o.table) != OK:
        return -1
    return candidate


cdef int append_list(Buffer* window, const int64_t* list_offsets, const uint64_t* ids,
                     const uint32_t* counts, int64_t lst, Py_ssize_t multiplier) noexcept nogil:
    cdef int64_t start = list_offsets[lst], stop = list_offsets[lst + 1], k
    cdef Py_ssize_t base = window.size
    if buffer_reserve(window, base + (stop - start)) != OK:
        return ERR_NO_MEMORY
    for k in range(start, stop):
        window.data[base + k - start].id = ids[k]
        window.data[base + k - start].count = <uint64_t>counts[k] * <uint64_t>multiplier
    window.size = base + (stop - start)
    return OK


def downsample_lists(const index_t[:, :, :] index, const int64_t[::1] list_offsets,
                     const uint64_t[::1] ids, const uint32_t[::1] counts,
                     int f0, int f1, int f2, Py_ssize_t max_num_entries, bint keep_lowest,
                     bint java_rule, out_index_t[:, :, ::1] out_index):
    """Multiset union of every ``f0 x f1 x f2`` window of ``index`` (partial at the upper edges).

    ``out_index`` (shape ``ceil(shape / f)``) receives each output voxel's
    list number. Output lists are sorted by id, duplicate ids merged (counts
    saturate at 2**32 - 1), cut to ``max_num_entries`` when positive (highest
    counts kept, or lowest with ``keep_lowest``; ties: smaller id), and
    identical lists are stored once, numbered in first-use order (C order).
    ``java_rule`` makes each window's list the one Java's ``LabelMultisetTypeDownscaler``
    writes instead (see ``java_entries``; ``keep_lowest`` is then ignored).

    Returns ``(status, list_offsets, ids, counts)``; status ``Status.ERR_NO_MEMORY``
    gives None arrays.
    """
    cdef Py_ssize_t n0 = index.shape[0], n1 = index.shape[1], n2 = index.shape[2]
    cdef Py_ssize_t m0 = out_index.shape[0], m1 = out_index.shape[1], m2 = out_index.shape[2]
    cdef Py_ssize_t o0, o1, o2, a, b, c, a_end, b_end, c_end, e, n, count_in_run
    cdef int64_t lst, run_list, number
    cdef int status = OK
    cdef Buffer window
    cdef OutputLists output
    # empty id arrays have no element 0; lists are then all empty and never read them
    cdef const int64_t* offsets_ptr = &list_offsets[0]
    cdef const uint64_t* ids_ptr = &ids[0] if ids.shape[0] else NULL
    cdef const uint32_t* counts_ptr = &counts[0] if counts.shape[0] else NULL
    window.data = NULL
    window.size = 0
    window.capacity = 0
    if output_init(&output, m0 * m1 * m2 // 8 + 16) != OK:
        return ERR_NO_MEMORY, None, None, None
    with nogil:
        for o0 in range(m0):
            a_end = min((o0 + 1) * f0, n0)
            for o1 in range(m1):
                b_end = min((o1 + 1) * f1, n1)
                for o2 in range(m2):
                    c_end = min((o2 + 1) * f2, n2)
                    window.size = 0
                    # gather: runs of equal list numbers (segmentations come in runs)
                    # add their entries once with the run length as multiplier
                    run_list = -1
                    count_in_run = 0
                    for a in range(o0 * f0, a_end):
                        for b in range(o1 * f1, b_end):
                            for c in range(o2 * f2, c_end):
                                lst = index[a, b, c]
                                if lst == run_list:
                                    count_in_run += 1
                                    continue
                                if run_list >= 0:
                                    status = append_list(&window, offsets_ptr, ids_ptr, counts_ptr,
                                                         run_list, count_in_run)
                                    if status != OK:
                                        break
                                run_list = lst
                                count_in_run = 1
                            if status != OK:
                                break
                        if status != OK:
                            break
                    if status == OK and run_list >= 0:
                        status = append_list(&window, offsets_ptr, ids_ptr, counts_ptr, run_list, count_in_run)
                    if status != OK:
                        break
                    n = window.size
                    if java_rule:
                        if buffer_reserve(&window, 1) != OK:
                            status = ERR_NO_MEMORY
                            break
                        n = java_entries(window.data, n, max_num_entries)
                    elif n > 1:
                        sort_by_id(window.data, n)
                        n = merge_sorted(window.data, n)
                        n = keep_entries(window.data, n, max_num_entries, keep_lowest)
                    for e in range(n):
                        if window.data[e].count > 0xFFFFFFFFULL:
                            window.data[e].count = 0xFFFFFFFFULL
                    number = output_list_number(&output, window.data, n)
                    if number < 0:
                        status = ERR_NO_MEMORY
                        break
                    out_index[o0, o1, o2] = <out_index_t>number
                if status != OK:
                    break
            if status != OK:
                break
    free(window.data)
    if status != OK:
        output_free(&output)
        return status, None, None, None
    new_offsets = np.empty(output.n_lists + 1, np.int64)
    new_ids = np.empty(output.entries.size, np.uint64)
    new_counts = np.empty(output.entries.size, np.uint32)
    cdef int64_t[::1] offsets_view = new_offsets
    cdef uint64_t[::1] ids_view = new_ids
    cdef uint32_t[::1] counts_view = new_counts
    with nogil:
        for e in range(output.n_lists + 1):
            offsets_view[e] = output.offsets[e]
        for e in range(output.entries.size):
            ids_view[e] = output.entries.data[e].id
            counts_view[e] = <uint32_t>output.entries.data[e].count
    output_free(&output)
    return OK, new_offsets, new_ids, new_counts
