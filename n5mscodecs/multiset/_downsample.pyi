"""Type stubs of the downsampling kernel (``_downsample.pyx``); buffers as in ``_kernels.pyi``."""

from typing import Any

from .._buffers import BytesLike

def downsample_lists(
    index: BytesLike,
    list_offsets: BytesLike,
    ids: BytesLike,
    counts: BytesLike,
    f0: int,
    f1: int,
    f2: int,
    max_num_entries: int,
    keep_lowest: bool,
    java_rule: bool,
    out_index: BytesLike,
) -> tuple[int, Any, Any, Any]: ...
