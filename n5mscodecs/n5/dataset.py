"""N5 datasets: what label multiset datasets (``n5/label_dataset.py``) and plain ones
(``n5/array_dataset.py``) share: the grid and its blocks, their bytes,
resizing, iteration, zarr's advanced selections and dask arrays (see :mod:`n5mscodecs.n5`)."""

from __future__ import annotations

import dataclasses
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from .._extras import require
from ..errors import CompressionError, ConfigurationError, LabelMultisetFormatError, N5HeaderError
from . import grid, indexing, listing, storage
from .attributes import Attributes
from .block import ArrayBlockCodec, LabelMultisetBlockCodec
from .header import MODE_DEFAULT, N5BlockHeader
from .metadata import RESERVED_KEYS, DatasetMetadata, shape_argument
from .store import READ_ONLY_MODE, Store
from .stores import open_store, open_target
from .writing import INCOMPLETE_KEY, WriterLock, incomplete_marker, mark_complete, write_marked

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from typing import Any

    from .grid import Selection
    from .storage import PathLike, StorageOptions

# a corrupt block's error is re-raised naming the block file
_BLOCK_ERRORS = (LabelMultisetFormatError, N5HeaderError, CompressionError)
#: Blocks along one axis that :meth:`to_dask` accepts (dask keeps one chunk size per block).
MAX_DASK_BLOCKS_PER_AXIS = 1 << 20
#: Blocks one read (``dataset[...]``) may touch.
MAX_BLOCKS_PER_READ = 1 << 24
#: How :meth:`_Dataset.to_dask` resolves its ``assignment`` (``"auto"``: the dataset's stored Paintera
#: fragment-segment-assignment): :func:`n5mscodecs.paintera.assignment.resolve_assignment`, installed
#: by that module (``import n5mscodecs`` imports it). n5 sits below paintera and never imports it.
assignment_resolver: Callable[..., Any] | None = None


def resolved_assignment(store: Store | str, assignment: Any, additional_assignment: Any = None) -> Any:
    """The lookup a reader applies to the dataset at ``store`` (None: its ids as stored), by
    :data:`assignment_resolver` (for :meth:`_Dataset.to_dask` and the zarr labels views)."""
    if assignment_resolver is None:  # pragma: no cover - ``import n5mscodecs`` installs it
        raise ConfigurationError("assignment: import n5mscodecs.paintera to resolve it")
    return assignment_resolver(store, assignment, additional_assignment)


#: The views of a label multiset dataset (as :class:`~n5mscodecs.zarr.N5Store`'s ``multisets``).
VIEWS = ("elements", "labels")


def validate_attributes(attributes: Any, name: str) -> tuple[tuple[int, ...], tuple[int, ...], Any]:
    """``(shape, chunks, compressor)`` of a dataset's attributes, every field checked by
    :meth:`DatasetMetadata.from_json <n5mscodecs.n5.metadata.DatasetMetadata.from_json>`.

    Raises :class:`~n5mscodecs.ConfigurationError` naming the dataset and the field."""
    metadata = DatasetMetadata.from_json(attributes, name)
    return metadata.shape, metadata.chunks, metadata.compressor


def read_attributes(path: PathLike | Store, *, storage_options: StorageOptions = None) -> dict[str, Any]:
    """The parsed ``attributes.json`` of the group or dataset at ``path`` (a local path or a URL;
    {} when there is none)."""
    return open_store(path, storage_options).get_attributes()


def write_attributes(path: PathLike | Store, document: Mapping[str, Any], *,
                     storage_options: StorageOptions = None) -> None:
    """Write the ``attributes.json`` of the group or dataset at ``path`` (atomically)."""
    open_store(path, storage_options).set_attributes("", document)


class _Dataset:
    """Grid geometry, block locations, and what users know from numpy/zarr arrays, shared by
    both dataset kinds. ``attributes`` is the parsed ``attributes.json`` or its
    :class:`~n5mscodecs.n5.metadata.DatasetMetadata`; ``read_only`` refuses assignments and
    attribute changes (blocks written by the block methods are the writers' business).
    ``store`` is the dataset's store when a group hands it down (see
    :mod:`n5mscodecs.n5.store`); without it one is opened for ``path`` and
    ``storage_options``, confined to the container root."""

    def __init__(self, path: PathLike | Store, attributes: Mapping[str, Any] | DatasetMetadata, *,
                 storage_options: StorageOptions = None, allow_outside_root: bool = False,
                 read_only: bool = False, store: Store | None = None) -> None:
        if isinstance(path, Store):
            store = path
        self.path = path.url() if isinstance(path, Store) else os.fspath(path)
        self.name = storage.display(self.path)  # for messages
        if isinstance(attributes, DatasetMetadata):
            self.metadata = attributes
            self.attributes = attributes.to_json()
        else:
            self.metadata = DatasetMetadata.from_json(attributes, self.name)
            self.attributes = dict(attributes)
        self.shape, self.chunks, self.compressor = self.metadata.shape, self.metadata.chunks, self.metadata.compressor
        self.allow_outside_root = bool(allow_outside_root)
        # block reads stay inside the container root (the dataset itself outside any *.n5)
        store = store or open_target(self.path, storage_options, read_outside=self.allow_outside_root)
        self.store = store.read_only_view(READ_ONLY_MODE) if read_only else store
        self.storage_options = self.store.storage_options  # the store's (fsspec's for a URL); never printed
        self.read_only = self.store.read_only

    @property
    def dtype(self) -> np.dtype:
        raise NotImplementedError

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Voxels in the dataset."""
        return grid.voxels(self.shape)

    def __len__(self) -> int:
        """The length of the first axis, as numpy's ``len``."""
        return self.shape[0]

    @property
    def attrs(self) -> Attributes:
        """The user attributes (a MutableMapping over ``attributes.json``; N5's fields are hidden)."""
        return Attributes(self.store, reserved=RESERVED_KEYS | {INCOMPLETE_KEY},
                          read_only=self.read_only)

    def _view_name(self) -> str:
        return ""

    def __repr__(self) -> str:
        view = self._view_name()
        return (f"<{type(self).__name__} {self.name!r} shape={self.shape} dtype={self.dtype} chunks={self.chunks} "
                f"compression={self.metadata.compression_name}{f' view={view}' if view else ''}>")

    def _check_writable(self) -> None:
        self.store.check_writable("", "write")

    @functools.cached_property
    def grid_shape(self) -> tuple[int, ...]:
        return grid.grid_shape(self.shape, self.chunks)

    def block_key(self, grid_position: Sequence[int]) -> str:
        """The block's key in the dataset's store (``"i/j/k"``); a position off the grid
        (negative, past its end, of another ndim) is a :class:`~n5mscodecs.ConfigurationError`."""
        position = tuple(grid_position)
        grid_shape = self.grid_shape
        if len(position) != len(grid_shape) or not all(
                isinstance(g, int | np.integer) and 0 <= g < n for g, n in zip(position, grid_shape)):
            raise ConfigurationError(f"{self.name}: block {position} is outside the grid {list(grid_shape)}")
        return "/".join(str(int(g)) for g in position)

    def block_path(self, grid_position: Sequence[int]) -> str:
        """The block's location (see :meth:`block_key`)."""
        return self.store.url(self.block_key(grid_position))

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
        return self.store.exists(self.block_key(grid_position))

    def present_blocks(self, prefix: Sequence[int] = ()) -> list[tuple[int, ...]]:
        """Grid positions of the blocks that exist, sorted: found by listing (a grid can be
        astronomically large), or by looking up each block where the store cannot list (see
        :mod:`n5mscodecs.n5.listing`); ``prefix``: only those whose first positions are these."""
        return listing.present_blocks(self.store, self.grid_shape, prefix)

    def chunk_exists(self, grid_position: int | Sequence[int]) -> bool:
        """Whether the block at ``grid_position`` (one int per axis; an int for a 1-d dataset) is
        stored, as z5py's ``chunk_exists``; a position off the grid is a
        :class:`~n5mscodecs.ConfigurationError`."""
        position = (grid_position,) if isinstance(grid_position, int | np.integer) else tuple(grid_position)
        return self.has_block(position)

    def iter_chunks(self, selection: Selection = ()) -> Iterator[tuple[slice, ...]]:
        """The regions (one slice per axis) of the *stored* blocks, sorted by grid position, each
        cut to ``selection`` (a basic selection without steps; default everything), as h5py's
        ``iter_chunks`` gives them. Unlike h5py, blocks never written (which read as the fill
        value) are skipped: N5 grids are often sparse and astronomically large, and the stored
        blocks are found by one listing (``present_blocks()``)."""
        starts, stops, steps, _ = grid.normalize_selection(selection, self.shape)
        if any(step != 1 for step in steps):
            raise IndexError(f"{self.name}: iter_chunks: a selection with steps is not supported")
        grid_shape = self.grid_shape
        for position in self.present_blocks():
            if len(position) != self.ndim or any(g >= n for g, n in zip(position, grid_shape)):
                continue  # not a block of this grid
            cut = tuple(slice(max(region.start, start), min(region.stop, stop))
                        for region, start, stop in zip(self.block_region(position), starts, stops))
            if all(piece.start < piece.stop for piece in cut):
                yield cut

    @property
    def nbytes(self) -> int:
        """Bytes of the whole dataset uncompressed, as zarr's ``nbytes``: ``size`` times the
        item size (for label multisets, that of their uint64 labels)."""
        return self.size * self.dtype.itemsize

    @property
    def compression(self) -> dict[str, Any]:
        """The ``compression`` attribute, as in ``attributes.json`` (``{"type": "raw"}`` when none)."""
        return dict(self.metadata.compression)

    def _open_options(self) -> dict[str, Any]:
        """The keywords :func:`~n5mscodecs.n5.open` opened this dataset with (for its :attr:`parent`)."""
        return {"allow_outside_root": self.allow_outside_root}

    @property
    def parent(self) -> Any:
        """The :class:`~n5mscodecs.n5.Group` holding the dataset, as h5py's ``parent``, opened
        with this dataset's mode and options; a dataset at the top of what its store may reach
        (not inside an ``*.n5`` container) has none: a :class:`~n5mscodecs.StorageError`."""
        return self.group_class(self.store.parent(), read_only=self.read_only, dataset_options=self._open_options())

    #: The class of the groups above datasets: :class:`~n5mscodecs.n5.Group`, set where it is
    #: defined (groups build on datasets, so this module does not import them).
    group_class: Any = None
    #: encodes and decodes the dataset's blocks (:mod:`n5mscodecs.n5.block`)
    block_codec: LabelMultisetBlockCodec | ArrayBlockCodec

    #: the header mode of the dataset's blocks
    _block_mode = MODE_DEFAULT

    def _reopened(self, metadata: DatasetMetadata) -> _Dataset:
        """A writable dataset of this kind over the same store with ``metadata`` (label multisets: elements)."""
        raise NotImplementedError

    def _fit(self, block: Any, shape: tuple[int, ...]) -> Any:
        """``block`` (decoded) cut or padded (with what a missing block holds) to ``shape``."""
        raise NotImplementedError

    def _refit_block(self: Any, before: Any, grid_position: tuple[int, ...]) -> None:
        """Rewrite a stored block at this geometry's cropped shape; ``before`` is the geometry it
        may have been written for. Its header says which: a block already at its new shape (a
        resize interrupted after it) is left, as are blocks of another mode (a plain dataset's
        varlength side data)."""
        data = self.read_block_bytes(grid_position)
        if data is None:
            return
        header = N5BlockHeader.from_bytes(data)
        shape = self.block_shape(grid_position)
        if header.shape == shape or header.mode != self._block_mode:
            return
        # a block at least as large decodes at the new shape (cropped); a smaller one at the old
        source = self if all(h >= n for h, n in zip(header.shape, shape)) else before
        block = source.decode_named(source.decode_block, data, grid_position)
        self.write_block(grid_position, self._fit(block, shape))

    def resize(self, shape: int | Iterable[int]) -> None:
        """Change the shape (``dimensions``; the number of axes stays) in place, as zarr 3's
        ``Array.resize``: blocks entirely outside the new shape are removed. Blocks whose
        cropped shape changes (the last along a resized axis) are rewritten at their new
        shape, as Java writes boundary blocks (zarr keeps them as they are): voxels cut off
        are gone, and voxels added read as what a missing block holds, also after growing
        again. Refused in mode ``r`` (:class:`~n5mscodecs.ReadOnlyError`).

        As every writer (see :mod:`n5mscodecs.n5.writing`), it holds the dataset's writer lock
        and marks the dataset incomplete, with the new ``dimensions``, before anything changes,
        removing the mark last: after an interruption, readers refuse the dataset until it is
        opened with ``allow_incomplete=True`` and resized again (the mark remembers the shape
        it had)."""
        self._check_writable()
        shape = shape_argument(shape, "shape", self.ndim)
        with WriterLock(self.store):
            stored = self.store.get_attributes()
            previous = stored.pop(INCOMPLETE_KEY, None)
            old = DatasetMetadata.from_json(stored, self.name)
            if isinstance(previous, dict) and "resize_from" in previous:  # an interrupted resize
                old = dataclasses.replace(old, shape=shape_argument(previous["resize_from"], "resize_from",
                                                                    self.ndim))
            new = DatasetMetadata.from_json({**stored, "dimensions": list(shape)}, self.name)
            marker: dict[str, Any] = incomplete_marker("resize", "open it with allow_incomplete=True and resize "
                                                                 "it again")
            marker["resize_from"] = list(old.shape)  # the geometry blocks may still have
            write_marked(self.store, new.to_json(), marker)
            before, after = self._reopened(old), self._reopened(new)
            for position in self.present_blocks():
                if any(g >= n for g, n in zip(position, after.grid_shape)):
                    self.store.delete("/".join(map(str, position)))
                elif all(g < n for g, n in zip(position, before.grid_shape)):
                    after._refit_block(before, position)
            mark_complete(self.store)
        self.metadata, self.attributes, self.shape = new, new.to_json(), new.shape
        self.__dict__.pop("grid_shape", None)  # a cached property of the old shape

    def max_block_bytes(self) -> int:
        """The most bytes a block file of this dataset can need (its decompressed bound, its
        compressed expansion and the header)."""
        return self.block_codec.max_block_bytes()

    def read_block_bytes(self, grid_position: Sequence[int]) -> bytes | None:
        """The block's bytes (None when it is missing); a file larger than
        ``max_block_bytes()``, or not a regular file, is a :class:`~n5mscodecs.StorageError`."""
        return self.store.get(self.block_key(grid_position), max_size=self.max_block_bytes())

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
        self.store.set(self.block_key(grid_position), data)

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

    def _assignment(self, key, values):
        """``(covering blocks, values)`` of ``dataset[key] = values``: ``values`` (an ndarray)
        broadcast to the selection and given back its dropped axes, so that it has the
        bounding box's shape. Selections with steps are refused (an IndexError)."""
        self._check_writable()
        starts, stops, steps, drop, covering = self._covering(key)
        if any(step != 1 for step in steps):
            raise IndexError(f"{self.name}: assignment to a selection with steps is not supported")
        box = tuple(max(b - a, 0) for a, b in zip(starts, stops))
        selected = tuple(n for axis, n in enumerate(box) if axis not in drop)
        return covering, np.broadcast_to(values, selected).reshape(box)

    def _each_block(self, function, items, threads):
        """``[function(item) for item in items]``, on a pool of threads when there are several."""
        workers = min(self.store.request_threads(threads), len(items))
        if workers <= 1:  # one block (a dask task): no pool to start
            return [function(item) for item in items]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(function, items))

    # zarr's advanced selections (numpy's semantics), read block by block: see n5.indexing
    @property
    def oindex(self) -> indexing.Indexer:
        """The orthogonal selections, ``ds.oindex[[4, 0], :, mask]`` (each axis on its own)."""
        return indexing.Indexer(self, indexing.orthogonal)

    @property
    def vindex(self) -> indexing.Indexer:
        """The coordinate selections, ``ds.vindex[xs, ys, zs]`` (arrays broadcast together)."""
        return indexing.Indexer(self, indexing.coordinate)

    def get_orthogonal_selection(self, selection: Any) -> Any:
        return indexing.orthogonal(self, selection)

    def get_coordinate_selection(self, selection: Any) -> Any:
        return indexing.coordinate(self, selection)

    def get_mask_selection(self, mask: Any) -> Any:
        return indexing.mask(self, mask)

    def _read_region(self, key, read_block, threads):
        """``(pieces, bounding box, final view)``: ``pieces`` are ``(target, source, block)``
        of every block covering ``key``, read in parallel (block None when missing)."""
        starts, stops, steps, drop, covering = self._covering(key)
        blocks = self._each_block(read_block, [position for position, _, _ in covering], threads)
        pieces = [(target, source, block) for (_, target, source), block in zip(covering, blocks)]
        box = tuple(max(b - a, 0) for a, b in zip(starts, stops))
        return pieces, box, grid.final_view(steps, drop)


    def read(self, key: Selection = (), threads: int | None = None) -> Any:
        """Read a basic selection (each kind of dataset reads its own way)."""
        raise NotImplementedError

    def _dask_source(self):
        raise NotImplementedError

    def to_dask(self, assignment: Any = "auto", additional_assignment: Any = None):
        """The dataset as a lazy ``dask.array.Array`` (N5 axis order, one task per block):
        uint64 argmax labels for a label multiset dataset, the data type of a plain one.
        Tasks hold only the dataset's location and attributes, so they pickle to
        ``dask.distributed`` workers (processes). Needs the ``dask`` extra.

        ``assignment``: for label multisets and integer datasets, the Paintera
        fragment-segment-assignment applied to the labels (uint64 segments): ``"auto"``
        (default) the one stored for this dataset (see :mod:`n5mscodecs.paintera.assignment`;
        none found: the stored ids), None the stored ids, or the lookup to apply;
        ``additional_assignment``: ``{fragment: segment}`` pairs set over it."""
        da = require("dask.array", "dask", "lazy arrays (to_dask)")
        from dask.base import tokenize

        if max(self.grid_shape) > MAX_DASK_BLOCKS_PER_AXIS:
            raise ConfigurationError(f"{self.name}: to_dask: grid {list(self.grid_shape)} has more than "
                                     f"{MAX_DASK_BLOCKS_PER_AXIS} blocks along an axis")

        source = self._dask_source()
        name = f"n5-{type(self).__name__}-" + tokenize(self.path, self.attributes, source.dtype.str,
                                                       getattr(self, "fill_label", None))
        array = da.from_array(source, chunks=self.chunks, name=name, lock=False, asarray=False, fancy=False,
                              meta=np.empty((0,) * self.ndim, source.dtype))
        if source.dtype.kind not in "iu" or (assignment is None and not additional_assignment):
            return array
        lookup = resolved_assignment(self.store, assignment, additional_assignment)
        return array if lookup is None else array.map_blocks(lookup.apply, dtype=np.uint64)


class _BlockReader:
    """What ``dask.array.from_array`` slices: a dataset's ``read(key, threads=1)``, with shape and dtype."""

    def __init__(self, read, shape, dtype):
        self.read, self.shape, self.dtype = read, shape, np.dtype(dtype)
        self.ndim = len(shape)

    def __getitem__(self, key):
        return self.read(key, threads=1)
