"""Type stubs of the label multiset kernels (``_kernels.pyx``).

Buffer arguments are typed memoryviews in the kernels: any buffer of the element type
named in the kernel's signature (int32 or int64 where it is fused). Status codes are
:class:`n5mscodecs._status.Status` values as ints; a result slot typed ``Any`` holds an
array when the status is OK and None otherwise.
"""

from typing import Any

import numpy as np
import numpy.typing as npt

from .._buffers import BytesLike

HAVE_AVX2: bool

def argmax_of_lists(
    list_offsets: BytesLike, ids: BytesLike, counts: BytesLike, java_rule: bool, num_threads: int, simd: bool = True
) -> npt.NDArray[np.uint64]: ...
def first_encounter_labels(labels: BytesLike, index: BytesLike) -> tuple[int, Any]: ...
def representative_lists(list_offsets: BytesLike, ids: BytesLike, counts: BytesLike) -> tuple[int, Any]: ...
def canonicalize_lists(
    list_offsets: BytesLike, ids: BytesLike, counts: BytesLike, new_lengths: BytesLike, num_threads: int
) -> int: ...
def compact_lists(
    old_offsets: BytesLike,
    new_offsets: BytesLike,
    ids: BytesLike,
    counts: BytesLike,
    new_ids: BytesLike,
    new_counts: BytesLike,
    num_threads: int,
) -> None: ...
def gather_values(values: BytesLike, index: BytesLike, out: BytesLike) -> int: ...
def gather_objects(elements: npt.NDArray[np.object_], index: BytesLike) -> npt.NDArray[np.object_]: ...
