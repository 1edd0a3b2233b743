"""Label multisets in memory: the element type :class:`LabelMultiset` and the columnar
:class:`LabelMultisetArray`, with their GIL-free kernels (``_kernels``, ``_downsample``)."""

from .array import (
    BACKGROUND,
    INVALID,
    MAX_ID,
    OUTSIDE,
    TRANSPARENT,
    LabelMultiset,
    LabelMultisetArray,
    argmax_elements,
    assemble,
)

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
