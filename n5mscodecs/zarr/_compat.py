"""Every use of zarr-python's private internals (``zarr.core``), in this one module.

zarr keeps ``zarr.core`` out of its versioning policy, so what this package needs from
it is reached from here only, each piece gated by the zarr version that changed it or,
where a name may be missing, checked before use:

- whether zarr loads data types from entry points (zarr >= 3.4.1; older zarr needs
  ``import n5mscodecs.zarr`` to know ``label_multiset``);
- ``DataTypeValidationError`` (``zarr.errors`` from zarr 3.4, ``zarr.core.dtype.common``
  before), the data type base class ``ZDType`` and the data type registry;
- the thread pool of ``zarr.core.sync`` (:func:`restart_thread_pool`, for
  :func:`~n5mscodecs.zarr.zarr_threads`) and its ``sync`` (run a coroutine from
  synchronous code);
- the default-codec functions that :mod:`n5mscodecs.zarr.defaults` wraps
  (:func:`wrap_default_codec_function`);
- an array's runtime configuration (:func:`array_config`: ``Array.config`` from zarr 3.1.2,
  the private ``_async_array._config`` in 3.1.1);
- what the codecs and the store build on: ``parse_named_configuration`` (a codec's
  ``{"name", "configuration"}`` document), ``default_buffer_prototype``, and the
  ``ArraySpec`` and ``NDBuffer`` types of a codec's chunk.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

import zarr
from zarr.core import sync as _zarr_sync
from zarr.core.array_spec import ArraySpec
from zarr.core.buffer import NDBuffer, default_buffer_prototype
from zarr.core.common import parse_named_configuration
from zarr.core.dtype import data_type_registry
from zarr.core.dtype.wrapper import ZDType
from zarr.core.sync import sync

from .._extras import DATA_TYPE_ENTRY_POINTS_SINCE, version_tuple

if TYPE_CHECKING:
    from collections.abc import Callable

try:  # zarr >= 3.4
    from zarr.errors import DataTypeValidationError  # type: ignore[attr-defined,unused-ignore]
except ImportError:
    from zarr.core.dtype.common import DataTypeValidationError

__all__ = [
    "ZARR_VERSION",
    "array_config",
    "LOADS_DATA_TYPE_ENTRY_POINTS",
    "ArraySpec",
    "DataTypeValidationError",
    "NDBuffer",
    "ZDType",
    "data_type_registry",
    "default_buffer_prototype",
    "parse_named_configuration",
    "restart_thread_pool",
    "shut_down_thread_pool",
    "sync",
    "wrap_default_codec_function",
    "wrap_private_function",
]


ZARR_VERSION = version_tuple(zarr.__version__)
LOADS_DATA_TYPE_ENTRY_POINTS = ZARR_VERSION >= DATA_TYPE_ENTRY_POINTS_SINCE

_WRAPPED = "_n5mscodecs_wrapper"
#: the modules of zarr's functions that pick an array's default codecs and parse v2 filters
DEFAULT_CODEC_FUNCTIONS = {
    "default_serializer_v3": "zarr.core.array",
    "default_filters_v2": "zarr.core.array",
    "parse_filters": "zarr.core.metadata.v2",
}


def shut_down_thread_pool() -> None:
    """Shut zarr's thread pool and event loop down; the next zarr call builds them anew from
    the then current configuration (``threading.max_workers`` is read only then)."""
    _zarr_sync.cleanup_resources()


def restart_thread_pool() -> None:
    """Build zarr's thread pool now, from the current configuration."""
    shut_down_thread_pool()
    _zarr_sync._get_executor()


def wrap_private_function(module_name: str, name: str, make_wrapper: Callable[[Any], Any]) -> bool:
    """Replace ``module_name.name`` by ``make_wrapper(original)`` (idempotent: an installed
    wrapper is kept). False, and nothing changed, where this zarr has no such function."""
    module = importlib.import_module(module_name)
    original = getattr(module, name, None)
    if original is None:
        return False
    if not getattr(original, _WRAPPED, False):
        wrapper = functools.wraps(original)(make_wrapper(original))
        setattr(wrapper, _WRAPPED, True)
        setattr(module, name, wrapper)
    return True


def wrap_default_codec_function(name: str, make_wrapper: Callable[[Any], Any]) -> bool:
    """:func:`wrap_private_function` for one of :data:`DEFAULT_CODEC_FUNCTIONS`."""
    return wrap_private_function(DEFAULT_CODEC_FUNCTIONS[name], name, make_wrapper)


#: the modules whose ``get_codec_class`` resolves a codec name of an array's metadata (the
#: registry's own, and the one v3 metadata imported by name)
CODEC_CLASS_LOOKUPS = ("zarr.registry", "zarr.core.metadata.v3")


def wrap_codec_class_lookup(make_wrapper: Callable[[Any], Any]) -> bool:
    """:func:`wrap_private_function` for zarr's ``get_codec_class`` wherever it is looked up."""
    wrapped = [wrap_private_function(module, "get_codec_class", make_wrapper) for module in CODEC_CLASS_LOOKUPS]
    return any(wrapped)


def array_config(array: Any) -> Any:
    """The runtime configuration (``ArrayConfig``: ``write_empty_chunks``, ``order``) of the zarr
    ``Array`` ``array``: its public ``config`` where zarr has it, else the private one."""
    config = getattr(array, "config", None)
    return config if config is not None else array._async_array._config
