"""n5mscodecs: N5 label multiset and CZI chunked codecs for numcodecs, zarr and dask."""

from numcodecs.registry import register_codec as _register_codec

from ._kernels_check import require_kernels as _require_kernels

_require_kernels()

from ._version import __version__
from .errors import (  # noqa: I001 (order: errors first, codecs below)
    ChunkedFormatError,
    CompressionError,
    ConfigurationError,
    IncompleteError,
    InputTypeError,
    LabelMultisetFormatError,
    LookupFormatError,
    MissingExtraError,
    N5HeaderError,
    N5msCodecsError,
    ReadOnlyError,
    StorageError,
    TargetInUseError,
)

__all__ = [
    "__version__",
    "N5msCodecsError",
    "N5HeaderError",
    "LabelMultisetFormatError",
    "CompressionError",
    "ChunkedFormatError",
    "LookupFormatError",
    "ConfigurationError",
    "StorageError",
    "InputTypeError",
    "ReadOnlyError",
    "IncompleteError",
    "TargetInUseError",
    "MissingExtraError",
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
    "accelerate_czifile",
]

# --- codec registrations: import each codec and register its class ---
from .czi import CziChunked, accelerate_czifile, chunked_decode, chunked_encode, chunked_info
from .multiset import (
    BACKGROUND,
    INVALID,
    MAX_ID,
    OUTSIDE,
    TRANSPARENT,
    LabelMultiset,
    LabelMultisetArray,
    argmax_elements,
)
from .n5.header import N5BlockHeader
from .n5.varlen import N5Varlen, n5_block_header, n5_varlen_decode, n5_varlen_encode
from .payload import (
    LabelMultisetCodec,
    LabelMultisetVLen,
    N5LabelMultiset,
    label_multiset_decode,
    label_multiset_encode,
    n5_label_multiset_decode,
    n5_label_multiset_encode,
)

_register_codec(N5LabelMultiset)
_register_codec(LabelMultisetCodec)
_register_codec(N5Varlen)
_register_codec(LabelMultisetVLen)
_register_codec(CziChunked)


def _alias_old_module_paths():
    """The flat module paths of 0.1 (named by earlier entry points and docs), for one release."""
    import importlib
    import sys

    for old, new in {
        "czi_chunked": "czi",
        "label_multiset": "payload.label_multiset",
        "label_multiset_vlen": "payload.label_multiset_vlen",
        "n5_label_multiset": "payload.n5_label_multiset",
        "n5_varlen": "n5.varlen",
        "n5_header": "n5.header",
        "n5_compression": "n5.compression",
        "multiset_array": "multiset.array",
        "payload_layout": "payload.layout",
    }.items():
        sys.modules.setdefault(f"{__name__}.{old}", importlib.import_module(f"{__name__}.{new}"))


_alias_old_module_paths()
