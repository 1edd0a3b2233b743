"""Plain N5 datasets of numbers: read by placing each block straight into the result
(see :mod:`n5mscodecs.n5`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigurationError, N5HeaderError
from . import grid, indexing
from .block import ArrayBlockCodec
from .dataset import _BlockReader, _Dataset
from .default import place_block
from .header import MODE_DEFAULT
from .metadata import DatasetMetadata
from .store import Store

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from numpy.typing import ArrayLike

    from .._buffers import BytesLike
    from .grid import Selection
    from .storage import PathLike, StorageOptions


class ArrayDataset(_Dataset):
    """A plain numeric N5 dataset (default-mode blocks; varlength blocks read as 1-d arrays)."""

    def __init__(self, path: PathLike | Store, attributes: Mapping[str, Any] | DatasetMetadata, *,
                 fill_value: int | float = 0, storage_options: StorageOptions = None,
                 allow_outside_root: bool = False, read_only: bool = False, store: Store | None = None) -> None:
        super().__init__(path, attributes, storage_options=storage_options, allow_outside_root=allow_outside_root,
                         read_only=read_only, store=store)
        self.fill_value = fill_value
        self.block_codec: ArrayBlockCodec = ArrayBlockCodec(self.metadata)

    def _reopened(self, metadata: DatasetMetadata) -> ArrayDataset:
        return ArrayDataset(self.path, metadata, fill_value=self.fill_value,
                            allow_outside_root=self.allow_outside_root, store=self.store)

    def _fit(self, block: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        out = np.full(shape, self.fill_value, self.dtype)
        overlap = tuple(slice(0, min(a, b)) for a, b in zip(block.shape, shape))
        out[overlap] = block[overlap]
        return out

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of ``dataType``."""
        return self.metadata.dtype

    def max_data_bytes(self, mode: int = MODE_DEFAULT) -> int:
        """The most bytes a block's data may decompress to (see
        :meth:`ArrayBlockCodec.max_data_bytes <n5mscodecs.n5.block.ArrayBlockCodec.max_data_bytes>`)."""
        return self.block_codec.max_data_bytes(mode)

    def read_block(self, grid_position: Sequence[int]) -> np.ndarray | None:
        """The block's data: N5-order ndarray of its header shape (1-d for varlength), or None."""
        return self._read_decoded(self.decode_block, grid_position)

    def decode_block(self, data: BytesLike, grid_position: Sequence[int]) -> np.ndarray:
        """Decode block bytes (see :meth:`read_block`)."""
        return self.block_codec.decode(data, grid_position)

    def __getitem__(self, key: Selection) -> np.ndarray | np.generic:
        return indexing.numpy_style(self, key) if indexing.is_advanced(key) else self.read(key)

    def __setitem__(self, key: Selection, value: ArrayLike) -> None:
        """Write ``value`` (broadcast to the selection, cast to ``dtype``) into a basic selection
        without steps: whole blocks are written as they are, partly covered ones read, changed
        and written back, in parallel."""
        covering, values = self._assignment(key, np.asarray(value, self.dtype))

        def put(piece):
            position, target, source = piece
            if values[target].shape == self.block_shape(position):
                block = values[target]
            else:
                block = np.array(self.read(self.block_region(position), threads=1))
                block[source] = values[target]
            self.write_block(position, block)

        self._each_block(put, covering, None)

    def _dask_source(self):
        return _BlockReader(self.read, self.shape, self.dtype)

    def __array__(self, dtype=None, copy=None):
        """The whole dataset (``np.asarray(ds)``), read block-parallel."""
        data = np.asarray(self.read())
        return data if dtype is None else data.astype(dtype, copy=False)

    def read(self, key: Selection = (), threads: int | None = None) -> np.ndarray | np.generic:
        """Read a basic selection (only the blocks needed, in parallel).

        Each worker reads a block and copies it straight into its place in the
        result, swapping the bytes from big-endian and the axes from N5's F
        order in that one copy; missing blocks, and what truncated boundary
        blocks do not cover, are the fill value.
        """
        starts, stops, steps, drop, covering = self._covering(key)
        out = np.empty(tuple(max(b - a, 0) for a, b in zip(starts, stops)), self.dtype)

        def place(piece):
            position, target, source = piece
            data = self.read_block_bytes(position)
            if data is None:
                out[target] = self.fill_value
                return
            block = self.decode_named(self._decode_stored, data, position)
            if block.ndim != self.ndim:
                raise N5HeaderError(f"{self.block_name(position)}: block ndim {block.ndim}, dataset has {self.ndim}")
            # blocks may be truncated (Java) or padded (zarr-python, tensorstore)
            usable = tuple(slice(s.start, min(s.stop, n)) for s, n in zip(source, block.shape))
            region = tuple(slice(t.start, t.start + max(u.stop - u.start, 0)) for t, u in zip(target, usable))
            if region != target:
                out[target] = self.fill_value
            place_block(out[region], block, usable)

        self._each_block(place, covering, threads)
        return out[grid.final_view(steps, drop)]

    def _decode_stored(self, data, grid_position):
        """A block's values as stored (big-endian, N5 order), checked as :meth:`decode_block` does:
        in this thread's decompression scratch, valid until its next block."""
        return self.block_codec.decode(data, grid_position, native=False, scratch=True)

    def write_block(self, grid_position: Sequence[int], data: ArrayLike) -> None:
        data = np.asarray(data, self.dtype)
        key = self.block_key(grid_position)  # checks the position first
        if data.ndim != self.ndim or any(n > b for n, b in zip(data.shape, self.chunks)):
            raise ConfigurationError(f"block {tuple(grid_position)}: shape {data.shape} does not fit blockSize "
                                     f"{list(self.chunks)}")
        self.store.set(key, self.block_codec.encode(data))

    def write_varlength_block(
        self, grid_position: Sequence[int], values: ArrayLike, dims: Iterable[int] | None = None
    ) -> None:
        """Write ``values`` (1-d) as a varlength block: header dims ``dims`` (default: the block's
        cropped shape) and numElements = ``len(values)``, as Paintera's side data is stored."""
        dims = self.block_shape(grid_position) if dims is None else tuple(dims)
        self.write_block_bytes(grid_position, self.block_codec.encode_varlength(values, dims))
