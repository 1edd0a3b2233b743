"""Type stubs of the payload kernels (``_kernels.pyx``).

Buffer arguments are typed memoryviews in the kernels: any buffer of the element type
named in the kernel's signature (int32 or int64 where it is fused). Status codes are
:class:`n5mscodecs._status.Status` values as ints; a result slot typed ``Any`` holds an
array when the status is OK and None otherwise.
"""

from typing import Any

from .._buffers import BytesLike

HAVE_AVX2: bool
HAVE_POPCNT: bool

def list_start_words(list_data_size: int) -> int: ...
def scan_list_data(
    list_data: BytesLike,
    start_bits: BytesLike | None = None,
    rank: BytesLike | None = None,
    label_of_list: BytesLike | None = None,
    simd: bool = True,
) -> tuple[int, int, int, int]: ...
def split_list_data(
    list_data: BytesLike,
    list_offsets: BytesLike,
    ids: BytesLike,
    counts: BytesLike,
    start_bits: BytesLike | None = None,
    rank: BytesLike | None = None,
    simd: bool = True,
) -> int: ...
def map_voxel_offsets(
    table: BytesLike,
    big_endian: bool,
    list_data: BytesLike,
    start_bits: BytesLike,
    rank: BytesLike,
    index: BytesLike,
    num_threads: int,
    simd: bool = True,
) -> int: ...
def labels_of_voxels(
    table: BytesLike,
    big_endian: bool,
    label_of_list: BytesLike,
    list_data: BytesLike,
    start_bits: BytesLike,
    rank: BytesLike,
    out: BytesLike,
    num_threads: int,
    simd: bool = True,
) -> int: ...
def encode_singleton_offsets(labels: BytesLike, table: BytesLike, big_endian: bool) -> tuple[int, Any]: ...
def assign_list_positions(
    index: BytesLike,
    representative: BytesLike,
    list_offsets: BytesLike,
    byte_position: BytesLike,
    write_order: BytesLike,
) -> tuple[int, int]: ...
def write_voxel_offsets(
    out: BytesLike, start: int, index: BytesLike, byte_position: BytesLike, big_endian: bool, num_threads: int
) -> None: ...
def write_lists(
    out: BytesLike, start: int, write_order: BytesLike, list_offsets: BytesLike, ids: BytesLike, counts: BytesLike
) -> int: ...
def c_order_copy_3d(src: BytesLike, dst: BytesLike, num_threads: int) -> None: ...
def labels_of_voxels_c_order(
    table: BytesLike,
    big_endian: bool,
    label_of_list: BytesLike,
    list_data: BytesLike,
    start_bits: BytesLike,
    rank: BytesLike,
    out: BytesLike,
    n0: int,
    n1: int,
    n2: int,
    slabs: BytesLike,
    num_threads: int,
    simd: bool = True,
) -> int: ...
def c_order_slab_values(n0: int, n1: int, num_threads: int) -> int: ...
