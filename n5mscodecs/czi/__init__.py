"""CZI experimental chunked compression (libCZI mode 7): the function API, the numcodecs
codec ``czi_chunked``, the zstd/LZ4 back ends (see :mod:`n5mscodecs.czi.chunked`) and the
czifile accelerator (:mod:`n5mscodecs.czi.czifile`)."""

from .chunked import ChunkedInfo, chunked_decode, chunked_encode, chunked_info
from .codec import CziChunked
from .czifile import CzifileAccelerationWarning, accelerate_czifile, restore_czifile

__all__ = [
    "ChunkedInfo",
    "CziChunked",
    "CzifileAccelerationWarning",
    "accelerate_czifile",
    "chunked_decode",
    "chunked_encode",
    "chunked_info",
    "restore_czifile",
]
