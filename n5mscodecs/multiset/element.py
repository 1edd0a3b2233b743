"""One voxel's label multiset: :class:`LabelMultiset`, a read-only mapping of id -> count."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

import numpy as np

from ..errors import ConfigurationError, InputTypeError, LabelMultisetFormatError
from . import _kernels
from .rules import RESERVED_RULES, check_rule

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, TypeAlias

    from numpy.typing import ArrayLike, DTypeLike

    from .rules import ReservedRule, Rule

    #: One voxel's multiset as :meth:`LabelMultiset.coerce` accepts it.
    ElementLike: TypeAlias = (
        "LabelMultiset | Mapping[int, int] | Iterable[tuple[int, int]] | int | np.integer | None"
    )


class LabelMultiset(Mapping):
    """One voxel's multiset of labels: a read-only mapping of id -> count; immutable and hashable.

    As a ``collections.abc.Mapping`` it holds each distinct id once with its
    total count (duplicate stored entries merged) and iterates over the ids in ascending
    order; it equals any mapping with the same items. ``ids`` and ``counts`` are the
    stored entries (read-only numpy arrays, in stored order, duplicates kept), as the
    payload holds them. Build it from a mapping or from ``ids`` and ``counts``.

    numpy stores it as one object (``np.array([m1, m2])`` is a 1-d object array), not
    as the sequence of its ids that a mapping would otherwise be to numpy.

    >>> m = LabelMultiset([7, 3], [1, 2])
    >>> m
    LabelMultiset({3: 2, 7: 1})
    >>> m == LabelMultiset({3: 2, 7: 1}) == {3: 2, 7: 1}, m[3], len(m), list(m), m.argmax
    (True, 2, 2, [3, 7], 3)
    """

    __slots__ = ("_ids", "_counts", "_merged")

    def __init__(self, ids: Mapping[int, int] | ArrayLike = (), counts: ArrayLike | None = None, *,
                 reserved: ReservedRule = "reject") -> None:
        if isinstance(ids, Mapping):
            if counts is not None:
                raise InputTypeError("LabelMultiset: pass a mapping of id -> count, or ids and counts, not both")
            counts = list(ids.values())
            ids = list(ids.keys())
        id_array = as_ids(ids, reserved)
        count_array = np.ones(id_array.shape, np.uint32) if counts is None else as_counts(counts)
        if count_array.shape != id_array.shape:
            raise LabelMultisetFormatError(
                f"counts: {count_array.size} counts for {id_array.size} ids"
            )
        id_array.flags.writeable = False
        count_array.flags.writeable = False
        self._ids = id_array
        self._counts = count_array
        self._merged: dict[int, int] | None = None

    @classmethod
    def _from_readonly(cls, ids: np.ndarray, counts: np.ndarray) -> LabelMultiset:
        """Wrap read-only uint64/uint32 arrays without copying or checking (internal)."""
        self = object.__new__(cls)
        self._ids = ids
        self._counts = counts
        self._merged = None
        return self

    @classmethod
    def from_mapping(cls, mapping: Mapping[int, int], *, reserved: ReservedRule = "reject") -> LabelMultiset:
        """From ``{id: count}`` (the same as ``LabelMultiset(mapping)``)."""
        return cls(mapping, reserved=reserved)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[int, int]], *, reserved: ReservedRule = "reject") -> LabelMultiset:
        """From an iterable of ``(id, count)`` pairs."""
        pairs = list(pairs)
        return cls([p[0] for p in pairs], [p[1] for p in pairs], reserved=reserved)

    @classmethod
    def coerce(cls, value: ElementLike, *, reserved: ReservedRule = "reject") -> LabelMultiset:
        """Accept a LabelMultiset, a mapping, ``(id, count)`` pairs, one integer label,
        or None (the empty multiset, as numcodecs' vlen codecs write None as empty).
        Ids must be integers (see ``as_ids`` for negative ones and ``reserved``)."""
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]  # zarr hands 0-d writes over as 0-d object arrays
        if isinstance(value, LabelMultiset):
            return value
        if value is None:
            return cls()
        if isinstance(value, (str, bytes, float, complex, np.floating, np.complexfloating)):
            raise InputTypeError(f"element: expected a label multiset or an integer label (labels must be "
                                 f"integers), got {value!r}")
        if isinstance(value, Mapping):
            return cls(value, reserved=reserved)
        if isinstance(value, (int, np.integer)):
            return cls([int(value)], reserved=reserved)
        try:
            return cls.from_pairs(value, reserved=reserved)
        except InputTypeError:
            raise
        except TypeError as exc:
            raise InputTypeError(f"element: cannot interpret {value!r} as a label multiset") from exc
        except IndexError as exc:
            raise LabelMultisetFormatError(
                f"element: cannot interpret {value!r} as a label multiset"
            ) from exc

    @property
    def ids(self) -> np.ndarray:
        """The stored ids (uint64, read-only), in stored order, duplicates kept."""
        return self._ids

    @property
    def counts(self) -> np.ndarray:
        """The stored counts (uint32, read-only), one per entry of :attr:`ids`."""
        return self._counts

    @property
    def num_entries(self) -> int:
        """Stored entries (``len(ids)``); ``len(m)`` counts distinct ids."""
        return int(self._ids.size)

    @property
    def argmax(self) -> int:
        """Highest count, ties to the smaller id; INVALID when empty (data type spec)."""
        return self.argmax_rule("spec")

    def argmax_rule(self, rule: Rule = "spec") -> int:
        """Argmax under ``rule`` ("spec" or "java"; see :meth:`LabelMultisetArray.argmax`)."""
        offsets = np.array([0, self._ids.size], np.int64)
        return int(
            _kernels.argmax_of_lists(offsets, self._ids, self._counts, check_rule(rule), 1)[0]
        )

    def _items(self) -> dict[int, int]:
        """The merged ``{id: total count}`` in ascending id order, computed once (never handed out)."""
        if self._merged is None:
            merged: dict[int, int] = {}
            for label, count in zip(self._ids.tolist(), cast("list[int]", self._counts.tolist())):
                merged[label] = merged.get(label, 0) + count
            self._merged = dict(sorted(merged.items()))
        return self._merged

    def as_dict(self) -> dict[int, int]:
        """``{id: total count}`` with duplicate ids merged, sorted by id (a new dict: ``dict(m)``)."""
        return dict(self._items())

    # -- the Mapping protocol: ids -> total counts ------------------------------

    def __getitem__(self, label: int) -> int:
        return self._items()[label]

    def __iter__(self) -> Iterator[int]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __contains__(self, label: object) -> bool:
        return label in self._items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LabelMultiset):
            return self._items() == other._items()
        if isinstance(other, Mapping):
            return self._items() == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._items().items()))

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        """A 0-d object array holding this multiset: numpy would otherwise take a mapping
        (it has ``__len__`` and ``__getitem__``) for a sequence and build arrays of its ids."""
        if dtype is not None and np.dtype(dtype) != object:
            raise TypeError(f"a LabelMultiset converts to an object array only, not {np.dtype(dtype)}")
        holder = np.empty(1, object)
        holder[0] = self  # an integer index stores the object itself
        return holder.reshape(())

    def __reduce__(self):
        return (LabelMultiset, (np.array(self._ids), np.array(self._counts)))

    def __repr__(self) -> str:
        return f"LabelMultiset({self._items()!r})"


def as_counts(counts: ArrayLike) -> np.ndarray:
    """``counts`` as a flat uint32 array; a value outside uint32 is a LabelMultisetFormatError."""
    counts = np.asarray(counts).reshape(-1)
    if counts.size and counts.dtype.kind not in "iub":
        first = counts[0].item() if counts.dtype != object else counts[0]
        if counts.dtype != object or not all(isinstance(c, (int, np.integer)) for c in counts.tolist()):
            raise InputTypeError(f"counts: counts must be integers, got {first!r} ({type(first).__name__})")
    if counts.size and (counts.min() < 0 or counts.max() > 0xFFFFFFFF):
        raise LabelMultisetFormatError("counts: every count must fit in uint32")
    return counts.astype(np.uint32)


_UINT64_END = 1 << 64


def as_ids(ids: Any, reserved: ReservedRule = "reject") -> np.ndarray:
    """``ids`` as a flat uint64 array (a uint64 ndarray as it is). Ids must be integers
    (Python or numpy; a float, even ``1.0``, or a string is an :class:`InputTypeError`) in
    Paintera's unsigned 64-bit range; a negative id is a ConfigurationError unless
    ``reserved="accept"``, which reads it as its two's-complement uint64 (-1 TRANSPARENT,
    -2 INVALID, -3 OUTSIDE), as :meth:`LabelMultisetArray.from_labels` does.

    >>> as_ids([1.5])
    Traceback (most recent call last):
    ...
    n5mscodecs.errors.InputTypeError: ids: labels must be integers, got 1.5 (float)
    >>> as_ids([-1], reserved="accept")
    array([18446744073709551615], dtype=uint64)
    """
    if reserved not in RESERVED_RULES:
        raise ConfigurationError(f"reserved must be one of {RESERVED_RULES}, got {reserved!r}")
    if isinstance(ids, np.ndarray) and ids.dtype == np.uint64:
        return ids.reshape(-1)
    # not np.asarray(list): numpy makes float64 of [-1, 2**64 - 1]
    array = ids if isinstance(ids, np.ndarray) else np.asarray(ids if isinstance(ids, list | tuple) else list(ids),
                                                                   dtype=object)
    if array.dtype.kind in "ub":
        return array.reshape(-1).astype(np.uint64)
    if array.dtype.kind == "i":
        flat = array.reshape(-1)
        if flat.size and int(flat.min()) < 0:
            _negative(int(flat.min()), reserved)
        return flat.astype(np.int64).view(np.uint64)
    if array.size == 0:
        return np.zeros(0, np.uint64)
    if array.dtype != object:
        first = array.reshape(-1)[0].item()
        raise InputTypeError(f"ids: labels must be integers, got {first!r} ({type(first).__name__})")
    values = array.reshape(-1).tolist()
    for value in values:
        if not isinstance(value, (int, np.integer)):
            raise InputTypeError(f"ids: labels must be integers, got {value!r} ({type(value).__name__})")
        value = int(value)
        if value >= _UINT64_END or value < -(1 << 63):
            raise ConfigurationError(f"ids: label {value} is outside the unsigned 64-bit ids")
        if value < 0:
            _negative(value, reserved)
    return np.array([int(v) % _UINT64_END for v in values], np.uint64)


def _negative(smallest: int, reserved: ReservedRule) -> None:
    if reserved != "accept":
        raise ConfigurationError(
            f"ids: a negative label ({smallest}); Paintera's ids are unsigned 64-bit: pass reserved='accept' "
            "to read it as two's-complement uint64 (-1 TRANSPARENT, -2 INVALID, -3 OUTSIDE)")
