import struct

import numcodecs
import numpy as np
import pytest
from support import hand_list, hand_zarr_payload

from n5mscodecs import LabelMultisetArray, LabelMultisetCodec, LabelMultisetFormatError
from n5mscodecs.payload import label_multiset_decode, label_multiset_encode, n5_label_multiset_encode


def test_hand_built_payload_is_c_order_little_endian():
    # shape (2, 3), C order: voxel p = 3 * i + j
    lists = [hand_list([(1, 1)]), hand_list([(2**64 - 3, 7)])]
    offsets = [0, 0, 16, 16, 16, 0]
    a = label_multiset_decode(hand_zarr_payload(offsets, lists), (2, 3))
    assert a.argmax().tolist() == [[1, 1, 2**64 - 3], [2**64 - 3, 2**64 - 3, 1]]
    assert a[0, 2].counts.tolist() == [7]


def test_encode_matches_hand_built_bytes():
    labels = np.array([[5, 6], [6, 6]], np.uint64)
    expected = hand_zarr_payload([0, 16, 16, 16], [hand_list([(5, 1)]), hand_list([(6, 1)])])
    assert label_multiset_encode(labels) == expected
    assert LabelMultisetCodec().encode(labels) == expected


def test_layouts_differ_only_as_specified():
    labels = np.array([[1, 2], [3, 4]], np.uint64)
    zarr_payload = label_multiset_encode(labels)
    n5_payload = n5_label_multiset_encode(labels)
    assert len(n5_payload) == len(zarr_payload) + 4
    assert n5_payload[:4] == b"\0\0\0\0"
    # same list data, since first-encounter order happens to agree on the diagonal only
    n5 = struct.unpack(">4i", n5_payload[4:20])
    zarr = struct.unpack("<4I", zarr_payload[:16])
    assert sorted(n5) == sorted(zarr)


def test_round_trip_multisets_and_codec_registry():
    rng = np.random.default_rng(5)
    elements = [{int(k): int(rng.integers(1, 9)) for k in rng.integers(0, 50, rng.integers(0, 4))}
                for _ in range(24)]
    a = LabelMultisetArray.from_elements(elements, shape=(2, 3, 4))
    codec = numcodecs.get_codec({"id": "label_multiset"})
    assert isinstance(codec, LabelMultisetCodec)
    back = codec.decode(codec.encode(a), shape=(2, 3, 4))
    assert back == a


def test_offset_past_list_data_is_rejected():
    payload = hand_zarr_payload([0, 2**32 - 4], [hand_list([(1, 1)])])
    with pytest.raises(LabelMultisetFormatError, match=r"listEntryOffsets\[1\] = 4294967292"):
        label_multiset_decode(payload, (2,))


def test_zero_extent_beside_huge_extents_is_rejected():
    # 0 voxels, but numpy cannot represent the shape (found by fuzzing n5_varlen)
    with pytest.raises(LabelMultisetFormatError, match="shape: extents"):
        label_multiset_decode(b"", (2**31, 0, 2**31 + 4))
