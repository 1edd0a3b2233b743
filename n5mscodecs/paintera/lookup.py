"""Paintera's label-to-block-mapping: which blocks hold each id, made from the unique-labels
datasets and read as Paintera's ``LabelBlockLookupFromN5`` does."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from ..errors import ConfigurationError, LookupFormatError
from ..n5.writing import check_complete
from .conventions import source_store

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any

    from ..n5 import ArrayDataset
    from ..n5.storage import PathLike
    from ..n5.store import Store

LABEL_BLOCK_LOOKUP = {"type": "n5-filesystem-relative", "scaleDatasetPattern": "label-to-block-mapping/s%d"}
LOOKUP_DIMENSION = 2**63 - 1   # the label-to-block-mapping datasets span every uint63 id
MAPPING_WRITER = "the label-to-block-mapping writer"
MAPPING_HINT = ("finish it by running the writer that was interrupted again (n5ms convert --resume, n5ms commit, "
                "or paintera.write_label_to_block_mapping)")


def _mapping_dataset(store, level, lookup_block_size, compression):
    key = f"label-to-block-mapping/s{level}"
    return n5.ArrayDataset(store.url(key), {"dataType": "int8", "compression": compression,
                                            "blockSize": [lookup_block_size], "dimensions": [LOOKUP_DIMENSION]},
                           store=store.child(key))


def block_labels(unique_labels: ArrayDataset) -> tuple[np.ndarray, np.ndarray]:
    """(labels, grid positions) of every unique-labels block on disk, as flat arrays, read in
    this process (the blocks found by listing; :mod:`~n5mscodecs.paintera.mapping_build` reads
    them as tasks)."""
    return pairs_of_blocks(unique_labels, unique_labels.present_blocks())[:2]


def pairs_of_blocks(unique_labels: ArrayDataset,
                    positions: Iterable[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray, int]:
    """(labels, grid positions, blocks read) of the unique-labels blocks at ``positions`` that
    exist; positions outside the dataset's grid (stray names in a listing) are skipped."""
    labels, grids, read = [], [], 0
    grid_shape = unique_labels.grid_shape
    for grid in positions:
        if len(grid) != len(grid_shape) or any(g >= n for g, n in zip(grid, grid_shape)):
            continue
        values = unique_labels.read_block(grid)
        if values is not None:
            read += 1
            labels.append(values)
            grids.append(np.tile(np.array(grid, np.int64), (values.size, 1)))
    if not labels:
        return np.zeros(0, np.uint64), np.zeros((0, unique_labels.ndim), np.int64), read
    return np.concatenate(labels), np.concatenate(grids), read


def label_to_block_mapping_blocks(unique_labels: ArrayDataset, lookup_block_size: int) -> dict[int, bytes]:
    """``{file number: bytes}``: the uncompressed mapping files for one level.

    File ``n`` lists the ids ``n * lookup_block_size ...`` found in some
    block, ascending: int64 id, int32 number of blocks, then per block its
    interval (int64 min per axis, int64 inclusive max per axis), big-endian.
    """
    labels, grids = block_labels(unique_labels)
    return dict(mapping_files(labels, grids, unique_labels.chunks, unique_labels.shape, lookup_block_size))


def mapping_files(labels: np.ndarray, grids: np.ndarray, block_size: Sequence[int], shape: Sequence[int],
                  lookup_block_size: int) -> Iterator[tuple[int, bytes]]:
    """``(file number, bytes)`` of the mapping files holding the (id, block) pairs ``labels``,
    ``grids`` (in any order; every pair of the files' ids), file numbers ascending (see
    :func:`label_to_block_mapping_blocks`); a file's bytes are made when it is reached."""
    # Paintera finds an id's file as a Java long divided by the block size, in a dataset
    # spanning [0, 2**63 - 1]: ids >= 2**63 (negative longs, the reserved ones included)
    # can have no file there
    listed = labels < np.uint64(LOOKUP_DIMENSION + 1)
    labels, grids = labels[listed], grids[listed]
    if not labels.size:
        return
    order = np.lexsort(grids.T[::-1].tolist() + [labels])
    labels, grids = labels[order], grids[order]
    block = np.array(block_size, np.int64)
    minima = grids * block
    maxima = np.minimum(minima + block, np.array(shape, np.int64)) - 1
    intervals = np.concatenate([minima, maxima], axis=1).astype(">i8")
    starts = np.flatnonzero(np.concatenate([[True], labels[1:] != labels[:-1]]))
    stops = np.append(starts[1:], labels.size)
    current, parts = -1, list[bytes]()
    for start, stop in zip(starts.tolist(), stops.tolist()):
        label = int(labels[start])
        number = label // lookup_block_size
        if number != current and parts:
            yield current, b"".join(parts)
            parts = []
        current = number
        parts.append(struct.pack(">qi", label, stop - start) + intervals[start:stop].tobytes())
    yield current, b"".join(parts)


def patch_label_to_block_mapping(
    store: Store, level: int, changes: dict[int, tuple[set, set]], unique_labels: ArrayDataset,
    lookup_block_size: int, compression: dict[str, Any],
) -> int:
    """Patch ``label-to-block-mapping/s{level}`` for the ids whose blocks changed:
    ``changes`` maps an id to ``(grid positions it left, grid positions it entered)``.
    Only the files holding those ids are read and rewritten (a file left without ids is
    removed), each as :func:`~n5mscodecs.paintera.label_to_block_mapping_blocks` would write it from scratch:
    ids ascending, each id's blocks in grid order; the entries of other ids are kept as
    bytes. Returns the number of files touched."""
    mapping = _mapping_dataset(store, level, lookup_block_size, compression)
    ndim = unique_labels.ndim
    block = np.array(unique_labels.chunks, np.int64)
    shape = np.array(unique_labels.shape, np.int64)
    by_file = _files_of(changes, lookup_block_size)
    for number, labels in by_file.items():
        entries = _file_entries(mapping, number, ndim)
        for label in labels:
            left, entered = changes[label]
            entry = entries.pop(label, None)
            grids = set()
            if entry is not None:
                minima = np.frombuffer(entry, ">i8", offset=12).reshape(-1, 2 * ndim)[:, :ndim]
                grids = {tuple(row) for row in (minima // block).tolist()}
            grids = (grids - set(left)) | set(entered)
            if grids:
                minima = np.array(sorted(grids), np.int64).reshape(-1, ndim) * block
                maxima = np.minimum(minima + block, shape) - 1
                intervals = np.concatenate([minima, maxima], axis=1).astype(">i8")
                entries[label] = struct.pack(">qi", label, len(intervals)) + intervals.tobytes()
        if not entries:
            mapping.store.delete(mapping.block_key((number,)))
            continue
        body = b"".join(entries[label] for label in sorted(entries))
        mapping.write_varlength_block((number,), np.frombuffer(body, np.int8), dims=(lookup_block_size,))
    return len(by_file)


def _files_of(labels, lookup_block_size: int) -> dict[int, list[int]]:
    """``{file number: the ids of ``labels`` it holds}``; ids >= 2**63 have no file (see
    :func:`label_to_block_mapping_blocks`)."""
    by_file: dict[int, list[int]] = {}
    for label in labels:
        if 0 <= label <= LOOKUP_DIMENSION:
            by_file.setdefault(label // lookup_block_size, []).append(label)
    return by_file


def read_mapping_files(store: Store, level: int, labels, ndim: int, lookup_block_size: int,
                       compression: dict[str, Any]) -> dict[int, dict[int, bytes]]:
    """``{file number: {id: entry bytes}}`` of the files of ``label-to-block-mapping/s{level}``
    that hold ``labels`` (a missing file: no entries), read and parsed as
    :func:`patch_label_to_block_mapping` reads them: a file it could not patch raises here,
    naming it, so that a commit refuses before it marks or writes anything."""
    mapping = _mapping_dataset(store, level, lookup_block_size, compression)
    return {number: _file_entries(mapping, number, ndim) for number in sorted(_files_of(labels, lookup_block_size))}


def _file_entries(mapping, number: int, ndim: int) -> dict[int, bytes]:
    """``{id: entry bytes}`` of lookup file ``number`` (none when it is missing)."""
    body = mapping.read_block((number,))
    return {} if body is None else _mapping_entries(body.tobytes(), ndim, mapping.block_name((number,)))


def _mapping_entries(body: bytes, ndim: int, name: str) -> dict[int, bytes]:
    """``{id: the entry's bytes}`` of one label-to-block-mapping file, every count checked
    against the bytes left, without decoding the intervals (see :func:`parse_mapping_file`)."""
    entries, position, interval = {}, 0, 16 * ndim
    while position < len(body):
        if len(body) - position < 12:
            raise LookupFormatError(f"{name}: id and count at byte {position} need 12 bytes, "
                                    f"{len(body) - position} left")
        label, n = struct.unpack_from(">qi", body, position)
        end = position + 12 + n * interval
        if n < 0 or end > len(body):
            raise LookupFormatError(f"{name}: id {label} at byte {position}: count {n} of "
                                    f"{interval}-byte intervals does not fit the {len(body) - position - 12} "
                                    "bytes left")
        entries[label] = body[position:end]
        position = end
    return entries


def read_label_to_block_mapping(
    target: PathLike | Store, level: int, *, storage_options: dict[str, Any] | None = None
) -> dict[int, list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    """``{id: [(min, max), ...]}`` of a Paintera label source's ``label-to-block-mapping/s{level}``
    (intervals inclusive, N5 order), as Paintera's ``LabelBlockLookupFromN5`` reads it.
    ``target``: the source's location, store or group object.

    A mapping (or a ``data/s{level}``) marked incomplete by an interrupted writer is refused
    with :class:`~n5mscodecs.IncompleteError`, as every reader of the package refuses it."""
    store = source_store(target, storage_options)
    data_store = store.child(f"data/s{level}")
    data = data_store.get_attributes()
    check_complete(data, data_store.display())
    dimensions = data.get("dimensions", [0, 0, 0])
    if not isinstance(dimensions, list) or not 1 <= len(dimensions) <= 32:
        raise ConfigurationError(f"{data_store.display()}: attributes.json: "
                                 f"dimensions must be a list of 1..32 integers, got {dimensions!r}")
    ndim = len(dimensions)
    mapping = n5.open_dataset(store.child(f"label-to-block-mapping/s{level}"))
    if not isinstance(mapping, n5.ArrayDataset):
        raise ConfigurationError(f"{mapping.path}: label-to-block-mapping is a label multiset dataset")
    result = {}
    for name in mapping.store.list_dir():
        if not name.isdigit():
            continue
        body = mapping.read_block((int(name),))
        if body is not None:
            result.update(parse_mapping_file(body.tobytes(), ndim, mapping.block_name((int(name),))))
    return result


def parse_mapping_file(body: bytes, ndim: int, name: str) -> dict[int, list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    """``{id: [(min, max), ...]}`` of one label-to-block-mapping file's bytes (see
    :func:`label_to_block_mapping_blocks`); every count is checked against the bytes left,
    so a crafted file is a :class:`~n5mscodecs.LookupFormatError` naming ``name`` and the byte."""
    result = {}
    for label, entry in _mapping_entries(body, ndim, name).items():
        values = np.frombuffer(entry, ">i8", offset=12).reshape(-1, 2 * ndim)
        result[label] = [(tuple(int(x) for x in v[:ndim]), tuple(int(x) for x in v[ndim:])) for v in values]
    return result
