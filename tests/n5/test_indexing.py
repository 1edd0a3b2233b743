"""zarr's advanced selections on datasets with numpy's semantics (issue 53, item 6): every
selection compared with numpy's indexing of the same data held in memory."""

import numpy as np
import pytest

from n5mscodecs import LabelMultisetArray, n5

RNG = np.random.default_rng(7)
DATA = (RNG.integers(0, 6, (13, 9, 7)) * 5 + np.arange(7)).astype(np.uint64)  # chunks (4, 4, 3): ragged edges


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("indexing")
    plain = n5.write_array(str(root / "c.n5" / "plain"), DATA, chunks=(4, 4, 3), compression="raw")
    n5.write(str(root / "c.n5" / "labels"), DATA, chunks=(4, 4, 3), compression="raw")
    return {"plain": plain, "labels": n5.open(str(root / "c.n5" / "labels"), multisets="labels"),
            "multisets": n5.open(str(root / "c.n5" / "labels"))}


def values(result):
    """A selection's values as a numpy array (multisets by their argmax: one label per voxel)."""
    if isinstance(result, LabelMultisetArray):
        assert all(len(result.element(i)) == 1 for i in range(result.n_lists))
        return result.argmax()
    return np.asarray(result)


ORTHOGONAL = [
    ([4, 0, 12, 0], slice(None), 2),
    (np.array([-1, 3]), [8, 0, 8], slice(1, 7, 2)),
    (np.arange(13) % 3 == 0, 4, np.array([True, False, True, False, False, True, True])),
    (slice(None), [], slice(None)),
    (Ellipsis, [6, 0]),
]


@pytest.mark.parametrize("view", ["plain", "labels", "multisets"])
@pytest.mark.parametrize("key", ORTHOGONAL, ids=range(len(ORTHOGONAL)))
def test_orthogonal_selections_equal_numpy_per_axis(datasets, view, key):
    ds = datasets[view]
    expected = DATA
    full = key if key[0] is not Ellipsis else (slice(None),) * (3 - len(key) + 1) + key[1:]
    for axis in reversed(range(3)):  # numpy's orthogonal indexing: one axis at a time
        k = full[axis]
        expected = np.take(expected, k, axis=axis) if isinstance(k, int) else expected[
            (slice(None),) * axis + (np.flatnonzero(k) if np.asarray(k).dtype == bool else k,)]
    for result in (ds.oindex[key], ds.get_orthogonal_selection(key)):
        assert values(result).shape == expected.shape
        assert np.array_equal(values(result), expected)


COORDINATES = [
    (np.array([0, 12, 5, 5]), np.array([8, 0, 4, 4]), np.array([6, 0, 3, 3])),
    (np.array([[1], [11]]), np.array([0, 3, 8]), 2),           # broadcast to (2, 3)
    (np.array([-1]), np.array([-2]), np.array([-7])),
    (np.array([], int), np.array([], int), np.array([], int)),
    (3, 4, 5),                                                  # one point
]


@pytest.mark.parametrize("view", ["plain", "labels", "multisets"])
@pytest.mark.parametrize("key", COORDINATES, ids=range(len(COORDINATES)))
def test_coordinate_selections_equal_numpy_fancy_indexing(datasets, view, key):
    ds = datasets[view]
    expected = DATA[key]
    for result in (ds.vindex[key], ds.get_coordinate_selection(key)):
        if np.ndim(expected) == 0:
            assert (int(result) if view != "multisets" else result.argmax) == int(expected)
        else:
            assert np.array_equal(values(result), expected) and values(result).shape == expected.shape


@pytest.mark.parametrize("view", ["plain", "labels", "multisets"])
def test_masks_and_getitem_follow_numpy(datasets, view):
    ds = datasets[view]
    mask = DATA % 4 == 1
    assert np.array_equal(values(ds.get_mask_selection(mask)), DATA[mask])
    assert np.array_equal(values(ds[mask]), DATA[mask])
    coordinates = (np.array([2, 9]), np.array([1, 1]), np.array([0, 6]))
    assert np.array_equal(values(ds[coordinates]), DATA[coordinates])
    assert np.array_equal(values(ds[[7, 2, 7], 1:5]), DATA[[7, 2, 7], 1:5])
    assert np.array_equal(values(ds[..., [6, 1]]), DATA[..., [6, 1]])
    assert np.array_equal(values(ds[1, :, [0, 2]]), DATA[1, :, [0, 2]])


@pytest.mark.parametrize("view", ["plain", "multisets"])
def test_bad_selections_raise_index_errors_in_numpy_words(datasets, view):
    ds = datasets[view]
    with pytest.raises(IndexError, match="index 13 is out of bounds for axis 0 with size 13"):
        ds.oindex[[0, 13]]
    with pytest.raises(IndexError, match="index -10 is out of bounds for axis 1 with size 9"):
        ds.vindex[[0], [-10], [0]]
    with pytest.raises(IndexError, match="cannot be broadcast"):
        ds.vindex[[0, 1], [0, 1, 2], [0]]
    with pytest.raises(IndexError, match="boolean index of shape"):
        ds.oindex[np.ones(5, bool)]
    with pytest.raises(IndexError, match="mask selection takes a boolean array"):
        ds.get_mask_selection(np.ones((13, 9), bool))
    with pytest.raises(IndexError, match="use .oindex"):
        ds[[0, 1], :, [0, 1]]
    with pytest.raises(IndexError, match="one integer array per axis"):
        ds.vindex[[0, 1], [0, 1]]
    with pytest.raises(IndexError, match="1-d integer arrays"):
        ds.oindex[[0.5]]


def test_only_the_blocks_touched_are_read(datasets, monkeypatch):
    ds = datasets["plain"]
    read = []
    original = type(ds).read_block_bytes
    monkeypatch.setattr(type(ds), "read_block_bytes", lambda self, position: read.append(tuple(position))
                        or original(self, position))
    ds.vindex[[0, 12], [0, 8], [0, 6]]
    assert sorted(read) == [(0, 0, 0), (3, 2, 2)]
