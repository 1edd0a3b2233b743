"""n5mscodecs: N5 label multiset and CZI chunked codecs for numcodecs, zarr and dask."""

from numcodecs.registry import register_codec as _register_codec

from ._kernels_check import require_kernels as _require_kernels

_require_kernels()

from ._version import __version__
from .errors import (  # noqa: I001 (order: errors first, codecs below)
    ChunkedFormatError,
    CompressionError,
    ConfigurationError,
    InputTypeError,
    LabelMultisetFormatError,
    N5HeaderError,
    N5msCodecsError,
)

__all__ = [
    "__version__",
    "N5msCodecsError",
    "N5HeaderError",
    "LabelMultisetFormatError",
    "CompressionError",
    "ChunkedFormatError",
    "ConfigurationError",
    "InputTypeError",
    "BACKGROUND",
    "MAX_ID",
    "OUTSIDE",
    "INVALID",
    "TRANSPARENT",
    "LabelMultiset",
    "LabelMultisetArray",
    "argmax_elements",
    "N5BlockHeader",
    "N5LabelMultiset",
    "LabelMultisetCodec",
    "N5Varlen",
    "LabelMultisetVLen",
    "n5_label_multiset_encode",
    "n5_label_multiset_decode",
    "label_multiset_encode",
    "label_multiset_decode",
    "n5_varlen_encode",
    "n5_varlen_decode",
    "n5_block_header",
    "CziChunked",
    "chunked_decode",
    "chunked_encode",
    "chunked_info",
]

from .multiset_array import (
    BACKGROUND,
    INVALID,
    MAX_ID,
    OUTSIDE,
    TRANSPARENT,
    LabelMultiset,
    LabelMultisetArray,
    argmax_elements,
)
from .n5_header import N5BlockHeader

# --- codec registrations: import each codec module and register its class ---
from .czi_chunked import CziChunked, chunked_decode, chunked_encode, chunked_info
from .label_multiset import LabelMultisetCodec, label_multiset_decode, label_multiset_encode
from .label_multiset_vlen import LabelMultisetVLen
from .n5_label_multiset import N5LabelMultiset, n5_label_multiset_decode, n5_label_multiset_encode
from .n5_varlen import N5Varlen, n5_block_header, n5_varlen_decode, n5_varlen_encode

_register_codec(N5LabelMultiset)
_register_codec(LabelMultisetCodec)
_register_codec(N5Varlen)
_register_codec(LabelMultisetVLen)
_register_codec(CziChunked)
