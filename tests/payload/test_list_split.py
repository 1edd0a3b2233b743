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
