"""``n5_label_multiset``: the N5 legacy label multiset payload (array -> bytes).

Layout: argMaxSize (int32 BE, written 0; legacy cached argmax values are
skipped on read), one int32 BE list offset per voxel in N5 order (first axis
fastest), then little-endian list data. Byte-identical to Java's
``LabelUtils.serializeLabelMultisetTypes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .layout import N5_LAYOUT, PayloadCodec, decode_payload, encode_payload

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .._buffers import BytesLike
    from ..multiset import LabelMultisetArray
    from ..multiset.array import MultisetsLike


def n5_label_multiset_encode(data: MultisetsLike, *, threads: int | None = None) -> bytearray:
    """Encode labels or multisets to an N5 legacy payload.

    >>> import numpy as np
    >>> payload = n5_label_multiset_encode(np.array([[7], [7]], np.uint64))
    >>> payload.hex(' ')
    '00 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 07 00 00 00 00 00 00 00 01 00 00 00'
    """
    return encode_payload(data, N5_LAYOUT, threads=threads)


def n5_label_multiset_decode(
    data: BytesLike, shape: Iterable[int], *, threads: int | None = None
) -> LabelMultisetArray:
    """Decode an N5 legacy payload of ``shape`` voxels (N5 axis order) to a LabelMultisetArray.

    >>> payload = n5_label_multiset_encode(np.array([[7], [9]], np.uint64))
    >>> n5_label_multiset_decode(payload, (2, 1)).argmax().tolist()
    [[7], [9]]
    """
    return decode_payload(data, shape, N5_LAYOUT, threads=threads)


class N5LabelMultiset(PayloadCodec):
    """numcodecs codec ``n5_label_multiset``; usually the first codec inside ``n5_varlen``."""

    codec_id = "n5_label_multiset"
    layout = N5_LAYOUT
