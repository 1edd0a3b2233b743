"""Optional dependencies: import them or say which extra installs them."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from typing import TYPE_CHECKING

from .errors import MissingExtraError

if TYPE_CHECKING:
    from types import ModuleType


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtraError` naming ``extra``.

    >>> require("numpy", "core", "arrays").__name__
    'numpy'
    >>> require("no_such_module_here", "dask", "lazy arrays")
    Traceback (most recent call last):
    ...
    n5mscodecs.errors.MissingExtraError: lazy arrays need no_such_module_here: pip install 'n5mscodecs[dask]'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(f"{purpose} need {module}: pip install 'n5mscodecs[{extra}]'") from exc


def version_tuple(version: str) -> tuple[int, ...]:
    """The leading release numbers of a version string (``"3.1.6.dev3"`` -> ``(3, 1, 6)``)."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def installed_version(distribution: str) -> tuple[int, ...] | None:
    """The installed version of ``distribution`` read from its metadata, without importing it
    (None when it is not installed)."""
    try:
        return version_tuple(importlib.metadata.version(distribution))
    except importlib.metadata.PackageNotFoundError:
        return None


#: zarr >= 3.4.1 finds ``label_multiset`` through the ``zarr.data_type`` entry point in a process
#: that never imported ``n5mscodecs.zarr``; zarr 3 before it never loads data type entry points.
DATA_TYPE_ENTRY_POINTS_SINCE = (3, 4, 1)


def zarr_needs_data_type_registration() -> bool:
    """Whether the installed zarr is a zarr 3 that must be handed ``label_multiset`` by hand."""
    version = installed_version("zarr")
    return version is not None and (3,) <= version < DATA_TYPE_ENTRY_POINTS_SINCE
