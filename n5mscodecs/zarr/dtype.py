"""The zarr data type ``label_multiset`` (object arrays of :class:`~n5mscodecs.LabelMultiset`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..errors import ConfigurationError
from ..multiset import INVALID, LabelMultiset
from ._compat import LOADS_DATA_TYPE_ENTRY_POINTS, DataTypeValidationError, ZDType

if TYPE_CHECKING:
    from typing import Any

    from ..multiset.array import ElementLike

_HEX = re.compile(r"^0[xX][0-9a-fA-F]{1,16}$")
V2_OBJECT_CODEC_ID = "label_multiset_vlen"
#: What zarr < 3.4.1, which never loads data type entry points, says about a label multiset
#: array opened without ``import n5mscodecs.zarr`` first.
UNKNOWN_DATA_TYPE_ERROR = "No Zarr data type found that matches 'label_multiset'"


def zarr_finds_the_data_type() -> bool:
    """Whether the installed zarr finds ``label_multiset`` through its entry point (zarr >= 3.4.1)
    in a process that never imported ``n5mscodecs.zarr``; older zarr (the newest for Python
    3.11 is 3.1.6) raises :data:`UNKNOWN_DATA_TYPE_ERROR` there."""
    return LOADS_DATA_TYPE_ENTRY_POINTS


def parse_fill_value(value: Any) -> LabelMultiset:
    """A ``fill_value`` hex string (e.g. "0xFFFFFFFFFFFFFFFE") -> the singleton {id: 1}."""
    if isinstance(value, LabelMultiset):
        return value
    if isinstance(value, str) and _HEX.match(value):
        return LabelMultiset([int(value, 16)], [1])
    raise ConfigurationError(
        f"label_multiset fill_value must be a hex string like '0xFFFFFFFFFFFFFFFE', got {value!r}"
    )


def parse_fill_value_v2(value: Any) -> LabelMultiset:
    """A v2-format ``fill_value``: what zarr 2 writes for object arrays too.

    zarr 2 writes ``0`` by default and fills missing chunks with that integer,
    which this package reads as the label 0, i.e. the singleton {0: 1}; so an
    integer is the singleton {id: 1} (negative: Java's signed view of the id).
    Hex strings are read as in v3. ``null`` never reaches here (zarr keeps None).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return LabelMultiset([value % (1 << 64)], [1])
    return parse_fill_value(value)


def fill_value_id(element: ElementLike) -> int:
    """The id of a singleton {id: 1} element."""
    element = LabelMultiset.coerce(element)
    if element.num_entries != 1 or int(element.counts[0]) != 1:
        raise ConfigurationError(
            f"label_multiset fill_value must be a singleton {{id: 1}}, got {element!r}"
        )
    return int(element.ids[0])


def fill_value_json(element: ElementLike) -> str:
    """The hex string of a singleton {id: 1} element."""
    return f"0x{fill_value_id(element):016X}"


# zarr bounds a data type's scalar to numpy scalars, str and bytes; ours is a Python object
@dataclass(frozen=True, kw_only=True)
class LabelMultisetDType(ZDType[np.dtypes.ObjectDType, LabelMultiset]):  # type: ignore[type-var]
    """zarr data type ``label_multiset``: elements are :class:`~n5mscodecs.LabelMultiset`.

    In zarr v3 metadata it is the string ``"label_multiset"``; in the v2
    format an object dtype (``"|O"``) whose object codec is
    ``label_multiset_vlen``. The fill value is a hex string naming the id of
    a singleton with count 1; canonical ``"0xFFFFFFFFFFFFFFFE"`` = ``{INVALID: 1}``.
    """

    dtype_cls: ClassVar = np.dtypes.ObjectDType
    _zarr_v3_name: ClassVar[str] = "label_multiset"
    object_codec_id: ClassVar[str] = V2_OBJECT_CODEC_ID

    @classmethod
    def from_native_dtype(cls, dtype):
        # a plain numpy object dtype says nothing about its elements: never claim it
        raise DataTypeValidationError(f"{dtype!r} is not a label_multiset data type")

    def to_native_dtype(self):
        return np.dtype(object)

    @classmethod
    def _check_json_v3(cls, data):
        if data == cls._zarr_v3_name:
            return True
        if isinstance(data, dict) and data.get("name") == cls._zarr_v3_name:
            if set(data) - {"name", "configuration"} or data.get("configuration"):
                # not DataTypeValidationError: zarr would swallow it into "no data type matches"
                raise ConfigurationError(
                    f"label_multiset takes no configuration, got {data!r}"
                )
            return True
        return False

    @classmethod
    def _check_json_v2(cls, data):
        # the bare name: zarr.create_array(..., dtype="label_multiset", zarr_format=2)
        if data == cls._zarr_v3_name:
            return True
        # zarr only reports the object codec ids it knows itself, so ours arrives as None
        return (isinstance(data, dict) and data.get("name") == "|O"
                and data.get("object_codec_id") in (None, V2_OBJECT_CODEC_ID))

    @classmethod
    def _from_json_v3(cls, data):
        if cls._check_json_v3(data):
            return cls()
        raise DataTypeValidationError(f"not the label_multiset data type: {data!r}")

    @classmethod
    def _from_json_v2(cls, data):
        if cls._check_json_v2(data):
            return cls()
        raise DataTypeValidationError(f"not a label_multiset object array: {data!r}")

    def to_json(self, zarr_format):
        if zarr_format == 2:
            return {"name": "|O", "object_codec_id": V2_OBJECT_CODEC_ID}
        if zarr_format == 3:
            return self._zarr_v3_name
        raise ValueError(f"zarr_format must be 2 or 3, got {zarr_format}")

    def _check_scalar(self, data):
        return isinstance(data, (LabelMultiset, dict, int, np.integer, str))

    def cast_scalar(self, data):
        if isinstance(data, str):
            return parse_fill_value(data)
        return LabelMultiset.coerce(data)

    def default_scalar(self):
        return LabelMultiset([INVALID], [1])

    def from_json_scalar(self, data, *, zarr_format):
        return parse_fill_value_v2(data) if zarr_format == 2 else parse_fill_value(data)

    def to_json_scalar(self, data, *, zarr_format):
        if zarr_format == 2:
            # an integer: zarr 2 fills missing chunks with it, and reads it as a label
            return fill_value_id(self.cast_scalar(data))
        return fill_value_json(self.cast_scalar(data))
