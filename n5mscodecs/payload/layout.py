"""Label multiset payloads in both layouts: N5 legacy and zarr-native.

Both layouts are an offset table (one 32-bit byte offset per voxel into the
list data) followed by little-endian list data (``numEntries`` uint32, then
``numEntries`` x (id uint64, count uint32)). They differ in:

=============  ========================================  ================================
layout         N5 legacy (``n5_label_multiset``)         zarr-native (``label_multiset``)
=============  ========================================  ================================
leading field  argMaxSize int32 BE (+8 bytes each)       none
offset table   int32 big-endian                          uint32 little-endian
voxel order    first axis fastest (N5 / F)               last axis fastest (C)
=============  ========================================  ================================

The N5 voxel order is what Java-written data really uses (the spec's
"row-major" wording is wrong for N5): a block of header dims ``(dx, dy, dz)``
decodes to shape ``(dx, dy, dz)`` and voxel ``[i, j, k]`` is payload voxel
``i + dx * (j + dy * k)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from numcodecs.abc import Codec

from .._buffers import HUGE_PAGE, aligned_empty, read_bytes, thread_scratch
from .._status import Status
from .._threads import default_threads
from ..errors import ConfigurationError, InputTypeError, LabelMultisetFormatError
from ..multiset import LabelMultisetArray
from ..multiset.array import check_rule, representative_lists
from ..multiset.rules import RESERVED_RULES, label_values
from . import _kernels

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, TypeAlias

    from numpy.typing import DTypeLike

    from .._buffers import BytesLike
    from ..multiset.array import MultisetsLike, Rule
    from ..multiset.rules import ReservedRule

    #: Memory order of a decoded block: "K" the layout's voxel order, "C" C-contiguous.
    Order: TypeAlias = Literal["K", "C"]

_MAX_N5_OFFSET = 2**31 - 1
_MAX_ZARR_OFFSET = 2**32 - 1
#: Entries per voxel a payload may average when nothing tighter is known (see
#: :func:`max_payload_size`); a dataset's ``maxNumEntries`` or ``downsamplingFactors``
#: may raise it up to ``MAX_ENTRIES_PER_VOXEL_CAP``.
MAX_ENTRIES_PER_VOXEL = 64
MAX_ENTRIES_PER_VOXEL_CAP = 4096
#: Payload bytes any block may claim whatever its voxel count: the top levels of a pyramid
#: are small blocks whose voxels each hold many labels.
MIN_PAYLOAD_BOUND = 1 << 24
#: Payload bytes no block may claim beyond, whatever its voxel count (issue 51): 128 MiB, 64
#: times the largest real block measured (2.0 MB, a 32^3 raw block of downscaleTest.n5) and
#: what the densest real payload measured (61 bytes per voxel) needs at 128^3; a 64^3 block
#: at 64 entries per voxel on average (206 MB) is capped to it.
MAX_PAYLOAD_BOUND = 1 << 27


@dataclass(frozen=True)
class Layout:
    name: str
    has_argmax_header: bool
    big_endian_offsets: bool
    order: str  # voxel order of the offset table: "F" (N5) or "C" (zarr)
    max_offset: int


N5_LAYOUT: Layout = Layout("n5_label_multiset", True, True, "F", _MAX_N5_OFFSET)
ZARR_LAYOUT: Layout = Layout("label_multiset", False, False, "C", _MAX_ZARR_OFFSET)


def max_payload_size(n_voxels: int, layout: Layout, max_entries: int = MAX_ENTRIES_PER_VOXEL) -> int:
    """The most payload bytes a block of ``n_voxels`` voxels can need: the argMax table (N5
    layout, at most one label per voxel), one offset per voxel and at most one list per voxel
    of at most ``max_entries`` entries on average (``numEntries``, then 12 bytes per entry);
    at least ``MIN_PAYLOAD_BOUND``, at most ``MAX_PAYLOAD_BOUND``.

    Readers reject a larger ``numElements`` before decompressing anything, so a block's
    memory is bounded by its voxel count whatever its header claims.

    >>> max_payload_size(32**3, N5_LAYOUT)  # 32^3 voxels, 64 entries each on average
    25690116
    >>> max_payload_size(64**3, N5_LAYOUT) == MAX_PAYLOAD_BOUND  # 206 MB, capped
    True
    >>> max_payload_size(1, N5_LAYOUT) == MIN_PAYLOAD_BOUND
    True
    """
    n = int(n_voxels)
    argmax_table = 4 + 8 * n if layout.has_argmax_header else 0
    return min(MAX_PAYLOAD_BOUND, max(MIN_PAYLOAD_BOUND, argmax_table + 4 * n + n * (4 + 12 * int(max_entries))))


def entries_bound(attributes: dict[str, Any]) -> int:
    """Entries per voxel a label multiset dataset's blocks may average (see
    :func:`max_payload_size`): ``MAX_ENTRIES_PER_VOXEL``, raised to the dataset's
    positive ``maxNumEntries`` or, without one, to the voxels a voxel of a downsampled level
    covers (the product of ``downsamplingFactors``); never above ``MAX_ENTRIES_PER_VOXEL_CAP``."""
    bound = attributes.get("maxNumEntries")
    if not (isinstance(bound, int) and not isinstance(bound, bool) and bound > 0):
        factors = attributes.get("downsamplingFactors")
        bound = 1
        if isinstance(factors, list) and all(isinstance(f, int | float) and 1 <= f < 2**31 for f in factors):
            for f in factors:
                bound = min(bound * int(f), MAX_ENTRIES_PER_VOXEL_CAP)
    return max(MAX_ENTRIES_PER_VOXEL, min(bound, MAX_ENTRIES_PER_VOXEL_CAP))


def multiset_input(data: MultisetsLike, what: str = "data") -> LabelMultisetArray | np.ndarray:
    """``data`` as a LabelMultisetArray or an ndarray of integer labels or elements.

    Scalars, strings and other dtypes raise :class:`InputTypeError` (numcodecs'
    codecs refuse ``encode(1234)`` with a TypeError); 0-d ndarrays are accepted.
    """
    if isinstance(data, LabelMultisetArray):
        return data
    array = data if isinstance(data, np.ndarray) else np.asarray(data)
    if array.ndim == 0 and not isinstance(data, np.ndarray):
        raise InputTypeError(f"{what}: expected an array of labels or label multisets, got {type(data).__name__}")
    if array.dtype != object and array.dtype.kind not in "iub":
        raise InputTypeError(
            f"{what}: expected integer labels, label multisets or an object array, got dtype {array.dtype}"
        )
    return array


def check_reserved(reserved: object, what: str) -> ReservedRule:
    """A codec's ``reserved`` configuration: "reject" (the default: negative labels and labels
    above MAX_ID are refused on encode, as the writers refuse them) or "accept" (labels are
    written as two's-complement uint64 ids, reserved ones included)."""
    if reserved not in RESERVED_RULES:
        raise ConfigurationError(f"{what}: reserved must be one of {RESERVED_RULES}, got {reserved!r}")
    return reserved  # type: ignore[return-value]  # one of the literals, checked above


def check_out(out: object, what: str) -> np.ndarray:
    """Validate a decode ``out``: an object ndarray receives elements, a uint64 (or
    int64) one receives the argmax labels. Returns ``out``."""
    if not isinstance(out, np.ndarray):
        raise InputTypeError(f"{what}: out must be an ndarray, got {type(out).__name__}")
    if out.dtype != object and out.dtype not in (np.uint64, np.int64):
        raise ConfigurationError(
            f"{what}: out must be an object array (elements) or uint64 (argmax labels), got dtype {out.dtype}"
        )
    if not out.flags.writeable:
        raise InputTypeError(f"{what}: out is read-only")
    return out


def wants_labels(out: np.ndarray | None) -> bool:
    """Whether a decode into ``out`` (checked by :func:`check_out`) takes the labels view:
    a uint64 (or int64) ``out`` receives argmax labels, an object one elements."""
    return out is not None and out.dtype != object


def fill_out(out: np.ndarray, decoded: LabelMultisetArray | np.ndarray) -> np.ndarray:
    """Write what a decode in the view :func:`wants_labels` chose for ``out`` into ``out``
    (same shape): elements of multisets, or labels; return ``out``."""
    if isinstance(decoded, LabelMultisetArray):
        out[...] = decoded.to_elements()
    else:
        out.view(np.uint64)[...] = decoded
    return out


def _voxel_count(shape):
    n = 1
    nonzero = 1
    for s in shape:
        if int(s) < 0:
            raise LabelMultisetFormatError(f"shape: negative extent in {tuple(shape)}")
        n *= int(s)
        nonzero *= max(int(s), 1)
    # An empty block's other extents are bounded by no payload size check, and
    # numpy refuses shapes whose nonzero extents overflow (corrupt block header).
    if n == 0 and nonzero * 8 > np.iinfo(np.intp).max:
        raise LabelMultisetFormatError(f"shape: extents {tuple(shape)} exceed numpy's maximum array size")
    return n


def _split_payload(data, shape, layout):
    """``(shape, offset table, list data)`` of a payload, the sizes checked."""
    buf = read_bytes(data, "payload")
    size = buf.size
    shape = tuple(int(s) for s in shape)
    n_voxels = _voxel_count(shape)
    name = layout.name
    table_start = 0
    if layout.has_argmax_header:
        if size < 4:
            raise LabelMultisetFormatError(f"{name}: argMaxSize needs 4 bytes, payload has {size}")
        argmax_size = int.from_bytes(buf[:4].tobytes(), "big", signed=True)
        if argmax_size < 0:
            raise LabelMultisetFormatError(f"{name}: argMaxSize is negative ({argmax_size})")
        if argmax_size > n_voxels:
            raise LabelMultisetFormatError(f"{name}: argMaxSize {argmax_size} exceeds the {n_voxels} voxels")
        table_start = 4 + 8 * argmax_size
        if table_start > size:
            raise LabelMultisetFormatError(
                f"{name}: argMaxSize {argmax_size} needs {table_start} bytes, payload has {size}"
            )
    list_data_start = table_start + 4 * n_voxels
    if list_data_start > size:
        raise LabelMultisetFormatError(
            f"{name}: listEntryOffsets for {n_voxels} voxels need {list_data_start} bytes, "
            f"payload has {size}"
        )
    return shape, buf[table_start:list_data_start], buf[list_data_start:]


def _raise_list_data_error(status, position, list_data, layout):
    what = ("needs 4 bytes for numEntries" if status == Status.ERR_TRUNCATED_COUNT
            else "numEntries runs past the list data")
    raise LabelMultisetFormatError(
        f"{layout.name}: list at listData byte {position} {what} ({list_data.size} bytes)"
    )


def _raise_offset_error(bad, voxel, table, list_data, layout):
    raw = table[4 * voxel: 4 * voxel + 4].tobytes()
    offset = int.from_bytes(raw, "big" if layout.big_endian_offsets else "little", signed=layout.big_endian_offsets)
    raise LabelMultisetFormatError(
        f"{layout.name}: listEntryOffsets[{voxel}] = {offset} is not the start of a list "
        f"({bad} bad offsets; listData has {list_data.size} bytes)"
    )


@overload
def decode_payload(
    data: BytesLike, shape: Iterable[int], layout: Layout, *, labels: Literal[False] = ...,
    threads: int | None = ..., order: Order = ..., rule: Rule = ...,
) -> LabelMultisetArray: ...
@overload
def decode_payload(
    data: BytesLike, shape: Iterable[int], layout: Layout, *, labels: Literal[True],
    threads: int | None = ..., order: Order = ..., rule: Rule = ...,
) -> np.ndarray: ...
@overload
def decode_payload(
    data: BytesLike, shape: Iterable[int], layout: Layout, *, labels: bool,
    threads: int | None = ..., order: Order = ..., rule: Rule = ...,
) -> LabelMultisetArray | np.ndarray: ...
def decode_payload(
    data: BytesLike, shape: Iterable[int], layout: Layout, *, labels: bool = False,
    threads: int | None = None, order: Order = "K", rule: Rule = "spec",
) -> LabelMultisetArray | np.ndarray:
    """Decode a payload of ``shape`` voxels: to its multisets, or with ``labels=True``
    straight to each voxel's argmax label. The one entry to both kernels.

    Raises :class:`~n5mscodecs.LabelMultisetFormatError` naming the field that is wrong.

    Parameters
    ----------
    labels : bool
        False: a :class:`~n5mscodecs.LabelMultisetArray`, lists kept exactly as stored (order,
        duplicate ids, zero counts). True: a uint64 ndarray of ``shape``, equal to
        ``decode_payload(...).argmax(rule)`` bit for bit, without building the lists (one
        pass over the list data takes every list's argmax, one pass over the offset table
        looks them up).
    order : {"K", "C"}
        "K" keeps the layout's voxel order (F-contiguous for N5); "C" returns C-contiguous
        labels (3-D N5 blocks are written that way directly, tile by tile), or multisets
        whose ``index`` is C-contiguous.
    rule : {"spec", "java"}
        The argmax of ``labels=True`` (multisets decode as stored under either rule).
        "spec": highest count, ties to the smaller unsigned id, an empty list gives INVALID.
        "java": the labels Paintera shows, as ``LabelUtils.fromBytes`` gives them: the
        argmax values cached in an N5 payload (as elf and older conversion helpers wrote;
        ``argMaxSize`` at least the voxel count) as stored, else
        ``decode_payload(...).argmax(rule="java")``.
    """
    if order not in ("K", "C"):
        raise ConfigurationError(f"order must be 'K' or 'C', got {order!r}")
    java = check_rule(rule)
    if labels:
        return (_java_labels if java else _argmax_labels)(data, shape, layout, threads, order)
    multisets = _multisets(data, shape, layout, threads)
    if order == "C" and not multisets.index.flags.c_contiguous:
        return LabelMultisetArray(c_order(multisets.index, default_threads(threads)), multisets.list_offsets,
                                  multisets.ids, multisets.counts, validate=False)
    return multisets


def decode_payload_labels(
    data: BytesLike, shape: Iterable[int], layout: Layout, *, threads: int | None = None, order: Order = "K",
    rule: Rule = "spec",
) -> np.ndarray:
    """Decode a payload straight to each voxel's argmax label (uint64 ndarray of ``shape``):
    ``decode_payload(..., labels=True)``, see there for ``order`` and ``rule``."""
    return decode_payload(data, shape, layout, labels=True, threads=threads, order=order, rule=rule)


def _multisets(data, shape, layout, threads):
    """The multisets kernel: the lists as stored and every voxel's list number."""
    shape, table, list_data = _split_payload(data, shape, layout)
    n_voxels = table.size // 4
    # One walk splits the lists and indexes their starts, into arrays sized by bounds: at
    # most a list per voxel (more take the bounded way below), an entry per 12 bytes of
    # list data (at most a third more than lists of one entry need) and 8 entries of
    # slack (short lists are copied 8 entries at a time).
    max_entries = list_data.size // 12 + 8
    list_offsets = np.empty(min(n_voxels, list_data.size // 4) + 1, np.int64)
    ids = np.empty(max_entries, np.uint64)
    counts = np.empty(max_entries, np.uint32)
    start_bits, rank = _list_start_index(list_data.size)
    n_lists = _kernels.split_list_data(list_data, list_offsets, ids, counts, start_bits, rank)
    if n_lists < 0:  # the lists do not tile the list data, or there are more than voxels
        status, position, n_lists, _, start_bits, rank = _scan(list_data)
        if status:
            _raise_list_data_error(status, position, list_data, layout)
        flat_index, list_offsets, ids, counts = _referenced_lists(table, list_data, start_bits, layout)
        index = flat_index.reshape(shape, order=layout.order)
        return LabelMultisetArray(index, list_offsets, ids, counts, validate=False)
    n_entries = int(list_offsets[n_lists])
    list_offsets, ids, counts = list_offsets[: n_lists + 1], ids[:n_entries], counts[:n_entries]

    flat_index = np.empty(n_voxels, np.int32)
    bad = _kernels.map_voxel_offsets(
        table, layout.big_endian_offsets, list_data, start_bits, rank, flat_index, default_threads(threads),
    )
    if bad:
        _raise_offset_error(bad, int(np.flatnonzero(flat_index < 0)[0]), table, list_data, layout)
    index = flat_index.reshape(shape, order=layout.order)
    return LabelMultisetArray(index, list_offsets, ids, counts, validate=False)


# Per-thread scratch for a decode's temporaries (the list-start index, the argmax of
# each list), reused across calls up to this many values each.
_SCRATCH_VALUES = 1 << 17


def _scratch_array(name, size, dtype):
    """A ``size``-value array of ``dtype`` (contents undefined), this thread's ``name``
    scratch when it is small enough."""
    return thread_scratch(f"payload.{name}", size, dtype, _SCRATCH_VALUES)


def _list_start_index(list_data_size):
    """``(start_bits, rank)`` for the list-start index of ``list_data_size`` bytes, the bits
    zeroed: this thread's scratch, valid until its next decode."""
    words = _kernels.list_start_words(list_data_size)
    start_bits = _scratch_array("start_bits", words, np.uint64)
    start_bits.fill(0)
    return start_bits, _scratch_array("rank", words, np.int64)


def _scan(list_data, label_of_list=None):
    """``scan_list_data`` with the list-start index (and the argmax of the first
    ``len(label_of_list)`` lists): ``(status, position, n_lists, n_entries, start_bits, rank)``;
    the index is thread scratch, valid until the next decode."""
    start_bits, rank = _list_start_index(list_data.size)
    return (*_kernels.scan_list_data(list_data, start_bits, rank, label_of_list), start_bits, rank)


def _list_start_offsets(table, list_data, start_bits, layout):
    """``(offsets, usable)``: every voxel's offset (int64) and whether a list starts there."""
    offsets = np.frombuffer(table, ">i4" if layout.big_endian_offsets else "<u4").astype(np.int64)
    usable = (offsets >= 0) & (offsets < list_data.size) & (offsets % 4 == 0)
    words = offsets[usable] // 4
    usable[usable] = (start_bits[words // 64] >> (words % 64).astype(np.uint64)) & np.uint64(1) == 1
    return offsets, usable


def _referenced_lists(table, list_data, start_bits, layout):
    """``(flat index, list_offsets, ids, counts)`` of only the lists some voxel refers to
    (in stored order), for list data that holds more lists than voxels: a crafted payload
    then costs one bit per list word, never arrays or objects per unreferenced list."""
    offsets, usable = _list_start_offsets(table, list_data, start_bits, layout)
    if not usable.all():
        bad = np.flatnonzero(~usable)
        _raise_offset_error(bad.size, int(bad[0]), table, list_data, layout)
    starts, flat_index = np.unique(offsets, return_inverse=True)
    words = np.frombuffer(list_data, "<u4")  # lists are 4 + 12 n bytes: the data is whole words
    lengths = words[starts // 4].astype(np.int64)
    list_offsets = np.zeros(starts.size + 1, np.int64)
    np.cumsum(lengths, out=list_offsets[1:])
    # word of each entry's id: past the list's count, 3 words per entry
    first = starts // 4 + 1
    entry = np.repeat(first - 3 * list_offsets[:-1], lengths) + 3 * np.arange(list_offsets[-1])
    ids = words[entry].astype(np.uint64) | (words[entry + 1].astype(np.uint64) << np.uint64(32))
    return flat_index.reshape(-1).astype(np.int32), list_offsets, ids, words[entry + 2].copy()


def _argmax_labels(data, shape, layout, threads, order):
    """The labels kernel: each voxel's argmax label (rule "spec") without building the lists."""
    shape, table, list_data = _split_payload(data, shape, layout)
    # one pass validates, indexes and takes each list's argmax; a payload with more lists
    # than voxels stops storing argmaxes there and goes the bounded way below
    # (lists are at least 4 bytes: never more of them than list data words)
    label_of_list = _scratch_array("label_of_list", min(table.size, list_data.size) // 4 + 1, np.uint64)
    status, position, n_lists, _, start_bits, rank = _scan(list_data, label_of_list)
    if status:
        _raise_list_data_error(status, position, list_data, layout)
    if n_lists > table.size // 4:  # more lists than voxels: argmax of the referenced lists only
        flat_index, list_offsets, ids, counts = _referenced_lists(table, list_data, start_bits, layout)
        labels = LabelMultisetArray(flat_index.reshape(shape, order=layout.order), list_offsets, ids, counts,
                                    validate=False).argmax()
        return c_order(labels, default_threads(threads)) if order == "C" else labels
    # N5 blocks of 64^3 and up: huge pages (page faults dominate a fresh 2 MiB otherwise)
    flat = aligned_empty(2 * table.size, huge_from=HUGE_PAGE).view(np.uint64)
    direct_c_order = order == "C" and layout.order == "F" and len(shape) == 3
    if direct_c_order:
        n_threads = default_threads(threads)
        slabs = _scratch_array("slabs", _kernels.c_order_slab_values(shape[0], shape[1], n_threads), np.uint64)
        bad = _kernels.labels_of_voxels_c_order(table, layout.big_endian_offsets, label_of_list, list_data,
                                                start_bits, rank, flat, *shape, slabs, n_threads)
    else:
        bad = _kernels.labels_of_voxels(table, layout.big_endian_offsets, label_of_list, list_data, start_bits, rank,
                                        flat, default_threads(threads))
    if bad:
        _raise_offset_error(bad, _first_bad_offset(table, list_data, start_bits, layout), table, list_data,
                            layout)
    if direct_c_order:
        return flat.reshape(shape)
    labels = flat.reshape(shape, order=layout.order)
    return c_order(labels, default_threads(threads)) if order == "C" else labels


def _java_labels(data, shape, layout, threads, order):
    """Paintera's labels: the cached argmax values of an N5 payload, else Java's argmax."""
    multisets = _multisets(data, shape, layout, threads)
    n_voxels = multisets.size
    cached = None
    if layout.has_argmax_header:
        buf = read_bytes(data, "payload")
        # Java reads argMaxSize values and indexes them by voxel (fewer would fail there)
        if int.from_bytes(buf[:4].tobytes(), "big", signed=True) >= n_voxels > 0:
            cached = np.frombuffer(buf, ">u8", n_voxels, 4).astype(np.uint64)
    if cached is None:
        labels = multisets.argmax(rule="java", threads=threads)
    else:
        labels = cached.reshape(multisets.shape, order=layout.order)
    return c_order(labels) if order == "C" else labels


def _first_bad_offset(table, list_data, start_bits, layout):
    """The first voxel whose offset is not a list start (error path only)."""
    return int(np.flatnonzero(~_list_start_offsets(table, list_data, start_bits, layout)[1])[0])


def payload_order(array: np.ndarray, layout: Layout, dtype: DTypeLike, threads: int = 1) -> np.ndarray:
    """The voxels of ``array`` as a contiguous 1-d ``dtype`` array in the layout's voxel order."""
    array = np.asarray(array)
    if array.dtype != dtype:
        array = array.astype(dtype)
    view = array.T if layout.order == "F" else array  # payload order = C order of this view
    if view.flags.c_contiguous:
        return view.reshape(-1)
    if view.ndim == 3:
        flat = np.empty(view.size, dtype)
        _kernels.c_order_copy_3d(view, flat, threads)
        return flat
    return np.ascontiguousarray(view).reshape(-1)


def c_order(array: np.ndarray, threads: int = 1) -> np.ndarray:
    """``array`` C-contiguous; an F-contiguous 3-D block (N5 payload order) is transposed
    tile by tile, several times faster than numpy's copy for power-of-two blocks."""
    if array.flags.c_contiguous:
        return array
    if array.ndim == 3 and array.dtype in (np.uint64, np.int64, np.int32):
        out = np.empty(array.shape, array.dtype)
        _kernels.c_order_copy_3d(array, out.reshape(-1), threads)
        return out
    return np.ascontiguousarray(array)


def _index_payload_order(index, layout, threads):
    dtype = np.int32 if index.dtype.itemsize <= 4 and index.dtype != np.uint32 else np.int64
    return payload_order(index, layout, dtype, threads)


def encode_payload(data: MultisetsLike, layout: Layout, *, threads: int | None = None,
                   reserved: ReservedRule = "reject") -> bytearray:
    """Encode to payload bytes, byte-identical to Java's ``serializeLabelMultisetTypes``.

    Identical lists are stored once; lists are laid out in first-encounter
    order along the layout's voxel order and written as stored (call
    :meth:`~n5mscodecs.LabelMultisetArray.canonical` first to sort and merge them).
    ``data`` may be a LabelMultisetArray (written as it is), integer labels or an object
    array of elements. Integer labels must be non-negative and at most MAX_ID, and the ids of
    elements integers, non-negative, unless ``reserved="accept"`` (as every writer checks them,
    see :meth:`~n5mscodecs.LabelMultisetArray.coerce`).
    """
    threads = default_threads(threads)
    header = 4 if layout.has_argmax_header else 0  # argMaxSize: writers always write 0
    data = multiset_input(data)
    array = data if isinstance(data, np.ndarray) else None
    if array is not None and array.dtype.kind in "iub":
        return _encode_labels(label_values(array, reserved), layout, header, threads)
    multisets = LabelMultisetArray.coerce(data, reserved=reserved)
    flat_index = _index_payload_order(multisets.index, layout, threads)
    list_offsets, ids, counts = multisets.list_offsets, multisets.ids, multisets.counts
    representative = representative_lists(list_offsets, ids, counts)
    byte_position = np.full(multisets.n_lists, -1, np.int64)
    write_order = np.empty(multisets.n_lists, np.int64)
    n_written, list_data_size = _kernels.assign_list_positions(
        flat_index, representative, list_offsets, byte_position, write_order
    )
    _check_offset_range(list_data_size, layout)
    n_voxels = flat_index.size
    # a bytearray is written in place and returned without a copy (fresh pages are costly)
    out = bytearray(header + 4 * n_voxels + list_data_size)
    view = np.frombuffer(out, np.uint8)
    _kernels.write_voxel_offsets(view, header, flat_index, byte_position,
                                 layout.big_endian_offsets, threads)
    _kernels.write_lists(view, header + 4 * n_voxels, write_order[:n_written], list_offsets, ids, counts)
    return out


def _check_offset_range(list_data_size, layout):
    if list_data_size and list_data_size - 4 > layout.max_offset:
        raise LabelMultisetFormatError(
            f"{layout.name}: list data of {list_data_size} bytes exceeds the 32-bit offset range"
        )


def _encode_labels(array, layout, header, threads):
    """Singleton payload straight from integer labels: one pass numbers labels and writes offsets."""
    labels = payload_order(array, layout, np.uint64, threads)
    out = bytearray(header + 4 * labels.size)
    status, unique = _kernels.encode_singleton_offsets(labels, np.frombuffer(out, np.uint8)[header:],
                                               layout.big_endian_offsets)
    if status != Status.OK:
        raise MemoryError("out of memory while numbering labels")
    _check_offset_range(16 * unique.size, layout)
    lists = np.empty(unique.size, np.dtype([("n", "<u4"), ("id", "<u8"), ("count", "<u4")]))
    lists["n"] = 1
    lists["id"] = unique
    lists["count"] = 1
    out += lists.tobytes()
    return out


class PayloadCodec(Codec):
    """numcodecs base of the two array-to-bytes label multiset codecs.

    ``decode`` needs the voxel count: from ``shape=`` (argument or codec
    configuration) or from ``out``, an ndarray that is filled in place:
    with elements if its dtype is object, with the argmax labels if uint64.
    Inside ``n5_varlen`` the block header provides it.
    """

    layout: Layout

    def __init__(self, shape: Iterable[int] | None = None, reserved: ReservedRule = "reject") -> None:
        self.shape: tuple[int, ...] | None = None if shape is None else tuple(int(s) for s in shape)
        self.reserved: ReservedRule = check_reserved(reserved, self.codec_id)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"id": self.codec_id}
        if self.shape is not None:
            config["shape"] = list(self.shape)
        if self.reserved != "reject":  # the default stays out: configs of older versions are equal
            config["reserved"] = self.reserved
        return config

    def encode(self, buf: MultisetsLike) -> bytearray:
        return encode_payload(buf, self.layout, reserved=self.reserved)

    def decode(
        self, buf: BytesLike, out: np.ndarray | None = None, shape: Iterable[int] | None = None
    ) -> LabelMultisetArray | np.ndarray:
        if out is not None:
            check_out(out, self.codec_id)
            if shape is None:
                shape = out.shape
        if shape is None:
            shape = self.shape
        if shape is None:
            raise ConfigurationError(
                f"{self.codec_id}: decode needs the voxel count: pass shape= or out=, "
                "or use the codec inside n5_varlen"
            )
        decoded = decode_payload(buf, shape, self.layout, labels=wants_labels(out))
        return decoded if out is None else fill_out(out, decoded)

    def __repr__(self) -> str:
        options = ([] if self.shape is None else [f"shape={self.shape}"]) + (
            [] if self.reserved == "reject" else [f"reserved={self.reserved!r}"])
        return f"{type(self).__name__}({', '.join(options)})"
