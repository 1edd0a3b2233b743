"""Groups and ``open``: N5 containers as h5py, zarr and z5py users know them.

``n5.open(path_or_url, mode)`` gives a :class:`Group` for a container or group (a
Mapping of its children, with ``.attrs``, ``create_group``, ``require_group``,
``create_dataset``, ``create_label_multiset_dataset`` and ``tree()``) and a
dataset (:class:`~n5mscodecs.n5.LabelMultisetDataset` or
:class:`~n5mscodecs.n5.ArrayDataset`) for a dataset. Modes are zarr's and h5py's:

====== ====================================================================
``r``  read only; the location must hold an N5 group or dataset (default)
``r+`` read and write; it must exist
``a``  read and write; a missing location becomes an empty container
``w``  create an empty container; an existing N5 container, group or dataset
       there is emptied (its attributes replaced first), anything else refused
``w-`` create an empty container; an existing non-empty location is refused
====== ====================================================================

>>> import tempfile, numpy as np
>>> root = open(tempfile.mkdtemp() + "/c.n5", mode="w")
>>> ds = root.require_group("volumes").create_label_multiset_dataset(
...     "labels", np.array([[1, 2], [3, 3]], np.uint64), chunks=2)
>>> sorted(root), "volumes/labels" in root, root["volumes/labels"].shape
(['volumes'], True, (2, 2))
>>> print(root.tree())
/
└── volumes
    └── labels  (2, 2) label multisets, chunks (2, 2), gzip
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ArgumentError, ConfigurationError, InputTypeError, N5msCodecsError, StorageError
from ..multiset import BACKGROUND, LabelMultisetArray
from . import storage
from .array_dataset import ArrayDataset
from .attributes import Attributes
from .create import check_fill_value, compression_argument, create_array_dataset, write, write_array
from .dataset import _Dataset
from .label_dataset import LabelMultisetDataset
from .metadata import N5_VERSION, shape_argument
from .store import READ_ONLY_MODE, Store
from .stores import open_store, open_target
from .writing import LOCK_NAME, WriterLock, check_complete, incomplete_marker

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any, TypeAlias

    from numpy.typing import ArrayLike, DTypeLike

    from ..multiset.array import MultisetsLike, Rule
    from .compression import CompressorConfig
    from .storage import PathLike, StorageOptions
    from .store import Where

    Dataset: TypeAlias = LabelMultisetDataset | ArrayDataset

#: The modes of :func:`open`, as zarr's and h5py's.
MODES = ("r", "r+", "a", "w", "w-")
#: Default block size along each axis of :meth:`Group.create_dataset` (clipped to the shape).
DEFAULT_CHUNK = 64


class UnreadableAttributesWarning(UserWarning):
    """:func:`~n5mscodecs.n5.dataset_paths` met an ``attributes.json`` it cannot read (the message
    names it and says why)."""


def dataset_paths(group: Where, *, storage_options: StorageOptions = None) -> Iterator[str]:
    """The datasets (directories whose attributes have ``dimensions``) below ``group`` (a
    location, or its store), in order, as locations (see :func:`dataset_keys`)."""
    store = open_store(group, storage_options)
    return (store.url(key) for key in dataset_keys(store))


def dataset_keys(store: Store) -> Iterator[str]:
    """The datasets (directories whose attributes have ``dimensions``) below ``store``, in
    order, as keys of it (``""``: the store itself).

    A directory whose ``attributes.json`` cannot be read (not JSON, not an object, not a
    regular file) may be a dataset: it is yielded too, with an
    :class:`~n5mscodecs.n5.group.UnreadableAttributesWarning` naming the file and the reason
    (opening it raises the same error, so that a caller such as ``n5ms info`` reports it), and
    the walk goes on below it, except into directories named by digits only (what a dataset's
    block directories are called)."""
    for key, subdirectories, _ in store.walk():
        try:
            attributes = store.get_attributes(key)
        except N5msCodecsError as exc:  # ConfigurationError (garbage) or StorageError (not a regular file)
            warnings.warn(str(exc), UnreadableAttributesWarning, stacklevel=3)
            subdirectories[:] = [name for name in subdirectories if not name.isdigit()]
            yield key
            continue
        if "dimensions" in attributes:
            subdirectories[:] = []  # block directories
            yield key


def _default_chunks(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The block size chosen for ``chunks=None``/``True``: ``DEFAULT_CHUNK`` per axis, clipped to the shape."""
    return tuple(max(1, min(DEFAULT_CHUNK, n)) for n in shape)


def _parts(key: str) -> list[str]:
    """The names of a nested child path ``"a/b"``; ``.``, ``..`` and empty paths are refused, so
    that a key never leaves its group."""
    if not isinstance(key, str):
        raise TypeError(f"group keys are strings, got {type(key).__name__}")
    parts = [part for part in key.split("/") if part]
    if not parts or any(part in (".", "..") or "\\" in part for part in parts):
        raise KeyError(key)
    return parts


def _is_child(name: str) -> bool:
    """Whether a name listed in a group can be a child (not its attributes, lock or temporary files)."""
    return name != storage.ATTRIBUTES and not name.startswith(".")


class Group(Mapping[str, "Group | Dataset"]):
    """An N5 container or group: a Mapping from child names to groups and datasets.

    ``group["a/b"]`` opens nested children; iteration gives the direct children's names,
    sorted. A child is a dataset when its ``attributes.json`` has ``dimensions``, else a
    group. Datasets are opened as :func:`open` opens them, with the options this group
    was opened with; children, opened or created, get ``store.child(name)`` (the
    store holds the storage options). Obtain groups from :func:`open`, not from this
    constructor.

    Parameters
    ----------
    store : n5mscodecs.n5.store.Store
        The group's store (:func:`~n5mscodecs.n5.stores.open_store`), handed down to its children.
    read_only : bool
        Refuse every change (mode ``r``).
    container : ~n5mscodecs.n5.store.Store or str, optional
        The container root (its store): where writers put the ``{"n5": ...}`` version (default: the
        nearest ``*.n5`` of ``path`` and its parents, as :func:`~n5mscodecs.n5.write`).
    dataset_options : Mapping, optional
        Keywords for opening datasets (``fill_label``, ``multisets``, ``rule``,
        ``allow_incomplete``, ``allow_outside_root``).
    """

    def __init__(self, store: Store, *, read_only: bool = False, container: Store | str | None = None,
                 dataset_options: Mapping[str, Any] | None = None) -> None:
        self.store = store.read_only_view(READ_ONLY_MODE) if read_only else store
        self.path = store.url()
        self.name = store.display()
        self.storage_options = store.storage_options  # the store's (fsspec's for a URL); never printed
        self.read_only = self.store.read_only
        self.container = container
        self.dataset_options = dict(dataset_options or {})

    def __repr__(self) -> str:
        return f"<Group {self.name!r} mode={'r' if self.read_only else 'r+'}>"

    def __enter__(self) -> Group:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to do, as z5py's ``File.close``: a group holds nothing open (every access reads
        or writes storage at once, attributes included), so it stays usable after ``close()`` and
        after a ``with`` block; ``with n5.open(...) as root:`` works as with h5py and z5py."""

    @property
    def parent(self) -> Group:
        """The group above, as h5py's ``parent``; the container root's (the ``*.n5`` directory, a
        group with the ``{"n5": ...}`` version, or the top of its store's confinement) is the
        root itself, as h5py's root group is its own parent."""
        root = self.store.container_root()
        if root is not None and root.url() == self.store.url() or "n5" in self.store.get_attributes():
            return self
        try:
            store = self.store.parent()
        except StorageError:  # above the container root
            return self
        return Group(store, read_only=self.read_only, container=self.container,
                     dataset_options=self.dataset_options)

    @property
    def attrs(self) -> Attributes:
        """The group's attributes (a MutableMapping over its ``attributes.json``)."""
        return Attributes(self.store, read_only=self.read_only)

    def _find(self, key: str) -> tuple[Store, dict[str, Any]] | None:
        """``(store, attributes)`` of the child ``key``, None when there is none (a path through a
        dataset leads into its blocks, not to a child)."""
        parts = _parts(key)
        if self._dataset_above(parts) is not None:
            return None
        store = self.store.child("/".join(parts))
        attributes = store.get_attributes()
        return (store, attributes) if attributes or store.is_directory() else None

    def _dataset_above(self, parts: list[str]) -> str | None:
        """The first of the parents of the child ``parts`` that is a dataset, if one is."""
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if "dimensions" in self.store.get_attributes(parent):
                return parent
        return None

    def _new_child(self, name: str) -> Store:
        """The store of a child to create: refused in read-only mode or below a dataset."""
        self.store.check_writable(name, "create")
        parts = _parts(name)
        dataset = self._dataset_above(parts)
        if dataset is not None:
            raise ConfigurationError(f"{self.store.display(dataset)} is a dataset: nothing is created inside it")
        return self.store.child("/".join(parts))

    def __getitem__(self, key: str) -> Group | Dataset:
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        store, attributes = found
        return _opened(store, attributes, read_only=self.read_only, container=self.container,
                       dataset_options=self.dataset_options)

    def __contains__(self, key: object) -> bool:
        try:
            return self._find(key) is not None  # type: ignore[arg-type]
        except (KeyError, TypeError):
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> list[str]:
        """The names of the direct children, sorted (one listing)."""
        return [name for name in self.store.list_dir() if _is_child(name) and self.store.is_directory(name)]

    def groups(self) -> Iterator[tuple[str, Group]]:
        """``(name, group)`` of the direct child groups."""
        return ((name, child) for name, child in self.items() if isinstance(child, Group))

    def datasets(self) -> Iterator[tuple[str, Dataset]]:
        """``(name, dataset)`` of the direct child datasets."""
        return ((name, child) for name, child in self.items() if not isinstance(child, Group))

    def _descendants(self, prefix: str = "") -> Iterator[tuple[str, Group | Dataset | N5msCodecsError, bool]]:
        """``(relative name, child, last)`` of every group and dataset below, depth first and
        sorted (a group before what it holds; ``last``: the last of its siblings). A child that
        cannot be opened (its ``attributes.json`` unreadable, an incomplete dataset) comes
        with the error instead, and nothing below it."""
        names = self._names()
        for i, name in enumerate(names):
            try:
                child: Group | Dataset | N5msCodecsError = self[name]
            except N5msCodecsError as exc:  # StorageError too (not a regular file)
                child = exc
            yield prefix + name, child, i == len(names) - 1
            if isinstance(child, Group):
                yield from child._descendants(f"{prefix}{name}/")

    def tree(self) -> str:
        """The group's hierarchy as text, one line per group or dataset (datasets with their
        shape, kind, chunks and compression), as ``zarr``'s and ``z5py``'s ``tree()``. A child
        that cannot be opened is shown as ``name  unreadable: reason`` and the listing goes on."""
        lines = ["/"]
        indents: list[str] = []  # of the ancestors of the current line
        for path, child, last in self._descendants():
            depth = path.count("/")
            del indents[depth:]
            branch, indent = ("└── ", "    ") if last else ("├── ", "│   ")
            line = "".join(indents) + branch + path.rsplit("/", 1)[-1]
            if isinstance(child, N5msCodecsError):
                line += f"  unreadable: {child}"
            elif not isinstance(child, Group):
                kind = "label multisets" if isinstance(child, LabelMultisetDataset) else str(child.dtype)
                line += f"  {child.shape} {kind}, chunks {child.chunks}, {child.metadata.compression_name}"
            lines.append(line)
            indents.append(indent)
        return "\n".join(lines)

    def visit(self, func: Callable[[str], Any]) -> Any:
        """Call ``func(name)`` for every group and dataset below, as h5py's ``visit``: names
        relative to this group (``"a"``, ``"a/b"``), depth first, sorted; it stops at the first
        call that returns something other than None and returns that. A child that cannot be
        opened raises its error (:meth:`tree` lists such children instead)."""
        return self.visititems(lambda name, _: func(name))

    def visititems(self, func: Callable[[str, Group | Dataset], Any]) -> Any:
        """:meth:`visit` with ``func(name, object)``, the group or dataset opened, as h5py's
        ``visititems``."""
        for path, child, _ in self._descendants():
            if isinstance(child, N5msCodecsError):
                raise child
            result = func(path, child)
            if result is not None:
                return result
        return None

    def create_group(self, name: str) -> Group:
        """A new child group ``name`` (nested paths create their parents); an existing one is a
        FileExistsError."""
        store = self._new_child(name)
        if name in self:
            raise FileExistsError(f"{store.display()} exists")
        store.make_directory()
        store.set_attributes("", {})  # object stores have no directories
        return Group(store, container=self.container,
                     dataset_options=self.dataset_options)

    def require_group(self, name: str) -> Group:
        """The child group ``name``, created when missing; a dataset there is a TypeError."""
        if name in self:
            child = self[name]
            if not isinstance(child, Group):
                raise TypeError(f"{child.name} is a dataset, not a group")
            return child
        return self.create_group(name)

    def create_dataset(self, name: str, shape: int | Iterable[int] | None = None, dtype: DTypeLike | None = None,
                       data: ArrayLike | None = None, *, chunks: bool | int | Iterable[int] | None = None,
                       compression: CompressorConfig | int | None = "gzip", level: Any = None,
                       compression_opts: Any = None, fill_value: Any = None, fillvalue: Any = None,
                       attributes: Mapping[str, Any] | None = None, overwrite: bool = False,
                       threads: int | None = None) -> ArrayDataset:
        """A plain numeric dataset ``name``: written from ``data``, or empty with ``shape`` and
        ``dtype`` (fill it with ``ds[...] = ...``). As :func:`~n5mscodecs.n5.write_array`: an
        existing dataset is replaced only with ``overwrite``. The arguments take h5py's, zarr's
        and z5py's spellings:

        - ``shape``: one int (``10`` is ``(10,)``) or one per axis; with ``data`` it must be
          the data's shape (an ``ArgumentError``, a :class:`~n5mscodecs.ConfigurationError`,
          naming ``shape``).
        - ``chunks``: one int for every axis or one per axis; None or True choose (64 per axis,
          clipped to the shape); False is refused (N5 datasets are always chunked).
        - ``compression``: any N5 compression spelling (``"gzip"``, ``{"type": "zstd", "level":
          3}``), None for raw, an int for a gzip level (h5py); ``level`` (z5py) or
          ``compression_opts`` (h5py) set its level, see
          :func:`~n5mscodecs.n5.create.compression_argument`.
        - ``fill_value`` (zarr, z5py) / ``fillvalue`` (h5py): N5 has no fill value field (missing
          blocks read as 0), so only 0 or None is accepted.
        """
        check_fill_value(fill_value=fill_value, fillvalue=fillvalue)
        compression = compression_argument(compression, level, compression_opts)
        if chunks is False:
            raise ArgumentError("chunks", "N5 datasets are always chunked; pass None or True to choose, or the "
                                          "block size")
        target = self._new_child(name)
        if shape is not None:
            shape = shape_argument(shape)
        if data is not None:
            if shape is not None and shape != np.shape(data):
                raise ArgumentError("shape", f"{shape} is not the shape of data {np.shape(data)} (pass one of "
                                             "them, or the same)")
            shape = np.shape(data)
        if shape is None:
            raise ConfigurationError("create_dataset: pass data, or shape and dtype")
        shape = tuple(int(n) for n in shape)
        chunks = _default_chunks(shape) if chunks is None or chunks is True else chunks
        options: dict[str, Any] = {"compression": compression, "attributes": attributes, "overwrite": overwrite,
                                   "container": self.container}
        if data is not None:
            dataset = write_array(target, data if dtype is None else np.asarray(data, dtype),
                                  chunks, threads=threads, **options)
        elif dtype is None:
            raise ConfigurationError("create_dataset: dtype is required without data")
        else:
            dataset = create_array_dataset(target, shape, chunks, dtype, **options)
        return dataset

    def require_dataset(self, name: str, shape: int | Iterable[int], dtype: DTypeLike, exact: bool = False,
                        **options: Any) -> Dataset:
        """The dataset ``name``, created (``create_dataset(name, shape, dtype, **options)``) when
        missing, as h5py's ``require_dataset``: an existing one must have ``shape``, and a
        ``dtype`` that casts safely to its own (``exact``: the same dtype); else an
        :class:`~n5mscodecs.InputTypeError` (a TypeError, as h5py's) naming the field. A group
        there is one too."""
        if name not in self:
            return self.create_dataset(name, shape, dtype, **options)
        child = self[name]
        if isinstance(child, Group):
            raise InputTypeError(f"{child.name} is a group, not a dataset")
        shape, dtype = shape_argument(shape), np.dtype(dtype)
        if shape != child.shape:
            raise InputTypeError(f"{child.name}: shape {shape} does not match the existing dataset's {child.shape}")
        if dtype != child.dtype if exact else not np.can_cast(dtype, child.dtype):
            rule = "is not" if exact else "does not cast safely to"
            raise InputTypeError(f"{child.name}: dtype {dtype} {rule} the existing dataset's {child.dtype}")
        return child

    def __setitem__(self, name: str, value: ArrayLike | LabelMultisetArray) -> None:
        """``group[name] = value``: a new dataset ``name`` written from ``value``, as h5py's: a
        :class:`~n5mscodecs.LabelMultisetArray` becomes a label multiset dataset
        (:meth:`create_label_multiset_dataset`), anything else ``create_dataset(name,
        data=value)``; default chunks and compression. An existing ``name`` is refused
        (FileExistsError, as h5py refuses it): ``del group[name]`` first."""
        if name in self:
            raise FileExistsError(f"{self.store.display(name)} exists; remove it first (del group[name]) or use "
                                  "create_dataset(name, data=..., overwrite=True)")
        if isinstance(value, LabelMultisetArray):
            self.create_label_multiset_dataset(name, value, _default_chunks(value.shape))
        else:
            self.create_dataset(name, data=value)

    def __delitem__(self, name: str) -> None:
        """``del group[name]``: remove the child group (with everything below it) or dataset
        ``name``, as h5py and zarr do. Refused in mode ``r`` (:class:`~n5mscodecs.ReadOnlyError`).
        As every writer (see :mod:`n5mscodecs.n5.writing`), it holds the child's writer lock (a
        writer of the child, of a location above it or of one below it makes it a
        :class:`~n5mscodecs.TargetInUseError`) and marks every dataset below incomplete before
        removing anything, so that an interruption leaves no dataset reading as complete with
        part of its blocks gone. A symbolic link there is removed itself, as h5py removes a soft
        link: what it leads to stays as it is."""
        self.store.check_writable(name, "remove")
        parts = _parts(name)
        key = "/".join(parts)
        if self._dataset_above(parts) is not None or not self.store.is_directory(key):
            raise KeyError(name)
        if self.store.is_link(key):
            self.store.delete(key)
            return
        store = self.store.child(key)
        with WriterLock(store):
            for below, _, files in store.walk():
                if below and LOCK_NAME in files:  # a writer below (began before ours): refused while it runs
                    with WriterLock(store.child(below), reuse=True):  # (a stale lock is taken and dropped)
                        pass
            store.mark_datasets_below(incomplete_marker(f"del group[{name!r}]",
                                                        "it was being removed; remove it again (del group[name])"))
            store.delete_tree("")

    def create_label_multiset_dataset(self, name: str, data: MultisetsLike, chunks: int | Iterable[int], *,
                                      compression: CompressorConfig = "gzip",
                                      attributes: Mapping[str, Any] | None = None, overwrite: bool = False,
                                      threads: int | None = None) -> LabelMultisetDataset:
        """A label multiset dataset ``name`` written from ``data`` (multisets or integer labels),
        as :func:`~n5mscodecs.n5.write` writes it."""
        return write(self._new_child(name), data, chunks, compression=compression,
                     attributes=attributes, overwrite=overwrite, threads=threads, container=self.container)


_Dataset.group_class = Group  # a dataset's .parent


def _opened(store: Store, attributes: dict[str, Any], *, read_only: bool, container: Store | str | None,
            dataset_options: Mapping[str, Any]) -> Group | Dataset:
    """What ``store`` holds: a dataset when its ``attributes`` have ``dimensions``, else a group
    (``container``: its container root)."""
    if "dimensions" not in attributes:
        return Group(store, read_only=read_only, container=container, dataset_options=dataset_options)
    return _open_dataset(store, attributes, read_only=read_only, **dataset_options)


def _open_dataset(store: Store, attributes: dict[str, Any], *, read_only: bool = False,
                  fill_label: int = BACKGROUND, multisets: str = "elements", rule: Rule = "spec",
                  allow_incomplete: bool = False, allow_outside_root: bool = False) -> Dataset:
    if not allow_incomplete:
        check_complete(attributes, store.display())
    common: dict[str, Any] = {"allow_outside_root": allow_outside_root, "read_only": read_only, "store": store}
    if attributes.get("isLabelMultiset"):
        return LabelMultisetDataset(store.url(), attributes, fill_label=fill_label, multisets=multisets, rule=rule,
                                    **common)
    return ArrayDataset(store.url(), attributes, **common)


def open(path: PathLike | Store, mode: str = "r", *,  # noqa: A001 - mirrors zarr.open / h5py.File naming
         fill_label: int = BACKGROUND, multisets: str = "elements", rule: Rule = "spec",
         storage_options: StorageOptions = None, allow_incomplete: bool = False,
         allow_outside_root: bool = False) -> Group | Dataset:
    """Open an N5 container, group or dataset.

    Parameters
    ----------
    path : str, os.PathLike or ~n5mscodecs.n5.store.Store
        A local path or a URL (``s3://``, ``gs://``, ``http(s)://``, ``file://``; the ``remote`` extra),
        or a store (:func:`~n5mscodecs.n5.stores.open_store`; ``storage_options`` and
        ``allow_outside_root`` are then the store's). Mode ``r`` reads through a read-only
        view of the store: every write of what it returns raises :class:`~n5mscodecs.ReadOnlyError`.
    mode : {"r", "r+", "a", "w", "w-"}
        As zarr and h5py (see :mod:`n5mscodecs.n5.group`); ``w`` and ``w-`` create a container.
    fill_label : int
        The label missing blocks of a label multiset dataset read as (``{fill_label: 1}``).
    multisets : {"elements", "labels"}
        The view of label multiset datasets: multisets (:class:`~n5mscodecs.LabelMultisetArray`)
        or their uint64 argmax labels (read-only). Both hold what is stored: fragments. Unlike
        :class:`~n5mscodecs.zarr.N5Store`'s labels view, a Paintera fragment-segment-assignment is
        not applied here (this is the low-level API, like h5py); for segments, what Paintera shows, use
        :func:`~n5mscodecs.paintera.open_pyramid`, :func:`~n5mscodecs.zarr.open_labels` or the
        dataset's ``to_dask()``, which apply it by default.
    rule : {"spec", "java"}
        The argmax of the labels view (``java``: the labels Paintera shows).
    storage_options : Mapping, optional
        fsspec's options for a URL.
    allow_incomplete : bool
        Open a dataset an interrupted writer left unfinished (else
        :class:`~n5mscodecs.IncompleteError`, saying how to finish it).
    allow_outside_root : bool
        Follow symbolic links that lead outside the container root (the nearest of ``path``
        and its parents named ``*.n5``, else ``path``).

    Returns
    -------
    Group or LabelMultisetDataset or ArrayDataset
        A dataset when the location's ``attributes.json`` has ``dimensions`` (its attributes
        validated here, see :class:`~n5mscodecs.n5.metadata.DatasetMetadata`), else a group.
        In mode ``r`` a group needs an ``attributes.json`` or a name ending in ``.n5``.
    """
    if mode not in MODES:
        raise ConfigurationError(f"mode must be one of {MODES}, got {mode!r}")
    # the store is chosen here, once; reads below stay inside the container root
    store = open_target(path, storage_options, read_outside=allow_outside_root)
    if mode == "r":
        store = store.read_only_view(READ_ONLY_MODE)
    if store.is_file():
        raise ConfigurationError(f"{store.display()}: a file, not an N5 dataset (a directory with an attributes.json)")
    creating = mode in ("w", "w-")
    emptied = creating and store.is_directory() and bool(store.list_dir())
    if emptied:
        # only N5 is emptied: every dataset below marked incomplete and the attributes replaced by a
        # bare container's *first*, so that an interruption leaves an empty-looking container and
        # marked datasets, never a dataset over missing blocks that reads as complete
        if mode == "w-":
            raise FileExistsError(f"{store.display()} exists (mode 'w-' creates a new container; use 'a' or 'r+')")
        if not store.get_attributes() and not store.name.lower().endswith(".n5"):
            raise ConfigurationError(f"{store.display()}: refusing to empty (mode 'w') something that is not N5 "
                                     "(no attributes.json, not named *.n5)")
        if store.exists(LOCK_NAME):
            raise ConfigurationError(f"{store.display()}: a writer holds its lock ({LOCK_NAME}); refusing to empty it")
        store.mark_datasets_below(incomplete_marker("n5.open(mode='w') (emptying the container)",
                                                    "it was being removed; write it again"))
    attributes = {} if creating else store.get_attributes()
    root = store if creating or "dimensions" in attributes else store.container_root()  # a dataset needs none
    if not (creating or attributes):
        # a directory without attributes (or with {}) is a group when it has an attributes.json
        # (create_group writes {}) or lies in a container (z5py and Java write plain groups
        # without one), and when it is not inside a dataset (one of its block directories)
        group = store.is_directory() and (store.exists(storage.ATTRIBUTES) or root is not None)
        above = store
        while group and root is not None and above.url() != root.url():  # the container_root() walk, again
            above = above.parent()
            group = "dimensions" not in above.get_attributes()
        if not group and mode != "a":
            why = "no attributes.json, not inside an *.n5 container" if store.exists() else "does not exist"
            raise ConfigurationError(f"{store.display()}: not an N5 dataset or group ({why})")
        creating = not group
    if creating:
        store.make_directory()
        store.set_attributes("", {"n5": N5_VERSION})
    if emptied:
        store.clear("", {storage.ATTRIBUTES})
    dataset_options = {"fill_label": fill_label, "multisets": multisets, "rule": rule,
                       "allow_incomplete": allow_incomplete, "allow_outside_root": allow_outside_root}
    return _opened(store, attributes, read_only=mode == "r", container=root or store,
                   dataset_options=dataset_options)


def open_dataset(path: PathLike | Store, mode: str = "r", **options: Any) -> Dataset:
    """:func:`open` for a location that must hold a dataset (a group is a
    :class:`~n5mscodecs.ConfigurationError`, "not an N5 dataset")."""
    opened = open(path, "r+" if mode == "a" else mode, **options)
    if isinstance(opened, Group):
        raise ConfigurationError(f"{opened.name}: not an N5 dataset (no dimensions in attributes.json)")
    return opened
