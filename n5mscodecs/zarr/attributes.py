"""N5 ``attributes.json`` <-> zarr v3 ``zarr.json``: the translation :class:`~n5mscodecs.zarr.N5Store`
serves on the fly and :func:`write_zarr_json` writes beside an N5 container (no I/O but that)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from ..multiset import BACKGROUND
from ..n5 import N5_VERSION, CodecChain, DatasetMetadata, storage
from ..n5.dataset import validate_attributes
from ..n5.storage import ATTRIBUTES, ZARR_JSON
from ..n5.store import Store
from ..n5.stores import open_store
from .codecs import N5_DATA_TYPES, N5DefaultZarrCodec
from .dtype import LabelMultisetDType, parse_fill_value

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..n5.storage import PathLike

_STRUCTURAL = ("dimensions", "blockSize", "dataType", "compression")


def _array_metadata(attributes, data_type, fill_value, codecs):
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(attributes["dimensions"]),
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(attributes["blockSize"])}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
        "attributes": _zarr_attributes(attributes),
    }


def label_multiset_metadata(attributes: Mapping[str, Any], fill_label: int = BACKGROUND) -> dict[str, Any]:
    """The zarr v3 ``zarr.json`` document for an N5 label multiset dataset's attributes."""
    inner = CodecChain([{"name": "n5_label_multiset"}, attributes.get("compression", {"type": "raw"})]).v3_configs()
    return _array_metadata(attributes, "label_multiset", f"0x{fill_label:016X}",
                           [{"name": "n5_varlen", "configuration": {"codecs": inner}}])


def labels_metadata(attributes: Mapping[str, Any], fill_label: int = BACKGROUND) -> dict[str, Any]:
    """The ``zarr.json`` of an N5 label multiset dataset's labels view: a plain uint64 array
    whose chunks :class:`~n5mscodecs.zarr.N5Store` (``multisets="labels"``) decodes to
    little-endian argmax labels."""
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    return _array_metadata(attributes, "uint64", int(fill_label), codecs)


def labels_view_metadata(document: Mapping[str, Any]) -> dict[str, Any]:
    """The labels view of a ``label_multiset`` array's ``zarr.json``: data type uint64 and
    the fill value's id; the label multiset codecs then decode chunks to argmax labels
    (read-only). Other documents are returned unchanged."""
    if document.get("node_type") != "array" or not LabelMultisetDType._check_json_v3(document.get("data_type")):
        return dict(document)
    fill = parse_fill_value(document.get("fill_value", "0xFFFFFFFFFFFFFFFE"))
    return {**document, "data_type": "uint64", "fill_value": int(fill.argmax)}


def _zarr_attributes(attributes):
    kept = {k: v for k, v in attributes.items() if k not in _STRUCTURAL}
    kept["_n5"] = attributes
    return kept


def default_mode_metadata(attributes: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    """The zarr v3 ``zarr.json`` document for a plain N5 dataset's attributes: its data type,
    fill value 0 (N5's convention) and the ``n5_default`` codec around its compression. For
    raw, gzip, zstd and blosc it is what zarr-n5 makes (but gzip's level -1, Java's default,
    is written as 6, zarr-n5 writes zarr's 5)."""
    data_type = attributes.get("dataType")
    if data_type not in N5_DATA_TYPES:
        raise ConfigurationError(f"{path or 'dataset'}: attributes.json: unsupported dataType {data_type!r}")
    codec = N5DefaultZarrCodec.from_compression(len(attributes["dimensions"]),
                                                attributes.get("compression", {"type": "raw"}), data_type)
    return _array_metadata(attributes, data_type, 0, [codec.to_dict()])


def zarr_document(attributes: Mapping[str, Any], path: str = "", fill_label: int = BACKGROUND) -> dict[str, Any]:
    """The zarr v3 metadata document equivalent to an N5 ``attributes.json``."""
    if "dimensions" not in attributes:
        return {"zarr_format": 3, "node_type": "group", "attributes": _zarr_attributes(attributes)}
    if attributes.get("isLabelMultiset"):
        return label_multiset_metadata(attributes, fill_label)
    return default_mode_metadata(attributes, path)


def write_zarr_json(
    container: PathLike | Store, *, fill_label: int = BACKGROUND, overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> tuple[list[str], list[str]]:
    """Write a ``zarr.json`` next to every ``attributes.json`` of an N5 container.

    The container then opens with plain ``zarr.open_group``/``zarr.open_array``
    and stays a valid N5 container; no block is touched. Plain numeric
    datasets get the ``n5_default`` codec (:func:`default_mode_metadata`).
    ``container`` may be a URL (with fsspec's ``storage_options``).
    Returns ``(written, skipped)`` lists of directories.
    """
    written, skipped = [], []
    root = open_store(container, storage_options)  # opened once; each directory is a child of it
    for key, subdirs, files in root.walk():
        directory = root.url(key)
        if ATTRIBUTES not in files:
            continue
        if ZARR_JSON in files and not overwrite:
            skipped.append(directory)
            continue
        node = root.child(key) if key else root
        attributes = node.get_attributes()
        if "dimensions" in attributes:  # a malformed dataset is an error naming it, not a skip
            validate_attributes(attributes, storage.display(directory))
        try:
            document = zarr_document(attributes, directory, fill_label)
        except ConfigurationError:
            skipped.append(directory)
            continue
        if "dimensions" in attributes:
            subdirs[:] = []  # block directories below a dataset
        node.set_json(ZARR_JSON, document)
        written.append(directory)
    return written, skipped


def attributes_from_zarr(document: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """attributes.json for a zarr.json written through the store."""
    attributes = dict(document.get("attributes") or {})
    original = attributes.pop("_n5", None) or {}
    base = {k: v for k, v in original.items() if k not in _STRUCTURAL}
    base.update(attributes)
    if document.get("node_type") == "group":
        if prefix == "":
            base.setdefault("n5", N5_VERSION)
        return base
    codecs = document.get("codecs") or []
    encoding = document.get("chunk_key_encoding") or {}
    if encoding.get("name") != "v2" or (encoding.get("configuration") or {}).get("separator") != "/":
        raise ConfigurationError(
            "N5Store: N5 block paths need chunk_key_encoding={'name': 'v2', 'separator': '/'}"
        )
    base.update({
        "blockSize": list(document["chunk_grid"]["configuration"]["chunk_shape"]),
        "dimensions": list(document["shape"]),
    })
    if document.get("data_type") in N5_DATA_TYPES:
        return _plain_attributes(document, codecs, base)
    if (document.get("data_type") == "label_multiset" and len(codecs) > 1
            and codecs[0].get("name") == "n5_varlen"):
        added = ", ".join(codec.get("name", "?") for codec in codecs[1:])
        raise ConfigurationError(
            f"N5Store: the array has compressors ({added}) after the n5_varlen serializer; an N5 block holds "
            "its compression inside n5_varlen. Pass compressors=None (zarr adds zstd by default) and put "
            "the compressor in n5_varlen's codecs, e.g. N5VarlenZarrCodec(codecs=['n5_label_multiset', 'gzip'])"
        )
    if document.get("data_type") != "label_multiset" or len(codecs) != 1 or codecs[0].get("name") != "n5_varlen":
        raise ConfigurationError(
            f"N5Store writes arrays of the N5 data types ({', '.join(N5_DATA_TYPES)}) with the n5_default codec "
            "and label multiset arrays with the n5_varlen codec; got data type "
            f"{document.get('data_type')!r} with codecs {[codec.get('name') for codec in codecs]}"
        )
    chain = CodecChain(codecs[0]["configuration"]["codecs"])
    if chain.layout.name != "n5_label_multiset" or len(chain.compressors) > 1:
        raise ConfigurationError("N5Store: n5_varlen must hold n5_label_multiset and at most one compressor")
    compressor = chain.compressors[0] if chain.compressors else None
    # the N5 fields from the one builder; update keeps the order written so far (extras,
    # blockSize, dimensions) and appends dataType, compression and the flag
    metadata = DatasetMetadata.label_multisets(base["dimensions"], base["blockSize"],
                                               {"type": "raw"} if compressor is None else compressor.n5_config())
    base.update(metadata.to_json())
    return base


def _plain_attributes(document, codecs, base):
    """attributes.json of a plain array written through the store (``base``: its other attributes)."""
    if len(codecs) != 1 or codecs[0].get("name") != "n5_default":
        raise ConfigurationError(
            f"N5Store: an N5 block holds its compression inside the n5_default codec, the array has codecs "
            f"{[codec.get('name') for codec in codecs]}. Pass serializer=N5DefaultZarrCodec.from_compression(ndim, "
            "'gzip') (or another N5 compression) and compressors=None"
        )
    fill = document.get("fill_value", 0)
    if fill not in (0, 0.0) or isinstance(fill, bool):  # NaN and the strings of special floats too
        raise ConfigurationError(
            f"N5Store: N5 has no fill value (missing blocks read as 0), the array has fill_value {fill!r}")
    compressor = N5DefaultZarrCodec.from_dict(codecs[0]).compressor
    base.update({
        "dataType": document["data_type"],
        "compression": {"type": "raw"} if compressor is None else compressor.n5_config(),
    })
    return base
