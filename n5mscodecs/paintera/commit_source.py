"""What a :func:`~n5mscodecs.paintera.commit` needs to know of the Paintera label source it
changes, read and checked before anything is written: its levels, their factors, block size
and ``maxNumEntries``, the downsampling rule and the lookup's block size and compression."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import n5
from ..errors import ConfigurationError, IncompleteError
from ..multiset.rules import check_rule
from ..n5 import storage
from .conventions import CONVERSION_KEY, is_label_source
from .pyramid import PyramidJob, normalized_max_num_entries
from .sources import LabelSource

if TYPE_CHECKING:
    from typing import Any

    from ..multiset.array import Rule
    from ..n5.store import Store

_DEFAULT_LOOKUP_BLOCK_SIZE = 10000


def _level_factors(store: Store, n_levels: int, ndim: int) -> list[tuple[int, ...]]:
    """Per level, its factors relative to the level below (level 0: ones), from the levels'
    cumulative ``downsamplingFactors`` (``2**k`` for ``sk`` without them)."""
    cumulative = []
    for level in range(n_levels):
        value = store.get_attributes(f"data/s{level}").get("downsamplingFactors", [2.0 ** level] * ndim)
        try:
            factors = tuple(float(f) for f in value)
        except (TypeError, ValueError):
            factors = ()
        if len(factors) != ndim:
            raise ConfigurationError(f"data/s{level}: downsamplingFactors must be {ndim} numbers, got {value!r}")
        cumulative.append(factors)
    relative = [(1,) * ndim]
    for level in range(1, n_levels):
        step = [f / b for f, b in zip(cumulative[level], cumulative[level - 1])]
        if any(s < 1 or s != int(s) for s in step):
            raise ConfigurationError(f"data/s{level}: downsamplingFactors {list(cumulative[level])} are no integer "
                                     f"multiple of s{level - 1}'s {list(cumulative[level - 1])}")
        relative.append(tuple(int(s) for s in step))
    return relative


def _levels(store: Store) -> int:
    n = 0
    while store.exists(f"data/s{n}/{storage.ATTRIBUTES}"):
        n += 1
    return n


@dataclass
class CommitSource:
    """What a commit needs to know of the label source, read before anything is written."""

    job: PyramidJob
    datasets: list[Any]              # data/sK as stored
    max_num_entries: list[int]       # per level
    lookup_block_size: int
    lookup_compression: dict[str, Any]
    plain: bool                      # uint64 levels instead of label multisets


def open_commit_source(store: Store, rule: Rule | None) -> CommitSource:
    name = store.display()
    attributes = store.get_attributes()
    if not is_label_source(attributes):
        raise ConfigurationError(f"{name}: not a Paintera label source (no painteraData of type label)")
    state = attributes.get(CONVERSION_KEY)
    if isinstance(state, dict) and not state.get("complete", True):
        raise IncompleteError(f"{name}: an interrupted n5ms convert target, INCOMPLETE: finish the conversion first")
    n_levels = _levels(store)
    if not n_levels:
        raise ConfigurationError(f"{name}: a Paintera label source without data/s0 .. sN levels")
    parameters = state.get("parameters", {}) if isinstance(state, dict) else {}
    parameters = parameters if isinstance(parameters, dict) else {}
    datasets = []
    for level in range(n_levels):
        key = f"data/s{level}"
        document = store.get_attributes(key)
        kind = n5.LabelMultisetDataset if document.get("isLabelMultiset") else n5.ArrayDataset
        datasets.append(kind(store.url(key), document, store=store.child(key)))
        for side in ("unique-labels", "label-to-block-mapping"):   # the side data a commit patches
            if not store.exists(f"{side}/s{level}/{storage.ATTRIBUTES}"):
                raise ConfigurationError(f"{name}: {side}/s{level} is missing (Paintera's label sources have it)")
    first = datasets[0]
    plain = isinstance(first, n5.ArrayDataset)
    if any(isinstance(d, n5.ArrayDataset) != plain for d in datasets):
        raise ConfigurationError(f"{name}: its levels mix label multisets and plain integers")
    if plain and first.dtype.kind not in "iu":
        raise ConfigurationError(f"{name}: data/s0 holds {first.dtype}, not integer labels")
    for level, dataset in enumerate(datasets):
        if dataset.chunks != first.chunks:
            raise ConfigurationError(f"{name}: data/s{level} has blockSize {list(dataset.chunks)}, s0 "
                                     f"{list(first.chunks)}: commits need one block size for every level")
    ndim = first.ndim
    factors = _level_factors(store, n_levels, ndim)
    for level, step in enumerate(factors):
        if any(b % f for b, f in zip(first.chunks, step)):
            raise ConfigurationError(f"data/s{level}: factors {step} do not divide the block size {first.chunks}")
    rule = rule or parameters.get("rule") or "java"   # Paintera's own sources were written by Java
    check_rule(rule)
    keep: Any = parameters.get("keep") if rule == "spec" else None
    source = LabelSource("n5", first.path, first.shape, "uint64", store=first.store)
    job = PyramidJob(store, source, first.chunks, tuple(factors), dict(first.attributes.get("compression") or
                     {"type": "raw"}), -1, keep, rule, bool(parameters.get("writeBackgroundBlocks", False)))
    for level, dataset in enumerate(datasets):
        if job.level_shape(level) != dataset.shape:
            raise ConfigurationError(f"data/s{level}: dimensions {list(dataset.shape)}, but s0's "
                                     f"{list(first.shape)} downsampled by {list(factors[level])} give "
                                     f"{list(job.level_shape(level))}")
        job._datasets[("data", level)] = dataset
        key = f"unique-labels/s{level}"
        job._datasets[("unique-labels", level)] = n5.ArrayDataset(store.url(key), store.get_attributes(key),
                                                                  store=store.child(key))
    try:   # a level without the attribute: the conversion's parameter (an int, or one per level)
        recorded = dataclasses.replace(job, max_num_entries=normalized_max_num_entries(
            parameters.get("maxNumEntries", -1)))
    except ConfigurationError:
        recorded = job
    entries = [int(d.attributes.get("maxNumEntries", recorded.level_max_num_entries(level)) or -1) if level else -1
               for level, d in enumerate(datasets)]
    lookup = store.get_attributes("label-to-block-mapping/s0")
    lookup_block_size = int((lookup.get("blockSize") or [parameters.get("lookupBlockSize",
                                                                        _DEFAULT_LOOKUP_BLOCK_SIZE)])[0])
    compression = lookup.get("compression") or job.compression
    return CommitSource(job, datasets, entries, lookup_block_size, compression, plain)


__all__ = ["CommitSource", "open_commit_source"]
