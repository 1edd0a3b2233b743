"""``label_multiset_vlen``: a self-describing label multiset payload for zarr v2-format object arrays.

zarr's v2 object codecs (filters) see only bytes, without the chunk shape, so
this codec prefixes the zarr-native ``label_multiset`` payload with the voxel
count (uint32 LE), as numcodecs' VLen codecs do. Decoding returns a 1-d object
array of :class:`~n5mscodecs.LabelMultiset` elements (one per distinct list).

As numcodecs' vlen codecs do, an ndarray is encoded in its memory order (zarr
v2 arrays with ``order="F"`` hand over F-ordered chunks and reshape what
``decode`` returns in F order), ``None`` elements are written as the empty
multiset, and ``out`` is filled in its memory order. A
:class:`~n5mscodecs.LabelMultisetArray` has no memory order: it is encoded in C order.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from numcodecs.abc import Codec

from .._buffers import memory_order, read_bytes
from ..errors import ConfigurationError, LabelMultisetFormatError
from ..multiset import LabelMultisetArray
from .layout import (
    ZARR_LAYOUT,
    check_out,
    check_reserved,
    decode_payload,
    encode_payload,
    fill_out,
    multiset_input,
    wants_labels,
)

if TYPE_CHECKING:
    from typing import Any

    import numpy as np

    from .._buffers import BytesLike
    from ..multiset.array import MultisetsLike
    from ..multiset.rules import ReservedRule


class LabelMultisetVLen(Codec):
    """numcodecs object codec ``label_multiset_vlen``.

    >>> import numpy as np
    >>> codec = LabelMultisetVLen()
    >>> elements = codec.decode(codec.encode(np.array([[3, 4]], dtype=np.uint64)))
    >>> elements.shape, elements[1]
    ((2,), LabelMultiset({4: 1}))
    """

    codec_id = "label_multiset_vlen"

    def __init__(self, reserved: ReservedRule = "reject") -> None:
        self._reserved: ReservedRule = check_reserved(reserved, self.codec_id)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"id": self.codec_id}
        if self._reserved != "reject":  # the default stays out: configs of older versions are equal
            config["reserved"] = self._reserved
        return config

    def encode(self, buf: MultisetsLike) -> bytes:
        data = multiset_input(buf)
        if isinstance(data, LabelMultisetArray):
            flat = data.reshape(-1)
        else:
            flat = LabelMultisetArray.coerce(data.reshape(-1, order=memory_order(data)), reserved=self._reserved)
        return struct.pack("<I", flat.size) + bytes(encode_payload(flat, ZARR_LAYOUT))

    def decode(self, buf: BytesLike, out: np.ndarray | None = None) -> np.ndarray:
        data = read_bytes(buf, "buf")
        if data.size < 4:
            raise LabelMultisetFormatError(f"label_multiset_vlen: voxel count needs 4 bytes, got {data.size}")
        (n_voxels,) = struct.unpack("<I", data[:4].tobytes())
        if out is not None:
            check_out(out, self.codec_id)
            if out.size != n_voxels:
                raise ConfigurationError(f"label_multiset_vlen: out holds {out.size} elements, the payload {n_voxels}")
            if not (out.flags.c_contiguous or out.flags.f_contiguous):
                raise ConfigurationError("label_multiset_vlen: out must be contiguous (C or F order)")
        if out is None:
            return decode_payload(data[4:], (n_voxels,), ZARR_LAYOUT).to_elements()
        decoded = decode_payload(data[4:], (n_voxels,), ZARR_LAYOUT, labels=wants_labels(out))
        fill_out(out.reshape(-1, order=memory_order(out)), decoded)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}()" if self._reserved == "reject" else f"{type(self).__name__}(reserved='accept')"
