"""Type stubs of the block placing kernel (``_place.pyx``)."""

from .._buffers import BytesLike

HAVE_AVX2: bool

def place_block(
    source: BytesLike,
    source_dims: tuple[int, ...],
    start: tuple[int, ...],
    destination: BytesLike,
    itemsize: int,
    simd: bool = True,
) -> None: ...
