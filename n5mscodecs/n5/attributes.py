"""``.attrs`` of N5 groups and datasets: a MutableMapping backed by ``attributes.json``.

Values are stored as JSON, as h5py and zarr users expect of numpy values: numpy scalars
become Python numbers (``np.float32(0.5)`` -> ``0.5``), numpy arrays become (nested) lists,
tuples lists. What JSON cannot hold is refused before anything is written, naming the
attribute: NaN and +-Infinity (not JSON: Python's ``json`` would write ``NaN`` tokens that
strict parsers, JavaScript's and Gson's default writer refuse; store ``None`` or a string
instead), keys that are not strings (JSON object keys are; ``json`` would turn ``1`` into
``"1"`` silently), and objects of other types.

>>> json_value("resolution", np.array([4, 4, 40], np.int64)), json_value("v", {"scale": np.float32(0.5)})
([4, 4, 40], {'scale': 0.5})
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigurationError, InputTypeError
from .storage import ATTRIBUTES

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    from .store import Store


def json_value(name: str, value: Any) -> Any:
    """``value`` as plain JSON types (numpy scalars and arrays converted); NaN, Infinity, non-string
    keys and other objects refused naming ``name`` (the attribute, with the path inside it)."""
    if isinstance(value, np.ndarray | np.generic):
        value = value.tolist()  # Python scalars (np.generic) or nested lists of them
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigurationError(f"attribute {name}: {value} is not a JSON number (JSON has no NaN or "
                                     "Infinity); store None or a string instead")
        return value
    if isinstance(value, Mapping):
        converted = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputTypeError(f"attribute {name}: key {key!r} is a {type(key).__name__}; JSON object keys "
                                     "are strings")
            converted[key] = json_value(f"{name}/{key}", item)
        return converted
    if isinstance(value, list | tuple):
        return [json_value(f"{name}[{i}]", item) for i, item in enumerate(value)]
    raise InputTypeError(f"attribute {name}: a {type(value).__name__} is not JSON (numbers, strings, booleans, "
                         "None, lists, dicts and numpy scalars or arrays are)")


class Attributes(MutableMapping[str, Any]):
    """The user attributes in the ``attributes.json`` at the root of ``store`` (a group or dataset).

    Every access reads the document (another writer may have changed it); every change
    reads it, changes one key and writes it back whole, atomically. The keys in
    ``reserved`` (a dataset's N5 fields: ``dimensions``, ``blockSize``, ...) are neither
    listed nor writable here: they change only when a dataset is written. Values are
    converted to JSON as the module notes say (numpy values accepted; NaN, Infinity and
    non-string keys refused, naming the attribute).

    Parameters
    ----------
    store : n5mscodecs.n5.store.Store
        The group's or dataset's store.
    reserved : Collection of str
        Keys this view hides and refuses.
    read_only : bool
        Refuse every change (:class:`~n5mscodecs.ReadOnlyError`).
    """

    def __init__(self, store: Store, *, reserved: Collection[str] = (), read_only: bool = False) -> None:
        self.store = store.read_only_view() if read_only else store
        self.reserved = frozenset(reserved)
        self.read_only = self.store.read_only

    def _document(self) -> dict[str, Any]:
        return self.store.get_attributes()

    def _check_key(self, key: str) -> None:
        if not isinstance(key, str):
            raise InputTypeError(f"{self.store.display()}: attribute key {key!r} is a {type(key).__name__}; "
                                 "attribute keys are strings (JSON object keys)")
        self.store.check_writable(ATTRIBUTES, "change attributes")
        if key in self.reserved:
            raise ConfigurationError(f"{self.store.display()}: {key!r} is an N5 field of the dataset, "
                                     "not a user attribute")

    def __getitem__(self, key: str) -> Any:
        if key in self.reserved:
            raise KeyError(key)
        return self._document()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._check_key(key)
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        self._check_key(key)
        document = self._document()
        del document[key]
        self.store.set_attributes("", document)

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set several attributes with one write."""
        changes = dict(other, **kwargs)
        for key in changes:
            self._check_key(key)
        changes = {key: json_value(key, value) for key, value in changes.items()}  # checked before writing
        if changes:
            self.store.set_attributes("", {**self._document(), **changes})

    def __iter__(self) -> Iterator[str]:
        return iter([key for key in self._document() if key not in self.reserved])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def asdict(self) -> dict[str, Any]:
        """The attributes as a plain dict (one read)."""
        return {key: value for key, value in self._document().items() if key not in self.reserved}

    def __repr__(self) -> str:
        return f"<Attributes of {self.store.display()}: {self.asdict()!r}>"
