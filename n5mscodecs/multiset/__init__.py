"""Label multisets in memory: the element type :class:`LabelMultiset` (``element``, a read-only
mapping of id -> count), the columnar :class:`LabelMultisetArray` (``array``), Paintera's
reserved ids and the rule switches (``rules``), with their GIL-free kernels (``_kernels``,
``_downsample``)."""

from .array import LabelMultisetArray, argmax_elements, assemble
from .element import LabelMultiset
from .rules import BACKGROUND, INVALID, MAX_ID, OUTSIDE, TRANSPARENT

__all__ = [
    "BACKGROUND",
    "INVALID",
    "MAX_ID",
    "OUTSIDE",
    "TRANSPARENT",
    "LabelMultiset",
    "LabelMultisetArray",
    "argmax_elements",
    "assemble",
]
