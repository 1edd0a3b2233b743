"""zarr's defaults for the ``label_multiset`` data type, and a guard for v2-format filters.

zarr-python chooses an array's default serializer (v3) and object codec (v2)
from a fixed table of its own data types; a data type from a package cannot
name its codecs. Without help, ``zarr.create_array(..., dtype="label_multiset")``
gets the ``bytes`` serializer and fails at the first write, and a v2-format
array gets no object codec at all. Worse, a v2-format array whose filter is one
of the array-to-bytes label multiset codecs (``n5_varlen``,
``n5_label_multiset``, ``label_multiset``) accepts writes whose chunks zarr then
cannot read back (their ``decode`` returns a LabelMultisetArray, not the object
ndarray zarr's v2 pipeline needs).

:func:`install` (run when :mod:`n5mscodecs.zarr` is imported) wraps three zarr
functions, changing their result only for this package's data type and codecs:

- ``default_serializer_v3``: ``label_multiset`` for the ``label_multiset`` data type;
- ``default_filters_v2``: ``label_multiset_vlen`` as its v2 object codec;
- v2 metadata's ``parse_filters``: the array-to-bytes label multiset codecs as
  v2 filters raise :class:`~n5mscodecs.errors.ConfigurationError` naming
  ``label_multiset_vlen``, at creation, before anything is written (and when
  opening such an array that an older version let through).

and ``get_codec_class`` (where zarr resolves a codec name), for ``n5_default`` only: the
package's choice of implementation (``codecs.n5_default`` in zarr's configuration, set as a
default when :mod:`n5mscodecs.zarr` is imported) is put back when a ``zarr.config.set`` block
removed it. zarr loads this package from its entry point when the first ``n5_default``
array is opened; when that happens inside ``zarr.config.set({"codecs.n5_default": ...})``,
the block's end removes every key it did not find on entry, the package's default among
them, and zarr would then pick any implementation (zarr-n5's, which reads no N5 lz4).

Where a zarr version lacks one of these functions, that wrapper is skipped. The
wrapping itself is in ``n5mscodecs.zarr._compat``, with every other use of zarr's
private internals.
"""

from __future__ import annotations

from ..errors import ConfigurationError
from ._compat import wrap_codec_class_lookup, wrap_default_codec_function

N5_DEFAULT = "n5_default"

ARRAY_TO_BYTES_IDS = frozenset({"n5_varlen", "n5_label_multiset", "label_multiset"})


def check_v2_filters(filters) -> None:
    """Refuse the array-to-bytes label multiset codecs among a v2-format array's filters."""
    for codec in filters or ():
        codec_id = codec.get("id") if isinstance(codec, dict) else getattr(codec, "codec_id", None)
        if codec_id in ARRAY_TO_BYTES_IDS:
            raise ConfigurationError(
                f"{codec_id} cannot be the object codec of a zarr v2-format array: zarr could not read the "
                "chunks back. Use filters=[LabelMultisetVLen()] ({'id': 'label_multiset_vlen'}), or a zarr "
                f"v3 array with the label_multiset data type and serializer={codec_id}"
            )


def install() -> None:
    """Wrap zarr's default-codec functions for the ``label_multiset`` data type (idempotent)."""
    from ..payload import LabelMultisetVLen
    from .codecs import LabelMultisetZarrCodec
    from .dtype import LabelMultisetDType

    def serializer(original):
        def default_serializer_v3(dtype):
            return LabelMultisetZarrCodec() if isinstance(dtype, LabelMultisetDType) else original(dtype)
        return default_serializer_v3

    def filters_v2(original):
        def default_filters_v2(dtype):
            return (LabelMultisetVLen(),) if isinstance(dtype, LabelMultisetDType) else original(dtype)
        return default_filters_v2

    def parse_filters(original):
        def parse_filters(data):
            parsed = original(data)
            check_v2_filters(parsed)
            return parsed
        return parse_filters

    wrap_default_codec_function("default_serializer_v3", serializer)
    wrap_default_codec_function("default_filters_v2", filters_v2)
    wrap_default_codec_function("parse_filters", parse_filters)
    set_n5_default()
    wrap_codec_class_lookup(codec_class_lookup)


def set_n5_default() -> None:
    """Make this package's :class:`~n5mscodecs.zarr.N5DefaultZarrCodec` the default of
    ``codecs.n5_default`` (a choice in zarr's configuration still wins)."""
    import zarr

    from .codecs import N5DefaultZarrCodec

    name = f"{N5DefaultZarrCodec.__module__}.{N5DefaultZarrCodec.__qualname__}"
    zarr.config.update_defaults({"codecs": {N5_DEFAULT: name}})


def codec_class_lookup(original):
    def get_codec_class(key, *args, **kwargs):
        if key == N5_DEFAULT:
            import zarr

            if zarr.config.get(f"codecs.{N5_DEFAULT}", None) is None:  # removed by a config.set block's end
                set_n5_default()
        return original(key, *args, **kwargs)
    return get_codec_class
