"""What :func:`~n5mscodecs.paintera.commit` checks before it writes anything (issue 51): its
arguments, and that no other job left the source flagged incomplete."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ArgumentError, ConfigurationError
from ..n5.writing import INCOMPLETE_KEY, check_complete
from .lookup import MAPPING_WRITER

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..n5.store import Store

COMMIT_WRITER = "n5ms commit"


def commit_offset(offset: Any) -> tuple[int, ...]:
    """``offset`` as a tuple of ints, or an :class:`~n5mscodecs.ArgumentError` naming ``offset``:
    Python and numpy integers only (a float such as 1.7 would be truncated, ``'3'`` parsed and
    ``True`` taken for 1 without a word)."""
    try:
        values = tuple(offset)
    except TypeError:
        raise ArgumentError("offset", f"a sequence of integers required, got {offset!r}") from None
    for value in values:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
            raise ArgumentError("offset", f"integers required, got {value!r} ({type(value).__name__}) in "
                                          f"{list(values)!r}")
    return tuple(int(v) for v in values)


def check_max_id(store: Store) -> None:
    """ConfigurationError naming ``maxId`` when the source's ``maxId`` is there and no integer:
    a commit raises it from what it finds, and would overwrite a corrupt one without a word."""
    value = store.get_attributes().get("maxId")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigurationError(f"{store.display()}: maxId: an integer (the largest id in use) required, got "
                                 f"{value!r}; repair the attribute before committing")


def refuse_flagged(store: Store, keys: Iterable[str], recovering: bool) -> None:
    """IncompleteError naming the first dataset of ``keys`` (below ``store``) that a job other
    than an interrupted commit being finished now flagged incomplete: finishing it would
    remove that job's marker while its blocks are still missing. The commit's own markers are
    its own and those of the lookup writer it runs (a commit marks nothing before this check
    found no other job's marker, and holds the lock from then on)."""
    for key in keys:
        attributes = store.get_attributes(key)
        marker = attributes.get(INCOMPLETE_KEY)
        if marker is None:
            continue
        ours = isinstance(marker, dict) and marker.get("writer") in (COMMIT_WRITER, MAPPING_WRITER)
        if not (ours and recovering):
            check_complete(attributes, store.display(key))


__all__ = ["COMMIT_WRITER", "check_max_id", "commit_offset", "refuse_flagged"]
