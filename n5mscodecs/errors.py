"""One error hierarchy for everything that rejects input.

Every class is a :class:`ValueError`, so ``except ValueError`` keeps working for
callers who do not care which format complained. Messages name the field.
"""


class N5msCodecsError(ValueError):
    """Base class: input (bytes, arrays or configuration) that cannot be used."""


class N5HeaderError(N5msCodecsError):
    """An N5 block header is truncated or inconsistent."""


class LabelMultisetFormatError(N5msCodecsError):
    """A label multiset payload (N5 legacy or zarr-native) is malformed."""


class CompressionError(N5msCodecsError):
    """A compressed payload is corrupt or does not decompress to the expected size."""


class ChunkedFormatError(N5msCodecsError):
    """A CZI chunked (mode 7) payload is malformed."""


class LookupFormatError(N5msCodecsError):
    """A Paintera label-to-block-mapping file is malformed."""


class ConfigurationError(N5msCodecsError):
    """A codec or dataset configuration is invalid."""


class IncompleteError(ConfigurationError):
    """A dataset or Paintera source that an interrupted write left incomplete (it carries the
    ``n5mscodecs:incomplete`` marker, or an unfinished conversion's state): reading it would
    return fill values where blocks were never written. The message says how to finish it."""


class TargetInUseError(ConfigurationError):
    """Another process is writing the same target (it holds the target's writer lock)."""


class ReadOnlyError(N5msCodecsError):
    """A write through a read-only view (the uint64 labels view of label multisets)."""


class InputTypeError(N5msCodecsError, TypeError):
    """An argument of the wrong type: not a buffer, an object buffer where bytes are
    needed, a read-only ``out``, a scalar or string where an array of labels or
    multisets is needed. Also a :class:`TypeError`, as numcodecs' codecs raise."""


class StorageError(N5msCodecsError, OSError):
    """Storage refused a request or kept failing after retries (also an :class:`OSError`).
    The message names the location, never credentials."""


class MissingExtraError(ConfigurationError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it
    (``pip install 'n5mscodecs[<extra>]'``). Also an :class:`ImportError`."""
