"""What an N5 container, group, Paintera label source or dataset holds, in words (what
``n5ms info`` prints): :func:`survey` describes the group and then, lazily, each dataset below
it, optionally reading and decoding every block.

>>> import tempfile, numpy as np
>>> from n5mscodecs import paintera
>>> target = tempfile.mkdtemp() + "/p.n5/labels"
>>> _ = paintera.convert(np.zeros((4, 4, 4), np.uint64), target, block_size=4)
>>> found = survey(target)
>>> found.heading[0]
'Paintera label source, maxId 0'
>>> [(entry.name, entry.description) for entry in found.datasets][0]
('data/s0', 'label multiset, shape [4, 4, 4], blocks [4, 4, 4], gzip, 0/1 blocks present')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import n5
from ..errors import ConfigurationError, IncompleteError, N5msCodecsError, StorageError
from ..n5.storage import ATTRIBUTES
from .cluster import engine_for, run_tasks
from .conventions import CONVERSION_KEY, source_store
from .lookup import LOOKUP_DIMENSION
from .mapping_build import spread_depth, subtrees
from .multiscale import interrupted

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    import distributed

    from ..n5.storage import PathLike, StorageOptions
    from ..n5.store import Store


@dataclass
class DatasetEntry:
    """One dataset as :func:`survey` found it."""

    path: str
    name: str                            # relative to the surveyed group; the display path for a dataset
    description: str | None = None       # kind, shape, blocks, compression, blocks present, ...
    incomplete: str | None = None        # an interrupted write's marker: how to finish it
    unreadable: str | None = None        # its attributes cannot be used
    first_block_problem: str | None = None
    blocks_checked: int = 0              # with ``check``: blocks read and decoded
    bad: list[str] = field(default_factory=list)   # what could not be read (with ``check``: every bad block)
    checked_on: str | None = None        # with ``check``: where the blocks were read (an Engine's description)


@dataclass
class Survey:
    """What :func:`survey` found at ``path``."""

    path: str
    heading: list[str] | None            # the group's lines (first: what it is); None for a dataset
    interrupted: bool                    # a group that an unfinished ``n5ms convert`` left
    datasets: Iterator[DatasetEntry]     # described one by one as they are iterated


def survey(path: PathLike | Store, *, check: bool = False, scheduler: str | distributed.Client | None = None,
           storage_options: StorageOptions = None) -> Survey:
    """Describe the N5 group or dataset at ``path`` and the datasets below it.

    Parameters
    ----------
    path : path or ~n5mscodecs.n5.store.Store
        An N5 container, group, Paintera label source or dataset: its location, its
        :class:`~n5mscodecs.n5.store.Store` or its N5 group or dataset object.
    check : bool
        Read and decode every block of every dataset (each bad one goes to
        :attr:`DatasetEntry.bad`); otherwise only each label multiset dataset's first block.
    scheduler : str or distributed.Client, optional
        Where ``check`` reads the blocks: a dask.distributed ``Client`` or scheduler address
        (tasks on its workers, which must reach ``path``), ``"threads"`` (local threads);
        default: the active dask client if there is one, else local threads (see
        :mod:`n5mscodecs.paintera.cluster`).
    storage_options : dict, optional
        fsspec options for a URL.

    Returns
    -------
    Survey
        Its ``datasets`` are described as they are iterated (a large container's first
        lines come early).

    Raises
    ------
    FileNotFoundError
        Nothing at ``path``.
    ConfigurationError
        ``path`` is a file, or holds nothing N5 (the message says what it is instead).
    """
    store = source_store(path, storage_options)  # opened once; the datasets below are its children
    path, name = store.url(), store.display()
    # a dataset is known by its attributes.json: a server without directory listings has no directories
    attributes = store.get_attributes() if store.exists(ATTRIBUTES) else {}
    if "dimensions" in attributes:
        return Survey(path, None, False, _entries([(store, name)], check, scheduler))
    if attributes and not store.can_list():
        raise ConfigurationError(f"{name}: the server gives no directory listings, so the datasets of this "
                                 "group cannot be found: name a dataset")
    if not store.is_directory():
        if store.exists():
            raise ConfigurationError(f"{name}: a file, not an N5 container")
        raise FileNotFoundError(f"{name}: no such directory")
    keys = list(n5.dataset_keys(store))
    if not attributes and not keys:
        raise ConfigurationError(f"{name}: {_not_n5(store)}")
    heading = _source_lines(store, attributes) or [f"N5 group {attributes.get('n5', '')}".rstrip()]
    return Survey(path, heading, interrupted(attributes),
                  _entries([(store.child(k), k) for k in keys], check, scheduler))


def _entries(named, check, scheduler):
    if not check:
        for store, name in named:
            yield _described(store, name, None)
        return
    with engine_for(scheduler) as engine:   # one for every dataset checked
        for store, name in named:
            yield _described(store, name, engine)


def describe_dataset(path: PathLike | Store, name: str | None = None, *, check: bool = False,
                     scheduler: str | distributed.Client | None = None,
                     storage_options: StorageOptions = None) -> DatasetEntry:
    """One dataset in words (see :class:`DatasetEntry`); ``check`` reads every block (on
    ``scheduler``, as for :func:`~n5mscodecs.paintera.survey`). ``path``: its location, store or dataset object."""
    store = source_store(path, storage_options)
    if not check:
        return _described(store, name, None)
    with engine_for(scheduler) as engine:
        return _described(store, name, engine)


def _described(store, name, engine):
    """The entry of the dataset at ``store``; every block checked on ``engine`` when given."""
    entry = DatasetEntry(store.url(), store.display() if name is None else name)
    try:
        dataset = n5.open_dataset(store)
        entry.description, entry.first_block_problem = _describe(dataset)
    except IncompleteError as exc:
        entry.incomplete = str(exc).split("INCOMPLETE: ", 1)[-1]
        return entry
    except (N5msCodecsError, OSError) as exc:
        entry.unreadable = str(exc)
        entry.bad.append(str(exc))
        return entry
    if engine is not None:
        entry.blocks_checked, entry.bad = _check(dataset, engine)
        entry.checked_on = engine.description
    elif entry.first_block_problem:
        entry.bad.append(entry.first_block_problem)
    return entry


def _block_count(dataset):
    return int(np.prod(dataset.grid_shape, dtype=object))


def read_listed_block(read: Callable[[Any], Any], dataset: Any, position: Any) -> Any:
    """``read(position)`` of a block that a listing found: a block that then reads as missing
    (a symbolic link to nothing, a file removed meanwhile) is a :class:`StorageError` naming it,
    not a gap."""
    block = read(position)
    if block is None:
        raise StorageError(f"{dataset.block_name(position)}: read: listed, but there is nothing to read "
                           "(a symbolic link to nothing, or removed meanwhile)")
    return block


def _factors_text(factors):
    if isinstance(factors, list) and all(isinstance(f, int | float) and not isinstance(f, bool) for f in factors):
        return ",".join(f"{f:g}" for f in factors)
    return None


def _describe(dataset):
    """(description, the first block's problem or None)."""
    present_blocks = dataset.present_blocks()
    present = len(present_blocks)
    compressor = dataset.compressor  # parsed and checked when the dataset was opened
    compression = "raw" if compressor is None else compressor.n5_type or compressor.name
    if dataset.shape == (LOOKUP_DIMENSION,):
        return f"label-to-block mapping, {compression}, {present} files of {dataset.chunks[0]} ids each", None
    label_multisets = isinstance(dataset, n5.LabelMultisetDataset)
    kind = "label multiset" if label_multisets else dataset.dtype.name
    text = (f"{kind}, shape {list(dataset.shape)}, blocks {list(dataset.chunks)}, {compression}, "
            f"{present}/{_block_count(dataset)} blocks present")
    if "downsamplingFactors" in dataset.attributes:
        factors = dataset.attributes["downsamplingFactors"]
        if _factors_text(factors) is None:
            return text, f"{dataset.name}: attributes.json: downsamplingFactors {factors!r}: not a list of numbers"
        text += ", factors " + _factors_text(factors)
    if label_multisets and present:
        first = present_blocks[0]
        try:
            block = read_listed_block(dataset.read_block, dataset, first)
        except (N5msCodecsError, OSError) as exc:
            return text, str(exc)
        text += (f"; block {list(first)}: {block.n_lists} distinct lists, "
                 f"{block.entries_per_voxel().mean():.2f} entries/voxel, max {block.list_lengths().max()}")
    return text, None


#: a check task reads the blocks below one directory of the grid's first axes: the fewest
#: axes that leave at most this many (a block's check is short: a task each would be mostly
#: overhead)
CHECK_BLOCKS = 64


def _check_subtree(dataset, prefix):
    """``(blocks read, [(position, problem), ...])`` of the blocks below the grid directory
    ``prefix`` (listed here, on the worker) that cannot be read and decoded."""
    decode = dataset.read_block_labels if isinstance(dataset, n5.LabelMultisetDataset) else dataset.read_block
    positions = dataset.present_blocks(prefix)
    problems = []
    for position in positions:
        try:
            read_listed_block(decode, dataset, position)
        except (N5msCodecsError, OSError) as exc:
            problems.append((position, str(exc)))
    return len(positions), problems


def _add_checks(found, more):
    return found[0] + more[0], found[1] + more[1]


def _check(dataset, engine):
    """(blocks read, [problem, ...] in grid order) after reading and decoding every block of
    ``dataset`` as tasks on ``engine`` (one per grid directory: the client lists none)."""
    prefixes = subtrees(dataset, spread_depth(dataset.grid_shape, CHECK_BLOCKS, engine.workers))
    read, problems = run_tasks(engine, _check_subtree, dataset, prefixes, reduce=_add_checks, initial=(0, []))
    return read, [problem for _, problem in sorted(problems)]


def _source_lines(store: Store, attributes: dict[str, Any]) -> list[str] | None:
    """Lines about a Paintera label source group (None when ``attributes`` are not one's)."""
    paintera_data = attributes.get("painteraData")
    if not isinstance(paintera_data, dict) or paintera_data.get("type") != "label":
        return None
    lines = [f"Paintera label source, maxId {attributes.get('maxId', '?')}"]
    data = store.child("data")
    group = data.get_attributes() if data.is_directory() else {}
    if "resolution" in group or "offset" in group:
        lines.append(f"  resolution {group.get('resolution', '?')}, offset {group.get('offset', '?')} (x, y, z)")
    levels: list[dict[str, Any]] = []
    while data.is_directory(f"s{len(levels)}"):
        levels.append(data.get_attributes(f"s{len(levels)}"))
    if levels:
        lines.append(f"  {len(levels)} levels: " + " ".join(
            f"s{k}={level.get('dimensions')}" for k, level in enumerate(levels)))
    state = attributes.get(CONVERSION_KEY)
    if state is not None and not isinstance(state, dict):
        lines.append(f"  {CONVERSION_KEY}: not a JSON object ({state!r}); not written by n5ms convert")
    return lines


def _not_n5(store):
    """What ``store`` holds when it holds nothing N5 (for the message)."""
    for name, kind in (("zarr.json", "a zarr (v3) array or group"), (".zarray", "a zarr (v2) array"),
                       (".zgroup", "a zarr (v2) group")):
        if store.exists(name):
            return f"{kind}, not N5"
    if not store.list_dir():
        return "an empty directory, not N5"
    return "not an N5 container, group or dataset (no attributes.json here or below)"


__all__ = ["DatasetEntry", "Survey", "describe_dataset", "survey"]
