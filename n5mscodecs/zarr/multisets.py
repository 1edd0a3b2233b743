"""Read and write a zarr ``label_multiset`` array's chunks without element objects.

zarr-python hands an object data type's chunks over as numpy object arrays: writing
integer labels first makes one Python object per voxel, reading makes one element per
list and an object array per chunk. These functions move the columnar form instead:
:func:`~n5mscodecs.zarr.write_label_multisets` encodes each chunk straight from integer labels or a
:class:`~n5mscodecs.LabelMultisetArray` with the array's own codecs (the same encode
functions zarr's path calls, so the chunk bytes are the same) and stores them under the
array's chunk keys; :func:`~n5mscodecs.zarr.read_multisets` and
:func:`~n5mscodecs.zarr.read_labels` decode a region to a LabelMultisetArray or to uint64
argmax labels.

They cover zarr v3 arrays whose codecs are a label multiset serializer
(``label_multiset``, ``n5_label_multiset``, ``n5_varlen``) followed by bytes-to-bytes
codecs, and v2-format arrays with the ``label_multiset_vlen`` object codec. Other
arrays (sharded ones, array-to-array codecs) go through zarr's own indexing: the same
results, at zarr's cost.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from zarr.abc.codec import BytesBytesCodec

from ..errors import ArgumentError, ConfigurationError, LabelMultisetFormatError
from ..multiset import LabelMultiset, LabelMultisetArray, assemble
from ..multiset.array import _entry_positions, check_rule, first_encounter
from ..n5 import grid
from ..payload import LabelMultisetVLen
from ..payload.layout import ZARR_LAYOUT, decode_payload, multiset_input
from ._compat import ArraySpec, array_config, default_buffer_prototype, sync
from .codecs import _MultisetCodec, full_chunk
from .dtype import LabelMultisetDType, fill_value_id

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    import zarr
    from zarr.abc.buffer import Buffer

    from ..multiset.array import MultisetsLike, Rule

__all__ = ["read_labels", "read_multisets", "write_label_multisets"]

#: A region as zarr's basic indexing takes it: slices (step 1), ints and one Ellipsis.
Region = Any


@dataclass(frozen=True)
class _Box:
    """One chunk's part of a region: its grid position, its slices inside the chunk and
    inside the region, and whether the region covers all of the chunk inside the array."""

    coords: tuple[int, ...]
    in_chunk: tuple[slice, ...]
    in_region: tuple[slice, ...]
    complete: bool


def _region(shape: tuple[int, ...], region: Region) -> tuple[tuple[slice, ...], tuple[int, ...]]:
    """``(slices, dropped axes)`` of a basic selection (``grid.normalize_selection``): every
    slice with bounds inside ``shape`` and step 1; an int selects one index and drops its
    axis (as numpy does)."""
    try:
        starts, stops, steps, dropped = grid.normalize_selection(() if region is None else region, shape)
    except IndexError as error:
        raise ArgumentError("region", str(error)) from None
    for axis, step in enumerate(steps):
        if step != 1:
            raise ArgumentError("region", f"slices of step 1 only, got step {step} on axis {axis}")
    return tuple(slice(start, stop) for start, stop in zip(starts, stops)), tuple(dropped)


def _boxes(region: tuple[slice, ...], shape: tuple[int, ...], chunks: tuple[int, ...]) -> list[_Box]:
    """The chunks ``region`` touches, each with its part of the region (``grid.covering_blocks``)."""
    covering = grid.covering_blocks([s.start for s in region], [s.stop for s in region], chunks, shape)
    return [_Box(position, in_chunk, in_region,
                 all(c.start == 0 and c.stop == n for c, n in zip(in_chunk, grid.block_shape(position, chunks, shape))))
            for position, in_region, in_chunk in covering]


class _ChunkFormat:
    """How one ``label_multiset`` array's chunks become bytes and back, and where they live."""

    def __init__(self, array: zarr.Array) -> None:
        metadata = array.metadata
        self.store_path = array.store_path
        self.shape = tuple(array.shape)
        self.chunks = tuple(array.chunks)
        dtype = metadata.dtype if metadata.zarr_format == 2 else metadata.data_type
        fill = dtype.default_scalar() if metadata.fill_value is None else metadata.fill_value
        self.fill = cast("LabelMultiset", fill)
        self.fill_id = fill_value_id(self.fill)
        config = array_config(array)
        self.write_empty_chunks = config.write_empty_chunks
        self.spec = ArraySpec(shape=self.chunks, dtype=dtype, fill_value=self.fill, config=config,
                              prototype=default_buffer_prototype())
        self.encode_key: Callable[[tuple[int, ...]], str] = metadata.encode_chunk_key
        self.v2 = metadata.zarr_format == 2
        self.bytes_codecs: tuple[BytesBytesCodec, ...] = ()  # v3: after the serializer
        if metadata.zarr_format == 2:
            self.order = metadata.order
            self.compressor = metadata.compressor
        else:
            self.serializer = cast("_MultisetCodec", metadata.codecs[0])
            self.bytes_codecs = cast("tuple[BytesBytesCodec, ...]", tuple(metadata.codecs[1:]))

    @staticmethod
    def of(array: zarr.Array) -> _ChunkFormat | None:
        """The format of ``array``'s chunks; None where zarr's own indexing must do the work
        (sharding, array-to-array codecs, other v2 filters)."""
        metadata = array.metadata
        dtype = metadata.dtype if metadata.zarr_format == 2 else metadata.data_type
        if not isinstance(dtype, LabelMultisetDType):
            raise ConfigurationError(f"array: needs the label_multiset data type, {array.path or 'the array'} has "
                                     f"{dtype}")
        if metadata.zarr_format == 2:
            filters = metadata.filters or ()
            fast = len(filters) == 1 and isinstance(filters[0], LabelMultisetVLen)
        else:
            codecs = metadata.codecs
            fast = isinstance(codecs[0], _MultisetCodec) and all(isinstance(c, BytesBytesCodec) for c in codecs[1:])
        return _ChunkFormat(array) if fast else None

    def _path(self, coords):
        return self.store_path / self.encode_key(coords)

    async def read(self, coords: tuple[int, ...], labels: bool, then: Callable[[Any], Any] = lambda chunk: chunk,
                   ) -> Any:
        """``then(chunk)`` of the chunk at ``coords`` (C order over the full chunk shape, truncated
        N5 blocks padded with the fill value: labels or multisets; None when it is not stored),
        decoded in zarr's thread pool."""
        stored = await self._path(coords).get(prototype=default_buffer_prototype())
        if stored is None:
            return then(None)
        for codec in reversed(self.bytes_codecs):
            (stored,) = cast("list[Buffer]", await codec.decode([(stored, self.spec)]))
        return await asyncio.to_thread(lambda: then(self._decoded(stored.as_numpy_array(), labels)))

    def _decoded(self, data, labels):
        if self.v2:
            if self.compressor is not None:
                data = np.frombuffer(memoryview(self.compressor.decode(data)).cast("B"), np.uint8)
            n_voxels = int(np.prod(self.chunks))
            # label_multiset_vlen: the voxel count (uint32 LE), then the zarr-native payload
            if data.size < 4 or struct.unpack("<I", data[:4].tobytes())[0] != n_voxels:
                raise LabelMultisetFormatError(f"label_multiset_vlen: the chunk does not hold {n_voxels} voxels")
            decoded = decode_payload(data[4:], (n_voxels,), ZARR_LAYOUT, labels=labels, threads=1)
            decoded = decoded.reshape(self.chunks, order=self.order)
        else:
            decoded = self.serializer.decode_chunk(data, self.chunks, labels)
        if isinstance(decoded, LabelMultisetArray):
            return decoded.padded(self.chunks, self.fill)
        return full_chunk(decoded, self.chunks, self.fill_id)

    async def write(self, coords: tuple[int, ...], make_chunk: Callable[[], LabelMultisetArray | np.ndarray]) -> None:
        """Store the full chunk (labels or multisets) ``make_chunk()`` makes in zarr's thread pool;
        one equal to the fill value everywhere is removed instead, unless the array writes empty
        chunks (as zarr does)."""
        path = self._path(coords)
        encoded = await asyncio.to_thread(lambda: self._encoded(make_chunk()))
        if encoded is None:
            await path.delete()
            return
        buffer = default_buffer_prototype().buffer.from_bytes(encoded)
        for codec in self.bytes_codecs:
            (buffer,) = cast("list[Buffer]", await codec.encode([(buffer, self.spec)]))
        await path.set(buffer)

    def _encoded(self, chunk):
        if not self.write_empty_chunks and self._all_fill(chunk):
            return None
        if not self.v2:
            return self.serializer.encode_chunk(chunk)
        # the object codec encodes a LabelMultisetArray in C order, labels in their memory order
        if isinstance(chunk, LabelMultisetArray):
            encoded = LabelMultisetVLen().encode(chunk if self.order == "C" else chunk.T)
        else:
            encoded = LabelMultisetVLen().encode(np.asarray(chunk, order=self.order))
        return encoded if self.compressor is None else bytes(memoryview(self.compressor.encode(encoded)).cast("B"))

    def _all_fill(self, chunk):
        """Whether every voxel is the fill value (as zarr compares elements: the merged mapping)."""
        if not isinstance(chunk, LabelMultisetArray):
            return bool(np.all(chunk == self.fill_id))
        used = np.zeros(chunk.n_lists, bool)
        used[chunk.index.reshape(-1)] = True
        lengths = chunk.list_lengths()
        if np.any(lengths[used] == 0):
            return False
        entry_list = np.repeat(np.arange(chunk.n_lists), lengths)
        entries = used[entry_list]
        if np.any(chunk.ids[entries] != self.fill_id):
            return False
        totals = np.bincount(entry_list[entries], chunk.counts[entries].astype(np.float64), chunk.n_lists)
        return bool(np.all(totals[used] == 1))


def _own_lists(part: LabelMultisetArray) -> LabelMultisetArray:
    """``part`` with only the lists its voxels use, when its table is larger than itself (a
    chunk of a large array shares the whole table: encoding compares every list of it)."""
    if part.n_lists <= part.size:
        return part
    index, kept = first_encounter(np.ascontiguousarray(part.index.reshape(-1)).astype(np.uint64))
    kept = kept.astype(np.int64)
    offsets = np.zeros(kept.size + 1, np.int64)
    np.cumsum(part.list_lengths()[kept], out=offsets[1:])
    take = _entry_positions(part.list_offsets, kept, offsets)
    return LabelMultisetArray(index.reshape(part.shape), offsets, part.ids[take], part.counts[take], validate=False)


def _run(tasks: Iterable[Any], work: Callable[[Any], Awaitable[Any]], concurrency: int | None) -> list[Any]:
    """``await work(task)`` of every task, up to ``concurrency`` at a time (default: zarr's
    ``async.concurrency``), on zarr's event loop."""
    import zarr

    limit = zarr.config.get("async.concurrency") if concurrency is None else concurrency
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ArgumentError("concurrency", f"an int >= 1 or None, got {limit!r}")

    async def run_all():
        gate = asyncio.Semaphore(limit)

        async def one(task):
            async with gate:
                return await work(task)

        return await asyncio.gather(*(one(task) for task in tasks))

    return sync(run_all())


def write_label_multisets(array: zarr.Array, data: MultisetsLike, region: Region = None, *,
                          concurrency: int | None = None) -> None:
    """``array[region] = data`` for a ``label_multiset`` array, without element objects.

    Each chunk the region touches is encoded straight from ``data`` (integer labels, a
    :class:`~n5mscodecs.LabelMultisetArray`, or an object array of elements) with the
    array's own codecs and stored under its chunk key: the same chunk bytes as
    ``array[region] = data``, which first makes one Python object per voxel. Chunks the
    region covers only in part are merged with what is stored (or the fill value); a chunk
    equal to the fill value everywhere is removed, unless the array writes empty chunks.
    Sharded arrays and arrays with array-to-array codecs are written through zarr.

    Parameters
    ----------
    array
        A zarr array: a zarr v3 ``label_multiset`` array or a v2-format one (``label_multiset_vlen``).
    data : :class:`~n5mscodecs.LabelMultisetArray` or ndarray
        Integer labels (each voxel the singleton ``{label: 1}``; negative labels and labels
        above MAX_ID are refused) or multisets, of the region's shape or broadcast to it
        (as numpy does: ``write_label_multisets(a, 0, region)``).
    region : tuple, optional
        Basic selection (slices of step 1, ints, Ellipsis); default: the whole array.
    concurrency : int, optional
        Chunks in flight at a time (default: zarr's ``async.concurrency``). As in zarr's own
        indexing, chunks are read and written on zarr's event loop and encoded and decoded in
        its thread pool (:func:`~n5mscodecs.zarr.zarr_threads` sizes it).

    Examples
    --------
    >>> import numpy as np, zarr
    >>> from n5mscodecs.zarr import LabelMultisetDType, read_multisets
    >>> a = zarr.create_array({}, shape=(4, 6), chunks=(2, 4), dtype=LabelMultisetDType())
    >>> write_label_multisets(a, np.arange(24).reshape(4, 6))
    >>> write_label_multisets(a, 7, (3, slice(4, 6)))         # an int fills the region
    >>> read_multisets(a, (slice(2, 4), slice(3, 6))).argmax().tolist()
    [[15, 16, 17], [21, 7, 7]]
    """
    chunk_format = _ChunkFormat.of(array)
    slices, dropped = _region(tuple(array.shape), region)
    if isinstance(data, (LabelMultiset, dict)):  # one element for the whole region
        data = np.array([data], dtype=object).reshape(())
    values = multiset_input(np.asarray(data) if np.isscalar(data) else data)
    if isinstance(values, np.ndarray) and values.dtype == object:
        values = LabelMultisetArray.coerce(values)
    region_shape = tuple(s.stop - s.start for s in slices)
    expected = tuple(n for axis, n in enumerate(region_shape) if axis not in dropped)
    try:  # numpy's broadcasting, as zarr's assignment does
        index = np.broadcast_to(values.index if isinstance(values, LabelMultisetArray) else values, expected)
    except ValueError:
        raise ArgumentError("data", f"shape {values.shape} does not fit the region's {expected}") from None
    index = index.reshape(region_shape)
    if isinstance(values, LabelMultisetArray):
        values = LabelMultisetArray(index, values.list_offsets, values.ids, values.counts, validate=False)
    else:
        values = index
    if chunk_format is None:
        array[slices] = values.to_elements() if isinstance(values, LabelMultisetArray) else values
        return
    chunks = chunk_format.chunks

    def chunk(box: _Box, stored: LabelMultisetArray | None) -> LabelMultisetArray | np.ndarray:
        """The full chunk at ``box``: the region's part, over what is stored (or the fill value)."""
        part = values[box.in_region]
        if isinstance(part, LabelMultisetArray):
            part = _own_lists(part)
        if box.complete and part.shape == chunks:
            return part
        part = part if isinstance(part, LabelMultisetArray) else LabelMultisetArray.from_labels(part)
        return assemble(chunks, [(tuple(slice(0, c) for c in chunks), stored), (box.in_chunk, part)],
                        fill=chunk_format.fill_id)

    async def write(box: _Box) -> None:
        stored = None if box.complete else await chunk_format.read(box.coords, labels=False)
        await chunk_format.write(box.coords, lambda: chunk(box, stored))

    _run(_boxes(slices, chunk_format.shape, chunks), write, concurrency)


def _read(array, region, labels, concurrency, rule="spec"):
    """The region as multisets or labels; ``(result, dropped axes)``."""
    chunk_format = _ChunkFormat.of(array)
    slices, dropped = _region(tuple(array.shape), region)
    shape = tuple(s.stop - s.start for s in slices)
    if chunk_format is None:
        multisets = LabelMultisetArray.from_elements(np.asarray(array[slices], dtype=object).reshape(shape))
        return (multisets.argmax(rule) if labels else multisets), dropped
    boxes = _boxes(slices, chunk_format.shape, chunk_format.chunks)
    if not labels:
        parts: list[LabelMultisetArray | None] = _run(boxes, lambda box: chunk_format.read(box.coords, labels=False),
                                                      concurrency)
        pieces = [(box.in_region, None if part is None else part[box.in_chunk]) for box, part in zip(boxes, parts)]
        return assemble(shape, pieces, fill=chunk_format.fill_id), dropped
    out = np.empty(shape, np.uint64)

    def place(box: _Box, chunk: LabelMultisetArray | np.ndarray | None) -> None:
        if chunk is None:
            out[box.in_region] = chunk_format.fill_id
        elif isinstance(chunk, LabelMultisetArray):  # rule "java": from the lists
            out[box.in_region] = chunk[box.in_chunk].argmax(rule, 1)
        else:
            out[box.in_region] = chunk[box.in_chunk]

    def read(box: _Box) -> Awaitable[None]:
        return chunk_format.read(box.coords, labels=rule == "spec", then=lambda chunk: place(box, chunk))

    _run(boxes, read, concurrency)
    return out, dropped


def read_multisets(array: zarr.Array, region: Region = None, *, concurrency: int | None = None,
                   ) -> LabelMultisetArray:
    """``array[region]`` of a ``label_multiset`` array as a :class:`~n5mscodecs.LabelMultisetArray`,
    decoded chunk by chunk without element objects (missing chunks: the fill value).

    ``region`` is a basic selection as for :func:`write_label_multisets` (ints drop their
    axis); ``concurrency`` as there. Lists are kept as
    stored, one table per chunk (:meth:`~n5mscodecs.LabelMultisetArray.compact` merges equal
    ones).

    >>> import numpy as np, zarr
    >>> from n5mscodecs.zarr import LabelMultisetDType
    >>> a = zarr.create_array({}, shape=(4, 4), chunks=(2, 2), dtype=LabelMultisetDType())
    >>> a[0:1, 0:2] = np.array([[{3: 2, 5: 1}, {4: 1}]], dtype=object)
    >>> m = read_multisets(a, (0, slice(0, 3)))
    >>> m[0], m[2]
    (LabelMultiset({3: 2, 5: 1}), LabelMultiset({18446744073709551614: 1}))
    """
    multisets, dropped = _read(array, region, False, concurrency)
    return multisets.reshape(tuple(n for axis, n in enumerate(multisets.shape) if axis not in dropped))


def read_labels(array: zarr.Array, region: Region = None, *, concurrency: int | None = None,
                rule: Rule = "spec") -> np.ndarray:
    """``array[region]`` of a ``label_multiset`` array as uint64 argmax labels, decoded straight
    from each chunk's bytes (no lists, no element objects; missing chunks: the fill value's id).

    ``rule`` as for :meth:`~n5mscodecs.LabelMultisetArray.argmax` ("spec": highest count, ties to
    the smaller id; "java": Paintera's). ``region`` and ``concurrency`` as for :func:`write_label_multisets`.

    >>> import numpy as np, zarr
    >>> from n5mscodecs.zarr import LabelMultisetDType
    >>> a = zarr.create_array({}, shape=(4, 4), chunks=(2, 2), dtype=LabelMultisetDType(), fill_value="0x0")
    >>> a[1:2, 0:2] = np.array([[{3: 2, 5: 1}, {4: 1, 6: 1}]], dtype=object)
    >>> read_labels(a, (slice(0, 2), slice(0, 3))).tolist()
    [[0, 0, 0], [3, 4, 0]]
    """
    check_rule(rule)
    labels, dropped = _read(array, region, True, concurrency, rule)
    return labels.reshape(tuple(n for axis, n in enumerate(labels.shape) if axis not in dropped))
