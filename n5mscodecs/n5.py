"""N5 datasets on a local file system: label multiset datasets and plain numeric ones.

Axis order is N5's (``dimensions``/``blockSize`` as in ``attributes.json``);
block ``(i, j, k)`` lives at ``path/i/j/k``.

>>> import tempfile, numpy as np
>>> path = tempfile.mkdtemp() + "/labels"
>>> labels = np.arange(24, dtype=np.uint64).reshape(4, 3, 2) // 5
>>> ds = write(path, labels, chunks=(2, 2, 2), compression="gzip")
>>> ds.shape, ds.chunks, ds.max_id
((4, 3, 2), (2, 2, 2), 4)
>>> bool((open(path)[1:3].argmax() == labels[1:3]).all())
True
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .errors import ConfigurationError, LabelMultisetFormatError, N5HeaderError
from .multiset_array import INVALID, MAX_ID, LabelMultisetArray, default_threads
from .n5_compression import compressor_from_config
from .n5_header import MODE_DEFAULT, MODE_VARLENGTH, N5BlockHeader
from .n5_varlen import CodecChain, n5_varlen_decode, n5_varlen_encode

N5_VERSION = "4.0.0"
_DTYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
           "float32", "float64")


def read_attributes(path):
    """The parsed ``attributes.json`` of ``path`` ({} when there is none)."""
    try:
        with builtins.open(os.path.join(path, "attributes.json"), "rb") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def _write_json_atomic(target, document):
    _write_atomic(target, json.dumps(document, indent=2).encode())


def _write_atomic(target, data):
    directory = os.path.dirname(target)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


class _Dataset:
    """Grid geometry and block paths shared by both dataset kinds."""

    def __init__(self, path, attributes):
        self.path = os.fspath(path)
        self.attributes = attributes
        try:
            self.shape = tuple(int(d) for d in attributes["dimensions"])
            self.chunks = tuple(int(b) for b in attributes["blockSize"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"{self.path}: attributes.json lacks dimensions/blockSize") from exc
        if len(self.shape) != len(self.chunks) or any(b <= 0 for b in self.chunks):
            raise ConfigurationError(f"{self.path}: blockSize {self.chunks} does not fit dimensions {self.shape}")
        self.compressor = compressor_from_config(attributes.get("compression", {"type": "raw"}))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def grid_shape(self):
        return tuple(-(-s // b) for s, b in zip(self.shape, self.chunks))

    def block_path(self, grid_position):
        return os.path.join(self.path, *(str(int(g)) for g in grid_position))

    def block_shape(self, grid_position):
        """Cropped shape of a block: what Java readers expect for boundary blocks."""
        return tuple(min(b, s - g * b) for g, b, s in zip(grid_position, self.chunks, self.shape))

    def read_block_bytes(self, grid_position):
        try:
            with builtins.open(self.block_path(grid_position), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def _read_region(self, key, read_block, place, threads):
        """Read the blocks covering ``key``; returns (bounding box starts, steps, int axes)."""
        starts, stops, steps, drop = _normalize_selection(key, self.shape)
        first = [s // b for s, b in zip(starts, self.chunks)]
        last = [max(s - 1, 0) // b for s, b in zip(stops, self.chunks)]
        empty = any(stop <= start for start, stop in zip(starts, stops))
        grid = [] if empty else list(np.ndindex(*[l - f + 1 for f, l in zip(first, last)]))
        grid = [tuple(f + g for f, g in zip(first, pos)) for pos in grid]
        with ThreadPoolExecutor(max_workers=default_threads(threads)) as pool:
            blocks = list(pool.map(read_block, grid))
        for pos, block in zip(grid, blocks):
            origin = [g * b for g, b in zip(pos, self.chunks)]
            bshape = self.block_shape(pos)
            lo = [max(st, o) for st, o in zip(starts, origin)]
            hi = [min(sp, o + n) for sp, o, n in zip(stops, origin, bshape)]
            target = tuple(slice(a - st, b - st) for a, b, st in zip(lo, hi, starts))
            source = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, origin))
            place(target, source, block)
        return steps, drop


def _normalize_selection(key, shape):
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices: {len(key)} for {len(shape)} dimensions")
    key = key + (slice(None),) * (len(shape) - len(key))
    starts, stops, steps, drop = [], [], [], []
    for axis, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, (int, np.integer)):
            i = int(k) + n if k < 0 else int(k)
            if not 0 <= i < n:
                raise IndexError(f"index {k} out of range for axis {axis} of size {n}")
            starts.append(i)
            stops.append(i + 1)
            steps.append(1)
            drop.append(axis)
        elif isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step <= 0:
                raise IndexError("only positive slice steps are supported")
            stop = max(stop, start)
            starts.append(start)
            stops.append(stop)
            steps.append(step)
        else:
            raise IndexError("N5 datasets support basic indexing only (ints, slices, ...)")
    return starts, stops, steps, drop


def _final_view(steps, drop):
    return tuple(0 if axis in drop else slice(None, None, step) for axis, step in enumerate(steps))


class LabelMultisetDataset(_Dataset):
    """An N5 label multiset dataset (``isLabelMultiset: true``).

    Missing blocks read as the singleton ``{fill_label: 1}``: INVALID by
    default (what Paintera shows); Java's ``N5LabelMultisets`` uses 0.
    """

    def __init__(self, path, attributes, *, fill_label=INVALID):
        super().__init__(path, attributes)
        self.fill_label = int(fill_label)
        chain = [{"name": "n5_label_multiset"}]
        if self.compressor is not None:
            chain.append(self.compressor)
        self.codec_chain = CodecChain(chain)

    @property
    def max_id(self):
        return self.attributes.get("maxId")

    def decode_block(self, data, grid_position):
        """Decode block bytes to the block's cropped shape.

        The voxel count comes from the grid, not the header: label-utilities-spark
        overstates the header dims of boundary blocks. A block that really holds
        the full (padded) voxel count is decoded by its header and cropped.
        """
        cropped = self.block_shape(grid_position)
        try:
            return n5_varlen_decode(data, self.codec_chain, shape=cropped, threads=1)
        except LabelMultisetFormatError:
            header = N5BlockHeader.from_bytes(data)
            if header.shape == cropped or any(h < c for h, c in zip(header.shape, cropped)):
                raise
        padded = n5_varlen_decode(data, self.codec_chain, threads=1)
        return padded[tuple(slice(0, c) for c in cropped)]

    def read_block(self, grid_position):
        """The block at ``grid_position`` (cropped shape), or None when it is missing."""
        data = self.read_block_bytes(grid_position)
        if data is None:
            return None
        try:
            return self.decode_block(data, grid_position)
        except (LabelMultisetFormatError, N5HeaderError) as exc:
            raise type(exc)(f"{self.block_path(grid_position)}: {exc}") from exc

    def __getitem__(self, key):
        return self.read(key)

    def read(self, key=(), threads=None):
        """Read a basic selection into one :class:`~n5mscodecs.LabelMultisetArray` (only the blocks needed)."""
        starts, stops, _, _ = _normalize_selection(key, self.shape)
        box = tuple(max(b - a, 0) for a, b in zip(starts, stops))
        index = np.zeros(box, np.int64)
        offsets, ids, counts = [np.zeros(1, np.int64)], [], []
        n_lists = [0]
        fill_slot = []

        def place(target, source, block):
            if block is None:
                if not fill_slot:
                    fill_slot.append(n_lists[0])
                    offsets.append(np.array([1], np.int64) + _entries(ids))
                    ids.append(np.array([self.fill_label], np.uint64))
                    counts.append(np.ones(1, np.uint32))
                    n_lists[0] += 1
                index[target] = fill_slot[0]
                return
            base = n_lists[0]
            offsets.append(block.list_offsets[1:] + _entries(ids))
            ids.append(block.ids)
            counts.append(block.counts)
            n_lists[0] += block.n_lists
            index[target] = block.index[source] + base

        steps, drop = self._read_region(key, self.read_block, place, threads)
        total = n_lists[0]
        result = LabelMultisetArray._from_parts(
            index.astype(np.int32) if total < 2**31 else index,
            np.concatenate(offsets),
            np.concatenate(ids) if ids else np.zeros(0, np.uint64),
            np.concatenate(counts) if counts else np.zeros(0, np.uint32),
        )
        view = _final_view(steps, drop)
        return result[view] if view else result

    def write_block(self, grid_position, data):
        """Encode and write one block (cropped to the grid); a block without any
        positive count is removed instead, as Java's serializer writes nothing."""
        data = LabelMultisetArray.coerce(data)
        expected = self.block_shape(grid_position)
        if data.shape != expected:
            raise ConfigurationError(f"block {tuple(grid_position)}: shape {data.shape}, expected {expected}")
        target = self.block_path(grid_position)
        if not data.has_positive_counts():
            if os.path.exists(target):
                os.unlink(target)
            return False
        _write_atomic(target, n5_varlen_encode(data, self.codec_chain, threads=1))
        return True


def _entries(parts):
    return sum(p.size for p in parts)


class ArrayDataset(_Dataset):
    """A plain numeric N5 dataset (default-mode blocks; varlength blocks read as 1-d arrays)."""

    def __init__(self, path, attributes, *, fill_value=0):
        super().__init__(path, attributes)
        dtype = attributes.get("dataType")
        if dtype not in _DTYPES:
            raise ConfigurationError(f"{self.path}: unsupported dataType {dtype!r}")
        self.dtype = np.dtype(dtype)
        self.fill_value = fill_value

    def read_block(self, grid_position):
        """The block's data: N5-order ndarray of its header shape (1-d for varlength), or None."""
        data = self.read_block_bytes(grid_position)
        if data is None:
            return None
        header = N5BlockHeader.from_bytes(data)
        if header.mode == MODE_DEFAULT:
            n = int(np.prod(header.shape, dtype=np.int64))
        elif header.mode == MODE_VARLENGTH:
            n = header.num_elements
        else:
            raise N5HeaderError(f"{self.block_path(grid_position)}: object mode blocks are not supported")
        nbytes = n * self.dtype.itemsize
        body = memoryview(data)[header.nbytes:]
        if self.compressor is None:
            if len(body) < nbytes:
                raise N5HeaderError(f"{self.block_path(grid_position)}: payload has {len(body)} bytes, needs {nbytes}")
            body = body[:nbytes]
        else:
            body = self.compressor.decode(body, nbytes)
        values = np.frombuffer(body, self.dtype.newbyteorder(">")).astype(self.dtype)
        if header.mode == MODE_VARLENGTH:
            return values
        return values.reshape(header.shape, order="F")

    def __getitem__(self, key):
        return self.read(key)

    def read(self, key=(), threads=None):
        starts, stops, _, _ = _normalize_selection(key, self.shape)
        out = np.full(tuple(max(b - a, 0) for a, b in zip(starts, stops)), self.fill_value, self.dtype)

        def place(target, source, block):
            if block is None:
                return
            if block.ndim != self.ndim:
                raise N5HeaderError(f"{self.path}: block ndim {block.ndim}, dataset has {self.ndim}")
            # blocks may be truncated (Java) or padded (zarr-python, tensorstore)
            usable = tuple(slice(s.start, min(s.stop, n)) for s, n in zip(source, block.shape))
            region = tuple(slice(t.start, t.start + (u.stop - u.start)) for t, u in zip(target, usable))
            out[region] = block[usable]

        steps, drop = self._read_region(key, self.read_block, place, threads)
        return out[_final_view(steps, drop)]

    def write_block(self, grid_position, data):
        data = np.asarray(data, self.dtype)
        header = N5BlockHeader(MODE_DEFAULT, data.shape)
        payload = data.astype(self.dtype.newbyteorder(">")).tobytes(order="F")
        if self.compressor is not None:
            payload = self.compressor.encode(payload)
        _write_atomic(self.block_path(grid_position), header.to_bytes() + payload)


def open(path, *, fill_label=INVALID):  # noqa: A001 - mirrors zarr.open / h5py.File naming
    """Open an N5 dataset directory: a :class:`LabelMultisetDataset` when
    ``isLabelMultiset`` is true, else an :class:`ArrayDataset`."""
    path = os.fspath(path)
    attributes = read_attributes(path)
    if "dimensions" not in attributes:
        raise ConfigurationError(f"{path}: not an N5 dataset (no dimensions in attributes.json)")
    if attributes.get("isLabelMultiset"):
        return LabelMultisetDataset(path, attributes, fill_label=fill_label)
    return ArrayDataset(path, attributes)


def _prepare(path, overwrite):
    path = os.fspath(path)
    if os.path.exists(os.path.join(path, "attributes.json")) or (
            os.path.isdir(path) and os.listdir(path)):
        if not overwrite:
            raise FileExistsError(f"{path} exists (pass overwrite=True to replace it)")
        if "dimensions" not in read_attributes(path):
            raise ConfigurationError(f"{path}: refusing to overwrite something that is not an N5 dataset")
        shutil.rmtree(path)
    os.makedirs(path, exist_ok=True)
    return path


def _n5_compression(compression):
    compressor = compressor_from_config(compression)
    return {"type": "raw"} if compressor is None else compressor.n5_config()


def _write_blocks(dataset, data, threads):
    """Write every block of ``data`` in parallel; each block is written by one worker."""
    chunks = dataset.chunks

    def write_one(grid_position):
        region = tuple(slice(g * c, (g + 1) * c) for g, c in zip(grid_position, chunks))
        dataset.write_block(grid_position, data[region])

    with ThreadPoolExecutor(max_workers=default_threads(threads)) as pool:
        list(pool.map(write_one, np.ndindex(*dataset.grid_shape)))


def write(path, data, chunks, *, compression="gzip", attributes=None, overwrite=False,
          threads=None):
    """Write a label multiset dataset the way Java does.

    ``data`` (N5 axis order) is a LabelMultisetArray, integer labels or an
    object array of elements. Boundary blocks are truncated to the grid;
    blocks without any positive count are not written. Attributes:
    dataType uint8, compression, blockSize, dimensions, isLabelMultiset,
    maxId (largest regular id), plus ``attributes``.
    """
    data = LabelMultisetArray.coerce(data)
    chunks = tuple(int(c) for c in chunks)
    if len(chunks) != data.ndim:
        raise ConfigurationError(f"chunks: {len(chunks)} values for {data.ndim} dimensions")
    path = _prepare(path, overwrite)
    labels = data.unique_labels()
    regular = labels[labels <= MAX_ID]
    document = {
        "dataType": "uint8",
        "compression": _n5_compression(compression),
        "blockSize": list(chunks),
        "dimensions": list(data.shape),
        "isLabelMultiset": True,
        "maxId": int(regular.max()) if regular.size else 0,
        **(attributes or {}),
    }
    _write_json_atomic(os.path.join(path, "attributes.json"), document)
    dataset = LabelMultisetDataset(path, document)
    _write_blocks(dataset, data, threads)
    return dataset


def create_array_dataset(path, shape, chunks, dtype, *, compression="gzip", attributes=None,
                         overwrite=False):
    """Create an empty plain numeric N5 dataset; fill it with ``write_block``."""
    dtype = np.dtype(dtype)
    if dtype.name not in _DTYPES:
        raise ConfigurationError(f"dtype: {dtype} has no N5 dataType")
    path = _prepare(path, overwrite)
    document = {"dataType": dtype.name, "compression": _n5_compression(compression),
                "blockSize": [int(c) for c in chunks], "dimensions": [int(n) for n in shape],
                **(attributes or {})}
    _write_json_atomic(os.path.join(path, "attributes.json"), document)
    return ArrayDataset(path, document)


def write_array(path, data, chunks, *, compression="gzip", attributes=None, overwrite=False,
                threads=None):
    """Write a plain numeric N5 dataset (default-mode, truncated boundary blocks)."""
    data = np.asarray(data)
    chunks = tuple(int(c) for c in chunks)
    dataset = create_array_dataset(path, data.shape, chunks, data.dtype, compression=compression,
                                   attributes=attributes, overwrite=overwrite)
    _write_blocks(dataset, data, threads)
    return dataset
