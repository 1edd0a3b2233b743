"""``.attrs`` of N5 groups and datasets: a MutableMapping backed by ``attributes.json``."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, ReadOnlyError
from . import storage

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    from .storage import PathLike, StorageOptions


class Attributes(MutableMapping[str, Any]):
    """The user attributes in the ``attributes.json`` of the group or dataset at ``location``.

    Every access reads the document (another writer may have changed it); every change
    reads it, changes one key and writes it back whole, atomically. The keys in
    ``reserved`` (a dataset's N5 fields: ``dimensions``, ``blockSize``, ...) are neither
    listed nor writable here: they change only when a dataset is written.

    Parameters
    ----------
    location : str or os.PathLike
        The group or dataset (a local path or a URL).
    storage_options : Mapping, optional
        fsspec options for a URL.
    reserved : Collection of str
        Keys this view hides and refuses.
    read_only : bool
        Refuse every change (:class:`~n5mscodecs.ReadOnlyError`).
    """

    def __init__(self, location: PathLike, storage_options: StorageOptions = None, *,
                 reserved: Collection[str] = (), read_only: bool = False) -> None:
        self.location = location
        self.storage_options = storage_options
        self.reserved = frozenset(reserved)
        self.read_only = read_only

    def _document(self) -> dict[str, Any]:
        return storage.read_attributes(self.location, self.storage_options)

    def _check_key(self, key: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{storage.display(self.location)}: opened read-only (mode 'r'); "
                                "open it with mode='r+' or 'a' to change its attributes")
        if key in self.reserved:
            raise ConfigurationError(f"{storage.display(self.location)}: {key!r} is an N5 field of the dataset, "
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
        storage.write_attributes(self.location, document, self.storage_options)

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set several attributes with one write."""
        changes = dict(other, **kwargs)
        for key in changes:
            self._check_key(key)
        if changes:
            storage.write_attributes(self.location, {**self._document(), **changes}, self.storage_options)

    def __iter__(self) -> Iterator[str]:
        return iter([key for key in self._document() if key not in self.reserved])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def asdict(self) -> dict[str, Any]:
        """The attributes as a plain dict (one read)."""
        return {key: value for key, value in self._document().items() if key not in self.reserved}

    def __repr__(self) -> str:
        return f"<Attributes of {storage.display(self.location)}: {self.asdict()!r}>"
