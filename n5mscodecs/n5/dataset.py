"""N5 datasets: label multiset datasets and plain numeric ones (see :mod:`n5mscodecs.n5`)."""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from .._extras import require
from ..errors import CompressionError, ConfigurationError, LabelMultisetFormatError, N5HeaderError
from ..multiset import BACKGROUND, LabelMultisetArray, assemble
from ..multiset.array import check_rule
from ..payload.layout import (
    c_order,
    decode_payload,
    decode_payload_labels,
    entries_bound,
    max_payload_size,
)
from . import grid, storage
from .compression import compressor_from_config, max_compressed_size
from .default import n5_default_decode, n5_default_encode, place_block
from .header import MODE_DEFAULT, MODE_VARLENGTH, N5BlockHeader
from .varlen import MAX_NDIM, CodecChain, n5_varlen_encode, varlen_payload
from .writing import LOCK_NAME, check_complete, incomplete_marker, mark_complete, write_marked

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from typing import Any

    from numpy.typing import ArrayLike, DTypeLike

    from .._buffers import BytesLike
    from ..multiset import LabelMultiset
    from ..multiset.array import MultisetsLike, ReservedRule, Rule
    from .compression import CompressorConfig
    from .grid import Selection
    from .storage import PathLike, StorageOptions

N5_VERSION = "4.0.0"  # written as the container root's {"n5": ...}
# a corrupt block's error is re-raised naming the block file
_BLOCK_ERRORS = (LabelMultisetFormatError, N5HeaderError, CompressionError)
_DTYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
           "float32", "float64")
#: Voxels of one block: Java's arrays (and N5's int blockSize) hold at most 2**31 - 1.
MAX_BLOCK_VOXELS = 2**31 - 1
#: Bytes a varlength block of a plain dataset may decompress to beyond its grid block (Paintera's
#: label-to-block-mapping files are not bounded by their blockSize).
MAX_VARLENGTH_BYTES = 1 << 28
#: Blocks along one axis that :meth:`to_dask` accepts (dask keeps one chunk size per block).
MAX_DASK_BLOCKS_PER_AXIS = 1 << 20
#: Blocks one read (``dataset[...]``) may touch.
MAX_BLOCKS_PER_READ = 1 << 24


def _integers(name, field, values, low, high):
    """``values`` (a JSON list) as a tuple of ints in ``low..high``, else ConfigurationError naming ``field``."""
    if not isinstance(values, list):
        raise ConfigurationError(f"{name}: attributes.json: {field} must be a list of integers, got {values!r}")
    result = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or int(value) != value:
            raise ConfigurationError(f"{name}: attributes.json: {field} must hold integers, got {values!r}")
        if not low <= int(value) <= high:
            raise ConfigurationError(f"{name}: attributes.json: {field} {values!r}: each must be in {low}..{high}")
        result.append(int(value))
    return tuple(result)


def validate_attributes(attributes: Any, name: str):
    """``(shape, chunks, compressor)`` of a dataset's attributes, every field checked: the one
    place a dataset's attributes are validated, before anything is read or allocated.

    Raises :class:`~n5mscodecs.ConfigurationError` naming the dataset and the field."""
    if not isinstance(attributes, dict):
        raise ConfigurationError(f"{name}: attributes.json must be a JSON object, got {type(attributes).__name__}")
    if "dimensions" not in attributes or "blockSize" not in attributes:
        raise ConfigurationError(f"{name}: attributes.json lacks dimensions/blockSize")
    shape = _integers(name, "dimensions", attributes["dimensions"], 0, 2**63 - 1)
    chunks = _integers(name, "blockSize", attributes["blockSize"], 1, MAX_BLOCK_VOXELS)
    if not 1 <= len(shape) <= MAX_NDIM:
        raise ConfigurationError(f"{name}: attributes.json: dimensions has {len(shape)} values, 1..{MAX_NDIM} allowed")
    if len(chunks) != len(shape):
        raise ConfigurationError(f"{name}: attributes.json: blockSize {list(chunks)} does not fit dimensions "
                                 f"{list(shape)} ({len(chunks)} values for {len(shape)} dimensions)")
    if grid.voxels(chunks) > MAX_BLOCK_VOXELS:
        raise ConfigurationError(f"{name}: attributes.json: blockSize {list(chunks)} holds more than "
                                 f"{MAX_BLOCK_VOXELS} voxels")
    compression = attributes.get("compression", {"type": "raw"})
    try:
        compressor = compressor_from_config(compression)
    except ConfigurationError as exc:
        field = "" if str(exc).startswith("compression") else "compression: "
        raise ConfigurationError(f"{name}: attributes.json: {field}{exc}") from None
    return shape, chunks, compressor


def read_attributes(path: PathLike, *, storage_options: StorageOptions = None) -> dict[str, Any]:
    """The parsed ``attributes.json`` of the group or dataset at ``path`` (a local path or a URL;
    {} when there is none)."""
    return storage.read_attributes(path, storage_options)


def write_attributes(path: PathLike, document: Mapping[str, Any], *, storage_options: StorageOptions = None) -> None:
    """Write the ``attributes.json`` of the group or dataset at ``path`` (atomically)."""
    storage.write_attributes(path, document, storage_options)


def compression_attributes(compression: CompressorConfig) -> dict[str, Any]:
    """The N5 ``compression`` attribute for a compressor spelled any way ``compressor_from_config`` reads."""
    compressor = compressor_from_config(compression)
    return {"type": "raw"} if compressor is None else compressor.n5_config()


class _Dataset:
    """Grid geometry and block paths shared by both dataset kinds."""

    def __init__(self, path: PathLike, attributes: dict[str, Any], *,
                 storage_options: StorageOptions = None, allow_outside_root: bool = False) -> None:
        self.path = os.fspath(path)
        self.storage_options = storage_options  # passed to fsspec for URLs; never printed
        self.name = storage.display(self.path)  # for messages
        self.attributes = attributes
        self.shape, self.chunks, self.compressor = validate_attributes(attributes, self.name)
        # block reads stay inside the container root (the dataset itself outside any *.n5)
        self.root = None if storage.is_url(self.path) else (storage.container_root(self.path)
                                                            or os.path.abspath(storage.local_path(self.path)))
        self.allow_outside_root = bool(allow_outside_root)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d dataset")
        return self.shape[0]

    @functools.cached_property
    def grid_shape(self) -> tuple[int, ...]:
        return grid.grid_shape(self.shape, self.chunks)

    def block_path(self, grid_position: Sequence[int]) -> str:
        """The block's location; a position off the grid (negative, past its end, of another
        ndim) is a :class:`~n5mscodecs.ConfigurationError`."""
        position = tuple(grid_position)
        grid_shape = self.grid_shape
        if len(position) != len(grid_shape) or not all(
                isinstance(g, int | np.integer) and 0 <= g < n for g, n in zip(position, grid_shape)):
            raise ConfigurationError(f"{self.name}: block {position} is outside the grid {list(grid_shape)}")
        return storage.join(self.path, *(int(g) for g in position))

    def block_name(self, grid_position: Sequence[int]) -> str:
        """The block's location, for messages."""
        return storage.display(self.block_path(grid_position))

    def block_shape(self, grid_position: Sequence[int]) -> tuple[int, ...]:
        """Cropped shape of a block: what Java readers expect for boundary blocks."""
        return grid.block_shape(grid_position, self.chunks, self.shape)

    def block_region(self, grid_position: Sequence[int]) -> tuple[slice, ...]:
        """The block's voxels in the dataset, as a tuple of slices."""
        return grid.block_region(grid_position, self.chunks, self.shape)

    def has_block(self, grid_position: Sequence[int]) -> bool:
        return storage.exists(self.block_path(grid_position), self.storage_options)

    def present_blocks(self) -> list[tuple[int, ...]]:
        """Grid positions of the blocks that exist, sorted (found by listing: a grid can be
        astronomically large)."""
        found = []
        for directory, subdirectories, files in storage.walk(self.path, self.storage_options):
            parts = storage.relative(directory, self.path).split("/")
            parts = [] if parts == ["."] else parts
            if len(parts) == self.ndim - 1 and all(p.isdigit() for p in parts):
                # a directory where a block should be is listed too: reading it is an error
                names = files + subdirectories
                found.extend(tuple(int(p) for p in [*parts, f]) for f in names if f.isdigit())
        return sorted(found)

    def max_block_bytes(self) -> int:
        """The most bytes a block file of this dataset can need (its decompressed bound, its
        compressed expansion and the header)."""
        raise NotImplementedError

    def read_block_bytes(self, grid_position: Sequence[int]) -> bytes | None:
        """The block's bytes (None when it is missing); a file larger than
        ``max_block_bytes()``, or not a regular file, is a :class:`~n5mscodecs.StorageError`."""
        return storage.read_bytes(self.block_path(grid_position), self.storage_options,
                                  max_size=self.max_block_bytes(), root=self.root,
                                  confine=not self.allow_outside_root)

    def _read_decoded(self, decode, grid_position):
        """``decode(block bytes, grid_position)``, None for a missing block; errors name the block."""
        data = self.read_block_bytes(grid_position)
        return None if data is None else self.decode_named(decode, data, grid_position)

    def decode_named(self, decode, data, grid_position):
        """``decode(data, grid_position)``; a corrupt block's error is re-raised naming the block."""
        try:
            return decode(data, grid_position)
        except _BLOCK_ERRORS as exc:
            raise type(exc)(f"{self.block_name(grid_position)}: {exc}") from exc

    def write_block_bytes(self, grid_position: Sequence[int], data: bytes | bytearray | memoryview) -> None:
        storage.write_bytes(self.block_path(grid_position), data, self.storage_options, root=self.root)

    def _covering(self, key):
        """``(starts, stops, steps, dropped axes, covering blocks)`` of a basic selection; a
        selection spanning more than MAX_BLOCKS_PER_READ blocks is refused before any listing."""
        starts, stops, steps, drop = grid.normalize_selection(key, self.shape)
        spanned = grid.voxels(-(-stop // b) - start // b if stop > start else 0
                              for start, stop, b in zip(starts, stops, self.chunks))
        if spanned > MAX_BLOCKS_PER_READ:  # listing them would not end (dims of 2**62)
            raise ConfigurationError(f"{self.name}: the selection spans {spanned} blocks, more than the "
                                     f"{MAX_BLOCKS_PER_READ} one read may (read less, or use to_dask)")
        return starts, stops, steps, drop, grid.covering_blocks(starts, stops, self.chunks, self.shape)

    def _each_block(self, function, items, threads):
        """``[function(item) for item in items]``, on a pool of threads when there are several."""
        workers = min(storage.request_threads(self.path, threads), len(items))
        if workers <= 1:  # one block (a dask task): no pool to start
            return [function(item) for item in items]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(function, items))

    def _read_region(self, key, read_block, threads):
        """``(pieces, bounding box, final view)``: ``pieces`` are ``(target, source, block)``
        of every block covering ``key``, read in parallel (block None when missing)."""
        starts, stops, steps, drop, covering = self._covering(key)
        blocks = self._each_block(read_block, [position for position, _, _ in covering], threads)
        pieces = [(target, source, block) for (_, target, source), block in zip(covering, blocks)]
        box = tuple(max(b - a, 0) for a, b in zip(starts, stops))
        return pieces, box, grid.final_view(steps, drop)


    def _dask_source(self):
        raise NotImplementedError

    def to_dask(self):
        """The dataset as a lazy ``dask.array.Array`` (N5 axis order, one task per block):
        uint64 argmax labels for a label multiset dataset, the data type of a plain one.
        Tasks hold only the dataset's location and attributes, so they pickle to
        ``dask.distributed`` workers (processes). Needs the ``dask`` extra."""
        da = require("dask.array", "dask", "lazy arrays (to_dask)")
        from dask.base import tokenize

        if max(self.grid_shape) > MAX_DASK_BLOCKS_PER_AXIS:
            raise ConfigurationError(f"{self.name}: to_dask: grid {list(self.grid_shape)} has more than "
                                     f"{MAX_DASK_BLOCKS_PER_AXIS} blocks along an axis")

        source = self._dask_source()
        name = f"n5-{type(self).__name__}-" + tokenize(self.path, self.attributes, source.dtype.str,
                                                       getattr(self, "fill_label", None))
        return da.from_array(source, chunks=self.chunks, name=name, lock=False, asarray=False, fancy=False,
                             meta=np.empty((0,) * self.ndim, source.dtype))


class _BlockReader:
    """What ``dask.array.from_array`` slices: a dataset's ``read(key, threads=1)``, with shape and dtype."""

    def __init__(self, read, shape, dtype):
        self.read, self.shape, self.dtype = read, shape, np.dtype(dtype)
        self.ndim = len(shape)

    def __getitem__(self, key):
        return self.read(key, threads=1)


class LabelMultisetDataset(_Dataset):
    """An N5 label multiset dataset (``isLabelMultiset: true``).

    Missing blocks read as the singleton ``{fill_label: 1}``: ``{0: 1}`` by
    default, as Java's ``N5LabelMultisets`` and Paintera's ``N5Data`` read them
    (a writer skips blocks whose voxels are all ``{0: 1}``).
    """

    def __init__(self, path: PathLike, attributes: dict[str, Any], *, fill_label: int = BACKGROUND,
                 storage_options: StorageOptions = None, allow_outside_root: bool = False) -> None:
        super().__init__(path, attributes, storage_options=storage_options, allow_outside_root=allow_outside_root)
        self.fill_label = int(fill_label)
        chain = [{"name": "n5_label_multiset"}]
        if self.compressor is not None:
            chain.append(self.compressor)
        self.codec_chain = CodecChain(chain)
        self.max_entries = entries_bound(attributes)

    def max_payload_bytes(self) -> int:
        """The most payload bytes (numElements) a block may hold: a full block's voxels with
        ``max_entries`` entries per voxel on average (see
        :func:`~n5mscodecs.payload.max_payload_size`)."""
        return max_payload_size(grid.voxels(self.chunks), self.codec_chain.layout, self.max_entries)

    def max_block_bytes(self) -> int:
        size = self.max_payload_bytes()
        for _ in self.codec_chain.compressors:
            size = max_compressed_size(size)
        return 8 + 4 * self.ndim + size

    @property
    def max_id(self) -> int | None:
        return self.attributes.get("maxId")

    def _decode_cropped(self, decode, data, grid_position):
        """``decode(payload, shape)`` of block bytes, in the block's cropped shape.

        The voxel count comes from the grid, not the header: label-utilities-spark
        overstates the header dims of boundary blocks. A block that really holds
        the full (padded) voxel count is decoded by its header and cropped. The
        payload is decompressed once, bounded by a full block's voxels.
        """
        cropped = self.block_shape(grid_position)
        header, payload = varlen_payload(data, self.codec_chain, cropped, max_voxels=grid.voxels(self.chunks),
                                         max_entries=self.max_entries)
        try:
            return decode(payload, cropped)
        except LabelMultisetFormatError:
            if header.shape == cropped or not all(c <= h <= b for h, c, b in zip(header.shape, cropped, self.chunks)):
                raise
        return grid.crop(decode(payload, header.shape), cropped)

    def decode_block(self, data: BytesLike, grid_position: Sequence[int]) -> LabelMultisetArray:
        """Decode block bytes to the block's cropped shape (see :meth:`read_block`)."""
        layout = self.codec_chain.layout
        return self._decode_cropped(lambda payload, shape: decode_payload(payload, shape, layout, threads=1),
                                    data, grid_position)

    def decode_block_labels(self, data: BytesLike, grid_position: Sequence[int], rule: Rule = "spec") -> np.ndarray:
        """Decode block bytes straight to argmax labels (uint64, the block's cropped shape, C order)."""
        layout = self.codec_chain.layout
        labels = self._decode_cropped(
            lambda payload, shape: decode_payload_labels(payload, shape, layout, threads=1, order="C", rule=rule),
            data, grid_position)
        return c_order(labels)  # a cropped padded block is a view

    def read_block(self, grid_position: Sequence[int]) -> LabelMultisetArray | None:
        """The block at ``grid_position`` (cropped shape), or None when it is missing."""
        return self._read_decoded(self.decode_block, grid_position)

    def read_block_labels(self, grid_position: Sequence[int], rule: Rule = "spec") -> np.ndarray | None:
        """The argmax labels of the block at ``grid_position`` (cropped shape), or None when it is missing."""
        return self._read_decoded(functools.partial(self.decode_block_labels, rule=rule), grid_position)

    def read_labels(self, key: Selection = (), threads: int | None = None,
                    rule: Rule = "spec") -> np.ndarray | np.uint64:
        """The argmax labels (uint64) of a basic selection, decoded straight from the blocks.

        Equal to ``read(key).argmax()`` bit for bit (highest count, ties to the
        smaller id compared unsigned); missing blocks read as ``fill_label``.
        ``rule="java"``: the labels Paintera shows, bit for bit (Java's argmax,
        and the argmax values a block may cache; see
        ``n5mscodecs.payload.decode_payload_labels``).

        >>> import tempfile
        >>> ds = write(tempfile.mkdtemp() + "/labels", np.array([[1, 2], [3, 3]], np.uint64), chunks=(1, 2))
        >>> ds.read_labels().tolist(), int(ds.read_labels((1, 0)))
        ([[1, 2], [3, 3]], 3)
        """
        pieces, box, view = self._read_region(key, functools.partial(self.read_block_labels, rule=rule), threads)
        if len(pieces) == 1 and pieces[0][2] is not None:  # inside one block: no second copy
            _, source, block = pieces[0]
            return np.ascontiguousarray(block[source])[view]
        out = np.full(box, self.fill_label, np.uint64)
        for target, source, block in pieces:
            if block is not None:
                out[target] = block[source]
        return out[view]

    def _dask_source(self):
        return _BlockReader(self.read_labels, self.shape, np.uint64)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            f"{self.name} holds label multisets, which have no plain numpy form: read the argmax labels "
            "with ds.read_labels() (uint64), or the multisets with ds[...] (a LabelMultisetArray)")

    def __getitem__(self, key: Selection) -> LabelMultisetArray | LabelMultiset:
        return self.read(key)

    def read(self, key: Selection = (), threads: int | None = None) -> LabelMultisetArray | LabelMultiset:
        """Read a basic selection into one :class:`~n5mscodecs.LabelMultisetArray` (only the blocks needed)."""
        pieces, box, view = self._read_region(key, self.read_block, threads)
        result = assemble(box, [(target, None if block is None else block[source])
                                for target, source, block in pieces], fill=self.fill_label)
        return result[view] if view else result

    def write_block(self, grid_position: Sequence[int], data: MultisetsLike, *,
                    write_background: bool = False) -> bool:
        """Encode and write one block (cropped to the grid); returns whether it was written.

        A block without any positive count is removed instead, as Java's serializer
        writes nothing; so is a block whose voxels are all ``{0: 1}`` (what a missing
        block reads as), as the conversion helper's ``saveLabelMultisetNonEmptyBlock``
        skips all-background blocks, unless ``write_background``.
        """
        data = LabelMultisetArray.coerce(data)
        self.block_path(grid_position)  # checks the position first
        expected = self.block_shape(grid_position)
        if data.shape != expected:
            raise ConfigurationError(f"block {tuple(grid_position)}: shape {data.shape}, expected {expected}")
        if not data.has_positive_counts() or (not write_background and data.is_background()):
            storage.remove(self.block_path(grid_position), self.storage_options)
            return False
        self.write_block_bytes(grid_position, n5_varlen_encode(data, self.codec_chain, threads=1))
        return True


class ArrayDataset(_Dataset):
    """A plain numeric N5 dataset (default-mode blocks; varlength blocks read as 1-d arrays)."""

    def __init__(self, path: PathLike, attributes: dict[str, Any], *, fill_value: int | float = 0,
                 storage_options: StorageOptions = None, allow_outside_root: bool = False) -> None:
        super().__init__(path, attributes, storage_options=storage_options, allow_outside_root=allow_outside_root)
        dtype = attributes.get("dataType")
        if not isinstance(dtype, str) or dtype not in _DTYPES:
            raise ConfigurationError(f"{self.name}: attributes.json: unsupported dataType {dtype!r}")
        self.dtype = np.dtype(dtype)
        self.fill_value = fill_value

    def max_data_bytes(self, mode: int = MODE_DEFAULT) -> int:
        """The most bytes a block's data may decompress to: a full grid block (Java overstates
        the header dims of boundary blocks up to it; zarr pads to it) or, for varlength blocks,
        at least ``MAX_VARLENGTH_BYTES``."""
        size = grid.voxels(self.chunks) * self.dtype.itemsize
        return max(size, MAX_VARLENGTH_BYTES) if mode == MODE_VARLENGTH else size

    def max_block_bytes(self) -> int:
        size = self.max_data_bytes(MODE_VARLENGTH)
        return 8 + 4 * self.ndim + (size if self.compressor is None else max_compressed_size(size))

    def read_block(self, grid_position: Sequence[int]) -> np.ndarray | None:
        """The block's data: N5-order ndarray of its header shape (1-d for varlength), or None."""
        return self._read_decoded(self.decode_block, grid_position)

    def decode_block(self, data: BytesLike, grid_position: Sequence[int]) -> np.ndarray:
        """Decode block bytes (see :meth:`read_block`)."""
        # header dims at most the block size (Java overstates boundary blocks up to it, zarr pads
        # to it); varlength blocks bounded too: checked before anything is inflated
        return n5_default_decode(data, self.dtype, self.compressor, chunk_shape=self.chunks, varlength=True,
                                 max_varlength_bytes=self.max_data_bytes(MODE_VARLENGTH))

    def __getitem__(self, key: Selection) -> np.ndarray | np.generic:
        return self.read(key)

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
        """A block's values as stored (big-endian, N5 order), checked as :meth:`decode_block` does."""
        return n5_default_decode(data, self.dtype, self.compressor, chunk_shape=self.chunks, varlength=True,
                                 max_varlength_bytes=self.max_data_bytes(MODE_VARLENGTH), native=False)

    def write_block(self, grid_position: Sequence[int], data: ArrayLike) -> None:
        data = np.asarray(data, self.dtype)
        location = self.block_path(grid_position)  # checks the position first
        if data.ndim != self.ndim or any(n > b for n, b in zip(data.shape, self.chunks)):
            raise ConfigurationError(f"block {tuple(grid_position)}: shape {data.shape} does not fit blockSize "
                                     f"{list(self.chunks)}")
        storage.write_bytes(location, n5_default_encode(data, self.compressor, dtype=self.dtype),
                            self.storage_options, root=self.root)

    def write_varlength_block(
        self, grid_position: Sequence[int], values: ArrayLike, dims: Iterable[int] | None = None
    ) -> None:
        """Write ``values`` (1-d) as a varlength block: header dims ``dims`` (default: the block's
        cropped shape) and numElements = ``len(values)``, as Paintera's side data is stored."""
        values = np.asarray(values, self.dtype).reshape(-1)
        payload = values.astype(self.dtype.newbyteorder(">")).tobytes()
        if self.compressor is not None:
            payload = self.compressor.encode(payload)
        dims = self.block_shape(grid_position) if dims is None else tuple(dims)
        header = N5BlockHeader(MODE_VARLENGTH, dims, values.size)
        self.write_block_bytes(grid_position, header.to_bytes() + bytes(payload))


def dataset_paths(group: PathLike, *, storage_options: StorageOptions = None) -> Iterator[str]:
    """The datasets (directories whose attributes have ``dimensions``) below ``group``, in order."""
    for directory, subdirectories, _ in storage.walk(group, storage_options):
        if "dimensions" in read_attributes(directory, storage_options=storage_options):
            subdirectories[:] = []  # block directories
            yield directory


def open(path: PathLike, *, fill_label: int = BACKGROUND,  # noqa: A001 - mirrors zarr.open / h5py.File naming
         storage_options: StorageOptions = None, allow_incomplete: bool = False,
         allow_outside_root: bool = False) -> LabelMultisetDataset | ArrayDataset:
    """Open an N5 dataset: a :class:`LabelMultisetDataset` when ``isLabelMultiset`` is true,
    else an :class:`ArrayDataset`.

    ``path`` is a local path or a URL (``s3://``, ``gs://``, ``http(s)://``, ``file://``; the
    ``remote`` extra), with fsspec's ``storage_options`` for URLs. The attributes are
    validated here (:func:`~n5mscodecs.n5.dataset.validate_attributes`). A dataset that an
    interrupted writer left unfinished raises :class:`~n5mscodecs.IncompleteError` (saying
    how to finish it) unless ``allow_incomplete``. Reads stay inside the container root (the
    nearest of ``path`` and its parents named ``*.n5``, else ``path``): a symbolic link in
    the container that leads outside it is an error unless ``allow_outside_root``."""
    path = os.fspath(path)
    name = storage.display(path)
    if not storage.is_url(path) and os.path.isfile(storage.local_path(path)):
        raise ConfigurationError(f"{name}: a file, not an N5 dataset (a directory with an attributes.json)")
    attributes = storage.read_attributes(path, storage_options, confine=not allow_outside_root)
    if "dimensions" not in attributes:
        raise ConfigurationError(f"{name}: not an N5 dataset (no dimensions in attributes.json)")
    if not allow_incomplete:
        check_complete(attributes, name)
    kind = LabelMultisetDataset if attributes.get("isLabelMultiset") else ArrayDataset
    options = {"fill_label": fill_label} if kind is LabelMultisetDataset else {}
    return kind(path, attributes, storage_options=storage_options, allow_outside_root=allow_outside_root, **options)


def block_size(chunks: int | Iterable[int], ndim: int, name: str = "chunks") -> tuple[int, ...]:
    """``chunks`` (one int for every axis, or one per axis) as ``ndim`` block sizes >= 1;
    ``name`` names the argument in messages."""
    try:
        values = (int(chunks),) * ndim if isinstance(chunks, (int, np.integer)) else tuple(chunks)
        sizes = tuple(int(c) for c in values)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{name}: an int or {ndim} ints required, got {chunks!r}") from None
    if len(sizes) != ndim or any(c < 1 or c != v for c, v in zip(sizes, values)):
        raise ConfigurationError(f"{name}: {ndim} integers >= 1 required (or one for every axis), got {chunks!r}")
    return sizes


def _finish_hint(writer):
    return f"finish it by writing it again ({writer} with overwrite=True)"


def _prepare(path, document, marker, overwrite, options, container):
    """(path, container root or None): the dataset directory with the attributes ``document``
    written, marked incomplete when ``marker`` is given. The root is found (or ``container``
    checked) first; an existing dataset is replaced only with ``overwrite``, and its attributes
    are replaced by the marked new ones *before* its blocks are removed, so that an
    interruption leaves a dataset every reader refuses, never old attributes over new blocks."""
    path = os.fspath(path)
    root = storage.container_root(path, container)
    present = set(storage.list_names(path, options)) - {LOCK_NAME}  # the lock of a writer calling us
    if present:
        if not overwrite:
            raise FileExistsError(f"{storage.display(path)} exists (pass overwrite=True to replace it)")
        if "dimensions" not in read_attributes(path, storage_options=options):
            raise ConfigurationError(
                f"{storage.display(path)}: refusing to overwrite something that is not an N5 dataset")
        write_marked(path, document, marker or incomplete_marker("an overwrite", _finish_hint("the writer")),
                     options)
        storage.clear(path, {storage.ATTRIBUTES, LOCK_NAME}, options)
    else:
        storage.make_directory(path, options)
    write_marked(path, document, marker, options)
    return path, root


def _refuse_source_overlap(path, data):
    """An ``np.memmap`` (or a dataset) being written to a location that holds it would be
    removed under the writer by an overwrite."""
    source = getattr(data, "filename", None) or getattr(data, "path", None)
    if isinstance(source, (str, os.PathLike)):
        storage.refuse_overlap(path, source)


def max_id(labels: ArrayLike, rule: Rule = "spec") -> int:
    """The ``maxId`` attribute for uint64 ``labels``: the largest id below 2**63 (0 if none).

    Paintera reads ``maxId`` as a Java long and hands out fresh ids counting up from it,
    so it must be a non-negative long: ids in [2**63, MAX_ID] are negative longs there,
    and counting up from the largest id below 2**63 never reaches them. Java's conversion
    helper writes the signed maximum (``rule="java"``), which is the same value unless
    every id is 2**63 or above: then it is negative and Paintera's next id a reserved one.

    >>> max_id(np.array([0, 7, 2**63 + 5], np.uint64)), max_id(np.array([2**63 + 5, 2**64 - 2], np.uint64), "java")
    (7, -2)
    """
    labels = np.asarray(labels, np.uint64)
    if check_rule(rule):
        return int(labels.view(np.int64).max()) if labels.size else 0
    below = labels[labels < np.uint64(2**63)]
    return int(below.max()) if below.size else 0


def write_container_version(root: PathLike | None, options: StorageOptions = None) -> None:
    """Give the container root ``root`` the attribute ``{"n5": N5_VERSION}``, as Java's N5 writers
    do (other N5 readers, e.g. z5py, refuse a container without it), keeping its other attributes
    and any version already there. Nothing to do for ``root=None``."""
    if root is None:
        return
    attributes = storage.read_attributes(root, options)
    if "n5" not in attributes:
        storage.write_attributes(root, {"n5": N5_VERSION, **attributes}, options)


def _write_blocks(dataset, data, threads, **options):
    """Write every block of ``data`` in parallel; each block is written by one worker."""
    def write_one(grid_position):
        dataset.write_block(grid_position, data[dataset.block_region(grid_position)], **options)

    with ThreadPoolExecutor(max_workers=storage.request_threads(dataset.path, threads)) as pool:
        list(pool.map(write_one, np.ndindex(*dataset.grid_shape)))


def write(
    path: PathLike,
    data: MultisetsLike,
    chunks: int | Iterable[int],
    *,
    compression: CompressorConfig = "gzip",
    attributes: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    threads: int | None = None,
    write_background_blocks: bool = False,
    storage_options: StorageOptions = None,
    container: PathLike | None = None,
    reserved: ReservedRule = "reject",
) -> LabelMultisetDataset:
    """Write a label multiset dataset the way Java does.

    ``data`` (N5 axis order) is a LabelMultisetArray, integer labels or an
    object array of elements; integer labels follow ``reserved`` (see
    :meth:`~n5mscodecs.LabelMultisetArray.from_labels`: negative and reserved
    values are refused by default). ``chunks`` is the block size (one int
    for every axis, or one per axis). Boundary blocks are truncated to the
    grid; blocks without any positive count are not written, and neither are
    blocks whose voxels are all ``{0: 1}`` (they read back the same, as
    missing blocks; the conversion helper skips all-0 blocks too) unless
    ``write_background_blocks``. Attributes: dataType uint8, compression,
    blockSize, dimensions, isLabelMultiset, maxId (largest id below 2**63,
    see ``n5mscodecs.n5.dataset.max_id``), plus ``attributes``. ``path`` may be a URL
    (see :func:`open`); blocks are then written with many requests in flight.

    Everything is checked before anything is written. Until the last block
    is written the dataset is marked incomplete (readers refuse it; see
    :mod:`n5mscodecs.n5.writing`); ``overwrite=True`` marks the old dataset
    before removing its blocks.

    The container root gets ``{"n5": "4.0.0"}`` in its attributes (other
    attributes, and a version already there, are kept): ``container`` (the
    root's path or URL: ``path`` or one of its parents) or, by default, the
    nearest of ``path`` and its parents whose name ends with ``.n5``. With
    neither, no root attribute is written; pass ``container=`` then.
    """
    _refuse_source_overlap(path, data)
    data = LabelMultisetArray.coerce(data, reserved=reserved)
    chunks = block_size(chunks, data.ndim)
    document = {
        "dataType": "uint8",
        "compression": compression_attributes(compression),
        "blockSize": list(chunks),
        "dimensions": list(data.shape),
        "isLabelMultiset": True,
        "maxId": max_id(data.unique_labels()),
        **(attributes or {}),
    }
    marker = incomplete_marker("n5mscodecs.n5.write", _finish_hint("n5.write"))
    path, root = _prepare(path, document, marker, overwrite, storage_options, container)
    write_container_version(root, storage_options)
    dataset = LabelMultisetDataset(path, document, storage_options=storage_options)
    _write_blocks(dataset, data, threads, write_background=write_background_blocks)
    mark_complete(path, storage_options=storage_options)  # re-read: the root version may sit in the same file
    return dataset


def create_array_dataset(
    path: PathLike,
    shape: Iterable[int],
    chunks: int | Iterable[int],
    dtype: DTypeLike,
    *,
    compression: CompressorConfig = "gzip",
    attributes: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    storage_options: StorageOptions = None,
    container: PathLike | None = None,
    incomplete: str | None = None,
) -> ArrayDataset:
    """Create an empty plain numeric N5 dataset; fill it with ``write_block``. The container
    root gets the N5 version attribute as in :func:`write` (``container``: its path or URL).

    ``incomplete``: for a writer that fills the dataset block by block, its name; the
    dataset is then marked incomplete (readers refuse it) until
    :func:`~n5mscodecs.n5.writing.mark_complete` is called after the last block."""
    dtype = np.dtype(dtype)
    if dtype.name not in _DTYPES:
        raise ConfigurationError(f"dtype: {dtype} has no N5 dataType")
    shape = [int(n) for n in shape]
    document = {"dataType": dtype.name, "compression": compression_attributes(compression),
                "blockSize": list(block_size(chunks, len(shape))), "dimensions": shape, **(attributes or {})}
    marker = None if incomplete is None else incomplete_marker(incomplete, _finish_hint(incomplete))
    path, root = _prepare(path, document, marker, overwrite, storage_options, container)
    write_container_version(root, storage_options)
    return ArrayDataset(path, document, storage_options=storage_options)


def write_array(
    path: PathLike,
    data: ArrayLike,
    chunks: int | Iterable[int],
    *,
    compression: CompressorConfig = "gzip",
    attributes: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    threads: int | None = None,
    storage_options: StorageOptions = None,
    container: PathLike | None = None,
) -> ArrayDataset:
    """Write a plain numeric N5 dataset (default-mode, truncated boundary blocks); the
    container root gets the N5 version attribute as in :func:`write`, and the dataset is
    marked incomplete until its last block is written, as there."""
    _refuse_source_overlap(path, data)
    data = np.asarray(data)
    dataset = create_array_dataset(path, data.shape, chunks, data.dtype, compression=compression,
                                   attributes=attributes, overwrite=overwrite, storage_options=storage_options,
                                   container=container, incomplete="n5mscodecs.n5.write_array")
    _write_blocks(dataset, data, threads)
    mark_complete(dataset.path, storage_options=storage_options)
    return dataset
