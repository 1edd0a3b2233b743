"""The one thread-count policy: ``None`` means one thread per CPU this process may use."""

from __future__ import annotations

import os

from .errors import ConfigurationError


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_threads(threads: int | None = None) -> int:
    """Number of threads: ``threads`` if given (>= 1), else :func:`available_cpus`."""
    if threads is None:
        return available_cpus()
    if isinstance(threads, bool) or int(threads) != threads or threads < 1:
        raise ConfigurationError(f"threads must be None or an int >= 1, got {threads!r}")
    return int(threads)
