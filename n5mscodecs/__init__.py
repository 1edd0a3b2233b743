"""n5mscodecs: N5 label multiset and CZI chunked codecs for numcodecs, zarr and dask.

The top level holds what most code needs: the numcodecs codecs, the label multiset
types, the CZI chunked functions and the errors. Datasets and containers live in
:mod:`n5mscodecs.n5`, Paintera sources in :mod:`n5mscodecs.paintera`, zarr-python 3
in :mod:`n5mscodecs.zarr`; payload and block functions in ``n5mscodecs.payload``
and :mod:`n5mscodecs.n5`.

The codecs reach numcodecs through the ``numcodecs.codecs`` entry points, the one
registration path: ``numcodecs.get_codec({"id": "czi_chunked"})`` works in a process
that never imported this package, and importing it registers nothing by hand.
"""

from ._kernels_check import require_kernels as _require_kernels

_require_kernels()

from . import _extras
from ._version import __version__
from .czi import CziChunked, accelerate_czifile, chunked_decode, chunked_encode, chunked_info
from .errors import (
    ArgumentError,
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
from .n5 import N5Varlen
from .paintera import assignment as _assignment  # noqa: F401  (installs to_dask's assignment resolver)
from .payload import LabelMultisetCodec, LabelMultisetVLen, N5LabelMultiset

if _extras.zarr_needs_data_type_registration():
    # zarr 3 before 3.4.1 ignores the ``zarr.data_type`` entry point: importing the package is
    # then what hands zarr ``label_multiset`` (zarr.open of a --multisets export just works)
    from . import zarr as _zarr  # noqa: F401

__all__ = [
    "__version__",
    # numcodecs codecs
    "N5LabelMultiset",
    "LabelMultisetCodec",
    "N5Varlen",
    "LabelMultisetVLen",
    "CziChunked",
    # label multisets and Paintera's reserved ids
    "LabelMultiset",
    "LabelMultisetArray",
    "argmax_elements",
    "BACKGROUND",
    "MAX_ID",
    "OUTSIDE",
    "INVALID",
    "TRANSPARENT",
    # CZI chunked (imagecodecs' signatures) and czifile
    "chunked_decode",
    "chunked_encode",
    "chunked_info",
    "accelerate_czifile",
    # errors (n5mscodecs.errors)
    "N5msCodecsError",
    "N5HeaderError",
    "LabelMultisetFormatError",
    "CompressionError",
    "ChunkedFormatError",
    "LookupFormatError",
    "ConfigurationError",
    "ArgumentError",
    "IncompleteError",
    "TargetInUseError",
    "ReadOnlyError",
    "InputTypeError",
    "StorageError",
    "MissingExtraError",
]
