"""CZI experimental chunked compression (libCZI mode 7): the function API, the numcodecs
codec ``czi_chunked`` and the zstd/LZ4 back ends (see :mod:`n5mscodecs.czi.chunked`)."""

from .chunked import ChunkedInfo, chunked_decode, chunked_encode, chunked_info
from .codec import CziChunked

__all__ = ["ChunkedInfo", "CziChunked", "chunked_decode", "chunked_encode", "chunked_info"]
