"""N5: block headers, compressors, varlength blocks (``n5_varlen``), grid geometry, and
datasets on a file system: label multiset datasets and plain numeric ones.

Axis order is N5's (``dimensions``/``blockSize`` as in ``attributes.json``);
block ``(i, j, k)`` lives at ``path/i/j/k``.

>>> import tempfile, numpy as np
>>> path = tempfile.mkdtemp() + "/labels"
>>> labels = np.arange(24, dtype=np.uint64).reshape(4, 3, 2) // 5
>>> ds = write(path, labels, chunks=(2, 2, 2), compression="gzip")
>>> ds.shape, ds.chunks, ds.max_id
((4, 3, 2), (2, 2, 2), 4)
>>> bool((open(path)[1:3].argmax() == labels[1:3]).all())
True
"""

from .dataset import (
    N5_VERSION,
    ArrayDataset,
    LabelMultisetDataset,
    block_size,
    compression_attributes,
    create_array_dataset,
    dataset_paths,
    open,
    read_attributes,
    write,
    write_array,
    write_attributes,
)
from .default import n5_default_decode, n5_default_encode
from .header import N5BlockHeader
from .varlen import CodecChain, N5Varlen, n5_block_header, n5_varlen_decode, n5_varlen_decode_labels, n5_varlen_encode
from .writing import mark_complete

__all__ = [
    "N5_VERSION",
    "ArrayDataset",
    "LabelMultisetDataset",
    "block_size",
    "compression_attributes",
    "create_array_dataset",
    "dataset_paths",
    "open",
    "read_attributes",
    "write",
    "write_array",
    "write_attributes",
    "mark_complete",
    "N5BlockHeader",
    "n5_default_decode",
    "n5_default_encode",
    "CodecChain",
    "N5Varlen",
    "n5_block_header",
    "n5_varlen_decode",
    "n5_varlen_decode_labels",
    "n5_varlen_encode",
]
