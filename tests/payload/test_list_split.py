"""The list split (list data -> CSR arrays) of the elements decoder: AVX2 and portable
walks against a plain model, for every list length around the 8- and 16-entry groups,
lists at the very end of the data (no room to read a whole group) and arrays too short."""

import struct

import numpy as np
import pytest

from n5mscodecs.payload import _kernels


def list_data(lengths, rng):
    lists = [[(int(rng.integers(0, 2**64, dtype=np.uint64)), int(rng.integers(0, 2**32)))
              for _ in range(n)] for n in lengths]
    data = b"".join(struct.pack("<I", len(entries)) + b"".join(struct.pack("<QI", i, c) for i, c in entries)
                    for entries in lists)
    return np.frombuffer(data, np.uint8), lists


def split(data, n_lists, n_entries, simd, slack=8):
    offsets = np.full(n_lists + 1, -1, np.int64)
    ids = np.zeros(n_entries + slack, np.uint64)
    counts = np.zeros(n_entries + slack, np.uint32)
    assert _kernels.split_list_data(data, offsets, ids, counts, simd=simd) == n_lists
    return offsets, ids[:n_entries], counts[:n_entries]


@pytest.mark.parametrize("simd", [True, False])
@pytest.mark.parametrize("slack", [0, 8, 16])
def test_split_matches_a_plain_model(simd, slack):
    rng = np.random.default_rng(3)
    # every length from 0 to 20, then the same shuffled, so that every length also ends the data
    lengths = list(range(21)) + [int(n) for n in rng.permutation(21)] + [int(n) for n in rng.integers(0, 10, 200)]
    for end in (len(lengths), 21, 1):
        data, lists = list_data(lengths[:end], rng)
        offsets, ids, counts = split(data, end, sum(lengths[:end]), simd, slack)
        assert offsets.tolist() == np.cumsum([0] + lengths[:end]).tolist()
        assert ids.tolist() == [i for entries in lists for i, _ in entries]
        assert counts.tolist() == [c for entries in lists for _, c in entries]


def test_avx2_and_portable_split_agree_on_real_sized_data():
    rng = np.random.default_rng(5)
    lengths = [int(n) for n in rng.integers(1, 10, 5000)]
    data, _ = list_data(lengths, rng)
    fast = split(data, len(lengths), sum(lengths), True)
    portable = split(data, len(lengths), sum(lengths), False)
    for a, b in zip(fast, portable):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("simd", [True, False])
def test_split_refuses_arrays_too_short(simd):
    data, _ = list_data([3, 9, 2], np.random.default_rng(1))
    with pytest.raises(ValueError, match="does not fit"):  # two lists' worth of offsets
        _kernels.split_list_data(data, np.zeros(3, np.int64), np.zeros(30, np.uint64), np.zeros(30, np.uint32),
                                 simd=simd)
    with pytest.raises(ValueError, match="does not fit"):  # 13 entries, room for 12
        _kernels.split_list_data(data, np.zeros(4, np.int64), np.zeros(12, np.uint64), np.zeros(30, np.uint32),
                                 simd=simd)
    with pytest.raises(ValueError, match="does not fit"):  # a count past the end of the data
        _kernels.split_list_data(data[:-1], np.zeros(4, np.int64), np.zeros(30, np.uint64),
                                 np.zeros(30, np.uint32), simd=simd)


def index_arrays(data):
    words = _kernels.list_start_words(data.size)
    return np.zeros(words, np.uint64), np.full(words, -7, np.int64)


@pytest.mark.parametrize("simd", [True, False])
def test_split_with_index_builds_the_scan_index(simd):
    # lists of 0-20 entries across several 64-word groups of the bitmap
    rng = np.random.default_rng(7)
    lengths = [int(n) for n in rng.integers(0, 21, 300)]
    data, lists = list_data(lengths, rng)
    start_bits, rank = index_arrays(data)
    offsets = np.empty(len(lengths) + 1, np.int64)
    ids, counts = np.empty(sum(lengths) + 8, np.uint64), np.empty(sum(lengths) + 8, np.uint32)
    assert _kernels.split_list_data(data, offsets, ids, counts, start_bits, rank, simd=simd) == len(lengths)
    assert ids[: sum(lengths)].tolist() == [i for entries in lists for i, _ in entries]
    # the index, from the list starts computed here: a bit per start word, starts before each group
    starts = np.cumsum([0] + [4 + 12 * n for n in lengths[:-1]]) // 4
    expected_bits = np.zeros_like(start_bits)
    np.bitwise_or.at(expected_bits, starts // 64, np.uint64(1) << (starts % 64).astype(np.uint64))
    assert np.array_equal(start_bits, expected_bits)
    assert rank.tolist() == [int(np.sum(starts < 64 * g)) for g in range(rank.size)]
    scan_bits, scan_rank = index_arrays(data)
    assert _kernels.scan_list_data(data, scan_bits, scan_rank, simd=simd)[0] == 0
    assert np.array_equal(start_bits, scan_bits) and np.array_equal(rank, scan_rank)


@pytest.mark.parametrize("simd", [True, False])
def test_split_with_index_returns_minus_one_where_the_scan_names_the_error(simd):
    data, _ = list_data([3, 9, 2], np.random.default_rng(1))
    cases = [(data[:-1], 4, 30),  # a count past the end of the data
             (data[:-12 * 2], 4, 30),  # the last list's entries cut
             (np.concatenate([data, np.zeros(2, np.uint8)]), 5, 30),  # 2 bytes after the last list
             (data, 3, 30),  # three lists, room for two
             (data, 4, 12)]  # 14 entries, room for 12
    for bad, n_offsets, n_entries in cases:
        start_bits, rank = index_arrays(bad)
        assert _kernels.split_list_data(bad, np.zeros(n_offsets, np.int64), np.zeros(n_entries, np.uint64),
                                        np.zeros(n_entries, np.uint32), start_bits, rank, simd=simd) == -1
    with pytest.raises(ValueError, match="list_start_words"):
        _kernels.split_list_data(data, np.zeros(4, np.int64), np.zeros(30, np.uint64), np.zeros(30, np.uint32),
                                 np.zeros(0, np.uint64), np.zeros(1, np.int64), simd=simd)
