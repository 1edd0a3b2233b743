"""``.attrs`` of N5 groups and datasets: a MutableMapping backed by ``attributes.json``."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, ReadOnlyError

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    from .store import Store


class Attributes(MutableMapping[str, Any]):
    """The user attributes in the ``attributes.json`` at the root of ``store`` (a group or dataset).

    Every access reads the document (another writer may have changed it); every change
    reads it, changes one key and writes it back whole, atomically. The keys in
    ``reserved`` (a dataset's N5 fields: ``dimensions``, ``blockSize``, ...) are neither
    listed nor writable here: they change only when a dataset is written.

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
        self.store = store
        self.reserved = frozenset(reserved)
        self.read_only = read_only

    def _document(self) -> dict[str, Any]:
        return self.store.get_attributes()

    def _check_key(self, key: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self.store.display()}: opened read-only (mode 'r'); "
                                "open it with mode='r+' or 'a' to change its attributes")
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
