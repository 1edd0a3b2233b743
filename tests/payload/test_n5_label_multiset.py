import struct

import numcodecs
import numpy as np
import pytest
from support import hand_list, hand_n5_payload, n5_data

import n5mscodecs
from n5mscodecs import (
    LabelMultisetArray,
    LabelMultisetFormatError,
    N5LabelMultiset,
    n5_label_multiset_decode,
    n5_label_multiset_encode,
)
from n5mscodecs.errors import ConfigurationError
from n5mscodecs.payload import N5_LAYOUT, decode_payload_labels


def test_hand_built_payload_decodes_in_n5_order():
    # shape (2, 3): payload voxel p = i + 2 * j (first axis fastest)
    lists = [hand_list([(10, 1)]), hand_list([(20, 2), (5, 2)]), hand_list([])]
    offsets = [0, 16, 16, 0, 44, 44]  # list byte positions: 0, 16, 16 + 28 = 44
    a = n5_label_multiset_decode(hand_n5_payload(offsets, lists), (2, 3))
    assert a.shape == (2, 3)
    assert a.n_lists == 3
    for p, offset in enumerate(offsets):
        i, j = p % 2, p // 2
        expected = {0: {10: 1}, 16: {5: 2, 20: 2}, 44: {}}[offset]
        assert a[i, j].as_dict() == expected
    # stored order kept (20 before 5)
    assert a[1, 0].ids.tolist() == [20, 5]
    assert a.argmax().tolist() == [[10, 5, 2**64 - 2], [5, 10, 2**64 - 2]]


def test_encoder_is_byte_identical_to_hand_built_java_layout():
    labels = np.array([[7, 7, 3], [3, 7, 9]], np.uint64)  # N5 order, x = axis 0 fastest
    payload_order = labels.reshape(-1, order="F").tolist()  # [7, 3, 7, 7, 3, 9]
    positions, lists = {}, []
    for label in payload_order:
        if label not in positions:
            positions[label] = 16 * len(lists)
            lists.append(hand_list([(label, 1)]))
    expected = hand_n5_payload([positions[v] for v in payload_order], lists)
    assert n5_label_multiset_encode(labels) == expected
    assert n5_label_multiset_encode(LabelMultisetArray.from_labels(labels)) == expected
    assert n5_label_multiset_encode(LabelMultisetArray.from_labels(labels).to_elements()) == expected


def test_encoder_dedups_by_content_in_first_encounter_order():
    # two distinct list numbers with the same content must share one list
    a = LabelMultisetArray(np.array([[1, 0], [2, 1]]), [0, 2, 3, 5],
                           np.array([4, 2, 8, 4, 2], np.uint64), np.array([1, 1, 3, 1, 1], np.uint32))
    payload = n5_label_multiset_encode(a)
    # payload order (F): voxel (0,0)->list 1, (1,0)->list 2, (0,1)->list 0, (1,1)->list 1
    l1, l0 = hand_list([(8, 3)]), hand_list([(4, 1), (2, 1)])
    assert payload == hand_n5_payload([0, 16, 16, 0], [l1, l0])


def test_argmax_header_is_skipped():
    lists = [hand_list([(3, 1)])]
    payload = hand_n5_payload([0, 0], lists, argmax=[3, 3])
    assert n5_label_multiset_decode(payload, (2,)).argmax().tolist() == [3, 3]


def test_spec_worked_example_layout():
    payload = n5_label_multiset_encode(np.zeros((32, 32, 32), np.uint64))
    assert payload[:4] == b"\0\0\0\0"
    assert len(payload) == 131076 + 16
    assert payload[4:131076] == b"\0" * 131072  # every voxel at offset 0
    assert payload[131076:] == hand_list([(0, 1)])


def test_codec_needs_voxel_count():
    codec = N5LabelMultiset()
    payload = codec.encode(np.array([1, 2, 2], np.uint64))
    with pytest.raises(ConfigurationError, match="voxel count"):
        codec.decode(payload)
    assert codec.decode(payload, shape=(3,)).argmax().tolist() == [1, 2, 2]
    out = np.empty(3, object)
    assert codec.decode(payload, out=out) is out
    assert out[2].as_dict() == {2: 1}
    fixed = numcodecs.get_codec({"id": "n5_label_multiset", "shape": [3]})
    assert fixed.decode(payload).argmax().tolist() == [1, 2, 2]
    assert fixed.get_config() == {"id": "n5_label_multiset", "shape": [3]}
    assert numcodecs.get_codec(codec.get_config()).get_config() == {"id": "n5_label_multiset"}


@pytest.mark.parametrize("payload, shape, field", [
    (b"\0\0", (1,), "argMaxSize"),
    (struct.pack(">i", -1) + b"\0" * 20, (1,), "argMaxSize is negative"),
    (struct.pack(">i", 1000) + b"\0" * 20, (1,), "argMaxSize 1000"),
    (hand_n5_payload([0], []), (2,), "listEntryOffsets for 2 voxels"),
    (hand_n5_payload([0], [b"\1\0"]), (1,), "needs 4 bytes for numEntries"),
    (hand_n5_payload([0], [struct.pack("<I", 3) + b"\0" * 12]), (1,), "numEntries runs past"),
    (hand_n5_payload([4], [hand_list([(1, 1)])]), (1,), r"listEntryOffsets\[0\] = 4"),
    (hand_n5_payload([0, -16], [hand_list([(1, 1)])]), (2,), r"listEntryOffsets\[1\] = -16"),
    (hand_n5_payload([0, 64], [hand_list([(1, 1)])]), (2,), r"listEntryOffsets\[1\] = 64"),
    (hand_n5_payload([0, 2], [hand_list([(1, 1)])]), (2,), r"listEntryOffsets\[1\] = 2"),
    (hand_n5_payload([0], []), (1,), r"listEntryOffsets\[0\] = 0"),
    # one past the end, twice in a row: both voxels are bad
    (hand_n5_payload([0, 16, 16], [hand_list([(1, 1)])]), (3,), r"listEntryOffsets\[1\] = 16 .*\(2 bad offsets"),
])
def test_bad_payloads_name_the_field(payload, shape, field):
    with pytest.raises(LabelMultisetFormatError, match=field):
        n5_label_multiset_decode(payload, shape)
    with pytest.raises(LabelMultisetFormatError, match=field):  # the labels-only decoder says the same
        decode_payload_labels(payload, shape, N5_LAYOUT)


def test_huge_shape_is_rejected_before_allocation():
    with pytest.raises(LabelMultisetFormatError, match="listEntryOffsets"):
        n5_label_multiset_decode(hand_n5_payload([0], [hand_list([(1, 1)])]), (2**20, 2**20, 2**20))


def test_real_block_round_trip_is_byte_identical():
    block = (n5_data("downscaleTest.n5/sourceImg/0/0/0")).read_bytes()
    header_size = 20
    payload = block[header_size:]
    a = n5_label_multiset_decode(payload, (32, 32, 32))
    assert n5_label_multiset_encode(a) == payload
    # the README of the data: 0-9 entries per voxel, ids < 100, counts < 100, one empty list
    lengths = a.list_lengths()
    assert lengths.max() <= 9 and (lengths == 0).sum() == 1
    assert a.ids.max() < 100 and a.counts.max() < 100


def test_registered_in_numcodecs():
    assert numcodecs.get_codec({"id": "n5_label_multiset"}).__class__ is n5mscodecs.N5LabelMultiset
