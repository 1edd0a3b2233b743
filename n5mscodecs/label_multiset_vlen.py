"""``label_multiset_vlen``: a self-describing label multiset payload for zarr v2-format object arrays.

zarr's v2 object codecs (filters) see only bytes, without the chunk shape, so
this codec prefixes the zarr-native ``label_multiset`` payload with the voxel
count (uint32 LE), as numcodecs' VLen codecs do. Decoding returns a 1-d object
array of :class:`~n5mscodecs.LabelMultiset` elements (one per distinct list).
"""

import struct

import numpy as np
from numcodecs.abc import Codec

from .errors import LabelMultisetFormatError
from .multiset_array import LabelMultisetArray
from .payload import ZARR_LAYOUT, _as_bytes, decode_payload, encode_payload


class LabelMultisetVLen(Codec):
    """numcodecs object codec ``label_multiset_vlen``.

    >>> import numpy as np
    >>> codec = LabelMultisetVLen()
    >>> elements = codec.decode(codec.encode(np.array([[3, 4]], dtype=np.uint64)))
    >>> elements.shape, elements[1]
    ((2,), LabelMultiset({4: 1}))
    """

    codec_id = "label_multiset_vlen"

    def encode(self, buf):
        data = buf if isinstance(buf, LabelMultisetArray) else np.asarray(buf)
        multisets = LabelMultisetArray.coerce(data)
        flat = multisets.reshape(-1)
        return struct.pack("<I", flat.size) + bytes(encode_payload(flat, ZARR_LAYOUT))

    def decode(self, buf, out=None):
        data = _as_bytes(buf)
        if data.size < 4:
            raise LabelMultisetFormatError(f"label_multiset_vlen: voxel count needs 4 bytes, got {data.size}")
        (n_voxels,) = struct.unpack("<I", data[:4].tobytes())
        elements = decode_payload(data[4:], (n_voxels,), ZARR_LAYOUT).to_elements()
        if out is not None:
            out = np.asarray(out).reshape(-1)
            out[...] = elements
            return out
        return elements
