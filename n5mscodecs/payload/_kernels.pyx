# cython: freethreading_compatible = True
"""Kernels for label multiset payloads (N5 legacy and zarr-native layouts): list
data scanning and splitting, offset tables (big- or little-endian) and writing.

Everything here runs without the GIL and reports problems only as ``Status``
codes; ``payload/layout.py`` validates arguments, chooses layouts and raises.
"""

from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from n5mscodecs._bytes cimport load_u32_be, load_u32_le, load_u64_le, store_u32_be, store_u32_le, store_u64_le
from n5mscodecs._status cimport ERR_ENTRIES_PAST_END, ERR_NO_MEMORY, ERR_TRUNCATED_COUNT, OK
from n5mscodecs.multiset._numbering cimport LabelNumbering, number_of, numbering_free, numbering_init, copy_unique

import numpy as np

ctypedef fused index_t:
    int32_t
    int64_t

# OpenMP only pays off on large inputs (see multiset/_kernels.pyx); blocks below
# this size run on the calling thread.
DEF PARALLEL_VOXELS = 1048576


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------

cdef inline int list_length(const uint8_t* list_data, Py_ssize_t size, Py_ssize_t pos,
                            uint64_t* n) noexcept nogil:
    """``numEntries`` of the list at ``pos`` into ``n``; a status unless the list fits."""
    if size - pos < 4:
        return ERR_TRUNCATED_COUNT
    n[0] = load_u32_le(&list_data[pos])
    if n[0] > <uint64_t>((size - pos - 4) // 12):
        return ERR_ENTRIES_PAST_END
    return OK


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
            status = list_length(&list_data[0], size, pos, &n)
            if status != OK:
                break
            n_lists += 1
            n_entries += <Py_ssize_t>n
            pos += 4 + 12 * <Py_ssize_t>n
    return status, pos, n_lists, n_entries


def mark_list_starts(const uint8_t[::1] list_data, uint8_t[::1] is_list_start):
    """Set ``is_list_start[byte_offset // 4]`` (pre-filled with 0) to 1 at every list start
    of list data already validated by ``scan_list_data``."""
    cdef Py_ssize_t size = list_data.shape[0]
    cdef Py_ssize_t pos = 0
    with nogil:
        while pos < size:
            is_list_start[pos >> 2] = 1
            pos += 4 + 12 * <Py_ssize_t>load_u32_le(&list_data[pos])


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


DEF LABEL_RUN = 4096  # voxels per task of labels_of_voxels (a run cache per task)
cdef uint64_t INVALID = 0xFFFFFFFFFFFFFFFEULL


def argmax_of_list_words(const uint8_t[::1] list_data, uint64_t[::1] label_of_word, uint8_t[::1] is_list_start):
    """Walk the list data once (as ``scan_list_data``) and store each list's argmax.

    ``label_of_word[byte_offset // 4]`` receives the argmax of the list starting
    there (highest count, ties to the smaller unsigned id, empty list INVALID:
    the rule of ``argmax_of_lists``) and ``is_list_start`` (pre-filled with 0)
    is set to 1. Returns ``(status, position)`` like ``scan_list_data``.
    """
    cdef Py_ssize_t size = list_data.shape[0]
    cdef Py_ssize_t pos = 0, entry, end
    cdef uint64_t n, best, label
    cdef uint32_t best_count, c
    cdef int status = OK
    with nogil:
        while pos < size:
            status = list_length(&list_data[0], size, pos, &n)
            if status != OK:
                break
            best = INVALID
            best_count = 0
            end = pos + 4 + 12 * <Py_ssize_t>n
            entry = pos + 4
            while entry < end:
                label = load_u64_le(&list_data[entry])
                c = load_u32_le(&list_data[entry + 8])
                if c > best_count or (c == best_count and label < best):
                    best = label
                    best_count = c
                entry += 12
            label_of_word[pos >> 2] = best
            is_list_start[pos >> 2] = 1
            pos = end
    return status, pos


# no offset: tables hold 32-bit values (BE ones sign-extended, so >= 2**64 - 2**31)
DEF NO_OFFSET = 1ULL << 63


cdef struct LabelLookup:
    const uint8_t* table
    bint big_endian
    const uint64_t* label_of_word
    const uint8_t* is_list_start
    uint64_t size  # of the list data
    uint64_t last_offset
    uint64_t label
    Py_ssize_t bad


cdef inline LabelLookup label_lookup(const uint8_t* table, bint big_endian, const uint64_t* label_of_word,
                                     const uint8_t* is_list_start, uint64_t size) noexcept nogil:
    cdef LabelLookup lookup
    lookup.table, lookup.big_endian = table, big_endian
    lookup.label_of_word, lookup.is_list_start, lookup.size = label_of_word, is_list_start, size
    lookup.last_offset, lookup.label, lookup.bad = NO_OFFSET, 0, 0
    return lookup


cdef inline uint64_t label_of_voxel(LabelLookup* lookup, Py_ssize_t v) noexcept nogil:
    """The label of table entry ``v``; a bad offset gives 0 and counts in ``lookup.bad``.
    Neighbours mostly share a list, so the last offset's label is reused without a lookup."""
    cdef uint64_t offset
    if lookup.big_endian:
        offset = <uint64_t><int64_t><int32_t>load_u32_be(&lookup.table[4 * v])
    else:
        offset = load_u32_le(&lookup.table[4 * v])
    if offset != lookup.last_offset:
        if offset < lookup.size and (offset & 3) == 0 and lookup.is_list_start[offset >> 2]:
            lookup.label = lookup.label_of_word[offset >> 2]
            lookup.last_offset = offset
        else:
            lookup.bad += 1
            lookup.label = 0
            lookup.last_offset = NO_OFFSET
    return lookup.label


cdef Py_ssize_t labels_of_run(const uint8_t* table, bint big_endian, Py_ssize_t start, Py_ssize_t stop,
                              const uint64_t* label_of_word, const uint8_t* is_list_start,
                              uint64_t size, uint64_t* out) noexcept nogil:
    """Labels of voxels ``start:stop`` in table order; returns the number of bad offsets."""
    cdef LabelLookup lookup = label_lookup(table, big_endian, label_of_word, is_list_start, size)
    cdef Py_ssize_t v
    for v in range(start, stop):
        out[v] = label_of_voxel(&lookup, v)
    return lookup.bad


def labels_of_voxels(const uint8_t[::1] table, bint big_endian, const uint64_t[::1] label_of_word,
                     const uint8_t[::1] is_list_start, Py_ssize_t list_data_size, uint64_t[::1] out,
                     int num_threads):
    """Each voxel's list argmax (from ``argmax_of_list_words``) in table order.

    Bad offsets (negative, past the list data, not a list start) give 0;
    returns their number (the caller raises naming the first one).
    """
    cdef Py_ssize_t n_voxels = out.shape[0]
    cdef Py_ssize_t n_runs = (n_voxels + LABEL_RUN - 1) // LABEL_RUN
    cdef Py_ssize_t r, bad = 0
    for r in prange(n_runs, nogil=True, schedule="static", num_threads=num_threads,
                    use_threads_if=n_voxels > PARALLEL_VOXELS):
        bad += labels_of_run(&table[0], big_endian, r * LABEL_RUN, min((r + 1) * LABEL_RUN, n_voxels),
                             &label_of_word[0], &is_list_start[0], <uint64_t>list_data_size, &out[0])
    return bad


def encode_singleton_offsets(const uint64_t[::1] labels, uint8_t[::1] table, bint big_endian):
    """Offset table of a singleton payload, written straight into ``table``.

    Every list is ``{label: 1}`` (16 bytes) in first-encounter order, so the
    offset of a voxel is 16 x its label's number. Returns ``(status, the
    distinct labels)``; the labels are None unless status is OK.
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
            if big_endian:
                store_u32_be(&table[4 * v], <uint32_t>(16 * number))
            else:
                store_u32_le(&table[4 * v], <uint32_t>(16 * number))
    unique = np.empty(numbering.n_unique, np.uint64) if number >= 0 else None
    if unique is not None:
        copy_unique(&numbering, unique)
    numbering_free(&numbering)
    return (OK if number >= 0 else ERR_NO_MEMORY), unique


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




cdef Py_ssize_t labels_of_tile(const uint8_t* table, bint big_endian, Py_ssize_t a0, Py_ssize_t a_end,
                               Py_ssize_t n0, Py_ssize_t n1, Py_ssize_t n2, const uint64_t* label_of_word,
                               const uint8_t* is_list_start, uint64_t size, uint64_t* out) noexcept nogil:
    """Labels of the voxels ``a0 <= a < a_end`` of a first-axis-fastest table, written in C
    order, 8 x 8 tiles of (first, last) at a time (see ``c_order_copy_3d``). Returns the
    number of bad offsets."""
    cdef LabelLookup lookup = label_lookup(table, big_endian, label_of_word, is_list_start, size)
    cdef Py_ssize_t c0, c_end, a, b, c
    for c0 in range(0, n2, TILE):
        c_end = min(c0 + TILE, n2)
        for b in range(n1):
            for a in range(a0, a_end):
                for c in range(c0, c_end):
                    out[(a * n1 + b) * n2 + c] = label_of_voxel(&lookup, a + n0 * (b + n1 * c))
    return lookup.bad


def labels_of_voxels_c_order(const uint8_t[::1] table, bint big_endian, const uint64_t[::1] label_of_word,
                             const uint8_t[::1] is_list_start, Py_ssize_t list_data_size, uint64_t[::1] out,
                             Py_ssize_t n0, Py_ssize_t n1, Py_ssize_t n2, int num_threads):
    """``labels_of_voxels`` of a 3-D first-axis-fastest table (N5), written straight in C
    order of shape ``(n0, n1, n2)``: no second pass to transpose. Returns the number of
    bad offsets."""
    cdef Py_ssize_t a0, bad = 0
    if n0 * n1 * n2 == 0:
        return 0
    for a0 in prange(0, n0, TILE, nogil=True, schedule="static", num_threads=num_threads,
                     use_threads_if=n0 * n1 * n2 > PARALLEL_VOXELS):
        bad += labels_of_tile(&table[0], big_endian, a0, min(a0 + TILE, n0), n0, n1, n2, &label_of_word[0],
                              &is_list_start[0], <uint64_t>list_data_size, &out[0])
    return bad
