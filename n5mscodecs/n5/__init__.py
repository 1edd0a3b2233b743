"""N5: containers, groups and datasets on a file system or object store, block headers,
compressors, varlength blocks (``n5_varlen``) and grid geometry.

``open`` gives a :class:`Group` for a container or group and a dataset
(:class:`LabelMultisetDataset` or :class:`ArrayDataset`) for a dataset, as
``zarr.open``/``h5py.File``/``z5py.File`` do (see docs/containers.md). Axis order
is N5's (``dimensions``/``blockSize`` as in ``attributes.json``); block
``(i, j, k)`` lives at ``path/i/j/k``.

>>> import tempfile, numpy as np
>>> path = tempfile.mkdtemp() + "/labels"
>>> labels = np.arange(24, dtype=np.uint64).reshape(4, 3, 2) // 5
>>> ds = write(path, labels, chunks=(2, 2, 2), compression="gzip")
>>> ds.shape, ds.chunks, ds.max_id
((4, 3, 2), (2, 2, 2), 4)
>>> bool((open(path)[1:3].argmax() == labels[1:3]).all())
True
>>> open(path, multisets="labels")[1:3].dtype
dtype('uint64')
"""

from .array_dataset import ArrayDataset
from .create import block_size, create_array_dataset, write, write_array
from .dataset import read_attributes, write_attributes
from .default import n5_default_decode, n5_default_encode
from .disk_store import DiskStore
from .group import Group, dataset_keys, dataset_paths, open, open_dataset
from .header import N5BlockHeader
from .label_dataset import LabelMultisetDataset
from .metadata import N5_VERSION, DatasetMetadata, compression_attributes
from .store import Store
from .stores import open_store, open_target
from .url_store import UrlStore
from .varlen import CodecChain, N5Varlen, n5_block_header, n5_varlen_decode, n5_varlen_decode_labels, n5_varlen_encode
from .writing import mark_complete
from .zarr_backed import ZarrBackedStore

__all__ = [
    "N5_VERSION",
    "ArrayDataset",
    "DatasetMetadata",
    "Group",
    "LabelMultisetDataset",
    "block_size",
    "compression_attributes",
    "create_array_dataset",
    "dataset_keys",
    "dataset_paths",
    "open",
    "open_dataset",
    "open_store",
    "open_target",
    "Store",
    "DiskStore",
    "UrlStore",
    "ZarrBackedStore",
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
