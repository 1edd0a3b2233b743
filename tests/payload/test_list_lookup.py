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
