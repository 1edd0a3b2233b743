"""N5 label multiset datasets (``isLabelMultiset: true``): multisets or their argmax labels,
read and written block by block (see :mod:`n5mscodecs.n5`)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, cast

import numpy as np

from ..errors import ConfigurationError, ReadOnlyError
from ..multiset import BACKGROUND, LabelMultisetArray, assemble
from ..multiset.array import check_rule
from . import indexing
from .block import LabelMultisetBlockCodec
from .dataset import VIEWS, _BlockReader, _Dataset
from .header import MODE_VARLENGTH
from .metadata import DatasetMetadata, max_id
from .store import Store

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from .._buffers import BytesLike
    from ..multiset import LabelMultiset
    from ..multiset.array import MultisetsLike, Rule
    from .grid import Selection
    from .storage import PathLike, StorageOptions


class LabelMultisetDataset(_Dataset):
    """An N5 label multiset dataset (``isLabelMultiset: true``).

    Missing blocks read as the singleton ``{fill_label: 1}``: ``{0: 1}`` by
    default, as Java's ``N5LabelMultisets`` and Paintera's ``N5Data`` read them
    (a writer skips blocks whose voxels are all ``{0: 1}``).

    The view is chosen when the dataset is opened (``n5.open(..., multisets=...)``),
    and every read (``ds[...]``, :meth:`read`, :meth:`read_block`, :meth:`decode_block`,
    ``np.asarray(ds)``) follows it:

    - ``multisets="elements"`` (default): label multisets, a
      :class:`~n5mscodecs.LabelMultisetArray` whose elements are
      :class:`~n5mscodecs.LabelMultiset` (``dtype`` is ``object``, the dtype of
      ``LabelMultisetArray.to_elements()``); ``ds[...] = ...`` writes multisets or
      integer labels.
    - ``multisets="labels"``: the argmax labels, uint64 (``dtype`` uint64), decoded
      straight from the blocks (``rule="java"``: the labels Paintera shows, see
      :func:`~n5mscodecs.payload.decode_payload`); read-only.

    Both views give what is stored: fragments. The labels Paintera shows (segments: the
    source's fragment-segment-assignment applied, see :mod:`n5mscodecs.paintera.assignment`)
    come from :meth:`to_dask`, :func:`~n5mscodecs.paintera.open_pyramid` and
    :func:`~n5mscodecs.zarr.open_labels`, or ``paintera.read_assignment(path)(ds.read_labels())``.
    """

    def __init__(self, path: PathLike | Store, attributes: Mapping[str, Any] | DatasetMetadata, *,
                 fill_label: int = BACKGROUND, multisets: str = "elements", rule: Rule = "spec",
                 storage_options: StorageOptions = None, allow_outside_root: bool = False,
                 read_only: bool = False, store: Store | None = None) -> None:
        super().__init__(path, attributes, storage_options=storage_options, allow_outside_root=allow_outside_root,
                         read_only=read_only, store=store)
        if multisets not in VIEWS:
            raise ConfigurationError(f"multisets must be one of {VIEWS}, got {multisets!r}")
        check_rule(rule)
        self.multisets, self.rule = multisets, rule
        self.fill_label = int(fill_label)
        self.block_codec: LabelMultisetBlockCodec = LabelMultisetBlockCodec(self.metadata)
        self.codec_chain, self.max_entries = self.block_codec.codec_chain, self.block_codec.max_entries
        self._views: dict[Rule, LabelMultisetDataset] = {}

    @property
    def labels(self) -> bool:
        """Whether this is the labels view."""
        return self.multisets == "labels"

    @property
    def fill_value(self) -> int:
        """The label missing blocks read as (``fill_label``: the background id 0 by default)."""
        return self.fill_label

    def _open_options(self) -> dict[str, Any]:
        return {**super()._open_options(), "fill_label": self.fill_label, "multisets": self.multisets,
                "rule": self.rule}

    _block_mode = MODE_VARLENGTH

    def _reopened(self, metadata: DatasetMetadata) -> LabelMultisetDataset:
        return LabelMultisetDataset(self.path, metadata, fill_label=self.fill_label,
                                    allow_outside_root=self.allow_outside_root, store=self.store)

    def _fit(self, block: LabelMultisetArray, shape: tuple[int, ...]) -> LabelMultisetArray:
        elements = LabelMultisetArray.full(shape, BACKGROUND).to_elements()
        overlap = tuple(slice(0, min(a, b)) for a, b in zip(block.shape, shape))
        elements[overlap] = block.to_elements()[overlap]
        return LabelMultisetArray.from_elements(elements)

    def resize(self, shape: int | Iterable[int]) -> None:
        super().resize(shape)
        self._views.clear()  # views of the old shape

    @property
    def dtype(self) -> np.dtype:
        """uint64 for the labels view; ``object`` (elements are LabelMultiset) for the multisets."""
        return np.dtype(np.uint64) if self.labels else np.dtype(object)

    def _view_name(self) -> str:
        return self.multisets if self.rule == "spec" else f"{self.multisets}, rule={self.rule}"

    def labels_view(self, rule: Rule = "spec") -> LabelMultisetDataset:
        """This dataset's read-only labels view (argmax under ``rule``); the same object each time."""
        if self.labels and self.rule == rule:
            return self
        view = self._views.get(rule)
        if view is None:  # a race makes two equal views, one kept
            view = self._views.setdefault(rule, type(self)(
                self.path, self.metadata, fill_label=self.fill_label, multisets="labels", rule=rule,
                allow_outside_root=self.allow_outside_root, read_only=True, store=self.store))
        return view

    def max_payload_bytes(self) -> int:
        """The most payload bytes (numElements) a block may hold (see
        :attr:`~n5mscodecs.n5.block.LabelMultisetBlockCodec.max_payload_bytes`)."""
        return self.block_codec.max_payload_bytes

    @property
    def max_id(self) -> int | None:
        return self.attributes.get("maxId")

    def decode_block(self, data: BytesLike, grid_position: Sequence[int]) -> LabelMultisetArray | np.ndarray:
        """Decode block bytes to the block's cropped shape, in this dataset's view (see
        :meth:`LabelMultisetBlockCodec.decode <n5mscodecs.n5.block.LabelMultisetBlockCodec.decode>`)."""
        return self.block_codec.decode(data, grid_position, labels=self.labels, rule=self.rule)

    def read_block(self, grid_position: Sequence[int]) -> LabelMultisetArray | np.ndarray | None:
        """The block at ``grid_position`` (cropped shape, this dataset's view), or None when it is missing."""
        return self._read_decoded(self.decode_block, grid_position)

    def read(self, key: Selection = (), threads: int | None = None) -> LabelMultisetArray | LabelMultiset | np.ndarray:
        """Read a basic selection in this dataset's view, decoding only the blocks needed (in
        parallel): a :class:`~n5mscodecs.LabelMultisetArray`, or uint64 labels (equal to
        ``read(key).argmax()`` of the multisets bit for bit under ``rule="spec"``: highest
        count, ties to the smaller id compared unsigned). Missing blocks read as ``fill_label``."""
        pieces, box, view = self._read_region(key, self.read_block, threads)
        if not self.labels:
            result = assemble(box, [(target, None if block is None else block[source])
                                    for target, source, block in pieces], fill=self.fill_label)
            return result[view] if view else result
        if len(pieces) == 1 and pieces[0][2] is not None:  # inside one block: no second copy
            _, source, block = pieces[0]
            return np.ascontiguousarray(block[source])[view]
        out = np.full(box, self.fill_label, np.uint64)
        for target, source, block in pieces:
            if block is not None:
                out[target] = block[source]
        return out[view]

    def __getitem__(self, key: Selection) -> LabelMultisetArray | LabelMultiset | np.ndarray:
        return indexing.numpy_style(self, key) if indexing.is_advanced(key) else self.read(key)

    def read_labels(self, key: Selection = (), threads: int | None = None,
                    rule: Rule = "spec") -> np.ndarray | np.uint64:
        """The argmax labels (uint64) of a basic selection: ``labels_view(rule).read(key)``; the
        stored fragments (no fragment-segment-assignment applied: see the class notes).

        >>> import tempfile
        >>> from n5mscodecs import n5
        >>> ds = n5.write(tempfile.mkdtemp() + "/labels", np.array([[1, 2], [3, 3]], np.uint64), chunks=(1, 2))
        >>> ds.read_labels().tolist(), int(ds.read_labels((1, 0)))
        ([[1, 2], [3, 3]], 3)
        """
        return cast("np.ndarray", self.labels_view(rule).read(key, threads))

    def read_block_labels(self, grid_position: Sequence[int], rule: Rule = "spec") -> np.ndarray | None:
        """The argmax labels of one block: ``labels_view(rule).read_block(grid_position)``."""
        return cast("np.ndarray | None", self.labels_view(rule).read_block(grid_position))

    def decode_block_labels(self, data: BytesLike, grid_position: Sequence[int], rule: Rule = "spec") -> np.ndarray:
        """Block bytes to argmax labels: ``labels_view(rule).decode_block(data, grid_position)``."""
        return cast("np.ndarray", self.labels_view(rule).decode_block(data, grid_position))

    def _dask_source(self):
        labels = self.labels_view(self.rule if self.labels else "spec")
        return _BlockReader(labels.read, self.shape, np.uint64)

    def __array__(self, dtype=None, copy=None):
        if not self.labels:
            raise TypeError(
                f"{self.name} holds label multisets, which have no plain numpy form: read the argmax labels "
                "with ds.read_labels() (uint64) or open it with multisets='labels', or the multisets with "
                "ds[...] (a LabelMultisetArray)")
        data = self.read()
        return data if dtype is None else data.astype(dtype, copy=False)

    def __setitem__(self, key: Selection, value: MultisetsLike) -> None:
        """Write multisets (a LabelMultisetArray, elements, or integer labels, broadcast to the
        selection) into a basic selection without steps; the blocks touched are read, changed
        and written back (as :meth:`write_block` writes them), and ``maxId`` grows to cover the
        new labels. The labels view is read-only."""
        if self.labels:
            raise ReadOnlyError(f"{self.name}: the labels view is read-only; write label multisets through "
                                "the multisets view (multisets='elements')")
        value = LabelMultisetArray.coerce(value) if not isinstance(value, LabelMultisetArray) else value
        covering, elements = self._assignment(key, value.to_elements())

        def put(piece):
            position, target, source = piece
            block = self.read_block(position)
            if block is None:
                block = LabelMultisetArray.full(self.block_shape(position), self.fill_label)
            updated = block.to_elements()
            updated[source] = elements[target]
            self.write_block(position, LabelMultisetArray.from_elements(updated))

        self._each_block(put, covering, None)
        new_max = max_id(value.unique_labels())
        if self.max_id is None or new_max > self.max_id:
            self.store.set_attributes("", {**self.store.get_attributes(), "maxId": new_max})
            self.attributes["maxId"] = new_max
            self.metadata = dataclasses.replace(self.metadata, max_id=new_max)

    def write_block(self, grid_position: Sequence[int], data: MultisetsLike, *,
                    write_background: bool = False) -> bool:
        """Encode and write one block (cropped to the grid); returns whether it was written.

        A block without any positive count is removed instead, as Java's serializer
        writes nothing; so is a block whose voxels are all ``{0: 1}`` (what a missing
        block reads as), as the conversion helper's ``saveLabelMultisetNonEmptyBlock``
        skips all-background blocks, unless ``write_background``.
        """
        data = LabelMultisetArray.coerce(data)
        self.block_path(grid_position)  # checks the position first
        expected = self.block_shape(grid_position)
        if data.shape != expected:
            raise ConfigurationError(f"block {tuple(grid_position)}: shape {data.shape}, expected {expected}")
        if not data.has_positive_counts() or (not write_background and data.is_background()):
            self.store.delete(self.block_key(grid_position))
            return False
        self.write_block_bytes(grid_position, self.block_codec.encode(data))
        return True
