"""open_pyramid / find_label_pyramids: Paintera label pyramids as lazy dask label arrays with
each level's voxel size and offset (Paintera's half-voxel convention for downsampled levels)."""

import json
import pickle
import sys

import numpy as np
import pytest
from support import n5_data

pytest.importorskip("dask.array")

from n5mscodecs import INVALID, n5
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.errors import ConfigurationError, MissingExtraError, N5msCodecsError
from n5mscodecs.paintera import CONVERSION_KEY, LabelPyramid, convert, find_label_pyramids, open_pyramid

PAINTERA = "paintera_export_test.n5"
RESOLUTION = (4.0, 5.0, 40.0)   # N5 order (x, y, z): anisotropic
OFFSET = (10.0, -20.0, 300.0)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """A converted container: anisotropic resolution, an offset, factors 2 then (2, 2, 1)."""
    root = tmp_path_factory.mktemp("pyramid") / "c.n5"
    labels = voronoi_labels((12, 36, 40), 30).T.copy()  # N5 order (x, y, z) = (40, 36, 12)
    convert(labels, root / "labels", block_size=8, factors=[2, (2, 2, 1)], resolution=RESOLUTION,
            offset=OFFSET, compression="gzip")
    return root, labels


def read_attributes(path):
    return json.loads((path / "attributes.json").read_text())


def test_converted_source_levels_geometry_and_data(converted):
    root, labels = converted
    pyramid = open_pyramid(root / "labels")
    assert isinstance(pyramid, LabelPyramid) and len(pyramid) == 3 and pyramid.ndim == 3
    assert pyramid.path == str(root / "labels")
    assert pyramid.datasets == tuple(str(root / "labels" / "data" / f"s{k}") for k in range(3))
    assert pyramid.shapes == [(40, 36, 12), (20, 18, 6), (10, 9, 6)]
    assert pyramid.downsampling_factors == ((1, 1, 1), (2, 2, 2), (4, 4, 2))
    assert pyramid.voxel_sizes == ((4, 5, 40), (8, 10, 80), (16, 20, 80))
    # voxel (0, 0, 0) of level k is centred on the s0 voxels it summarises
    assert pyramid.offsets == (OFFSET, (12, -17.5, 320), (16, -12.5, 320))
    assert pyramid.max_id == int(labels.max()) and pyramid.fill_label == 0
    for k, level in enumerate(pyramid.levels):
        assert level.dtype == np.uint64
        ds = n5.open(pyramid.datasets[k])
        assert level.numblocks == ds.grid_shape  # one task per N5 block
        assert np.array_equal(level.compute(), ds.read().argmax())
    assert np.array_equal(pyramid.levels[0].compute(), labels)
    # lazy slices read only what they need and agree with the whole
    assert np.array_equal(pyramid.levels[1][3:17, 5, ::2].compute(), pyramid.levels[1].compute()[3:17, 5, ::2])


def test_every_way_to_name_the_source_gives_the_same_pyramid(converted):
    root, _ = converted
    expected = open_pyramid(root / "labels")
    for path in (root, root / "labels" / "data", str(root / "labels") + "/"):
        pyramid = open_pyramid(path)
        assert pyramid.datasets == expected.datasets
        assert pyramid.voxel_sizes == expected.voxel_sizes and pyramid.offsets == expected.offsets
        assert pyramid.max_id == expected.max_id


@pytest.mark.parametrize("level", [0, 1, 2])
def test_a_single_level_has_that_levels_geometry(converted, level):
    root, _ = converted
    whole = open_pyramid(root / "labels")
    single = open_pyramid(root / "labels" / "data" / f"s{level}")
    assert len(single) == 1 and single.shapes == [whole.shapes[level]]
    assert single.voxel_sizes == (whole.voxel_sizes[level],) and single.offsets == (whole.offsets[level],)
    assert single.downsampling_factors == (whole.downsampling_factors[level],)
    assert np.array_equal(single.levels[0].compute(), whole.levels[level].compute())


def test_paintera_export_test_container():
    source = n5_data(f"{PAINTERA}/paintera_labels")
    pyramid = open_pyramid(source)
    assert pyramid.shapes == [(100, 100, 100), (50, 50, 50), (25, 25, 25)]
    assert pyramid.voxel_sizes == ((1, 1, 1), (2, 2, 2), (4, 4, 4))
    assert pyramid.offsets == ((0, 0, 0), (0.5, 0.5, 0.5), (1.5, 1.5, 1.5))
    assert pyramid.max_id == 11
    # Paintera's own export of s2 (OME-NGFF metadata, axes z, y, x) puts s2 where we do
    exported = read_attributes(n5_data(f"{PAINTERA}/scalar_export_s2"))["multiscales"][0]["datasets"][0]
    transforms = {t["type"]: t[t["type"]] for t in exported["coordinateTransformations"]}
    assert tuple(transforms["scale"][::-1]) == pyramid.voxel_sizes[2]
    assert tuple(transforms["translation"][::-1]) == pyramid.offsets[2]
    for k, level in enumerate(pyramid.levels):
        expected = n5.open(source / "data" / f"s{k}").read().argmax()
        assert np.array_equal(level.compute(), expected)
    # s0 has missing blocks: the default reads them as 0, as Paintera does
    assert (open_pyramid(source, fill_label=INVALID).levels[0].compute() == INVALID).sum() > 0


@pytest.mark.parametrize("level", [0, 2])
def test_paintera_levels_equal_paintera_scalar_export(level):
    """Paintera's scalar export holds 0 where s0 blocks are missing: the default reads the same."""
    pyramid = open_pyramid(n5_data(f"{PAINTERA}/paintera_labels"))
    exported = n5.open(n5_data(f"{PAINTERA}/scalar_export_s{level}/s{level}")).read()
    assert np.array_equal(pyramid.levels[level].compute(), exported.astype(np.uint64))


def test_find_label_pyramids_lists_sources_groups_and_datasets(converted, tmp_path):
    root = tmp_path / "many.n5"
    n5.write_attributes(root, {"n5": n5.N5_VERSION})
    convert(np.zeros((8, 8, 8), np.uint64), root / "a" / "source", block_size=4)
    n5.write(root / "b" / "s0", np.ones((8, 8), np.uint64), (4, 4))          # a multiscale group
    n5.write(root / "b" / "s1", np.ones((4, 4), np.uint64), (4, 4),
             attributes={"downsamplingFactors": [2.0, 2.0]})
    n5.write(root / "c", np.full((4, 4), 3, np.uint64), (2, 2))              # a single dataset
    n5.write_array(root / "raw", np.zeros((4, 4), np.uint8), (2, 2))         # plain: not listed
    found = [p[len(str(root)) + 1:] for p in find_label_pyramids(root)]
    assert found == ["a/source", "b", "c"]
    with pytest.raises(ConfigurationError, match=r"many\.n5 holds 3 label pyramids \(a/source, b, c\)"):
        open_pyramid(root)
    group = open_pyramid(root / "b")
    assert group.shapes == [(8, 8), (4, 4)] and group.voxel_sizes == ((1, 1), (2, 2))
    assert group.offsets == ((0, 0), (0.5, 0.5)) and group.max_id == 1
    single = open_pyramid(root / "c")
    assert single.shapes == [(4, 4)] and single.voxel_sizes == ((1, 1),) and single.offsets == ((0, 0),)
    assert find_label_pyramids(root / "a" / "source") == [str(root / "a" / "source")]


def test_levels_without_downsampling_factors_are_2_to_the_k(tmp_path):
    """As n5-universe (Paintera's metadata) infers them from the names sK."""
    group = tmp_path / "g"
    n5.write_attributes(group, {"multiScale": True, "resolution": [3.0, 1.0], "offset": [1.0, 2.0]})
    for k in range(3):
        n5.write(group / f"s{k}", np.zeros((8 >> k, 8 >> k), np.uint64), (2, 2))
    pyramid = open_pyramid(group)
    assert pyramid.downsampling_factors == ((1, 1), (2, 2), (4, 4))
    assert pyramid.voxel_sizes == ((3, 1), (6, 2), (12, 4))
    assert pyramid.offsets == ((1, 2), (2.5, 2.5), (5.5, 3.5))


def test_standalone_dataset_uses_its_own_attributes(tmp_path):
    n5.write(tmp_path / "d", np.ones((4, 6, 2), np.uint64), (2, 2, 2),
             attributes={"resolution": [2.0, 2.0, 10.0], "offset": [5.0, 0.0, 0.0]})
    pyramid = open_pyramid(tmp_path / "d")
    assert pyramid.voxel_sizes == ((2, 2, 10),) and pyramid.offsets == ((5, 0, 0),)


def test_paintera_source_with_integer_levels(tmp_path):
    """Paintera label sources without multisets hold plain integer levels: their dtype is kept."""
    source = tmp_path / "plain"
    n5.write_attributes(source, {"painteraData": {"type": "label"}, "maxId": 5})
    n5.write_attributes(source / "data", {"multiScale": True, "resolution": [2.0, 2.0], "offset": [0.0, 0.0]})
    labels = np.arange(64, dtype=np.uint64).reshape(8, 8) % 6
    n5.write_array(source / "data" / "s0", labels, (4, 4))
    n5.write_array(source / "data" / "s1", labels[::2, ::2], (4, 4), attributes={"downsamplingFactors": [2, 2]})
    pyramid = open_pyramid(source)
    assert [level.dtype for level in pyramid.levels] == [np.uint64, np.uint64]
    assert np.array_equal(pyramid.levels[1].compute(), labels[::2, ::2])
    assert pyramid.voxel_sizes == ((2, 2), (4, 4)) and pyramid.offsets == ((0, 0), (1, 1)) and pyramid.max_id == 5
    assert open_pyramid(source / "data").voxel_sizes == pyramid.voxel_sizes
    # outside a Paintera source, plain datasets are no labels
    with pytest.raises(ConfigurationError, match=r"s0: not a label multiset dataset"):
        open_pyramid(source / "data" / "s0")


def test_not_a_label_pyramid(converted, tmp_path):
    root, _ = converted
    with pytest.raises(ConfigurationError, match=r"nowhere does not exist"):
        open_pyramid(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigurationError, match=r"empty: not a Paintera label source"):
        open_pyramid(tmp_path / "empty")
    with pytest.raises(ConfigurationError, match=r"unique-labels/s0: not a label multiset dataset"):
        open_pyramid(root / "labels" / "unique-labels")
    with pytest.raises(ConfigurationError, match=r"label-to-block-mapping/s0: not a label multiset dataset"):
        open_pyramid(root / "labels" / "label-to-block-mapping")
    n5.write_array(tmp_path / "raw", np.zeros((4, 4), np.uint8), (2, 2))
    with pytest.raises(ConfigurationError, match=r"raw: not a label multiset dataset"):
        open_pyramid(tmp_path / "raw")
    n5.write_attributes(tmp_path / "rawsource", {"painteraData": {"type": "raw"}})
    with pytest.raises(ConfigurationError, match=r"rawsource: a Paintera raw source, not a label source"):
        open_pyramid(tmp_path / "rawsource")
    n5.write_attributes(tmp_path / "hollow", {"painteraData": {"type": "label"}})
    with pytest.raises(ConfigurationError, match=r"hollow: a Paintera label source without data/s0"):
        open_pyramid(tmp_path / "hollow")
    n5.write_attributes(tmp_path / "nothing.n5", {"n5": n5.N5_VERSION})
    n5.write_array(tmp_path / "nothing.n5" / "raw", np.zeros((4, 4), np.uint8), (2, 2))
    with pytest.raises(ConfigurationError, match=r"nothing\.n5: not a Paintera label source"):
        open_pyramid(tmp_path / "nothing.n5")


def test_malformed_attributes_name_the_attribute(tmp_path):
    group = tmp_path / "g"
    n5.write(group / "s0", np.zeros((4, 4, 4), np.uint64), (2, 2, 2))
    for bad in ({"resolution": [1.0, 1.0]}, {"resolution": "big"}, {"offset": [0, 0, None]}):
        n5.write_attributes(group, {"multiScale": True, **bad})
        key = next(iter(bad))
        with pytest.raises(ConfigurationError, match=rf"g: {key} must be 3 numbers"):
            open_pyramid(group)
    n5.write_attributes(group, {"multiScale": True})
    n5.write(group / "s1", np.zeros((2, 2, 2), np.uint64), (2, 2, 2), attributes={"downsamplingFactors": [2, 0, 2]})
    with pytest.raises(ConfigurationError, match=r"s1: downsamplingFactors must be positive"):
        open_pyramid(group)


def test_interrupted_conversion_is_refused(tmp_path):
    target = tmp_path / "half.n5"
    convert(np.zeros((8, 8), np.uint64), target, block_size=4)
    attributes = read_attributes(target)
    del attributes["painteraData"]
    attributes[CONVERSION_KEY]["complete"] = False
    n5.write_attributes(target, attributes)
    with pytest.raises(ConfigurationError, match=r"half\.n5: an interrupted n5ms convert target"):
        open_pyramid(target)
    assert find_label_pyramids(target) == []


def test_levels_pickle_and_corrupt_blocks_name_the_block(converted, tmp_path):
    root, labels = converted
    level = open_pyramid(root / "labels").levels[1]
    assert np.array_equal(pickle.loads(pickle.dumps(level)).compute(), level.compute())
    target = tmp_path / "bad.n5"
    convert(labels, target, block_size=8, factors=[2])
    block = target / "data" / "s1" / "1" / "0" / "0"
    block.write_bytes(block.read_bytes()[:-5])
    pyramid = open_pyramid(target)   # opening reads metadata only
    assert np.array_equal(pyramid.levels[0].compute(), labels)
    with pytest.raises(N5msCodecsError, match=r"bad\.n5/data/s1/1/0/0"):
        pyramid.levels[1].compute()


def test_without_dask_the_extra_is_named(converted, monkeypatch):
    root, _ = converted
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(MissingExtraError, match=r"n5mscodecs\[dask\]"):
        open_pyramid(root / "labels")


def test_an_object_store_pyramid_is_walked_through_one_store():
    """On an object store a level finds its group and source above it, and a multiscale group at
    a bucket's root (nothing above it) opens; each level's dataset reopens through the pyramid."""
    pytest.importorskip("fsspec")
    import uuid

    bucket = f"memory://{uuid.uuid4().hex}"
    labels = np.arange(8 * 8 * 4, dtype=np.uint64).reshape(8, 8, 4) // 16
    convert(labels, f"{bucket}/c.n5/labels", block_size=4, factors=[2], resolution=(4, 4, 40))
    assert find_label_pyramids(f"{bucket}/c.n5") == [f"{bucket}/c.n5/labels"]
    level = open_pyramid(f"{bucket}/c.n5/labels/data/s1")
    assert level.voxel_sizes == ((8.0, 8.0, 80.0),) and level.offsets == ((2.0, 2.0, 20.0),)
    whole = open_pyramid(f"{bucket}/c.n5")
    assert np.array_equal(whole.open_level(0).read_labels(), labels) and whole.open_level(1).shape == (4, 4, 2)

    top = f"memory://{uuid.uuid4().hex}"
    n5.write(f"{top}/s0", labels, chunks=4)
    n5.write_attributes(top, {"multiScale": True, "resolution": [2, 2, 2]})
    assert open_pyramid(top).voxel_sizes == ((2.0, 2.0, 2.0),) and open_pyramid(f"{top}/s0").shapes == [(8, 8, 4)]
