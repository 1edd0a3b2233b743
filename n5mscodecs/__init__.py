"""n5mscodecs: N5 label multiset and CZI chunked codecs for numcodecs, zarr and dask."""

from numcodecs.registry import register_codec as _register_codec

from ._version import __version__
from .errors import (
    ChunkedFormatError,
    CompressionError,
    ConfigurationError,
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
    "CziChunked",
    "chunked_decode",
    "chunked_encode",
    "chunked_info",
]

# --- codec registrations: import each codec module and register its class ---
from .czi_chunked import CziChunked, chunked_decode, chunked_encode, chunked_info  # noqa: E402

_register_codec(CziChunked)
