"""One error hierarchy: every error this package raises on purpose is an :class:`N5msCodecsError`.

Errors about input (bytes, arrays, arguments or configuration that cannot be used) are
also :class:`ValueError`\\ s, so ``except ValueError`` keeps working for callers who do not
care which format complained. :class:`StorageError` is the exception: a request that
storage refused or that kept failing is an :class:`OSError` and deliberately *not* a
``ValueError``, so ``except ValueError`` around parsing code never swallows a network or
disk failure. Messages name the field (or the location).
"""

__all__ = [
    "N5msCodecsError",
    "N5HeaderError",
    "LabelMultisetFormatError",
    "CompressionError",
    "ChunkedFormatError",
    "LookupFormatError",
    "ConfigurationError",
    "ArgumentError",
    "IncompleteError",
    "TargetInUseError",
    "ReadOnlyError",
    "InputTypeError",
    "StorageError",
    "MissingExtraError",
]


class N5msCodecsError(Exception):
    """Base class of every error this package raises: input it rejects (the subclasses that
    are also :class:`ValueError`) and storage that failed (:class:`StorageError`)."""


class N5HeaderError(N5msCodecsError, ValueError):
    """An N5 block header is truncated or inconsistent."""


class LabelMultisetFormatError(N5msCodecsError, ValueError):
    """A label multiset payload (N5 legacy or zarr-native) is malformed."""


class CompressionError(N5msCodecsError, ValueError):
    """A compressed payload is corrupt or does not decompress to the expected size."""


class ChunkedFormatError(N5msCodecsError, ValueError):
    """A CZI chunked (mode 7) payload is malformed."""


class LookupFormatError(N5msCodecsError, ValueError):
    """A Paintera label-to-block-mapping file is malformed."""


class ConfigurationError(N5msCodecsError, ValueError):
    """A codec or dataset configuration is invalid."""


class ArgumentError(ConfigurationError):
    """A value passed for a named argument is refused: ``argument`` is the keyword
    (``"shards"``, ``"width"``), ``detail`` says why; the message is ``"argument: detail"``.
    The command line reports it under the option's name (``--shards``)."""

    def __init__(self, argument: str, detail: str) -> None:
        super().__init__(f"{argument}: {detail}")
        self.argument = argument
        self.detail = detail


class IncompleteError(ConfigurationError):
    """A dataset or Paintera source that an interrupted write left incomplete (it carries the
    ``n5mscodecs:incomplete`` marker, or an unfinished conversion's state): reading it would
    return fill values where blocks were never written. The message says how to finish it."""


class TargetInUseError(ConfigurationError):
    """Another process is writing the same target (it holds the target's writer lock)."""


class ReadOnlyError(ConfigurationError):
    """A write through something read-only: a read-only store (``open_store(...,
    read_only=True)``, mode ``r``, an ``http(s)`` URL) and every group, dataset and
    attributes object built on it, or the uint64 labels view of label multisets."""


class InputTypeError(N5msCodecsError, TypeError, ValueError):
    """An argument of the wrong type: not a buffer, an object buffer where bytes are
    needed, a read-only ``out``, a scalar or string where an array of labels or
    multisets is needed. Also a :class:`TypeError`, as numcodecs' codecs raise."""


class StorageError(N5msCodecsError, OSError):
    """Storage refused a request or kept failing after retries: an :class:`OSError`, and
    not a :class:`ValueError` (``except ValueError`` does not swallow it). The message names
    the location, never credentials."""


class MissingExtraError(ConfigurationError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it
    (``pip install 'n5mscodecs[<extra>]'``). Also an :class:`ImportError`."""
