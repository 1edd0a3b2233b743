"""Paintera's fragment-segment assignment: which fragments (the ids stored in the label data)
a person merged into which segments (what Paintera shows).

Paintera keeps the lookup in an N5 dataset beside the labels, written by its
``N5FragmentSegmentAssignmentPersister``:

- ``SOURCE/fragment-segment-assignment`` for a Paintera label source (the group with
  ``painteraData``), also when what is opened is its ``data`` group or a level ``data/sK``;
- ``X.fragment-segment-assignment`` beside a plain dataset or multiscale group ``X`` (the
  older sibling form of Paintera's earlier N5 helpers).

The dataset is uint64, dimensions ``[n, 2]``, block size ``[max(n, 1), 1]``, gzip (Java's
default: level -1), in two default-mode blocks: ``0/0`` holds the ``n`` fragment ids,
``0/1`` their segment ids. An absent or empty dataset is the identity. Ids not in the
lookup map to themselves.

:class:`~n5mscodecs.paintera.FragmentSegmentAssignment` is the lookup as a frozen value
(sorted fragment ids and their segment ids, applied to uint64 arrays with
``np.searchsorted``); its ``merge``, ``detach`` and ``assign`` return new values with
Paintera's semantics. :func:`~n5mscodecs.paintera.read_assignment` and
:func:`~n5mscodecs.paintera.write_assignment` read and write the dataset;
:class:`~n5mscodecs.paintera.IdAllocator` hands out new segment ids above the source's
``maxId`` and raises it, as Paintera's ``N5IdService`` does;
:func:`~n5mscodecs.paintera.merge_fragments` and :func:`~n5mscodecs.paintera.detach_fragments`
do all three under the source's writer lock.

>>> lookup = FragmentSegmentAssignment.from_pairs({1: 10, 2: 10, 3: 7})
>>> lookup(np.array([0, 1, 2, 3, 4], np.uint64)).tolist()
[0, 10, 10, 7, 4]
>>> lookup.merge(3, 4, new_segment_id=11).to_dict()
{1: 10, 2: 10, 3: 7, 4: 7}
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigurationError, StorageError
from ..n5 import dataset as _n5_dataset
from ..n5.block import ArrayBlockCodec
from ..n5.metadata import DatasetMetadata
from ..n5.storage import ATTRIBUTES
from ..n5.writing import (
    LOCK_NAME,
    WriterLock,
    check_complete,
    incomplete_marker,
    mark_complete,
    write_container_version,
    write_marked,
)
from .assignment_text import LONG_MIN as _LONG_MIN
from .assignment_text import as_id as _id
from .assignment_text import parse_assignment_file, parse_pair
from .cluster import once_per_process
from .conventions import is_label_source, source_store

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from ..n5.storage import PathLike, StorageOptions
    from ..n5.store import Store

    Pairs = Mapping[int, int] | Iterable[tuple[int, int]]

#: The dataset name inside a Paintera label source.
ASSIGNMENT_DATASET = "fragment-segment-assignment"
#: The suffix of the older sibling form ``X.fragment-segment-assignment``.
SIBLING_SUFFIX = "." + ASSIGNMENT_DATASET
#: The compression Paintera's persister writes (Java's ``new GzipCompression()``).
PAINTERA_COMPRESSION = {"type": "gzip", "level": -1, "useZlib": False}
_U64 = np.dtype(np.uint64)
_WRITER = "n5mscodecs.paintera.write_assignment"
_FINISH = "finish it by writing the assignment again (paintera.write_assignment)"
_INVALID = 0xFFFF_FFFF_FFFF_FFFE  # Label.INVALID: what Paintera compares an unassigned fragment as


def _signed(value: int) -> int:
    """A uint64 id as Java's long compares it."""
    return value - (1 << 64) if value >= _LONG_MIN else value


@dataclass(frozen=True, eq=False)
class FragmentSegmentAssignment:
    """A fragment -> segment lookup: ``fragments`` (sorted, distinct uint64 ids) and the
    ``segments`` they belong to (uint64). Ids not in ``fragments`` map to themselves.

    Make one with :meth:`from_pairs` or :func:`~n5mscodecs.paintera.read_assignment`; apply it with
    ``lookup(labels)`` (:meth:`apply`). Values are immutable: the editing methods
    return new ones.
    """

    fragments: np.ndarray
    segments: np.ndarray

    def __post_init__(self) -> None:
        fragments = np.ascontiguousarray(self.fragments, _U64).reshape(-1)
        segments = np.ascontiguousarray(self.segments, _U64).reshape(-1)
        if fragments.shape != segments.shape:
            raise ConfigurationError(f"segments: {segments.size} segment ids for {fragments.size} fragments")
        if fragments.size > 1 and not bool(np.all(fragments[1:] > fragments[:-1])):
            raise ConfigurationError("fragments: must be sorted and distinct (use from_pairs)")
        fragments.flags.writeable = False
        segments.flags.writeable = False
        object.__setattr__(self, "fragments", fragments)
        object.__setattr__(self, "segments", segments)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def identity(cls) -> FragmentSegmentAssignment:
        """The empty lookup: every id maps to itself."""
        return cls(np.empty(0, _U64), np.empty(0, _U64))

    @classmethod
    def from_pairs(cls, pairs: Pairs | FragmentSegmentAssignment) -> FragmentSegmentAssignment:
        """A lookup from a mapping ``{fragment: segment}`` or ``(fragment, segment)`` pairs
        (a later pair for the same fragment wins, as Java's map keeps the last). Negative
        ids are read as Java's longs (two's complement)."""
        if isinstance(pairs, FragmentSegmentAssignment):
            return pairs
        items = pairs.items() if isinstance(pairs, Mapping) else pairs
        table: dict[int, int] = {}
        for index, pair in enumerate(items):
            try:
                fragment, segment = pair
            except (TypeError, ValueError):
                raise ConfigurationError(f"pair {index}: expected (fragment, segment), got {pair!r}") from None
            table[_id(fragment, f"pair {index}: fragment")] = _id(segment, f"pair {index}: segment")
        return cls._from_dict(table)

    @classmethod
    def from_arrays(cls, fragments: np.ndarray, segments: np.ndarray) -> FragmentSegmentAssignment:
        """A lookup from two equal-length id arrays as Paintera stores them (any order; for a
        repeated fragment the last pair wins)."""
        fragments = np.asarray(fragments).astype(_U64, copy=False).reshape(-1)
        segments = np.asarray(segments).astype(_U64, copy=False).reshape(-1)
        if fragments.shape != segments.shape:
            raise ConfigurationError(f"segments: {segments.size} segment ids for {fragments.size} fragments")
        # the last occurrence of each fragment: unique of the reversed arrays keeps the first
        reverse_unique, reverse_index = np.unique(fragments[::-1], return_index=True)
        return cls(reverse_unique, segments[::-1][reverse_index])

    @classmethod
    def _from_dict(cls, table: Mapping[int, int]) -> FragmentSegmentAssignment:
        keys = sorted(table)
        return cls(np.array(keys, _U64), np.array([table[k] for k in keys], _U64))

    # -- queries -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.fragments.size)

    def __bool__(self) -> bool:
        """Whether some fragment maps to another id (False for the identity)."""
        return bool(np.any(self.fragments != self.segments))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FragmentSegmentAssignment):
            return NotImplemented
        return bool(np.array_equal(self.fragments, other.fragments) and np.array_equal(self.segments, other.segments))

    def __hash__(self) -> int:
        return hash((self.fragments.tobytes(), self.segments.tobytes()))

    def __dask_tokenize__(self) -> tuple[str, str]:
        return ("FragmentSegmentAssignment", self.token)

    @property
    def token(self) -> str:
        """A hash of the pairs (computed once)."""
        if "_token" not in self.__dict__:
            digest = hashlib.blake2b(self.fragments.tobytes(), digest_size=20)
            digest.update(self.segments.tobytes())
            object.__setattr__(self, "_token", digest.hexdigest())
        return self.__dict__["_token"]

    def __reduce__(self) -> tuple[Any, ...]:
        # one read from a store pickles as where it is and its hash: a dask graph or task that
        # applies it stays small, and each process reads it once (a changed one is refused)
        origin = self.__dict__.get("_origin")
        if origin is None:
            return (FragmentSegmentAssignment, (self.fragments, self.segments))
        if not isinstance(self, _StoredAssignment):   # (one not read yet is passed on as it came)
            _pickled_here[self.token] = self   # unpickled in this process: this very one
        return (_StoredAssignment, (origin, self.token))

    def __repr__(self) -> str:
        return f"FragmentSegmentAssignment({self.mapped_fragments} fragments -> {self.segment_count} segments)"

    def to_dict(self) -> dict[int, int]:
        """``{fragment: segment}`` of every stored pair."""
        return dict(zip(self.fragments.tolist(), self.segments.tolist()))

    def segment(self, fragment: int) -> int:
        """The segment of ``fragment`` (itself when it is not in the lookup)."""
        fragment = _id(fragment, "fragment")
        index = int(np.searchsorted(self.fragments, np.uint64(fragment)))
        if index < self.fragments.size and int(self.fragments[index]) == fragment:
            return int(self.segments[index])
        return fragment

    def fragments_of(self, segment: int) -> set[int]:
        """The fragments Paintera counts in ``segment``: those mapped to it, and the segment id
        itself (as Paintera's inverse lookup holds it)."""
        segment = _id(segment, "segment")
        return {segment, *self.fragments[self.segments == np.uint64(segment)].tolist()}

    @property
    def mapped_fragments(self) -> int:
        """How many fragments map to an id other than their own."""
        return int(np.count_nonzero(self.fragments != self.segments))

    @property
    def segment_count(self) -> int:
        """How many distinct segments the mapped fragments map into."""
        return int(np.unique(self.segments[self.fragments != self.segments]).size)

    def describe(self) -> str:
        """``"12 fragments mapped into 5 segments"``."""
        n, m = self.mapped_fragments, self.segment_count
        return f"{n} fragment{'s' * (n != 1)} mapped into {m} segment{'s' * (m != 1)}"

    # -- applying ----------------------------------------------------------------------------

    def apply(self, labels: Any, *, in_place: bool = False) -> np.ndarray:
        """``labels`` (any integer array; signed ids read as their uint64 bit patterns) with
        every fragment replaced by its segment, as uint64 of the same shape.

        ``in_place=True`` writes into ``labels`` when it is a writable C- or F-contiguous (N5's
        voxel order) uint64 array (else a new array is returned, as without it)."""
        array = np.asarray(labels)
        if array.dtype.kind not in "iu":
            raise ConfigurationError(f"labels: integer ids required, got dtype {array.dtype}")
        contiguous = array.flags.c_contiguous or array.flags.f_contiguous
        reuse = in_place and array.dtype == _U64 and contiguous and array.flags.writeable
        result = array if reuse else np.array(array, dtype=_U64, order="C")
        if not self.fragments.size or not result.size:
            return result
        # every voxel once, in memory order (a view: the mapping is voxel by voxel)
        flat = (result if result.flags.c_contiguous else result.T).reshape(-1)
        # labels come in runs (a segmentation is piecewise constant): look up one id per run,
        # and nothing at all is written when no run holds a fragment of the lookup
        starts = np.flatnonzero(flat[1:] != flat[:-1])
        if 4 * starts.size < flat.size:
            starts += 1
            starts = np.concatenate((np.zeros(1, starts.dtype), starts))
            values = flat[starts]
            mapped, hit = self._lookup(values)
            if hit.any():
                lengths = np.diff(np.append(starts, flat.size))
                flat[...] = np.repeat(mapped, lengths)
            return result
        mapped, hit = self._lookup(flat)  # noise-like labels: one lookup per voxel
        if hit.any():
            np.copyto(flat, mapped, where=hit)
        return result

    def _lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(segments or the values themselves, which were fragments)`` of a 1-d uint64 array."""
        index = np.searchsorted(self.fragments, values)
        np.minimum(index, self.fragments.size - 1, out=index)
        hit = self.fragments[index] == values
        return np.where(hit, self.segments[index], values), hit

    __call__ = apply

    # -- editing (Paintera's semantics) ------------------------------------------------------

    def assign(self, fragment: int, segment: int) -> FragmentSegmentAssignment:
        """A new lookup with ``fragment -> segment`` set (removed when ``segment == fragment``);
        no other fragment moves (what ``--additional-assignment k=v`` does)."""
        table = self.to_dict()
        fragment, segment = _id(fragment, "fragment"), _id(segment, "segment")
        if fragment == segment:
            table.pop(fragment, None)
        else:
            table[fragment] = segment
        return self._from_dict(table)

    def updated(self, pairs: Pairs) -> FragmentSegmentAssignment:
        """A new lookup with ``pairs`` set over this one (a pair wins over a stored one; pairs are
        not chained through the stored lookup)."""
        table = self.to_dict()
        table.update(FragmentSegmentAssignment.from_pairs(pairs).to_dict())
        return self._from_dict(table)

    def merge(self, fragment1: int, fragment2: int,
              new_segment_id: int | Callable[[], int]) -> FragmentSegmentAssignment:
        """A new lookup with the segments of ``fragment1`` and ``fragment2`` merged, as Paintera's
        ``FragmentSegmentAssignmentOnlyLocal`` merges them after loading this lookup:

        - same segment already (or the same fragment): unchanged;
        - the segment kept is the one of the fragment whose segment id is larger, compared as
          Java's signed longs, with an unassigned fragment counting as ``Label.INVALID``
          (-2); on a tie (both unassigned) ``fragment2``'s side is kept;
        - when the kept side is an unassigned fragment, it gets a new segment id:
          ``new_segment_id`` (an int, or a callable asked only then, e.g.
          :meth:`IdAllocator.next`);
        - every fragment of the other segment moves into the kept one, the other segment's
          id included (Paintera's inverse lookup counts a segment id among its fragments).
        """
        first, second = _id(fragment1, "fragment1"), _id(fragment2, "fragment2")
        table = self.to_dict()
        if first == second or table.get(first, first) == table.get(second, second):
            return self

        def rank(fragment):
            own = table.get(fragment, fragment)
            return _signed(_INVALID if own == fragment else own)

        into, source = (second, first) if rank(second) >= rank(first) else (first, second)
        if table.get(into, into) == into:
            allocated = new_segment_id() if callable(new_segment_id) else new_segment_id
            table[into] = _id(allocated, "new_segment_id")
        target = table[into]
        source_segment = table.get(source, source)
        # the source segment's fragments as Paintera's inverse lookup holds them after loading the
        # lookup: every fragment mapped to it and the segment id itself; none: the source alone
        members = [f for f, s in table.items() if s == source_segment]
        for fragment in ([*members, source_segment] if members else [source]):
            table[fragment] = target
        return self._from_dict(table)

    def detach(self, fragment: int, from_fragment: int | None = None) -> FragmentSegmentAssignment:
        """A new lookup with ``fragment`` back to itself (its own segment), as Paintera's Detach:
        with ``from_fragment`` only when both are in the same segment (else unchanged).
        Other fragments keep their segment, even when one is left alone in it."""
        fragment = _id(fragment, "fragment")
        table = self.to_dict()
        if fragment not in table:
            return self
        if from_fragment is not None and table.get(_id(from_fragment, "from_fragment")) != table[fragment]:
            return self
        del table[fragment]
        return self._from_dict(table)


# ---------------------------------------------------------------------------------------------
# where the dataset is


def _parent(store: Store) -> Store | None:
    try:
        return store.parent()
    except Exception:  # a bucket or root: nothing above it
        return None


def _owner(store: Store) -> tuple[Store, Store]:
    """``(source, assignment dataset)`` stores for what lies at ``store``: the Paintera label
    source above a level or ``data`` group (or the source itself), else ``X`` and its
    sibling ``X.fragment-segment-assignment``."""
    attributes = store.get_attributes()
    if is_label_source(attributes):
        return store, store.child(ASSIGNMENT_DATASET)
    parent = _parent(store)
    if parent is not None:
        if store.name == "data" and is_label_source(parent.get_attributes()):
            return parent, parent.child(ASSIGNMENT_DATASET)
        grandparent = _parent(parent)
        if (grandparent is not None and parent.name == "data" and "dimensions" in attributes
                and is_label_source(grandparent.get_attributes())):
            return grandparent, grandparent.child(ASSIGNMENT_DATASET)
        if "dimensions" in attributes and parent.get_attributes().get("multiScale") and grandparent is not None:
            sibling = grandparent.child(parent.name + SIBLING_SUFFIX)
            if sibling.exists():  # a level of a multiscale group X: X's sibling
                return parent, sibling
        return store, parent.child(store.name + SIBLING_SUFFIX)
    raise ConfigurationError(f"{store.display()}: no place for a fragment-segment-assignment (nothing above it)")


def assignment_location(source: PathLike | Store, *, storage_options: StorageOptions = None) -> str:
    """Where the fragment-segment-assignment of ``source`` is (or would be written): see the
    module notes. ``source`` is a Paintera label source, its ``data`` group or a level
    ``data/sK``, or another dataset or multiscale group ``X``."""
    return _owner(source_store(source, storage_options))[1].url()


def _read_dataset(store: Store) -> FragmentSegmentAssignment:
    """The lookup in the dataset ``store``, read block by block with the store (not through
    :mod:`n5mscodecs.n5`'s datasets, whose ``to_dask`` resolves assignments with this module)."""
    where = store.display()
    attributes = store.get_attributes()
    if "dimensions" not in attributes:
        raise ConfigurationError(f"{where}: a fragment-segment-assignment must be an N5 dataset (no dimensions)")
    check_complete(attributes, where)
    metadata = DatasetMetadata.from_json(attributes, where)
    if metadata.label_multiset or metadata.dtype.kind not in "iu":
        kind = "label multisets" if metadata.label_multiset else f"dataType {metadata.dtype}"
        raise ConfigurationError(f"{where}: dataType: a fragment-segment-assignment holds integer ids, not {kind}")
    if metadata.ndim != 2 or metadata.shape[1] != 2:
        raise ConfigurationError(
            f"{where}: dimensions: a fragment-segment-assignment is [n, 2] (fragments, segments), "
            f"got {list(metadata.shape)}")
    table = _table(store, metadata)
    found = FragmentSegmentAssignment.from_arrays(table[:, 0], table[:, 1])
    object.__setattr__(found, "_origin", store)   # (see FragmentSegmentAssignment.__reduce__)
    return found


#: the assignments read from a store that this process pickled, by token (see __reduce__)
_pickled_here: weakref.WeakValueDictionary[str, FragmentSegmentAssignment] = weakref.WeakValueDictionary()


class _StoredAssignment(FragmentSegmentAssignment):
    """An assignment read from a store, as an unpickled graph or task holds it: its pairs are
    the very ones pickled when this process pickled them, else read on first use, once per
    process (a scheduler that only passes it on never reads them), and refused when the store
    holds other pairs by then."""

    def __init__(self, store: Store, token: str) -> None:   # (no pairs yet: not the dataclass's)
        object.__setattr__(self, "_origin", store)
        object.__setattr__(self, "_token", token)

    def _pairs(self) -> FragmentSegmentAssignment:
        store, token = self.__dict__["_origin"], self.__dict__["_token"]
        here = _pickled_here.get(token)
        if here is not None:
            return here

        def read() -> FragmentSegmentAssignment:
            found = _read_dataset(store)
            if found.token != token:
                raise StorageError(f"{store.display()}: the fragment-segment-assignment changed after the view or "
                                   "job using it was made: make it again")
            return found
        return once_per_process(token, read)

    @property
    def fragments(self) -> np.ndarray:
        return self._pairs().fragments

    @property
    def segments(self) -> np.ndarray:
        return self._pairs().segments


def _table(store: Store, metadata: DatasetMetadata) -> np.ndarray:
    """The ``[n, 2]`` rows of the dataset ``store``, in order. Every block of the grid must be
    stored and hold all its rows, as Java's reader (``N5FragmentSegmentAssignmentInitialLut``)
    needs them: a missing or short block is a ConfigurationError naming the dataset and the
    block (before issue 51 it read as zeros: fragments mapped to 0, 0 to a segment, pairs lost).
    Blocks are read one at a time, so a dataset claiming pairs it does not store is refused at
    its first missing block, before its rows are allocated."""
    n, (rows, columns) = metadata.shape[0], metadata.chunks
    codec = ArrayBlockCodec(metadata)
    parts = []
    for i in range(-(-n // rows)):
        length = min(rows, n - i * rows)
        part = np.empty((length, 2), metadata.dtype)
        for j in range(-(-2 // columns)):
            width, key = min(columns, 2 - j * columns), f"{i}/{j}"
            data = store.get(key, max_size=codec.max_block_bytes())
            where = f"{store.display()}: block {key} ({'fragments' if j * columns == 0 else 'segments'})"
            if data is None:
                raise ConfigurationError(f"{where}: missing; a fragment-segment-assignment of {n} pairs needs "
                                         "every block (Java's reader fails too)")
            try:
                block = codec.decode(data, varlength=False)
            except ValueError as exc:  # N5HeaderError, CompressionError: named with the block
                raise ConfigurationError(f"{where}: {exc}") from None
            if block.shape[0] < length or block.shape[1] < width:
                raise ConfigurationError(f"{where}: header dims {list(block.shape)}, short of the "
                                         f"{[length, width]} of {n} pairs it must hold")
            part[:, j * columns:j * columns + width] = block[:length, :width]
        parts.append(part)
    return np.concatenate(parts) if parts else np.zeros((0, 2), metadata.dtype)


def read_assignment(source: PathLike, *, storage_options: StorageOptions = None) -> FragmentSegmentAssignment:
    """The fragment-segment-assignment of ``source`` (the identity when it has none).

    Raises
    ------
    ConfigurationError
        The dataset is not ``[n, 2]`` integers (the message names the field), or is being
        written (its subclass ``IncompleteError``).
    """
    _, dataset = _owner(source_store(source, storage_options))
    if not dataset.exists():
        return FragmentSegmentAssignment.identity()
    return _read_dataset(dataset)


def find_assignment(store: Store) -> FragmentSegmentAssignment | None:
    """The stored assignment of what lies at ``store``, or None when there is none (absent or
    empty); a malformed one raises."""
    try:
        _, dataset = _owner(store)
    except ConfigurationError:
        return None
    if not dataset.exists():
        return None
    found = _read_dataset(dataset)
    return found if len(found) else None


def resolve_assignment(store: Store | PathLike,
                       assignment: str | bool | Mapping[int, int] | FragmentSegmentAssignment | None = "auto",
                       additional_assignment: Pairs | None = None, *,
                       storage_options: StorageOptions = None) -> FragmentSegmentAssignment | None:
    """The lookup an export applies, or None for raw fragments.

    ``assignment``: ``"auto"`` (what the source stores, see :func:`~n5mscodecs.paintera.assignment.find_assignment`),
    ``None``/``False`` (none), ``True`` (as ``"auto"``), a :class:`FragmentSegmentAssignment` or
    a mapping ``{fragment: segment}``. ``additional_assignment`` pairs are set over it (also
    over none)."""
    if isinstance(assignment, str):
        if assignment != "auto":
            raise ConfigurationError(f"assignment: 'auto', None, an assignment or a mapping; got {assignment!r}")
        assignment = True
    if assignment is True:
        found = find_assignment(source_store(store, storage_options))
    elif assignment is None or assignment is False:
        found = None
    elif isinstance(assignment, (FragmentSegmentAssignment, Mapping)):
        found = FragmentSegmentAssignment.from_pairs(assignment)
    else:
        raise ConfigurationError(
            f"assignment: 'auto', None, an assignment or a mapping; got {type(assignment).__name__}")
    if additional_assignment:
        found = (found or FragmentSegmentAssignment.identity()).updated(additional_assignment)
    return found if found is not None and len(found) else None


# ---------------------------------------------------------------------------------------------
# writing


def _write_dataset(dataset: Store, assignment: FragmentSegmentAssignment) -> None:
    """Paintera's layout: dimensions [n, 2], blockSize [max(n, 1), 1], gzip, blocks 0/0 and 0/1.
    Marked incomplete before anything changes; the old dataset's blocks go first. The container
    root gets the N5 version, as Java's writers give it."""
    n = len(assignment)
    if dataset.list_dir() and "dimensions" not in dataset.get_attributes():
        raise ConfigurationError(f"{dataset.display()}: refusing to overwrite something that is not an N5 dataset")
    metadata = DatasetMetadata.array((n, 2), (max(n, 1), 1), _U64, PAINTERA_COMPRESSION)
    codec = ArrayBlockCodec(metadata)
    root = dataset.container_root()
    write_marked(dataset, metadata.to_json(), incomplete_marker(_WRITER, _FINISH))
    dataset.clear("", {ATTRIBUTES, LOCK_NAME})
    write_container_version(root)
    # Java writes both blocks, also the zero-length ones of an empty lookup (outside the grid [0, 2])
    for column, ids in enumerate((assignment.fragments, assignment.segments)):
        dataset.set(f"0/{column}", codec.encode(ids.reshape(n, 1)))
    mark_complete(dataset)


def write_assignment(source: PathLike, assignment: FragmentSegmentAssignment | Pairs, *,
                     storage_options: StorageOptions = None) -> str:
    """Write ``assignment`` as the fragment-segment-assignment of ``source`` in Paintera's layout
    (see the module notes), replacing the stored one; returns the dataset's location.

    Holds the source's writer lock (:class:`~n5mscodecs.n5.writing.WriterLock`, as ``n5ms``
    writers do) and marks the dataset incomplete before its first byte changes, so an
    interrupted write leaves a dataset every reader of this package refuses.
    """
    assignment = FragmentSegmentAssignment.from_pairs(assignment)
    owner, dataset = _owner(source_store(source, storage_options))
    with WriterLock(owner):
        _write_dataset(dataset, assignment)
    return dataset.url()


#: How long :meth:`IdAllocator.next` waits for another writer of the source to release its lock.
ID_LOCK_WAIT_SECONDS = 30.0


class IdAllocator:
    """New segment ids for a source, as Paintera's ``N5IdService`` hands them out: the next id
    is ``maxId + 1`` and ``maxId`` (the source's attribute) is raised to it at once. A
    ``maxId`` of 0 counts as 1 (Paintera never hands out 0 or 1 then); a source without
    ``maxId`` is refused (Paintera asks for one). Each id is read and written under the
    source's writer lock (waiting up to ``ID_LOCK_WAIT_SECONDS``, 30 s, for another writer), from
    the ``maxId`` stored then: allocators in other threads or processes, and merges, never
    get the same id."""

    def __init__(self, source: PathLike | Store, *, storage_options: StorageOptions = None) -> None:
        self.store = _owner(source_store(source, storage_options))[0]
        self.current = self._stored()

    def _stored(self) -> int:
        value = self.store.get_attributes().get("maxId")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigurationError(f"{self.store.display()}: maxId: new segment ids need an integer maxId "
                                     f"attribute (Paintera's id service), got {value!r}")
        return _id(value, "maxId") or 1  # Paintera's id service never stays at 0

    def next(self) -> int:
        """A new id: ``maxId`` as stored now, plus one; ``maxId`` is raised to it (as Java's
        long) before the lock is released."""
        with WriterLock(self.store, reuse=True, wait=ID_LOCK_WAIT_SECONDS):
            self.current = (self._stored() + 1) % (1 << 64)
            self.store.set_attributes("", {**self.store.get_attributes(), "maxId": _signed(self.current)})
        return self.current


def _edit(owner, dataset, change):
    """``change(current lookup, new id)`` written under the writer lock of the source ``owner``."""
    with WriterLock(owner):
        current = _read_dataset(dataset) if dataset.exists() else FragmentSegmentAssignment.identity()
        allocator: list[IdAllocator] = []

        def new_id():
            if not allocator:
                allocator.append(IdAllocator(owner))
            return allocator[0].next()

        updated = change(current, new_id)
        if updated != current or not dataset.exists():
            _write_dataset(dataset, updated)
    return updated


def merge_fragments(source: PathLike, fragments: Iterable[int], *,
                    storage_options: StorageOptions = None) -> FragmentSegmentAssignment:
    """Merge ``fragments`` into one segment in the stored assignment of ``source`` (pair by pair,
    ``merge(first, each)`` with :meth:`~n5mscodecs.paintera.FragmentSegmentAssignment.merge`'s rules), allocating a new
    segment id with :class:`IdAllocator` when Paintera would, and write the result under the
    source's writer lock. Returns the new assignment."""
    ids = [_id(f, "fragments") for f in fragments]

    def change(current, new_id):
        for other in ids[1:]:
            current = current.merge(ids[0], other, new_id)
        return current
    return _edit(*_owner(source_store(source, storage_options)), change)


def detach_fragments(source: PathLike, fragments: Iterable[int], *,
                     storage_options: StorageOptions = None) -> FragmentSegmentAssignment:
    """Detach each of ``fragments`` from its segment (back to itself) in the stored assignment
    of ``source`` and write the result under the source's writer lock."""
    ids = [_id(f, "fragments") for f in fragments]

    def change(current, _new_id):
        for fragment in ids:
            current = current.detach(fragment)
        return current
    return _edit(*_owner(source_store(source, storage_options)), change)


def assign_fragments(source: PathLike, pairs: Pairs, *,
                     storage_options: StorageOptions = None) -> FragmentSegmentAssignment:
    """Set ``{fragment: segment}`` pairs in the stored assignment of ``source`` (no other fragment
    moves) and write the result under the source's writer lock; ``maxId`` is raised to cover
    the segment ids, so that Paintera never hands one of them out again."""
    table = FragmentSegmentAssignment.from_pairs(pairs)

    def change(current, _new_id):
        return current.updated(table)
    owner, dataset = _owner(source_store(source, storage_options))
    updated = _edit(owner, dataset, change)
    if len(table):
        _raise_max_id(owner, int(table.segments.max()))
    return updated


def _raise_max_id(owner, value):
    with WriterLock(owner, wait=ID_LOCK_WAIT_SECONDS):   # compared with maxId as stored under the lock
        attributes = owner.get_attributes()
        current = attributes.get("maxId")
        if isinstance(current, int) and not isinstance(current, bool) and _signed(value) > current:
            owner.set_attributes("", {**attributes, "maxId": _signed(value)})


__all__ = ["ASSIGNMENT_DATASET", "PAINTERA_COMPRESSION", "SIBLING_SUFFIX", "FragmentSegmentAssignment",
           "IdAllocator", "assign_fragments", "assignment_location", "detach_fragments", "find_assignment",
           "merge_fragments", "parse_assignment_file", "parse_pair", "read_assignment", "resolve_assignment",
           "write_assignment"]


# n5 datasets' to_dask(assignment="auto") resolves through this module: n5 sits below paintera
# and does not import it, so the resolver is handed down here
_n5_dataset.assignment_resolver = resolve_assignment
