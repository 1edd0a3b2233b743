"""Voxel-to-list lookups of the payload decoders against a plain-Python model, on list data
laid out in any order (not only Java's first-encounter order), with lists revisited far
apart, long list data (several 64-word groups of the list-start index) and bad offsets."""

import struct

import numpy as np
import pytest

from n5mscodecs.errors import LabelMultisetFormatError
from n5mscodecs.payload import N5_LAYOUT, ZARR_LAYOUT, decode_payload, decode_payload_labels

INVALID = 0xFFFFFFFFFFFFFFFE


def random_payload(rng, layout, n_voxels, n_lists, order):
    """``(payload, starts, lists, list_of_voxel)`` with lists stored in ``order``."""
    lists = [[(int(rng.integers(0, 2**64, dtype=np.uint64)) if rng.random() < 0.1 else int(rng.integers(0, 50)),
               int(rng.integers(0, 4))) for _ in range(int(rng.integers(0, 12)))] for _ in range(n_lists)]
    data, starts = b"", [0] * n_lists
    for i in order:
        starts[i] = len(data)
        data += struct.pack("<I", len(lists[i])) + b"".join(struct.pack("<QI", k, c) for k, c in lists[i])
    # runs of voxels on one list, returning to earlier lists
    list_of_voxel = np.repeat(rng.integers(0, n_lists, n_voxels // 3 + 1), 3)[:n_voxels]
    list_of_voxel[: min(n_lists, n_voxels)] = np.arange(min(n_lists, n_voxels))  # every list used once at least
    offsets = np.array([starts[i] for i in list_of_voxel], np.int64)
    if layout is N5_LAYOUT:
        table = struct.pack(">i", 0) + offsets.astype(">i4").tobytes()
    else:
        table = offsets.astype("<u4").tobytes()
    return table + data, lists, list_of_voxel


def spec_argmax(entries):
    best, best_count = INVALID, 0
    for label, count in entries:
        if count > best_count or (count == best_count and label < best):
            best, best_count = label, count
    return best


@pytest.mark.parametrize("layout", [N5_LAYOUT, ZARR_LAYOUT])
@pytest.mark.parametrize("arrangement", ["first-encounter", "reversed", "shuffled"])
def test_lookups_match_a_plain_model(layout, arrangement):
    rng = np.random.default_rng(7)
    n_voxels, n_lists = 3000, 700
    order = {"first-encounter": np.arange(n_lists), "reversed": np.arange(n_lists)[::-1],
             "shuffled": rng.permutation(n_lists)}[arrangement]
    payload, lists, list_of_voxel = random_payload(rng, layout, n_voxels, n_lists, order)
    shape = (n_voxels,)
    decoded = decode_payload(payload, shape, layout)
    for v in range(0, n_voxels, 7):
        element = decoded.element(int(decoded.index.reshape(-1)[v]))
        assert list(zip(element.ids.tolist(), element.counts.tolist())) == lists[list_of_voxel[v]]
    expected = np.array([spec_argmax(lists[i]) for i in list_of_voxel], np.uint64)
    assert np.array_equal(decode_payload_labels(payload, shape, layout), expected)
    assert np.array_equal(decoded.argmax(), expected)


@pytest.mark.parametrize("layout", [N5_LAYOUT, ZARR_LAYOUT])
def test_an_offset_inside_a_list_is_refused_on_both_paths(layout):
    rng = np.random.default_rng(3)
    payload, lists, list_of_voxel = random_payload(rng, layout, 400, 90, rng.permutation(90))
    fmt, table_start, voxel = (">i", 4, 250) if layout is N5_LAYOUT else ("<I", 0, 250)
    # a word inside a list (its first entry's id): aligned, but no list starts there
    used = next(v for v in range(400) if lists[list_of_voxel[v]])
    start = struct.unpack_from(fmt, payload, table_start + 4 * used)[0]
    buf = bytearray(payload)
    struct.pack_into(fmt, buf, table_start + 4 * voxel, start + 4)
    for decode in (decode_payload, decode_payload_labels):
        with pytest.raises(LabelMultisetFormatError, match=rf"listEntryOffsets\[{voxel}\]"):
            decode(bytes(buf), (400,), layout)


@pytest.mark.parametrize("layout", [N5_LAYOUT, ZARR_LAYOUT])
def test_more_lists_than_voxels_decode_only_the_referenced_ones(layout):
    rng = np.random.default_rng(11)
    n_voxels, n_lists = 60, 500  # most lists unreferenced: the bounded path
    payload, lists, list_of_voxel = random_payload(rng, layout, n_voxels, n_lists, rng.permutation(n_lists))
    decoded = decode_payload(payload, (n_voxels,), layout)
    assert decoded.n_lists <= n_voxels
    for v in range(n_voxels):
        element = decoded.element(int(decoded.index[v]))
        assert list(zip(element.ids.tolist(), element.counts.tolist())) == lists[list_of_voxel[v]]
    expected = np.array([spec_argmax(lists[i]) for i in list_of_voxel], np.uint64)
    assert np.array_equal(decode_payload_labels(payload, (n_voxels,), layout), expected)


@pytest.mark.parametrize("layout", [N5_LAYOUT, ZARR_LAYOUT])
def test_argmax_of_every_list_length_anywhere_in_the_list_data(layout):
    """The kernels take lists of up to 8 entries as one masked group when 96 bytes can be read
    and entry by entry otherwise (longer lists, or near the end of the list data): every length
    from 0 to 20, with the winner, ties and zero counts at every position, in the middle of the
    data and as its last lists, against the plain model, on both paths."""
    rng = np.random.default_rng(30)
    lists = []
    for n in range(21):
        for winner in range(max(n, 1)):
            counts = [int(c) for c in rng.integers(0, 3, n)]
            ids = [int(i) for i in rng.integers(0, 2**64, n, dtype=np.uint64)]
            if n:
                counts[winner] = 3  # a clear winner at this position ...
                if winner + 1 < n and winner % 2:
                    counts[winner + 1], ids[winner + 1] = 3, ids[winner] ^ 1  # ... or a tie on the count
            lists.append(list(zip(ids, counts)))
    lists += [[], [(5, 0)], [(2**64 - 1, 0), (7, 0)], [(9, 1)] * 9]  # short lists last: fallback path
    for tail_first in (False, True):  # the long ones last too
        ordered = lists[::-1] if tail_first else lists
        data, starts = b"", []
        for entries in ordered:
            starts.append(len(data))
            data += struct.pack("<I", len(entries)) + b"".join(struct.pack("<QI", k, c) for k, c in entries)
        offsets = np.array(starts, np.int64)
        table = (struct.pack(">i", 0) + offsets.astype(">i4").tobytes() if layout is N5_LAYOUT
                 else offsets.astype("<u4").tobytes())
        expected = np.array([spec_argmax(entries) for entries in ordered], np.uint64)
        shape = (len(ordered),)
        assert np.array_equal(decode_payload_labels(table + data, shape, layout), expected)
        assert np.array_equal(decode_payload(table + data, shape, layout).argmax(), expected)


@pytest.mark.parametrize("threads", [1, 2])
def test_large_n5_block_to_c_order_labels_on_threads(threads):
    """A block above the kernels' parallel threshold (1 Mi voxels), with a last axis that is not
    a multiple of the 8-plane slabs: labels written straight in C order equal the transposed
    argmax of the full decode."""
    from n5mscodecs.payload import n5_label_multiset_encode

    rng = np.random.default_rng(31)
    shape = (96, 130, 91)
    labels = rng.integers(0, 40, (shape[0] // 2 + 1, shape[1] // 2 + 1, shape[2] // 2 + 1)).repeat(2, 0)
    labels = labels.repeat(2, 1).repeat(2, 2)[: shape[0], : shape[1], : shape[2]].astype(np.uint64)
    payload = n5_label_multiset_encode(labels)
    in_c = decode_payload_labels(payload, shape, N5_LAYOUT, threads=threads, order="C")
    assert in_c.flags.c_contiguous and np.array_equal(in_c, labels)
    assert np.array_equal(in_c, decode_payload(payload, shape, N5_LAYOUT).argmax())


@pytest.mark.parametrize("seed", range(6))
def test_avx2_and_portable_argmax_agree(seed):
    """Where the CPU has AVX2 the argmax groups run in AVX2 (list data while scanning, and the
    CSR arrays of ``argmax_of_lists``); ``simd=False`` runs the portable code. Both against the
    plain model: every list length 0..20, counts with many ties and zeros, ids near 0, near
    INVALID and above 2**63 (where signed and unsigned order differ), lists at the data's end."""
    from n5mscodecs.multiset import _kernels as multiset_kernels
    from n5mscodecs.payload import _kernels as payload_kernels

    rng = np.random.default_rng(300 + seed)
    special = [0, 1, 2**63 - 1, 2**63, 2**63 + 1, INVALID - 1, INVALID, INVALID + 1]
    lists = []
    for _ in range(3000):
        n = int(rng.integers(0, 21)) if rng.random() < 0.3 else int(rng.integers(0, 9))
        ids = [special[int(rng.integers(0, 8))] if rng.random() < 0.4 else int(rng.integers(0, 2**64, dtype=np.uint64))
               for _ in range(n)]
        counts = [int(c) for c in rng.choice([0, 1, 2, 2**31, 2**32 - 1], n)]
        lists.append(list(zip(ids, counts)))
    data = b"".join(struct.pack("<I", len(e)) + b"".join(struct.pack("<QI", k, c) for k, c in e) for e in lists)
    expected = np.array([spec_argmax(e) for e in lists], np.uint64)
    list_data = np.frombuffer(data, np.uint8)
    for simd in (True, False):
        labels = np.empty(len(lists), np.uint64)
        status, position, n_lists, _ = payload_kernels.scan_list_data(list_data, None, None, labels, simd)
        assert (status, position, n_lists) == (0, len(data), len(lists))
        assert np.array_equal(labels, expected), f"scan, simd={simd}"
    offsets = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(e) for e in lists], out=offsets[1:])
    ids = np.array([k for e in lists for k, _ in e], np.uint64)
    counts = np.array([c for e in lists for _, c in e], np.uint32)
    for simd in (True, False):
        assert np.array_equal(multiset_kernels.argmax_of_lists(offsets, ids, counts, False, 1, simd), expected)


@pytest.mark.parametrize("big_endian", [True, False])
def test_popcount_and_portable_lookups_agree(big_endian):
    """The voxel lookups (a rank query per new offset) run with the popcount instruction where
    the CPU has it; ``simd=False`` runs the portable bit count. Both against a model: voxels in
    runs and jumping between lists across many 64-word groups of the index, and bad offsets
    (inside a list, unaligned, at and past the end, negative), which give -1 / label 0."""
    from n5mscodecs.payload import _kernels as payload_kernels

    rng = np.random.default_rng(11)
    lists = [[(int(rng.integers(0, 2**64, dtype=np.uint64)), int(rng.integers(0, 5)))
              for _ in range(int(rng.integers(0, 4)))] for _ in range(900)]
    starts, data = [], b""
    for entries in lists:
        starts.append(len(data))
        data += struct.pack("<I", len(entries)) + b"".join(struct.pack("<QI", k, c) for k, c in entries)
    list_of_voxel = np.repeat(rng.integers(0, len(lists), 2500), rng.integers(1, 9, 2500))
    offsets = np.array(starts, np.int64)[list_of_voxel]
    bad_offsets = [starts[5] + 4, starts[7] + 1, len(data), len(data) + 400, 2**31 - 4]
    if big_endian:
        bad_offsets.append(-16)
    bad_at = rng.choice(offsets.size, 40, replace=False)
    offsets[bad_at] = rng.choice(bad_offsets, 40)
    if not lists[5]:  # an empty list's start + 4 is the next list's start
        offsets[offsets == starts[5] + 4] = len(data)
    table = offsets.astype(">i4" if big_endian else "<u4").tobytes()
    expected_numbers = list_of_voxel.astype(np.int32)
    expected_numbers[bad_at] = -1
    argmax = np.array([spec_argmax(e) for e in lists], np.uint64)
    expected_labels = np.where(expected_numbers >= 0, argmax[np.maximum(expected_numbers, 0)], 0).astype(np.uint64)

    list_data = np.frombuffer(data, np.uint8)
    words = payload_kernels.list_start_words(list_data.size)
    start_bits, rank = np.zeros(words, np.uint64), np.zeros(words, np.int64)
    label_of_list = np.empty(len(lists), np.uint64)
    assert payload_kernels.scan_list_data(list_data, start_bits, rank, label_of_list)[:3] == (0, len(data), len(lists))
    for simd in (True, False):
        numbers = np.empty(offsets.size, np.int32)
        bad = payload_kernels.map_voxel_offsets(table, big_endian, list_data, start_bits, rank, numbers, 1, simd)
        assert bad == 40 and np.array_equal(numbers, expected_numbers), f"map_voxel_offsets, simd={simd}"
        labels = np.empty(offsets.size, np.uint64)
        bad = payload_kernels.labels_of_voxels(table, big_endian, label_of_list, list_data, start_bits, rank, labels,
                                               1, simd)
        assert bad == 40 and np.array_equal(labels, expected_labels), f"labels_of_voxels, simd={simd}"
    with pytest.raises(ValueError, match="label_of_list"):
        payload_kernels.labels_of_voxels(table, big_endian, label_of_list[:-1], list_data, start_bits, rank, labels, 1)
