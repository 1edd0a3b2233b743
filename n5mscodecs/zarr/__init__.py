"""zarr-python 3 integration: the ``label_multiset`` data type, v3 codecs and an N5 store view.

zarr finds the codecs and the data type through this package's entry points (one
mechanism, nothing registered twice); zarr < 3.4.1 never loads data type entry points,
so there importing this module registers the ``label_multiset`` data type
(``import n5mscodecs.zarr`` before opening label multiset arrays).

zarr-n5 registers a codec of the same name, ``n5_default``; zarr then picks the
class its configuration names under ``codecs.n5_default``. This module makes
:class:`N5DefaultZarrCodec` that configuration's default: a choice made in zarr's
configuration (``zarr.config.set``, ``ZARR_CODECS__N5_DEFAULT``) still wins.
"""

from ._compat import LOADS_DATA_TYPE_ENTRY_POINTS as _LOADS_DATA_TYPE_ENTRY_POINTS
from ._compat import data_type_registry as _data_type_registry
from .attributes import (
    default_mode_metadata,
    label_multiset_metadata,
    labels_metadata,
    labels_view_metadata,
    write_zarr_json,
    zarr_document,
)
from .codecs import (
    ZARR_CODECS,
    CziChunkedZarrCodec,
    LabelMultisetZarrCodec,
    N5DefaultZarrCodec,
    N5LabelMultisetZarrCodec,
    N5VarlenZarrCodec,
    NumcodecsCziChunkedZarrCodec,
    chunk_to_multisets,
)
from .defaults import install as _install_defaults
from .dtype import LabelMultisetDType
from .multisets import read_labels, read_multisets, write_label_multisets
from .store import N5Store, open_labels, open_n5_store
from .threads import zarr_threads

if not _LOADS_DATA_TYPE_ENTRY_POINTS and LabelMultisetDType._zarr_v3_name not in _data_type_registry.contents:
    # zarr < 3.4.1 reads codec entry points but not data type ones: the one registration made
    # here (zarr's registry is typed for numpy-scalar data types; see LabelMultisetDType)
    _data_type_registry.register(LabelMultisetDType._zarr_v3_name, LabelMultisetDType)  # type: ignore[arg-type]
_install_defaults()

__all__ = [
    "ZARR_CODECS",
    "N5Store",
    "open_n5_store",
    "open_labels",
    "labels_metadata",
    "labels_view_metadata",
    "label_multiset_metadata",
    "default_mode_metadata",
    "write_zarr_json",
    "zarr_document",
    "LabelMultisetDType",
    "N5DefaultZarrCodec",
    "N5VarlenZarrCodec",
    "CziChunkedZarrCodec",
    "NumcodecsCziChunkedZarrCodec",
    "N5LabelMultisetZarrCodec",
    "LabelMultisetZarrCodec",
    "chunk_to_multisets",
    "zarr_threads",
    "write_label_multisets",
    "read_multisets",
    "read_labels",
]
