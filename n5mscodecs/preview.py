"""Pictures of label multiset datasets: one slice as argmax colours beside entries per voxel."""

from __future__ import annotations

import numpy as np

from .n5 import LabelMultisetDataset


def label_colours(labels: np.ndarray) -> np.ndarray:
    """Distinct RGB colours per label (a hash of the id; 0 is black)."""
    mixed = labels.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    rgb = np.stack([(mixed >> np.uint64(s)) & np.uint64(0xFF) for s in (56, 40, 24)], -1).astype(np.uint8)
    rgb[labels == 0] = 0
    return rgb


def slice_picture(dataset: LabelMultisetDataset, axis: int, index: int) -> tuple[np.ndarray, int, int]:
    """``(RGB picture, distinct labels, most entries per voxel)`` of slice ``index`` along N5
    ``axis``: argmax colours on the left, entries per voxel in grey (white = most) on the right."""
    key = tuple(index if a == axis else slice(None) for a in range(dataset.ndim))
    plane = dataset[key]
    labels = plane.argmax().T  # rows: the slower of the two remaining N5 axes
    entries = plane.entries_per_voxel().T.astype(np.float64)
    grey = (255 * entries / max(entries.max(), 1)).astype(np.uint8)
    picture = np.concatenate([label_colours(labels), np.full((labels.shape[0], 4, 3), 255, np.uint8),
                              np.repeat(grey[..., None], 3, -1)], axis=1)
    return picture, int(np.unique(labels).size), int(entries.max())
