"""Type stubs of the xxHash kernel (``_xxhash.pyx``)."""

from .._buffers import BytesLike

def xxh32(data: BytesLike, seed: int = 0) -> int: ...
