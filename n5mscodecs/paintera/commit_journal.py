"""The journal of a commit: which ids left and entered each block it rewrites (issue 51, item 4).

A commit patches the label-to-block lookups for the ids that left or entered each block it
rewrote, found by comparing the block's unique-labels before and after. A killed commit may
have rewritten some unique-labels blocks already, so the run that finishes it cannot compare
with the source any more. The journal keeps the changes: written (under the writer lock)
before the commit records itself in the source's attributes and before its first block
changes, read by the run that finishes an interrupted commit, removed after the commit's
record. The finishing run patches the lookups exactly as the uninterrupted run does, so its
result equals that run's byte for byte (rebuilding the lookups from unique-labels would
follow this package's rule, not the one the source was written by: Paintera's own lookups
need not list every id its unique-labels list; the shared Paintera source lists no block for
the background 0 at s0, whose unique-labels hold 0 in 46 blocks).

It holds an edit's worth (the ids that changed, never a block's whole list), so the client
that writes and reads it holds no more.

The file, ``SOURCE/.n5ms-commit-journal``: 8 bytes (little-endian uint64) giving the length
of a JSON header ``{"version": 2, "parameters": ..., "blocks": [[level, [grid...], n_left,
n_entered], ...]}``, the header, then every block's ids that left and ids that entered as
little-endian uint64, in the header's order. (Version 1, before the journal held changes,
recorded every id a block held; a commit interrupted by that version is finished as one
without a journal: its lookups are made again.)
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from typing import Any

    from ..n5.store import Store

JOURNAL_NAME = ".n5ms-commit-journal"
JOURNAL_VERSION = 2
#: per level: {grid: (the ids that left the block, the ids that entered it)}
Changes = list[dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]]]


def write_journal(store: Store, parameters: dict[str, Any], changes: Changes) -> None:
    """Record ``changes`` for the commit of ``parameters`` (replacing any older journal)."""
    blocks, ids = [], [np.zeros(0, "<u8")]
    for level, grids in enumerate(changes):
        for grid, (left, entered) in sorted(grids.items()):
            blocks.append([level, list(grid), int(left.size), int(entered.size)])
            ids += [np.asarray(left, "<u8"), np.asarray(entered, "<u8")]
    header = json.dumps({"version": JOURNAL_VERSION, "parameters": parameters, "blocks": blocks}).encode()
    store.set(JOURNAL_NAME, struct.pack("<Q", len(header)) + header + np.concatenate(ids).tobytes())


def read_journal(store: Store, parameters: dict[str, Any], n_levels: int) -> Changes | None:
    """The ``changes`` of the interrupted commit of ``parameters``; None when there is no
    journal of it (a commit interrupted by a version of the package without journals, or
    with version 1's)."""
    data = store.get(JOURNAL_NAME)
    if data is None:
        return None
    name = store.display(JOURNAL_NAME)
    try:
        (length,) = struct.unpack_from("<Q", data)
        document = json.loads(data[8:8 + length])
        if document.get("version") != JOURNAL_VERSION or document.get("parameters") != parameters:
            return None
        changes: Changes = [{} for _ in range(n_levels)]
        position = 8 + length
        for level, grid, n_left, n_entered in document["blocks"]:
            lists = []
            for count in (int(n_left), int(n_entered)):
                if count < 0:
                    raise ValueError(f"a negative count {count}")
                lists.append(np.frombuffer(data, "<u8", count=count, offset=position).astype(np.uint64))
                position += 8 * count
            changes[int(level)][tuple(int(g) for g in grid)] = (lists[0], lists[1])
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, struct.error) as exc:
        raise ConfigurationError(f"{name}: not a commit journal this package wrote ({exc}); remove it and "
                                 "run the commit again") from None
    return changes


def remove_journal(store: Store) -> None:
    if store.exists(JOURNAL_NAME):
        store.delete(JOURNAL_NAME)


__all__ = ["JOURNAL_NAME", "JOURNAL_VERSION", "Changes", "read_journal", "remove_journal", "write_journal"]
