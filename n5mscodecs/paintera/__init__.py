"""Paintera label sources: label multiset pyramids with their lookup side data.

:func:`convert` turns integer labels into what paintera-conversion-helper
writes for a label source (see ``docs/paintera.md``)::

    target/                      painteraData {"type": "label"}, maxId, labelBlockLookup
      data/                      multiScale, resolution, offset, isLabelMultiset
        s0 .. sN                 label multiset datasets (maxNumEntries, downsamplingFactors)
      unique-labels/s0 .. sN     uint64 varlength blocks: the distinct ids of each block
      label-to-block-mapping/s0 .. sN   id -> intervals of the blocks holding it

Axis order is N5's throughout (``shape``, ``block_size``, factors and
resolution are x, y, z). Blocks are written block-parallel by a thread pool
or by the workers of a dask.distributed cluster (``scheduler=``, or the active
client; see ``cluster``).

:func:`open_pyramid` reads one back: its levels as lazy dask label arrays
with each level's voxel size and offset (``multiscale``).

Modules: ``sources`` (label sources), ``pyramid`` (layout and block tasks),
``lookup`` (label-to-block-mapping), ``convert`` (the converter),
``multiscale`` (pyramids as dask arrays), ``conventions`` (level placement,
default factors, compression spellings: one definition each), ``argmax``
(label multisets to uint64 labels), ``assignment`` (Paintera's
fragment-segment-assignment: merges; ``assignment_text``: pairs as people write
them), ``ome_zarr`` (the OME-Zarr export), ``containers`` (what a container
holds, in words: :func:`survey`), ``cluster`` (where a job's block tasks run:
local threads or dask workers).

>>> import tempfile, numpy as np
>>> labels = np.repeat(np.arange(4, dtype=np.uint64), 8).reshape(4, 4, 2)
>>> summary = convert(labels, tempfile.mkdtemp() + "/labels.n5", block_size=2, factors=[2])
>>> summary.level_shapes, summary.max_id
([(4, 4, 2), (2, 2, 1)], 3)
>>> read_label_to_block_mapping(summary.target, 1)[3]
[((0, 0, 0), (1, 1, 0))]
"""

from .argmax import ArgmaxSummary, export_argmax
from .assignment import (
    FragmentSegmentAssignment,
    IdAllocator,
    assign_fragments,
    assignment_location,
    detach_fragments,
    merge_fragments,
    parse_assignment_file,
    parse_pair,
    read_assignment,
    resolve_assignment,
    write_assignment,
)
from .commit import COMMIT_KEY, CommitSummary, commit
from .containers import DatasetEntry, Survey, survey
from .conventions import CONVERSION_KEY, default_factors, level_placement, parse_compression
from .convert import ConversionSummary, LargeBlockWarning, convert
from .lookup import (
    LABEL_BLOCK_LOOKUP,
    LOOKUP_DIMENSION,
    label_to_block_mapping_blocks,
    read_label_to_block_mapping,
)
from .mapping_build import write_label_to_block_mapping
from .multiscale import LabelPyramid, find_label_pyramids, open_pyramid
from .ome_zarr import OmeZarrSummary, ome_zarr_level, to_ome_zarr
from .pyramid import PyramidJob, write_pyramid_block
from .sources import LabelSource, open_label_source

__all__ = [
    "COMMIT_KEY",
    "CommitSummary",
    "commit",
    "ArgmaxSummary",
    "export_argmax",
    "FragmentSegmentAssignment",
    "IdAllocator",
    "assign_fragments",
    "assignment_location",
    "detach_fragments",
    "merge_fragments",
    "parse_assignment_file",
    "parse_pair",
    "read_assignment",
    "resolve_assignment",
    "write_assignment",
    "default_factors",
    "level_placement",
    "parse_compression",
    "CONVERSION_KEY",
    "ConversionSummary",
    "LargeBlockWarning",
    "convert",
    "LABEL_BLOCK_LOOKUP",
    "LOOKUP_DIMENSION",
    "label_to_block_mapping_blocks",
    "read_label_to_block_mapping",
    "write_label_to_block_mapping",
    "LabelPyramid",
    "find_label_pyramids",
    "open_pyramid",
    "OmeZarrSummary",
    "ome_zarr_level",
    "to_ome_zarr",
    "PyramidJob",
    "write_pyramid_block",
    "LabelSource",
    "open_label_source",
    "DatasetEntry",
    "Survey",
    "survey",
]
