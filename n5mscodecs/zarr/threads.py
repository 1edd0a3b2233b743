"""Run zarr with a given number of worker threads."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

import zarr

from .._threads import default_threads
from ._compat import restart_thread_pool, shut_down_thread_pool

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextmanager
def zarr_threads(n_threads: int | None = None) -> Iterator[None]:
    """Run zarr's codecs on exactly ``n_threads`` worker threads inside the block.

    ``None`` means one per core.

    zarr reads ``threading.max_workers`` only when it creates its thread pool,
    on first use, so setting the option later changes nothing. This context
    manager shuts the pool (and zarr's event loop) down, sets the option, and
    lets zarr build a fresh pool of that size; on exit the pool is shut down
    again, so the next zarr call builds one from the then current configuration.

    Examples
    --------
    >>> import numpy as np, zarr
    >>> from n5mscodecs.zarr import zarr_threads
    >>> a = zarr.create_array({}, shape=(4, 4), chunks=(2, 2), dtype="u2")
    >>> with zarr_threads(1):
    ...     a[:] = np.arange(16).reshape(4, 4)
    ...     int(a[3, 3])
    15
    """
    n_threads = default_threads(n_threads)
    shut_down_thread_pool()
    try:
        with zarr.config.set({"threading.max_workers": n_threads}):
            restart_thread_pool()
            yield
    finally:
        shut_down_thread_pool()
