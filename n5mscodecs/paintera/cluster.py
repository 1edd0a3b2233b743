"""Where the per-block work of a job runs: local threads or a dask.distributed cluster.

Every job that writes or checks blocks (convert, export_argmax, to_ome_zarr, commit,
``n5ms info --check``) takes ``scheduler=`` and runs its tasks through :func:`engine_for` and
:func:`run_tasks`:

- ``scheduler=None`` (the default) follows dask's convention: the active
  ``distributed.Client`` when there is one (``distributed.Client.current()``; not inside a
  task on a worker), else local threads;
- ``scheduler="threads"``: local threads, whatever client is active;
- a ``distributed.Client``, or a scheduler address (a client is opened for the job, and
  closed after it).

An :class:`Engine` says where it runs (its ``description``): every job reports it,
so a job never runs locally without saying so.

:func:`run_tasks` submits the tasks from an iterator (a grid is never materialized), keeps at
most ``window`` of them in flight, reduces their results as they arrive and cancels the rest
on the first error. What the tasks share (the job: its stores, its source, a merge table)
travels to each worker once (:meth:`Engine.shared`: scattered), not with every task.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .._extras import require
from .._threads import default_threads
from ..errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from concurrent.futures import Executor, Future
    from typing import Protocol

    import distributed

    from ..n5.store import Store

    class ProgressBar(Protocol):
        """What ``progress(description, total)`` returns (e.g. a ``tqdm.tqdm``)."""

        def update(self, n: int = 1) -> object: ...

        def close(self) -> object: ...

T = TypeVar("T")

#: ``scheduler=LOCAL``: local threads even when a dask client is active
LOCAL = "threads"
SCHEDULER_TIMEOUT = "10s"  # to reach a dask scheduler, before anything is written

Shared = TypeVar("Shared")
Item = TypeVar("Item")
Result = TypeVar("Result")
Total = TypeVar("Total")


@dataclass
class Engine:
    """Where a job's tasks run: an executor, how many tasks it runs at once, and a
    description for reports ("local threads (8)", "dask.distributed tcp://...")."""

    executor: Executor
    workers: int
    description: str
    #: the dask client, or None for local threads
    client: distributed.Client | None = None

    @contextmanager
    def shared(self, value: Shared) -> Iterator[Shared]:
        """``value`` as tasks take it (see :func:`run_tasks`): itself locally; on a cluster, a
        future of it scattered once (each worker fetches it once, not with every task; tasks
        receive the value, also when the future is inside a tuple, list or dict), released
        on exit."""
        if self.client is None:
            yield value
            return
        handle = self.client.scatter([value], hash=False)[0]
        try:
            yield handle
        finally:
            handle.release()  # the workers drop their copies


class _NoProgress:
    def update(self, n=1):
        pass

    def close(self):
        pass


NO_PROGRESS: ProgressBar = _NoProgress()


def active_client() -> distributed.Client | None:
    """The dask.distributed client dask itself would use now, or None: none is active
    (``distributed`` not even imported), or this runs inside a task on a worker (whose
    nested jobs run on local threads rather than wait on their own cluster's threads)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        distributed.get_worker()
        return None
    except ValueError:
        pass
    try:
        client = distributed.Client.current(allow_global=True)
    except ValueError:
        return None
    return client if client.status == "running" else None


def _client(scheduler: str | distributed.Client) -> tuple[distributed.Client, bool]:
    """The client for ``scheduler`` and whether this job opened it (and closes it)."""
    distributed = require("distributed", "dask", "scheduler: dask clusters")
    if isinstance(scheduler, distributed.Client):
        return scheduler, False
    if not isinstance(scheduler, str):
        raise ConfigurationError(
            f"scheduler: a dask.distributed Client, a scheduler address or {LOCAL!r}, got {type(scheduler).__name__}")
    try:
        return distributed.Client(scheduler, timeout=SCHEDULER_TIMEOUT), True
    except (OSError, TimeoutError, ValueError) as exc:
        raise ConfigurationError(f"scheduler: cannot reach {scheduler!r} ({type(exc).__name__}: {exc})") from None


def local_engine(threads: int | None, store: Store | None = None) -> Engine:
    """Local threads: ``threads`` (default every core), more when ``store`` is in an object
    store (its blocks wait on requests)."""
    n = store.request_threads(threads) if store is not None else default_threads(threads)
    return Engine(ThreadPoolExecutor(max_workers=n), n, f"local threads ({n})")


@contextmanager
def engine_for(scheduler: str | distributed.Client | None, threads: int | None = None,
               store: Store | None = None) -> Iterator[Engine]:
    """The :class:`Engine` for ``scheduler`` (see the module's docstring), shut down on exit
    (a client this opened is closed). An unreachable scheduler is a
    :class:`~n5mscodecs.ConfigurationError`, raised before the job writes anything."""
    if scheduler == LOCAL:
        scheduler = None
    elif scheduler is None:
        scheduler = active_client()
    if scheduler is None:
        engine = local_engine(threads, store)
        owned = None
    else:
        client, opened = _client(scheduler)
        owned = client if opened else None
        nthreads = client.nthreads()
        engine = Engine(client.get_executor(pure=False), max(1, sum(nthreads.values())),
                        f"dask.distributed {client.scheduler.address} ({len(nthreads)} workers, "
                        f"{sum(nthreads.values())} threads)", client)
    try:
        yield engine
    finally:
        engine.executor.shutdown(wait=True)
        if owned is not None:
            owned.close()


def batches(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    """``items`` in lists of ``size`` (the last shorter), lazily: one task per list."""
    batch: list[Item] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def tasks_of(total: int, most: int, workers: int) -> int:
    """How many of ``total`` items one task takes: at most ``most`` (few messages to a
    scheduler, whose client keeps a log of them), fewer where that would leave each of
    ``workers`` threads under four tasks."""
    return max(1, min(most, total // (4 * max(1, workers))))


def _add(total: Any, result: Any) -> Any:
    return total + result


def run_tasks(
    engine: Engine,
    fn: Callable[[Shared, Item], Result],
    shared: Shared,
    items: Iterable[Item],
    *,
    reduce: Callable[[Total, Result], Total] = _add,
    initial: Total = 0,  # type: ignore[assignment]
    bar: ProgressBar = NO_PROGRESS,
    steps: Callable[[Result], int] | None = None,
    window: int | None = None,
) -> Total:
    """Run ``fn(shared, item)`` for every item of ``items`` on ``engine``, and return
    ``reduce(...reduce(initial, result), ...)`` over the results in the order they finish.

    ``items`` is consumed lazily: at most ``window`` tasks (default four per worker thread)
    are in flight, so neither side holds a task per item. ``shared`` is sent with every task:
    pass what :meth:`Engine.shared` yields (or a tuple of such) for anything larger than a few
    bytes; ``fn`` must be a module-level function. The first task that fails stops the
    submitting, and its exception is raised here once no task of this call runs any more
    (those not started are cancelled, those running finish: a caller may then clean up what
    they wrote); an interrupt (``KeyboardInterrupt``) cancels every task in flight and is
    raised at once. ``bar`` is updated once per task finished, by ``steps(result)`` when given
    (a task of several blocks), and not closed.
    """
    window = max(1, window or 4 * engine.workers)
    total = initial
    pending: set[Future] = set()

    def collect(until: int) -> None:
        nonlocal total, pending
        while len(pending) > until:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                result = future.result()
                total = reduce(total, result)
                bar.update(1 if steps is None else steps(result))

    try:
        for item in items:
            pending.add(engine.executor.submit(fn, shared, item))
            collect(window - 1)
        collect(0)
    except Exception:
        # a dask task cannot be told apart running or not from here, and cancelling one does not
        # stop it: those in flight finish; local threads not started yet are cancelled
        if engine.client is None:
            for future in pending:
                future.cancel()
        wait(pending)
        raise
    except BaseException:
        for future in pending:
            future.cancel()
        raise
    return total


def _indexed(shared: tuple[Callable[[Any, Any], Any], Any], item: tuple[int, Any]) -> tuple[int, Any]:
    fn, value = shared
    index, element = item
    return index, fn(value, element)


def _append(results: list, result: Any) -> list:
    results.append(result)
    return results


def map_tasks(engine: Engine, fn: Callable[[Shared, Item], Result], shared: Shared,
              items: Iterable[Item]) -> list[Result]:
    """``[fn(shared, item) for item in items]``, each a task on ``engine`` (as :func:`run_tasks`),
    in the order of ``items``: for the few items of a small job whose results the client uses."""
    pairs: list[tuple[int, Result]] = run_tasks(engine, _indexed, (fn, shared), enumerate(items),
                                                reduce=_append, initial=[])
    return [result for _, result in sorted(pairs, key=lambda pair: pair[0])]


#: values :func:`once_per_process` keeps (the most recently used)
PROCESS_CACHE_ENTRIES = 4
_process_cache: OrderedDict[str, Any] = OrderedDict()
_process_cache_lock = threading.Lock()


def once_per_process(token: str, load: Callable[[], T]) -> T:
    """The value ``load()`` made for ``token`` in this process, made the first time it is asked
    for: the tasks a dask worker runs share one (a merge table read once per worker, not per
    task). ``token`` must name the value's content. The few most recently used are kept."""
    with _process_cache_lock:   # held while loading: concurrent tasks wait for one read
        if token in _process_cache:
            _process_cache.move_to_end(token)
            return _process_cache[token]
        value = load()
        _process_cache[token] = value
        while len(_process_cache) > PROCESS_CACHE_ENTRIES:
            _process_cache.popitem(last=False)
        return value


@contextmanager
def progress_bar(progress: Callable[[str, int | None], ProgressBar] | None, description: str,
                 total: int | None) -> Iterator[ProgressBar]:
    """``progress(description, total)`` (nothing without ``progress``), closed on exit."""
    bar = progress(description, total) if progress else NO_PROGRESS
    try:
        yield bar
    finally:
        bar.close()
