"""N5 default-mode blocks (mode 0x0000) of plain numeric datasets.

A block is an :class:`~n5mscodecs.n5.N5BlockHeader` (mode, ndim, dims; big-endian)
followed by the voxels in N5 axis order (first axis fastest, i.e. F order over
the dims), big-endian, through the dataset's one N5 compressor. These two
functions are the whole format: :class:`~n5mscodecs.n5.ArrayDataset` and the
zarr ``n5_default`` codec both call them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._buffers import read_bytes
from ..errors import N5HeaderError
from . import _place
from .header import MODE_DEFAULT, MODE_VARLENGTH, N5BlockHeader

#: Bytes no plain block may decompress to (issue 51): a block's ``blockSize`` (a zarr chunk
#: shape) times the item size, its header dims and a varlength block's numElements are refused
#: above it before anything is allocated. 256 MiB: 1024 times the largest real block measured
#: (32^3 uint64, 256 KiB), and 512^3 uint16 or 256^3 uint64 still fit; Java's blocks are byte
#: arrays of at most 2 GiB, which no real dataset approaches.
MAX_BLOCK_BYTES = 1 << 28

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, DTypeLike

    from .._buffers import BytesLike
    from .compression import Compressor


def n5_default_encode(
    data: ArrayLike, compressor: Compressor | None = None, *, dtype: DTypeLike | None = None
) -> bytes:
    """Encode one block: the header with the array's shape (N5 axis order), then the
    voxels big-endian in F order, compressed by ``compressor`` (None: raw).

    >>> import numpy as np
    >>> n5_default_encode(np.array([[1, 2, 3]], np.uint16)).hex(" ")
    '00 00 00 02 00 00 00 01 00 00 00 03 00 01 00 02 00 03'
    """
    data = np.asarray(data, dtype)
    header = N5BlockHeader(MODE_DEFAULT, data.shape)
    payload = data.astype(data.dtype.newbyteorder(">"), copy=False).tobytes(order="F")
    if compressor is not None:
        payload = compressor.encode(payload)
    return header.to_bytes() + payload


def n5_default_decode(
    data: BytesLike,
    dtype: DTypeLike,
    compressor: Compressor | None = None,
    *,
    chunk_shape: Sequence[int] | None = None,
    varlength: bool = False,
    max_varlength_bytes: int | None = None,
    native: bool = True,
    scratch: bool = False,
) -> np.ndarray:
    """Decode one block to an N5-order array of its header dims (native byte order).

    ``chunk_shape``: the dataset's block size; a block of another ndim, or whose dims
    exceed it, is an :class:`~n5mscodecs.errors.N5HeaderError` raised before anything
    is decompressed. ``varlength``: also read varlength blocks (mode 0x0001, as 1-d
    arrays of ``numElements`` values); otherwise they are an error. ``max_varlength_bytes``:
    the most bytes such a block may claim (checked before anything is decompressed).
    ``native=False`` returns the stored big-endian values as they are (a view of the
    decompressed bytes, read-only for raw blocks): a reader that copies them into place
    anyway swaps the bytes in that one copy. ``scratch``: that reader consumes the values
    before this thread decodes another block (``Compressor.decode_scratch``).

    >>> import numpy as np
    >>> block = n5_default_encode(np.arange(6, dtype=np.int32).reshape(2, 3))
    >>> n5_default_decode(block, "int32", chunk_shape=(2, 4)).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """
    dtype = np.dtype(dtype)
    if chunk_shape is not None:
        check_block_bytes(chunk_shape, dtype, "blockSize")
    buf = read_bytes(data, "block")
    header = N5BlockHeader.from_bytes(buf)
    if header.mode == MODE_DEFAULT:
        if chunk_shape is not None:
            if len(header.shape) != len(chunk_shape):
                raise N5HeaderError(f"block ndim {len(header.shape)}, the dataset has {len(chunk_shape)}")
            if any(h > c for h, c in zip(header.shape, chunk_shape)):
                raise N5HeaderError(f"header dims {list(header.shape)} exceed blockSize {list(chunk_shape)}")
        count = 1
        for n in header.shape:  # Python ints: no int64 wrap-around
            count *= n
    elif header.mode == MODE_VARLENGTH and varlength and header.num_elements is not None:
        count = header.num_elements
        if count * dtype.itemsize > min(MAX_BLOCK_BYTES, max_varlength_bytes or MAX_BLOCK_BYTES):
            raise N5HeaderError(f"header numElements {count} need {count * dtype.itemsize} bytes, more than "
                                f"the {max_varlength_bytes} a block of this dataset may hold")
    else:
        raise N5HeaderError(f"mode 0x{header.mode:04x} blocks are not supported, expected 0x0000 (default)")
    nbytes = count * dtype.itemsize
    if nbytes > MAX_BLOCK_BYTES:  # a block decoded without its dataset's blockSize
        raise N5HeaderError(f"header dims {list(header.shape)}: {nbytes} bytes, more than the {MAX_BLOCK_BYTES} "
                            "bytes a block may hold (n5.default.MAX_BLOCK_BYTES)")
    body = buf[header.nbytes:]
    payload: BytesLike
    if compressor is None:
        if body.size < nbytes:
            raise N5HeaderError(f"payload has {body.size} bytes, dims {list(header.shape)} need {nbytes}")
        payload = body[:nbytes]
    else:
        payload = compressor.decode_scratch(body, nbytes) if scratch else compressor.decode(body, nbytes)
    values = np.frombuffer(payload, dtype.newbyteorder(">"))
    if native:
        values = values.astype(dtype)
    if header.mode == MODE_VARLENGTH:
        return values
    return values.reshape(header.shape, order="F")


def check_block_bytes(shape: Sequence[int], dtype: DTypeLike, field: str) -> None:
    """:class:`~n5mscodecs.errors.N5HeaderError` naming ``field`` when a block of ``shape``
    (``blockSize``, a zarr chunk shape) holds more than ``MAX_BLOCK_BYTES``: a size no real
    dataset has, refused before a block is read, decompressed or allocated."""
    nbytes = np.dtype(dtype).itemsize
    for n in shape:  # Python ints: no int64 wrap-around
        nbytes *= int(n)
    if nbytes > MAX_BLOCK_BYTES:
        raise N5HeaderError(f"{field} {[int(n) for n in shape]}: {nbytes} bytes per block, more than the "
                            f"{MAX_BLOCK_BYTES} bytes a block may hold (n5.default.MAX_BLOCK_BYTES)")


def place_block(region: np.ndarray, block: np.ndarray, usable: tuple[slice, ...]) -> None:
    """``region[...] = block[usable]`` for a block as stored (big-endian, F order): one tiled
    byte-swapping transpose without the GIL (1 to 3 dimensions), else numpy's copy."""
    if not 1 <= block.ndim <= 3 or not block.flags.f_contiguous or region.dtype.itemsize not in (1, 2, 4, 8) \
            or (region.ndim and region.strides[-1] != region.dtype.itemsize):
        region[...] = block[usable]
        return
    ndim = block.ndim
    dims = (*block.shape, 1, 1)[:3] if ndim < 3 else block.shape
    start = tuple(u.start for u in usable)
    if ndim == 1:
        dims, start, destination = (block.shape[0], 1, 1), (start[0], 0, 0), region[:, None, None]
    elif ndim == 2:
        dims, start, destination = (block.shape[0], 1, block.shape[1]), (start[0], 0, start[1]), region[:, None, :]
    else:
        destination = region
    _place.place_block(block.reshape(-1, order="F").view(np.uint8), dims, start, destination.view(np.uint8),
                       region.dtype.itemsize)
