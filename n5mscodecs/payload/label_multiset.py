"""``label_multiset``: the zarr-native, all little-endian label multiset payload (array -> bytes).

Layout: one uint32 LE list offset per voxel in C order over the array's own
shape, then the same little-endian list data as the N5 layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .layout import ZARR_LAYOUT, PayloadCodec, decode_payload, encode_payload

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .._buffers import BytesLike
    from ..multiset import LabelMultisetArray
    from ..multiset.array import MultisetsLike


def label_multiset_encode(data: MultisetsLike, *, threads: int | None = None) -> bytearray:
    """Encode labels or multisets to the zarr-native payload.

    >>> import numpy as np
    >>> label_multiset_encode(np.array([5, 5], np.uint64)).hex(' ')
    '00 00 00 00 00 00 00 00 01 00 00 00 05 00 00 00 00 00 00 00 01 00 00 00'
    """
    return encode_payload(data, ZARR_LAYOUT, threads=threads)


def label_multiset_decode(
    data: BytesLike, shape: Iterable[int], *, threads: int | None = None
) -> LabelMultisetArray:
    """Decode a zarr-native payload of ``shape`` voxels to a LabelMultisetArray.

    >>> label_multiset_decode(label_multiset_encode(np.array([[1, 2]], np.uint64)), (1, 2)).argmax()
    array([[1, 2]], dtype=uint64)
    """
    return decode_payload(data, shape, ZARR_LAYOUT, threads=threads)


class LabelMultisetCodec(PayloadCodec):
    """numcodecs codec ``label_multiset`` (zarr-native layout)."""

    codec_id = "label_multiset"
    layout = ZARR_LAYOUT
