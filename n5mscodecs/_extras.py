"""Optional dependencies: import them or say which extra installs them."""

from __future__ import annotations

import importlib
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
