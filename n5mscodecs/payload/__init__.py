"""Label multiset payloads: the N5 legacy and zarr-native layouts and their three numcodecs codecs
(``n5_label_multiset``, ``label_multiset``, and ``label_multiset_vlen`` for zarr v2 object arrays)."""

from .label_multiset import LabelMultisetCodec, label_multiset_decode, label_multiset_encode
from .label_multiset_vlen import LabelMultisetVLen
from .layout import (
    MAX_ENTRIES_PER_VOXEL,
    MAX_ENTRIES_PER_VOXEL_CAP,
    MAX_PAYLOAD_BOUND,
    MIN_PAYLOAD_BOUND,
    N5_LAYOUT,
    ZARR_LAYOUT,
    Layout,
    decode_payload,
    decode_payload_labels,
    encode_payload,
    entries_bound,
    max_payload_size,
)
from .n5_label_multiset import N5LabelMultiset, n5_label_multiset_decode, n5_label_multiset_encode

__all__ = [
    "N5_LAYOUT",
    "ZARR_LAYOUT",
    "Layout",
    "decode_payload",
    "decode_payload_labels",
    "encode_payload",
    "max_payload_size",
    "entries_bound",
    "MAX_ENTRIES_PER_VOXEL",
    "MAX_ENTRIES_PER_VOXEL_CAP",
    "MAX_PAYLOAD_BOUND",
    "MIN_PAYLOAD_BOUND",
    "N5LabelMultiset",
    "n5_label_multiset_encode",
    "n5_label_multiset_decode",
    "LabelMultisetCodec",
    "label_multiset_encode",
    "label_multiset_decode",
    "LabelMultisetVLen",
]
