"""Which blocks of a dataset are stored: found by one listing where the store can list, else by
probing the grid block by block.

Many ``http(s)`` servers serve no directory listings (object stores, CDNs, most static
hosting): a listing there finds nothing, and an export built on it would hold zeros where
blocks are stored. :meth:`Store.can_list <n5mscodecs.n5.store.Store.can_list>` says whether the
listing of a dataset shows what it holds; when it does not, each position of the grid is
looked up (a 404 is a missing block; any other failure is retried, then a
:class:`~n5mscodecs.StorageError`), up to ``MAX_PROBED_BLOCKS`` requests, and a larger grid
is refused rather than guessed.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..errors import StorageError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .store import Store

#: Blocks whose presence is looked up one request each where a store cannot list (a grid of
#: 64 x 64 x 16 blocks: 65,536 requests, about a minute at 16 in flight and 15 ms each).
MAX_PROBED_BLOCKS = 1 << 16


def present_blocks(store: Store, grid_shape: Sequence[int], prefix: Sequence[int] = ()) -> list[tuple[int, ...]]:
    """Grid positions of the blocks stored in the dataset ``store``, sorted (see the module docs);
    ``prefix``: only those whose first positions are these (one subtree of the grid)."""
    prefix = tuple(int(p) for p in prefix)
    if store.can_list():
        return _listed(store, len(grid_shape), prefix)
    return _probed(store, tuple(grid_shape), prefix)


def _listed(store: Store, ndim: int, prefix: tuple[int, ...]) -> list[tuple[int, ...]]:
    found: list[tuple[int, ...]] = []
    for directory, subdirectories, files in store.walk("/".join(map(str, prefix))):
        parts = directory.split("/") if directory else []
        if len(parts) == ndim - 1 and all(p.isdigit() for p in parts):
            # a directory where a block should be is listed too: reading it is an error
            names = files + subdirectories
            found.extend(tuple(int(p) for p in [*parts, f]) for f in names if f.isdigit())
    return sorted(found)


def _probed(store: Store, grid_shape: tuple[int, ...], prefix: tuple[int, ...]) -> list[tuple[int, ...]]:
    total = 1
    for n in grid_shape[len(prefix):]:
        total *= n
    if total > MAX_PROBED_BLOCKS:
        raise StorageError(
            f"{store.display()}: the server gives no directory listings, and finding the stored blocks of "
            f"the grid {list(grid_shape)} ({total} blocks) would take one request per block, more than the "
            f"{MAX_PROBED_BLOCKS} this package sends for it; read it through a location that lists "
            "(the object store's own URL, e.g. s3://...)")
    positions = list(itertools.product(*((p,) for p in prefix), *(range(n) for n in grid_shape[len(prefix):])))

    def stored(position: tuple[int, ...]) -> bool:
        return store.exists("/".join(map(str, position)))

    workers = min(store.request_threads(None), len(positions))
    if workers <= 1:
        flags = [stored(p) for p in positions]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            flags = list(pool.map(stored, positions))
    return [p for p, flag in zip(positions, flags) if flag]
