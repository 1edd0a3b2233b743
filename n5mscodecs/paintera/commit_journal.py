"""The journal of a commit: which ids each block it rewrites held before it (issue 51, item 4).

A commit patches the label-to-block lookups for the ids that entered or left each block it
rewrote, comparing the block's unique-labels before and after. A killed commit may have
rewritten some unique-labels blocks already, so the run that finishes it cannot read the
"before" from the source any more. The journal keeps it: written (under the writer lock)
before the commit records itself in the source's attributes and before its first block
changes, read by the run that finishes an interrupted commit, removed after the commit's
record. The finishing run patches the lookups exactly as the uninterrupted run does, so its
result equals that run's byte for byte (rebuilding the lookups from unique-labels would
follow this package's rule, not the one the source was written by: Paintera's own lookups
need not list every id its unique-labels list; the shared Paintera source lists no block for
the background 0 at s0, whose unique-labels hold 0 in 46 blocks).

The file, ``SOURCE/.n5ms-commit-journal``: 8 bytes (little-endian uint64) giving the length
of a JSON header ``{"parameters": ..., "blocks": [[level, [grid...], n_ids], ...]}``, the
header, then every block's ids as little-endian uint64, in the header's order.
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
Before = list[dict[tuple[int, ...], np.ndarray]]   # per level: {grid: the ids its unique-labels listed}


def write_journal(store: Store, parameters: dict[str, Any], before: Before) -> None:
    """Record ``before`` for the commit of ``parameters`` (replacing any older journal)."""
    blocks, ids = [], []
    for level, grids in enumerate(before):
        for grid, values in sorted(grids.items()):
            blocks.append([level, list(grid), int(values.size)])
            ids.append(np.asarray(values, "<u8"))
    header = json.dumps({"parameters": parameters, "blocks": blocks}).encode()
    body = np.concatenate(ids).tobytes() if ids else b""
    store.set(JOURNAL_NAME, struct.pack("<Q", len(header)) + header + body)


def read_journal(store: Store, parameters: dict[str, Any], n_levels: int) -> Before | None:
    """The ``before`` of the interrupted commit of ``parameters``; None when there is no
    journal of it (a commit interrupted by an older version of the package)."""
    data = store.get(JOURNAL_NAME)
    if data is None:
        return None
    name = store.display(JOURNAL_NAME)
    try:
        (length,) = struct.unpack_from("<Q", data)
        document = json.loads(data[8:8 + length])
        if document.get("parameters") != parameters:
            return None
        before: Before = [{} for _ in range(n_levels)]
        position = 8 + length
        for level, grid, count in document["blocks"]:
            values = np.frombuffer(data, "<u8", count=int(count), offset=position).astype(np.uint64)
            before[int(level)][tuple(int(g) for g in grid)] = values
            position += 8 * int(count)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, struct.error) as exc:
        raise ConfigurationError(f"{name}: not a commit journal this package wrote ({exc}); remove it and "
                                 "run the commit again") from None
    return before


def remove_journal(store: Store) -> None:
    if store.exists(JOURNAL_NAME):
        store.delete(JOURNAL_NAME)


__all__ = ["JOURNAL_NAME", "Before", "read_journal", "remove_journal", "write_journal"]
