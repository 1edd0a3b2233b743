# cython: freethreading_compatible = True
"""Kernels for label multisets in memory: argmax, label numbering, list dedup and
canonical order, and gathering elements into object arrays.

Everything here runs without the GIL and reports problems only as ``Status``
codes; the Python modules validate arguments and raise.

Columnar model used throughout: ``index[v]`` is the list of voxel ``v``;
list ``i`` owns entries ``list_offsets[i]:list_offsets[i + 1]`` of
``ids``/``counts``.
"""

from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort

from n5mscodecs._status cimport ERR_NO_MEMORY, OK
from n5mscodecs.multiset._argmax cimport n5ms_argmax_of_lists, n5ms_argmax_of_lists_avx2, n5ms_have_avx2
from n5mscodecs.multiset._hash_table cimport HashTable, mix64, table_free, table_init, table_slot
from n5mscodecs.multiset._numbering cimport LabelNumbering, number_of, numbering_free, numbering_init, copy_unique

import numpy as np

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused value_t:
    uint64_t
    int64_t

cdef uint64_t INVALID = 0xFFFFFFFFFFFFFFFEULL

# OpenMP only pays off on large inputs: a fork/join costs microseconds when all
# cores are idle and whole scheduler slices when another process holds one, and
# zarr/dask already decode many blocks in parallel. Lists below this count run
# on the calling thread.
DEF PARALLEL_LISTS = 65536


#: Whether this CPU runs the AVX2 argmax groups (chosen once; ``simd=False`` forces the
#: portable code, which tests compare against).
HAVE_AVX2 = bool(n5ms_have_avx2())
DEF LIST_RUN = 4096  # lists per task of argmax_of_lists


def argmax_of_lists(const int64_t[::1] list_offsets, const uint64_t[::1] ids,
                    const uint32_t[::1] counts, bint java_rule, int num_threads, bint simd=True):
    """Argmax per list.

    Default rule (data type spec): highest count, ties to the smaller unsigned
    id, empty list -> INVALID. ``java_rule`` is ``LabelUtils.getArgMax``: the
    running best starts as (INVALID, count 0) and ids and counts compare as
    Java's signed int64/int32, so counts >= 2**31 never win and a zero-count
    id below INVALID in signed order (ids in [2**63, 2**64 - 3]) does.
    """
    cdef Py_ssize_t n_lists = list_offsets.shape[0] - 1
    result = np.empty(n_lists, dtype=np.uint64)
    cdef uint64_t[::1] out = result
    cdef Py_ssize_t i, e, r, n_runs = (n_lists + LIST_RUN - 1) // LIST_RUN
    cdef uint64_t best, label
    cdef uint32_t best_count, c
    cdef uint64_t keep
    cdef int64_t n_entries = ids.shape[0]
    cdef const uint64_t* ids_ptr = &ids[0] if n_entries else NULL
    cdef const uint32_t* counts_ptr = &counts[0] if n_entries else NULL
    cdef bint avx2 = simd and HAVE_AVX2
    if n_lists <= 0:
        return result
    if not java_rule:
        for r in prange(n_runs, nogil=True, schedule="static", num_threads=num_threads,
                        use_threads_if=n_lists > PARALLEL_LISTS):
            if avx2:
                n5ms_argmax_of_lists_avx2(&list_offsets[0], ids_ptr, counts_ptr, n_entries, r * LIST_RUN,
                                          min((r + 1) * LIST_RUN, n_lists), &out[0])
            else:
                n5ms_argmax_of_lists(&list_offsets[0], ids_ptr, counts_ptr, n_entries, r * LIST_RUN,
                                     min((r + 1) * LIST_RUN, n_lists), &out[0])
        return result
    for i in prange(n_lists, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_lists > PARALLEL_LISTS):
        best = INVALID
        best_count = 0
        for e in range(list_offsets[i], list_offsets[i + 1]):
            c = counts[e]
            label = ids[e]
            # a mask (all ones when the entry wins) instead of a mispredicted branch
            keep = 0 - <uint64_t>((<int32_t>c > <int32_t>best_count)
                                  | ((c == best_count) & (<int64_t>label < <int64_t>best)))
            best = (label & keep) | (best & ~keep)
            best_count = <uint32_t>((c & keep) | (best_count & ~keep))
        out[i] = best
    return result


# ---------------------------------------------------------------------------
# construction and dedup
# ---------------------------------------------------------------------------

def first_encounter_labels(const uint64_t[::1] labels, index_t[::1] index):
    """Number the distinct labels in first-encounter order.

    ``index[v]`` receives the number of ``labels[v]``. Returns ``(status,
    distinct labels in that order)``; the labels are None unless status is OK.
    """
    cdef Py_ssize_t n = labels.shape[0]
    cdef Py_ssize_t v
    cdef int64_t number = 0
    cdef LabelNumbering numbering
    if numbering_init(&numbering) != OK:
        return ERR_NO_MEMORY, None
    with nogil:
        for v in range(n):
            number = number_of(&numbering, labels[v])
            if number < 0:
                break
            index[v] = <index_t>number
    ok = number >= 0 or n == 0
    unique = np.empty(numbering.n_unique, np.uint64) if ok else None
    if unique is not None:
        copy_unique(&numbering, unique)
    numbering_free(&numbering)
    return (OK if ok else ERR_NO_MEMORY), unique


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

    Returns ``(status, int64 array)``; the array is None unless status is OK.
    """
    cdef Py_ssize_t n_lists = list_offsets.shape[0] - 1
    result = np.empty(n_lists, dtype=np.int64)
    cdef int64_t[::1] rep = result
    cdef Py_ssize_t i, h, cand
    cdef uint64_t key
    cdef HashTable table
    cdef int status
    if n_lists == 0:
        return OK, result
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
        return ERR_NO_MEMORY, None
    return OK, result


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


def gather_values(const value_t[::1] values, const index_t[::1] index, value_t[::1] out):
    """``out[v] = values[index[v]]``; returns the number of indices outside ``values``
    (their ``out`` is undefined). numpy's ``take`` converts an int32 index to intp first,
    which costs more than the gather (26 us of 32^3 voxels)."""
    cdef Py_ssize_t v, n = index.shape[0], bad = 0
    cdef uint64_t size = values.shape[0], at
    cdef const value_t* source = &values[0] if size else NULL
    cdef const index_t* where = &index[0] if n else NULL
    cdef value_t* target = &out[0] if n else NULL
    if out.shape[0] < n:
        raise ValueError("gather_values: out is shorter than index")
    if size == 0:
        return n
    with nogil:
        for v in range(n):
            at = <uint64_t>where[v]  # a negative index wraps past size
            bad += at >= size
            target[v] = source[at if at < size else 0]  # a select, not a branch
    return bad


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
