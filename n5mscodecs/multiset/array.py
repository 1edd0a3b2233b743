"""In-memory label multisets: the columnar :class:`LabelMultisetArray`.

A :class:`LabelMultisetArray` never holds one Python object per voxel: voxel
``v`` refers to list ``index[v]``, and list ``i`` owns the entries
``list_offsets[i]:list_offsets[i + 1]`` of ``ids`` (uint64) and ``counts``
(uint32). Many voxels usually share one list. Its element type,
:class:`~n5mscodecs.multiset.element.LabelMultiset`, and the id space and rule
switches (:mod:`~n5mscodecs.multiset.rules`) live beside it and are importable
from here too.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, overload

import numpy as np

from .._buffers import memory_order
from .._status import Status
from .._threads import default_threads
from ..errors import ConfigurationError, InputTypeError, LabelMultisetFormatError
from . import _downsample as _downsample_kernel
from . import _kernels
from .element import LabelMultiset, as_counts
from .rules import (
    BACKGROUND,
    INVALID,
    KEEP_RULES,
    MAX_ID,
    OUTSIDE,
    RESERVED_RULES,
    RULES,
    TRANSPARENT,
    check_keep,
    check_label_range,
    check_rule,
    label_values,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from types import EllipsisType
    from typing import Literal, TypeAlias

    from numpy.typing import ArrayLike

    from .element import ElementLike
    from .rules import KeepRule, ReservedRule, Rule

    #: Label multisets as :meth:`LabelMultisetArray.coerce` accepts them: a
    #: LabelMultisetArray, integer labels or an object array of elements.
    MultisetsLike: TypeAlias = "LabelMultisetArray | ArrayLike"
    #: One item of a basic index (ints, slices, Ellipsis, None).
    BasicIndex: TypeAlias = "int | np.integer | slice | EllipsisType | None"

# with the names other modules import from here since before the split (rules, element)
__all__ = [
    "BACKGROUND", "INVALID", "KEEP_RULES", "MAX_ID", "OUTSIDE", "RESERVED_RULES", "RULES", "TRANSPARENT",
    "LabelMultiset", "LabelMultisetArray", "argmax_elements", "assemble", "check_keep", "check_label_range",
    "check_rule", "first_encounter", "label_values", "per_voxel", "representative_lists",
]

def _index_dtype(n_lists):
    return np.int32 if n_lists < 2**31 else np.int64


class LabelMultisetArray:
    """An n-dimensional array of label multisets in columnar form.

    Parameters
    ----------
    index : integer ndarray
        Per-voxel list number; its shape is the array's shape.
    list_offsets : int64 ndarray, ``n_lists + 1`` values
        CSR boundaries of the lists in ``ids``/``counts``.
    ids : uint64 ndarray
    counts : uint32 ndarray

    Examples
    --------
    >>> a = LabelMultisetArray.from_labels(np.array([[1, 1], [2, 5]], np.uint64))
    >>> a.shape, a.n_lists
    ((2, 2), 3)
    >>> a.argmax().tolist()
    [[1, 1], [2, 5]]
    >>> a[1, 1]
    LabelMultiset({5: 1})
    """

    __slots__ = ("index", "list_offsets", "ids", "counts")
    __hash__ = None  # type: ignore[assignment]  # == compares contents, which are mutable arrays

    index: np.ndarray
    list_offsets: np.ndarray
    ids: np.ndarray
    counts: np.ndarray

    def __init__(
        self, index: ArrayLike, list_offsets: ArrayLike, ids: ArrayLike, counts: ArrayLike, *, validate: bool = True
    ) -> None:
        arrays = np.asarray(index), np.asarray(list_offsets), np.asarray(ids), np.asarray(counts)
        if validate:
            arrays = _validated(*arrays)
        self.index, self.list_offsets, self.ids, self.counts = arrays

    # -- construction -----------------------------------------------------

    @classmethod
    def _from_parts(cls, index, list_offsets, ids, counts):
        return cls(index, list_offsets, ids, counts, validate=False)

    @classmethod
    def from_labels(cls, labels: ArrayLike, *, reserved: ReservedRule = "reject",
                    name: str = "labels") -> LabelMultisetArray:
        """Singletons ``{label: 1}`` from an integer label array (one list per distinct label).

        Lists are numbered in first-encounter order over C order. Paintera's ids
        are unsigned 64-bit with the top four values reserved (TRANSPARENT,
        INVALID, OUTSIDE above MAX_ID), so with ``reserved="reject"`` (the
        default) negative labels and labels above MAX_ID raise a
        ConfigurationError naming how many voxels have them and the extreme
        value; ``reserved="accept"`` reads signed labels as their
        two's-complement uint64 (-1 is TRANSPARENT, -2 INVALID, -3 OUTSIDE) and
        keeps reserved values, for data meant to carry them. ``name`` names the
        labels in messages.

        >>> LabelMultisetArray.from_labels(np.array([1, -2])).ids
        Traceback (most recent call last):
        ...
        n5mscodecs.errors.ConfigurationError: labels: 1 voxel has a negative label (smallest -2)...
        >>> [hex(i) for i in LabelMultisetArray.from_labels(np.array([1, -2]), reserved="accept").ids]
        ['0x1', '0xfffffffffffffffe']
        """
        labels = np.asarray(labels)
        if labels.dtype.kind not in "iub":
            raise ConfigurationError(f"labels: integer array required, got dtype {labels.dtype}")
        flat = label_values(labels.reshape(-1), reserved, name=name)
        index, unique = first_encounter(np.ascontiguousarray(flat))
        n = unique.size
        return cls._from_parts(
            index.reshape(labels.shape),
            np.arange(n + 1, dtype=np.int64),
            unique,
            np.ones(n, np.uint32),
        )

    @classmethod
    def full(cls, shape: Iterable[int], label: int = INVALID, count: int = 1) -> LabelMultisetArray:
        """Every voxel the singleton ``{label: count}`` (the zarr fill value convention)."""
        shape = tuple(int(s) for s in shape)
        return cls._from_parts(
            np.zeros(shape, np.int32),
            np.array([0, 1], np.int64),
            np.array([label], np.uint64),
            as_counts([count]),
        )

    @classmethod
    def from_elements(
        cls, elements: np.ndarray | Iterable[ElementLike], shape: Sequence[int] | None = None, *,
        reserved: ReservedRule = "reject",
    ) -> LabelMultisetArray:
        """From per-voxel elements: LabelMultiset, ``{id: count}``, ``(id, count)`` pairs or int.

        ``elements`` is an object ndarray (its shape is used) or a flat
        sequence together with ``shape``. Identical objects share one list. Ids must be
        integers; integer elements are read as :meth:`from_labels` reads labels, negative ids
        of mappings and pairs are refused unless ``reserved="accept"`` (see
        ``n5mscodecs.multiset.element.as_ids``).
        """
        flat: np.ndarray | list[ElementLike]
        if isinstance(elements, np.ndarray) and elements.dtype == object:
            shape = elements.shape if shape is None else tuple(shape)
            flat = elements.reshape(-1)
        else:
            flat = list(elements)
            if shape is None:
                shape = (len(flat),)
        if int(np.prod(shape, dtype=np.int64)) != len(flat):
            raise ConfigurationError(f"shape: {shape} does not hold {len(flat)} elements")
        if len(flat) and all(isinstance(v, (int, np.integer)) for v in (flat[0], flat[-1])) and all(
                issubclass(t, (int, np.integer)) for t in set(map(type, flat))):
            # integer labels (as zarr hands them over for object arrays): singletons;
            # negative ids are Java's signed view of the reserved range
            for dtype in (np.uint64, np.int64):
                try:
                    labels = np.asarray(flat, dtype=object).astype(dtype)
                except (TypeError, ValueError, OverflowError):
                    continue
                if dtype == np.uint64 or reserved == "accept":
                    labels = labels.view(np.uint64)
                return cls.from_labels(labels.reshape(shape), reserved=reserved)
        # one list per distinct object: zarr and to_elements share one object per list
        object_ids = np.fromiter(map(id, flat), np.int64, count=len(flat))
        _, first, index = np.unique(object_ids, return_index=True, return_inverse=True)
        distinct = [LabelMultiset.coerce(flat[i], reserved=reserved) for i in first]
        lengths = [e.ids.size for e in distinct]
        list_offsets = np.zeros(len(distinct) + 1, np.int64)
        np.cumsum(lengths, out=list_offsets[1:])
        if distinct:
            ids = np.concatenate([e.ids for e in distinct])
            counts = np.concatenate([e.counts for e in distinct])
        else:
            ids, counts = np.zeros(0, np.uint64), np.zeros(0, np.uint32)
        index = index.reshape(-1).astype(_index_dtype(len(distinct))).reshape(shape)
        return cls._from_parts(index, list_offsets, ids, counts)

    @classmethod
    def coerce(cls, data: MultisetsLike, *, reserved: ReservedRule = "reject") -> LabelMultisetArray:
        """Accept a LabelMultisetArray (as it is), an integer label ndarray (read as ``reserved``
        says, see :meth:`from_labels`) or an object ndarray of elements (:meth:`from_elements`: integer
        ids, negative ones only with ``reserved="accept"``; the uint64 ids of multisets, reserved
        ones included, as they are): what every writer takes."""
        if isinstance(data, LabelMultisetArray):
            return data
        array = np.asarray(data)
        if array.dtype == object:
            return cls.from_elements(array, reserved=reserved)
        if array.dtype.kind in "iub":
            return cls.from_labels(array, reserved=reserved)
        raise InputTypeError(
            f"data: expected a LabelMultisetArray, integer labels or an object array, got dtype {array.dtype}"
        )

    # -- basic properties ---------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self.index.shape

    @property
    def ndim(self) -> int:
        return self.index.ndim

    @property
    def size(self) -> int:
        return self.index.size

    @property
    def n_lists(self) -> int:
        return self.list_offsets.size - 1

    def list_lengths(self) -> np.ndarray:
        """Number of entries of every list."""
        return np.diff(self.list_offsets)

    def entries_per_voxel(self) -> np.ndarray:
        """Number of stored entries of each voxel's list (an ndarray of ``shape``)."""
        return per_voxel(self.list_lengths(), self.index)

    def element(self, list_number: int) -> LabelMultiset:
        """The list ``list_number`` as a :class:`LabelMultiset`."""
        lo, hi = self.list_offsets[list_number], self.list_offsets[list_number + 1]
        return LabelMultiset(self.ids[lo:hi], self.counts[lo:hi])

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d LabelMultisetArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return (
            f"LabelMultisetArray(shape={self.shape}, n_lists={self.n_lists}, "
            f"n_entries={self.ids.size})"
        )

    # -- computations -------------------------------------------------------

    def argmax_of_lists(self, rule: Rule = "spec", threads: int | None = None) -> np.ndarray:
        """Argmax of every list (uint64, ``n_lists`` values)."""
        return _kernels.argmax_of_lists(
            self.list_offsets, self.ids, self.counts, check_rule(rule), default_threads(threads)
        )

    def argmax(self, rule: Rule = "spec", threads: int | None = None) -> np.ndarray:
        """Per-voxel argmax as a uint64 ndarray of ``shape``, computed once per list.

        ``rule="spec"`` (data type spec): highest count wins, ties go to the
        smaller id compared unsigned, an empty list gives INVALID.
        ``rule="java"`` (imglib2 ``LabelUtils.getArgMax``, bit for bit): ids
        and counts compare as Java's signed int64/int32 and the running best
        starts as (INVALID, count 0). So counts >= 2**31 never win, a list of
        zero counts gives INVALID unless it holds an id in [2**63, 2**64 - 3]
        (below INVALID in signed order), and ties between a regular id and an
        id >= 2**63 go to the latter. See docs/format_notes.md.
        """
        return per_voxel(self.argmax_of_lists(rule, threads), self.index)

    def canonical(self, threads: int | None = None) -> LabelMultisetArray:
        """Copy with every list sorted by unsigned id and duplicate ids merged."""
        threads = default_threads(threads)
        ids = self.ids.copy()
        counts = self.counts.copy()
        new_lengths = np.empty(self.n_lists, np.int64)
        if _kernels.canonicalize_lists(self.list_offsets, ids, counts, new_lengths, threads):
            raise MemoryError("canonical: out of memory while sorting lists")
        new_offsets = np.zeros(self.n_lists + 1, np.int64)
        np.cumsum(new_lengths, out=new_offsets[1:])
        new_ids = np.empty(new_offsets[-1], np.uint64)
        new_counts = np.empty(new_offsets[-1], np.uint32)
        _kernels.compact_lists(self.list_offsets, new_offsets, ids, counts, new_ids, new_counts, threads)
        return type(self)._from_parts(self.index.copy(), new_offsets, new_ids, new_counts)

    def compact(self) -> LabelMultisetArray:
        """Copy holding only the lists some voxel uses, identical lists merged, in first-use order (C order)."""
        representative = representative_lists(self.list_offsets, self.ids, self.counts)
        flat = np.ascontiguousarray(self.index.reshape(-1))
        used_rep = representative[flat]
        index, kept = first_encounter(used_rep.astype(np.uint64))
        kept = kept.astype(np.int64)
        lengths = self.list_lengths()[kept]
        new_offsets = np.zeros(kept.size + 1, np.int64)
        np.cumsum(lengths, out=new_offsets[1:])
        take = _entry_positions(self.list_offsets, kept, new_offsets)
        return type(self)._from_parts(
            index.reshape(self.shape), new_offsets, self.ids[take], self.counts[take]
        )

    def used_lists(self) -> np.ndarray:
        """Sorted numbers of the lists some voxel refers to."""
        if self.size == 0:
            return np.zeros(0, np.int64)
        return np.flatnonzero(np.bincount(self.index.reshape(-1), minlength=self.n_lists))

    def unique_labels(self) -> np.ndarray:
        """Sorted distinct ids (with a positive count or not) of the lists voxels use."""
        used = self.used_lists()
        take = _entry_positions(self.list_offsets, used, None)
        return np.unique(self.ids[take])

    def has_positive_counts(self) -> bool:
        """True if some voxel's list holds an entry with count > 0.

        Java's serializer does not write a block for which this is False.
        """
        take = _entry_positions(self.list_offsets, self.used_lists(), None)
        return bool(np.any(self.counts[take] > 0))

    def is_background(self) -> bool:
        """True if every voxel is the singleton ``{0: 1}``: what a missing N5 block reads as
        (Java's ``N5LabelMultisets``, Paintera), so writers need not write such a block.

        >>> LabelMultisetArray.from_labels(np.zeros((2, 2), np.uint64)).is_background()
        True
        """
        used = self.used_lists()
        starts = self.list_offsets[used]
        if np.any(self.list_offsets[used + 1] - starts != 1):
            return False
        return bool(np.all(self.ids[starts] == BACKGROUND) and np.all(self.counts[starts] == 1))

    def downsample(
        self,
        factors: int | Sequence[int],
        max_num_entries: int = -1,
        *,
        keep: KeepRule | None = None,
        rule: Rule = "spec",
        threads: int | None = None,
    ) -> LabelMultisetArray:
        """Multiset union of every window of ``factors`` voxels (counts summed per id).

        The output has shape ``ceil(shape / factors)``: windows at the upper
        edges are partial. Output lists are sorted by id with duplicate ids
        merged (counts saturate at ``2**32 - 1``); identical lists are stored once.

        Parameters
        ----------
        factors : int or sequence of int
            Window size per axis (>= 1); arrays of 1 to 3 dimensions.
        max_num_entries : int
            When positive, every list is cut to this many entries.
        keep : {"highest", "lowest"}, optional
            Which entries a cut keeps under ``rule="spec"``: the highest
            counts (the default; ties: smaller id; the original intent, and
            what elf does) or the lowest counts (ties: smaller id).
        rule : {"spec", "java"}
            ``"java"``: every list exactly as Java's
            ``LabelMultisetTypeDownscaler`` (label-utilities-spark, the
            conversion helper) writes it: ids in signed int64 order, counts
            summed modulo ``2**32``, the cut keeping the lowest int32 counts
            (ties: the larger signed id), and ``{0: 0}`` for a window whose
            lists are all empty. See docs/format_notes.md.
        threads : int, optional
            Slabs along the first axis downsampled in parallel (default:
            every core, only for outputs above about a million voxels).

        Examples
        --------
        >>> a = LabelMultisetArray.from_labels(np.array([[1, 1, 2], [3, 1, 2]], np.uint64))
        >>> d = a.downsample(2)
        >>> d.shape, d[0, 0], d[0, 1]
        ((1, 2), LabelMultiset({1: 3, 3: 1}), LabelMultiset({2: 2}))
        >>> a.downsample(2, max_num_entries=1)[0, 0], a.downsample(2, 1, keep="lowest")[0, 0]
        (LabelMultiset({1: 3}), LabelMultiset({3: 1}))
        >>> a.downsample(2, max_num_entries=1, rule="java")[0, 0]
        LabelMultiset({3: 1})
        """
        keep = check_keep(keep, rule)
        java = rule == "java"
        if not 1 <= self.ndim <= 3:
            raise ConfigurationError(f"downsample: arrays of 1 to 3 dimensions, got {self.ndim}")
        window = _downsampling_factors(factors, self.ndim)
        max_num_entries = int(max_num_entries)
        out_shape = tuple(-(-n // f) for n, f in zip(self.shape, window))
        pad = (1,) * (3 - self.ndim)
        index = self.index.reshape(pad + self.shape)
        if index.dtype not in (np.int32, np.int64):
            index = index.astype(np.int64)
        factors3 = pad + window
        n_slabs = min(default_threads(threads), out_shape[0] if self.ndim == 3 else 1)
        if int(np.prod(out_shape)) < _PARALLEL_DOWNSAMPLE_VOXELS:
            n_slabs = 1
        rows = np.linspace(0, (pad + out_shape)[0], n_slabs + 1).astype(int)

        def slab(k):
            region = index[rows[k] * factors3[0]:rows[k + 1] * factors3[0]]
            out_index = np.empty((rows[k + 1] - rows[k],) + (pad + out_shape)[1:],
                                 _index_dtype(int(np.prod(out_shape))))
            status, offsets, ids, counts = _downsample_kernel.downsample_lists(
                region, self.list_offsets, self.ids, self.counts, *factors3,
                max_num_entries, keep == "lowest", java, out_index)
            if status:
                raise MemoryError("downsample: out of memory")
            return out_index, offsets, ids, counts

        if n_slabs == 1:
            return LabelMultisetArray._from_parts(*slab(0)).reshape(*out_shape)
        with ThreadPoolExecutor(max_workers=n_slabs) as pool:
            parts = list(pool.map(slab, range(n_slabs)))
        slabs = [((slice(rows[k], rows[k + 1]),), LabelMultisetArray._from_parts(*part))
                 for k, part in enumerate(parts)]
        return assemble(pad + out_shape, slabs).reshape(*out_shape)

    # -- views ---------------------------------------------------------------

    @overload
    def __getitem__(self, key: slice | tuple[slice, ...]) -> LabelMultisetArray: ...

    @overload
    def __getitem__(self, key: BasicIndex | tuple[BasicIndex, ...]) -> LabelMultiset | LabelMultisetArray: ...

    def __getitem__(self, key: BasicIndex | tuple[BasicIndex, ...]) -> LabelMultiset | LabelMultisetArray:
        """Basic indexing: slices give a cheap view sharing the lists; all-integer gives an element."""
        if not isinstance(key, tuple):
            key = (key,)
        for k in key:
            if not (k is Ellipsis or k is None or isinstance(k, (slice, int, np.integer))):
                raise IndexError("LabelMultisetArray supports basic indexing only (ints, slices, ...)")
        sub = self.index[key]
        if np.ndim(sub) == 0:
            return self.element(int(sub))
        return type(self)._from_parts(sub, self.list_offsets, self.ids, self.counts)

    def transpose(self, *axes: int) -> LabelMultisetArray:
        """Axes permuted as :meth:`numpy.ndarray.transpose` (a view)."""
        return type(self)._from_parts(self.index.transpose(*axes), self.list_offsets, self.ids, self.counts)

    @property
    def T(self) -> LabelMultisetArray:
        return self.transpose()

    def reshape(self, *shape: int | Sequence[int], order: Literal["C", "F", "A"] = "C") -> LabelMultisetArray:
        return type(self)._from_parts(
            self.index.reshape(*shape, order=order), self.list_offsets, self.ids, self.counts
        )

    def padded(self, shape: Iterable[int], fill: ElementLike) -> LabelMultisetArray:
        """This array at the origin of a larger ``shape``, the rest filled with ``fill``
        (a :class:`LabelMultiset`): how truncated N5 boundary blocks become full chunks."""
        shape = tuple(int(s) for s in shape)
        if shape == self.shape:
            return self
        if len(shape) != self.ndim or any(s < own for s, own in zip(shape, self.shape)):
            raise LabelMultisetFormatError(f"shape: {self.shape} does not fit in {shape}")
        fill = LabelMultiset.coerce(fill)
        index = np.full(shape, self.n_lists, _index_dtype(self.n_lists + 1))
        index[tuple(slice(0, s) for s in self.shape)] = self.index
        return type(self)._from_parts(
            index,
            np.append(self.list_offsets, self.list_offsets[-1] + fill.num_entries),
            np.concatenate([self.ids, fill.ids]),
            np.concatenate([self.counts, fill.counts]),
        )

    def to_elements(self) -> np.ndarray:
        """Object ndarray of :class:`LabelMultiset`, one shared object per distinct list."""
        elements = np.empty(self.n_lists, dtype=object)
        ids, counts = self.ids.view(), self.counts.view()
        ids.flags.writeable = False  # slices of read-only views are read-only
        counts.flags.writeable = False
        make = LabelMultiset._from_readonly
        bounds = self.list_offsets.tolist()
        for i in range(self.n_lists):
            lo, hi = bounds[i], bounds[i + 1]
            elements[i] = make(ids[lo:hi], counts[lo:hi])
        # keep the index's memory order: N5 blocks are F-ordered views
        order = memory_order(self.index)
        flat = self.index.ravel(order=order)
        if flat.dtype not in (np.int32, np.int64):
            flat = flat.astype(np.int64)
        out = _kernels.gather_objects(elements, np.ascontiguousarray(flat))
        return out.reshape(self.shape, order=order)

    def equals(self, other: object) -> bool:
        """True if both have the same shape and every voxel the same multiset."""
        if not isinstance(other, LabelMultisetArray) or self.shape != other.shape:
            return False
        a, b = self.canonical(), other.canonical()
        offsets = np.concatenate([a.list_offsets, b.list_offsets[1:] + a.list_offsets[-1]])
        representative = representative_lists(
            offsets, np.concatenate([a.ids, b.ids]), np.concatenate([a.counts, b.counts])
        )
        return bool(
            np.array_equal(representative[a.index], representative[b.index.astype(np.int64) + a.n_lists])
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelMultisetArray):
            return NotImplemented
        return self.equals(other)


def argmax_elements(elements: ArrayLike, rule: Rule = "spec") -> np.ndarray:
    """Argmax of an object array of elements (a zarr/dask chunk) as uint64 of the same shape.

    >>> argmax_elements(np.array([LabelMultiset([4, 2], [1, 3]), LabelMultiset()], dtype=object))
    array([                   2, 18446744073709551614], dtype=uint64)
    """
    return LabelMultisetArray.from_elements(np.asarray(elements, dtype=object)).argmax(rule=rule)


_PARALLEL_DOWNSAMPLE_VOXELS = 1 << 20


def _downsampling_factors(factors: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    values = (factors,) * ndim if isinstance(factors, (int, np.integer)) else tuple(factors)
    if len(values) != ndim or any(int(f) != f or f < 1 for f in values):
        raise ConfigurationError(
            f"factors: {ndim} integers >= 1 required, got {factors!r}")
    return tuple(int(f) for f in values)


def assemble(
    shape: Iterable[int],
    pieces: Iterable[tuple[tuple[slice, ...], LabelMultisetArray | None]],
    fill: int = INVALID,
) -> LabelMultisetArray:
    """One LabelMultisetArray of ``shape`` from ``(region, array)`` pieces that tile it.

    Each array's lists are appended once and its voxels placed at ``region``
    (a tuple of slices); a piece whose array is None gets the singleton
    ``{fill: 1}`` (one list shared by all such pieces). Lists are kept as
    stored: this joins list tables, it does not merge equal lists. Pieces are placed in
    order, so where two overlap the later one wins (a block with parts laid over it).
    """
    pieces = list(pieces)
    tables, bases, n_lists, fill_list = [], [], 0, None
    for _, part in pieces:
        if part is None:
            if fill_list is None:
                fill_list, n_lists = n_lists, n_lists + 1
                tables.append(LabelMultisetArray.full((), fill))
            bases.append(fill_list)
        else:
            tables.append(part)
            bases.append(n_lists)
            n_lists += part.n_lists
    index = np.empty(tuple(shape), _index_dtype(n_lists))
    for (region, part), base in zip(pieces, bases):
        if part is None:
            index[region] = base
        else:
            np.add(part.index, base, out=index[region], casting="unsafe")
    entries = np.cumsum([0] + [t.ids.size for t in tables])
    offsets = np.concatenate([np.zeros(1, np.int64)] + [t.list_offsets[1:] + entries[k] for k, t in enumerate(tables)])
    ids = np.concatenate([t.ids for t in tables]) if tables else np.zeros(0, np.uint64)
    counts = np.concatenate([t.counts for t in tables]) if tables else np.zeros(0, np.uint32)
    return LabelMultisetArray._from_parts(index, offsets, ids, counts)


def per_voxel(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]`` in the index's memory order (an F-ordered index gives an F-ordered
    result: numpy's fancy indexing would walk it strided, which is 2x slower)."""
    order = memory_order(index)
    if (values.dtype not in (np.uint64, np.int64) or index.dtype not in (np.int32, np.int64)
            or not (index.flags.c_contiguous or index.flags.f_contiguous) or not values.flags.c_contiguous):
        return values.take(index)
    out = np.empty(index.shape, values.dtype, order=order)
    flat = index.reshape(-1, order=order)
    if _kernels.gather_values(values, flat, out.reshape(-1, order=order)):
        raise IndexError(f"per_voxel: index holds values outside 0..{values.size - 1}")
    return out


def _entry_positions(list_offsets, lists, new_offsets):
    """Positions in ids/counts of the entries of ``lists``, list after list."""
    starts = list_offsets[lists]
    lengths = list_offsets[np.asarray(lists) + 1] - starts
    if new_offsets is None:
        new_offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=new_offsets[1:])
    total = int(new_offsets[-1])
    # each entry's position = its list's old start + its rank inside the list
    list_of_entry = np.repeat(np.arange(len(lengths)), lengths)
    return starts[list_of_entry] + (np.arange(total) - new_offsets[:-1][list_of_entry])


def first_encounter(flat_labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(index, unique)``: distinct uint64 values numbered in first-encounter order."""
    index = np.empty(flat_labels.size, np.int64 if flat_labels.size >= 2**31 else np.int32)
    status, unique = _kernels.first_encounter_labels(flat_labels, index)
    if status != Status.OK:
        raise MemoryError("out of memory while numbering labels")
    return index, unique


def representative_lists(list_offsets: np.ndarray, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """For each list, the first list with identical stored content."""
    status, representative = _kernels.representative_lists(list_offsets, ids, counts)
    if status != Status.OK:
        raise MemoryError("out of memory while comparing lists")
    return representative


def _validated(index, list_offsets, ids, counts):
    if index.dtype.kind not in "iu":
        raise LabelMultisetFormatError(f"index: integer dtype required, got {index.dtype}")
    if list_offsets.ndim != 1 or list_offsets.size < 1:
        raise LabelMultisetFormatError("list_offsets: 1-d array with n_lists + 1 values required")
    list_offsets = list_offsets.astype(np.int64, copy=False)
    ids = np.ascontiguousarray(ids.reshape(-1), dtype=np.uint64)
    counts = np.ascontiguousarray(as_counts(counts))
    if ids.size != counts.size:
        raise LabelMultisetFormatError(f"counts: {counts.size} counts for {ids.size} ids")
    if list_offsets[0] != 0 or list_offsets[-1] != ids.size or np.any(np.diff(list_offsets) < 0):
        raise LabelMultisetFormatError(
            "list_offsets: must start at 0, never decrease and end at len(ids)"
        )
    n_lists = list_offsets.size - 1
    if index.size and (index.min() < 0 or index.max() >= n_lists):
        raise LabelMultisetFormatError(f"index: values must lie in [0, {n_lists})")
    return index, np.ascontiguousarray(list_offsets), ids, counts
