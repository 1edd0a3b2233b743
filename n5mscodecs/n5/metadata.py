"""N5 dataset attributes as values: parsed and validated once, written from one place.

A dataset's ``attributes.json`` holds N5's fields (``dimensions``, ``blockSize``,
``dataType``, ``compression``), the label multiset flags (``isLabelMultiset``,
``maxId``, ``maxNumEntries``) and anything else a writer put there (Paintera's
``downsamplingFactors``, a user's attributes). :class:`DatasetMetadata` holds the
first two kinds as checked fields and the rest, untouched, in ``extra``;
:meth:`DatasetMetadata.from_json` is the one place a dataset's attributes are
validated and :meth:`DatasetMetadata.to_json` the one place a document is built.

>>> meta = DatasetMetadata.label_multisets((4, 3), (2, 2), "gzip", max_id=7)
>>> meta.to_json()["isLabelMultiset"], meta.dtype, DatasetMetadata.from_json(meta.to_json()) == meta
(True, dtype('uint8'), True)
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ArgumentError, ConfigurationError
from ..multiset.array import check_rule
from .attributes import json_value
from .compression import compressor_from_config, writing_compressor
from .varlen import MAX_NDIM

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from numpy.typing import ArrayLike, DTypeLike

    from ..multiset.array import Rule
    from .compression import CompressorConfig

#: The N5 version a container root is given (``{"n5": ...}``), as Java's writers do.
N5_VERSION = "4.0.0"
#: N5 ``dataType`` names of plain datasets (numpy's names).
DATA_TYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64")
#: Voxels of one block: Java's arrays (and N5's int blockSize) hold at most 2**31 - 1.
MAX_BLOCK_VOXELS = 2**31 - 1
#: The attributes :class:`DatasetMetadata` owns; a dataset's ``attrs`` hides them.
RESERVED_KEYS = frozenset({"dimensions", "blockSize", "dataType", "compression", "isLabelMultiset", "maxId",
                           "maxNumEntries"})


def _integers(name: str, field: str, values: Any, low: int, high: int) -> tuple[int, ...]:
    """``values`` (a JSON list) as a tuple of ints in ``low..high``, else ConfigurationError naming ``field``."""
    if not isinstance(values, list | tuple):
        raise ConfigurationError(f"{name}: attributes.json: {field} must be a list of integers, got {values!r}")
    result = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer) or value != value \
                or int(value) != value:
            raise ConfigurationError(f"{name}: attributes.json: {field} must hold integers, got {values!r}")
        if not low <= int(value) <= high:
            raise ConfigurationError(f"{name}: attributes.json: {field} {values!r}: each must be in {low}..{high}")
        result.append(int(value))
    return tuple(result)


def _optional_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def shape_argument(shape: Any, name: str = "shape", ndim: int | None = None) -> tuple[int, ...]:
    """``shape`` as h5py and zarr take it (one int, or one per axis) as a tuple of ints >= 0;
    otherwise an ``ArgumentError`` (a :class:`~n5mscodecs.ConfigurationError`) naming ``name``
    (also when it does not have ``ndim`` axes, if given).

    >>> shape_argument(10), shape_argument([4, np.int64(3)])
    ((10,), (4, 3))
    """
    try:
        values = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
        sizes = tuple(int(n) for n in values)
    except (TypeError, ValueError):
        raise ArgumentError(name, f"an int or a sequence of ints required, got {shape!r}") from None
    if any(isinstance(v, bool) or n < 0 or n != v for n, v in zip(sizes, values)):
        raise ArgumentError(name, f"integers >= 0 required, got {shape!r}")
    if ndim is not None and len(sizes) != ndim:
        raise ArgumentError(name, f"{ndim} values required (one per axis), got {shape!r}")
    return sizes


def max_id(labels: ArrayLike, rule: Rule = "spec") -> int:
    """The ``maxId`` attribute for uint64 ``labels``: the largest id below 2**63 (0 if none).

    Paintera reads ``maxId`` as a Java long and hands out fresh ids counting up from it,
    so it must be a non-negative long: ids in [2**63, MAX_ID] are negative longs there,
    and counting up from the largest id below 2**63 never reaches them. Java's conversion
    helper writes the signed maximum (``rule="java"``), which is the same value unless
    every id is 2**63 or above: then it is negative and Paintera's next id a reserved one.

    >>> max_id(np.array([0, 7, 2**63 + 5], np.uint64)), max_id(np.array([2**63 + 5, 2**64 - 2], np.uint64), "java")
    (7, -2)
    """
    labels = np.asarray(labels, np.uint64)
    if check_rule(rule):
        return int(labels.view(np.int64).max()) if labels.size else 0
    below = labels[labels < np.uint64(2**63)]
    return int(below.max()) if below.size else 0


def compression_attributes(compression: CompressorConfig) -> dict[str, Any]:
    """The N5 ``compression`` attribute for a compressor spelled any way ``compressor_from_config`` reads
    (one that can compress: writers store it)."""
    compressor = writing_compressor(compression)
    return {"type": "raw"} if compressor is None else compressor.n5_config()


@dataclasses.dataclass(frozen=True)
class DatasetMetadata:
    """The attributes of one N5 dataset, checked.

    Attributes
    ----------
    shape : tuple of int
        ``dimensions`` (N5 axis order).
    chunks : tuple of int
        ``blockSize``.
    data_type : str
        ``dataType``: ``uint8`` for a label multiset dataset (its blocks are bytes).
    compression : Mapping
        The N5 ``compression`` attribute (``{"type": "raw"}`` when there is none).
    label_multiset : bool
        ``isLabelMultiset``.
    max_id : int or None
        ``maxId`` (the largest label id, as Paintera reads it), when it is an integer.
    max_num_entries : int or None
        ``maxNumEntries`` (entries a voxel may hold; -1 for no bound), when it is an integer.
    extra : Mapping
        Every other attribute, as stored.
    """

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    data_type: str
    compression: Mapping[str, Any]
    label_multiset: bool = False
    max_id: int | None = None
    max_num_entries: int | None = None
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        # read-only views, so that a value shared by datasets cannot change under them
        object.__setattr__(self, "compression", types.MappingProxyType(dict(self.compression)))
        object.__setattr__(self, "extra", types.MappingProxyType(dict(self.extra)))

    __hash__ = None  # type: ignore[assignment]  # holds mappings

    def __reduce__(self) -> tuple[Any, ...]:
        # mapping proxies do not pickle; the document does (dask ships datasets to workers)
        return DatasetMetadata.from_json, (self.to_json(),)

    @classmethod
    def from_json(cls, document: Any, name: str = "dataset") -> DatasetMetadata:
        """Parse and check a dataset's attributes; ``name`` (the dataset) is named in errors.

        Raises
        ------
        ConfigurationError
            Naming the dataset and the field: missing or malformed ``dimensions``/``blockSize``,
            more than ``MAX_NDIM`` (32) axes, a block over
            ``MAX_BLOCK_VOXELS`` voxels, an unknown compression, or (plain datasets) a
            ``dataType`` N5 does not have.
        """
        if not isinstance(document, dict):
            raise ConfigurationError(f"{name}: attributes.json must be a JSON object, got {type(document).__name__}")
        if "dimensions" not in document or "blockSize" not in document:
            raise ConfigurationError(f"{name}: attributes.json lacks dimensions/blockSize")
        shape = _integers(name, "dimensions", document["dimensions"], 0, 2**63 - 1)
        chunks = _integers(name, "blockSize", document["blockSize"], 1, MAX_BLOCK_VOXELS)
        if not 1 <= len(shape) <= MAX_NDIM:
            raise ConfigurationError(
                f"{name}: attributes.json: dimensions has {len(shape)} values, 1..{MAX_NDIM} allowed")
        if len(chunks) != len(shape):
            raise ConfigurationError(f"{name}: attributes.json: blockSize {list(chunks)} does not fit dimensions "
                                     f"{list(shape)} ({len(chunks)} values for {len(shape)} dimensions)")
        if math.prod(chunks) > MAX_BLOCK_VOXELS:
            raise ConfigurationError(f"{name}: attributes.json: blockSize {list(chunks)} holds more than "
                                     f"{MAX_BLOCK_VOXELS} voxels")
        compression = document.get("compression", {"type": "raw"})
        try:
            compressor_from_config(compression)
        except ConfigurationError as exc:
            field = "" if str(exc).startswith("compression") else "compression: "
            raise ConfigurationError(f"{name}: attributes.json: {field}{exc}") from None
        label_multiset = bool(document.get("isLabelMultiset"))
        data_type = document.get("dataType")
        if label_multiset:  # Java writes uint8; what a reader does not use is not refused
            data_type = data_type if isinstance(data_type, str) else "uint8"
        elif not isinstance(data_type, str) or data_type not in DATA_TYPES:
            raise ConfigurationError(f"{name}: attributes.json: unsupported dataType {data_type!r}")
        max_id, max_num_entries = _optional_int(document.get("maxId")), _optional_int(document.get("maxNumEntries"))
        owned = {"dimensions", "blockSize", "dataType", "compression"}
        owned |= {"isLabelMultiset"} if "isLabelMultiset" in document and isinstance(
            document["isLabelMultiset"], bool) else set()
        owned |= {"maxId"} if max_id is not None else set()
        owned |= {"maxNumEntries"} if max_num_entries is not None else set()
        extra = {key: value for key, value in document.items() if key not in owned}
        return cls(shape, chunks, data_type, compression if isinstance(compression, dict) else {"type": compression},
                   label_multiset, max_id, max_num_entries, extra)

    def to_json(self) -> dict[str, Any]:
        """The ``attributes.json`` document: N5's fields first, then ``maxNumEntries``, the label
        multiset flag and ``maxId``, then ``extra`` (an unread flag of another type stays as it was)."""
        document: dict[str, Any] = {"dataType": self.data_type, "compression": dict(self.compression),
                                    "blockSize": list(self.chunks), "dimensions": list(self.shape)}
        # maxNumEntries before the flag: the order the Paintera conversion has always written
        if self.max_num_entries is not None:
            document["maxNumEntries"] = self.max_num_entries
        if self.label_multiset:
            document["isLabelMultiset"] = True
        if self.max_id is not None:
            document["maxId"] = self.max_id
        return {**document, **self.extra}

    @classmethod
    def label_multisets(cls, shape: Iterable[int], chunks: Iterable[int], compression: CompressorConfig, *,
                        max_id: int | None = None, max_num_entries: int | None = None,
                        attributes: Mapping[str, Any] | None = None) -> DatasetMetadata:
        """The metadata of a label multiset dataset (``dataType`` uint8, ``isLabelMultiset``);
        ``attributes`` are added to ``extra`` (a reserved key among them replaces the field), as
        JSON (numpy values converted; NaN, Infinity and non-string keys refused, as ``attrs`` does)."""
        document = cls(tuple(shape), tuple(chunks), "uint8", compression_attributes(compression), True, max_id,
                       max_num_entries).to_json()
        return cls.from_json({**document, **json_value("attributes", dict(attributes or {}))})

    @classmethod
    def array(cls, shape: Iterable[int], chunks: Iterable[int], dtype: DTypeLike, compression: CompressorConfig, *,
              attributes: Mapping[str, Any] | None = None) -> DatasetMetadata:
        """The metadata of a plain numeric dataset of ``dtype`` (one of ``DATA_TYPES``); ``attributes``
        as in :meth:`label_multisets`."""
        dtype = np.dtype(dtype)
        if dtype.name not in DATA_TYPES:
            raise ConfigurationError(f"dtype: {dtype} has no N5 dataType")
        document = cls(tuple(shape), tuple(chunks), dtype.name, compression_attributes(compression)).to_json()
        return cls.from_json({**document, **json_value("attributes", dict(attributes or {}))})

    @functools.cached_property
    def compressor(self) -> Any:
        """The compressor (numcodecs-style codec) of the blocks, None for raw."""
        return compressor_from_config(dict(self.compression))

    @property
    def dtype(self) -> np.dtype:
        """``data_type`` as a numpy dtype (uint8 for label multisets: the bytes of their blocks)."""
        return np.dtype(self.data_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def compression_name(self) -> str:
        """The compression's ``type`` (``raw``, ``gzip``, ...), for reprs and listings."""
        return str(self.compression.get("type", "raw"))
