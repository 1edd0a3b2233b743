"""One N5 block, encoded and decoded from its dataset's metadata alone.

A block codec (:class:`LabelMultisetBlockCodec`, :class:`ArrayBlockCodec`) knows a
dataset's :class:`~n5mscodecs.n5.metadata.DatasetMetadata` and nothing of where blocks are
kept, as N5 Java's ``DefaultBlockReader`` and ``DefaultBlockWriter`` do: the bytes of one
block become an array, an array becomes the bytes of one block, and every bound a block's
bytes are checked against (the most bytes a block file may hold, what its payload may
inflate to) comes from the metadata. Datasets (:mod:`n5mscodecs.n5.dataset`), the zarr
view of N5 containers (:class:`~n5mscodecs.zarr.N5Store`), the Paintera writers and the
CLI all encode and decode blocks here.

>>> import numpy as np
>>> from n5mscodecs.n5.metadata import DatasetMetadata
>>> codec = block_codec(DatasetMetadata.label_multisets((4, 3), (2, 2), "gzip"))
>>> data = codec.encode(np.array([[1, 2], [3, 3]], np.uint64))
>>> codec.decode(data, (0, 0)).argmax().tolist()
[[1, 2], [3, 3]]
>>> codec.block_shape((1, 1))  # a boundary block: cropped to the grid
(2, 1)
>>> padded = codec.encode(np.array([[5, 7], [6, 8]], np.uint64))  # as zarr writes boundary chunks
>>> codec.decode(padded, (1, 1), labels=True).tolist()
[[5], [6]]
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from ..errors import LabelMultisetFormatError
from ..multiset import LabelMultisetArray
from ..payload.layout import c_order, decode_payload, entries_bound, max_payload_size
from . import grid
from .compression import max_compressed_size
from .default import MAX_BLOCK_BYTES, n5_default_decode, n5_default_encode
from .header import MODE_DEFAULT, MODE_VARLENGTH, N5BlockHeader
from .varlen import CodecChain, n5_varlen_encode, varlen_payload

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from numpy.typing import ArrayLike

    from .._buffers import BytesLike
    from ..multiset.array import MultisetsLike, Rule
    from ..payload.layout import Order
    from .metadata import DatasetMetadata

#: Bytes a varlength block of a plain dataset may decompress to beyond its grid block (Paintera's
#: label-to-block-mapping files are not bounded by their blockSize): as much as any block may.
MAX_VARLENGTH_BYTES = MAX_BLOCK_BYTES
#: Bytes of a block header before its dims: mode (2), ndim (2); then 4 per axis and numElements (4).
_HEADER_BYTES = 8


def block_codec(metadata: DatasetMetadata) -> LabelMultisetBlockCodec | ArrayBlockCodec:
    """The block codec of a dataset: label multisets or plain numbers, as its metadata says."""
    if metadata.label_multiset:
        return LabelMultisetBlockCodec(metadata)
    return ArrayBlockCodec(metadata)


class _BlockCodec:
    """What both kinds share: the metadata, and the cropped shape of a grid position."""

    def __init__(self, metadata: DatasetMetadata) -> None:
        self.metadata = metadata

    def block_shape(self, grid_position: Sequence[int]) -> tuple[int, ...]:
        """Cropped shape of a block: what Java readers expect for boundary blocks."""
        return grid.block_shape(grid_position, self.metadata.chunks, self.metadata.shape)

    def max_block_bytes(self) -> int:
        """The most bytes a block file of the dataset can need (its decompressed bound, its
        compressed expansion and the header)."""
        raise NotImplementedError


class LabelMultisetBlockCodec(_BlockCodec):
    """Blocks of a label multiset dataset: a varlength header and the ``n5_label_multiset``
    payload, compressed as the dataset's ``compression`` says."""

    def __init__(self, metadata: DatasetMetadata) -> None:
        super().__init__(metadata)
        chain: list = [{"name": "n5_label_multiset"}]
        if metadata.compressor is not None:
            chain.append(metadata.compressor)
        self.codec_chain = CodecChain(chain)
        self.max_entries = entries_bound(metadata.to_json())

    @functools.cached_property
    def max_payload_bytes(self) -> int:
        """The most payload bytes (numElements) a block may hold, a full block's voxels with
        ``max_entries`` entries per voxel on average (see
        :func:`~n5mscodecs.payload.max_payload_size`)."""
        return max_payload_size(grid.voxels(self.metadata.chunks), self.codec_chain.layout, self.max_entries)

    def max_block_bytes(self) -> int:
        size = self.max_payload_bytes
        for _ in self.codec_chain.compressors:
            size = max_compressed_size(size)
        return _HEADER_BYTES + 4 * len(self.metadata.shape) + size

    def _decode_payload(self, payload, shape, labels, rule, order="C"):
        """The one call into a kernel: multisets or labels (``order`` C, or K: N5's x-fastest) of a
        decompressed payload."""
        return decode_payload(payload, shape, self.codec_chain.layout, labels=labels, threads=1,
                              order=order if labels else "K", rule=rule)

    def decode(self, data: BytesLike, grid_position: Sequence[int], *, labels: bool = False,
               rule: Rule = "spec", order: Order = "C") -> LabelMultisetArray | np.ndarray:
        """Block bytes to the block's cropped shape: multisets, or their uint64 argmax ``labels``
        (C-contiguous, or with ``order="K"`` in N5's voxel order: F-contiguous, whose ``.T`` is a
        C-order (z, y, x) array without a copy).

        The voxel count comes from the grid, not the header: label-utilities-spark
        overstates the header dims of boundary blocks. A block that really holds
        the full (padded) voxel count is decoded by its header and cropped. The
        payload is decompressed once, bounded by a full block's voxels.
        """
        chunks = self.metadata.chunks
        cropped = self.block_shape(grid_position)
        header, payload = varlen_payload(data, self.codec_chain, cropped, max_voxels=grid.voxels(chunks),
                                         max_entries=self.max_entries)
        try:
            return self._decode_payload(payload, cropped, labels, rule, order)
        except LabelMultisetFormatError:
            if header.shape == cropped or not all(c <= h <= b for h, c, b in zip(header.shape, cropped, chunks)):
                raise
        block = grid.crop(self._decode_payload(payload, header.shape, labels, rule, order), cropped)
        return c_order(block) if labels and order == "C" else block  # a cropped padded block is a view

    def encode(self, block: MultisetsLike) -> bytes:
        """A block's bytes (its header dims are the block's shape)."""
        return n5_varlen_encode(LabelMultisetArray.coerce(block), self.codec_chain, threads=1)


class ArrayBlockCodec(_BlockCodec):
    """Blocks of a plain numeric dataset: default-mode blocks (varlength ones read as 1-d arrays)."""

    @property
    def dtype(self) -> np.dtype:
        return self.metadata.dtype

    def max_data_bytes(self, mode: int = MODE_DEFAULT) -> int:
        """The most bytes a block's data may decompress to: a full grid block (Java overstates
        the header dims of boundary blocks up to it; zarr pads to it) or, for varlength blocks,
        ``MAX_VARLENGTH_BYTES``; never more than ``MAX_BLOCK_BYTES`` (a larger blockSize is
        refused when a block is decoded)."""
        size = grid.voxels(self.metadata.chunks) * self.dtype.itemsize
        return MAX_VARLENGTH_BYTES if mode == MODE_VARLENGTH else min(size, MAX_BLOCK_BYTES)

    def max_block_bytes(self) -> int:
        size = self.max_data_bytes(MODE_VARLENGTH)
        compressor = self.metadata.compressor
        return _HEADER_BYTES + 4 * len(self.metadata.shape) + (
            size if compressor is None else max_compressed_size(size))

    def decode(self, data: BytesLike, grid_position: Sequence[int] | None = None, *,
               native: bool = True, varlength: bool = True, scratch: bool = False) -> np.ndarray:
        """Block bytes to an N5-order array of the header's shape (1-d for varlength blocks,
        which ``varlength=False`` refuses); ``native=False`` keeps the stored big-endian values
        (``scratch``: in this thread's scratch, for a reader that places them at once).
        The header dims are at most the block size (Java overstates boundary blocks up to it,
        zarr pads to it) and varlength blocks are bounded too: both checked before anything is
        inflated."""
        return n5_default_decode(data, self.dtype, self.metadata.compressor, chunk_shape=self.metadata.chunks,
                                 varlength=varlength, max_varlength_bytes=self.max_data_bytes(MODE_VARLENGTH),
                                 native=native, scratch=scratch)

    def encode(self, block: ArrayLike) -> bytes:
        """A default-mode block's bytes (its header dims are the block's shape)."""
        return n5_default_encode(np.asarray(block, self.dtype), self.metadata.compressor, dtype=self.dtype)

    def encode_varlength(self, values: ArrayLike, dims: Iterable[int]) -> bytes:
        """A varlength block's bytes: header dims ``dims``, numElements ``len(values)`` (1-d),
        as Paintera's side data is stored."""
        values = np.asarray(values, self.dtype).reshape(-1)
        payload = values.astype(self.dtype.newbyteorder(">")).tobytes()
        if self.metadata.compressor is not None:
            payload = bytes(self.metadata.compressor.encode(payload))
        return N5BlockHeader(MODE_VARLENGTH, tuple(dims), values.size).to_bytes() + payload
