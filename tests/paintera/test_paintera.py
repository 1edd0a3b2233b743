import json
import os

import numpy as np
import pytest
from support import n5_data

from n5mscodecs import INVALID, MAX_ID, LabelMultisetArray, n5
from n5mscodecs.cli import main
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.errors import ConfigurationError
from n5mscodecs.paintera import (
    LabelSource,
    convert,
    label_to_block_mapping_blocks,
    open_label_source,
    read_label_to_block_mapping,
    write_label_to_block_mapping,
)

REFERENCE = "paintera_export_test.n5/paintera_labels"


def attributes(path):
    return json.loads((path / "attributes.json").read_text())


def reference_mapping_from_labels(labels, block_size):
    """{id: set of (min, max)} straight from a label volume (independent of unique-labels)."""
    expected = {}
    grid = [-(-n // b) for n, b in zip(labels.shape, block_size)]
    for g in np.ndindex(*grid):
        lo = [a * b for a, b in zip(g, block_size)]
        hi = [min((a + 1) * b, n) for a, b, n in zip(g, block_size, labels.shape)]
        block = labels[tuple(slice(a, b) for a, b in zip(lo, hi))]
        for label in np.unique(block).tolist():
            expected.setdefault(label, set()).add((tuple(lo), tuple(h - 1 for h in hi)))
    return expected


@pytest.fixture(scope="module")
def converted_reference(tmp_path_factory):
    """Paintera's own argmax export of s0 converted with the reference's layout (32^3 blocks, 2 levels)."""
    target = tmp_path_factory.mktemp("ref") / "labels.n5"
    summary = convert(n5_data("paintera_export_test.n5/scalar_export_s0/s0"), target, block_size=32,
                      factors=[2, 2], compression={"type": "gzip", "level": -1}, lookup_block_size=3)
    return target, summary


def test_structure_and_attributes_match_paintera(converted_reference):
    target, summary = converted_reference
    reference = n5_data(REFERENCE)
    assert summary.level_shapes == [(100, 100, 100), (50, 50, 50), (25, 25, 25)]
    group = attributes(target)
    ref_group = attributes(reference)
    for key in ("painteraData", "maxId", "labelBlockLookup"):
        assert group[key] == ref_group[key]
    assert attributes(target / "data") == attributes(reference / "data")
    for side in ("unique-labels", "label-to-block-mapping"):
        assert attributes(target / side) == attributes(reference / side)
    for level in range(3):
        for side in ("data", "unique-labels", "label-to-block-mapping"):
            assert attributes(target / side / f"s{level}") == attributes(reference / side / f"s{level}"), (side, level)


def test_pyramid_levels_equal_paintera_where_paintera_has_data(converted_reference):
    target, _ = converted_reference
    reference = n5_data(REFERENCE)
    ref_s0 = n5.open(reference / "data/s0")
    ours_s0 = n5.open(target / "data/s0")
    present = np.zeros(ref_s0.shape, bool)
    for grid in np.ndindex(*ref_s0.grid_shape):
        ref_block = ref_s0.read_block(grid)
        if ref_block is not None:
            # Paintera wrote all-background blocks; we skip them, and they read the same
            assert ours_s0.has_block(grid) != ref_block.is_background()
            assert ours_s0.read(ours_s0.block_region(grid)) == ref_block
            present[tuple(slice(g * 32, (g + 1) * 32) for g in grid)] = True
    # Paintera's missing s0 blocks are background (0) in the export we converted, and {0: 0} in its s1
    for level, factor in ((1, 2), (2, 4)):
        n = 100 // factor
        covered = present.reshape(n, factor, n, factor, n, factor).all(axis=(1, 3, 5))
        assert 0 < covered.sum() < covered.size
        ours = n5.open(target / f"data/s{level}")[:]
        ref = n5.open(reference / f"data/s{level}")[:]
        assert ours.to_elements()[covered].tolist() == ref.to_elements()[covered].tolist()
        assert np.array_equal(ours.argmax(), ref.argmax())


def test_unique_labels_and_block_mapping_match_paintera(converted_reference):
    target, _ = converted_reference
    reference = n5_data(REFERENCE)
    for level in range(3):
        ref_unique = n5.open(reference / f"unique-labels/s{level}")
        ours_unique = n5.open(target / f"unique-labels/s{level}")
        header = n5.N5BlockHeader.from_bytes(ours_unique.read_block_bytes((0, 0, 0)))
        ref_header = n5.N5BlockHeader.from_bytes(ref_unique.read_block_bytes((0, 0, 0)))
        assert (header.mode, header.shape) == (ref_header.mode, ref_header.shape)
        ours_map = read_label_to_block_mapping(target, level)
        ref_map = read_label_to_block_mapping(reference, level)
        assert sorted(os.listdir(target / f"label-to-block-mapping/s{level}")) == sorted(
            os.listdir(reference / f"label-to-block-mapping/s{level}"))
        for label in set(ours_map) | set(ref_map):
            if level == 0 and label == 0:
                continue  # Paintera's s0 mapping omits label 0 (docs/paintera.md); s1, s2 have it
            if level > 0 and label == 0:
                continue  # ours: 0 where the export had background; Paintera: {0: 0} where s0 was missing
            assert set(ours_map[label]) == set(ref_map[label]), (level, label)


def test_mapping_rebuilt_from_paintera_unique_labels_equals_paintera_mapping(tmp_path):
    reference = n5_data(REFERENCE)
    for level in range(3):
        files = label_to_block_mapping_blocks(n5.open(reference / f"unique-labels/s{level}"), 3)
        ref_files = sorted(os.listdir(reference / f"label-to-block-mapping/s{level}"))
        assert sorted(str(n) for n in files) == [f for f in ref_files if f.isdigit()]
    # and written to disk it reads back as Paintera's (label 0 of s0 aside)
    (tmp_path / "copy").mkdir()
    os.symlink(reference / "unique-labels", tmp_path / "copy" / "unique-labels")
    os.symlink(reference / "data", tmp_path / "copy" / "data")
    for level in range(3):
        write_label_to_block_mapping(tmp_path / "copy", level, 3, {"type": "gzip", "level": -1})
        ours = {k: set(v) for k, v in read_label_to_block_mapping(tmp_path / "copy", level).items()}
        ref = {k: set(v) for k, v in read_label_to_block_mapping(reference, level).items()}
        if level == 0:
            ours.pop(0)
        assert ours == ref


def test_synthetic_pyramid_against_numpy_references(tmp_path):
    labels = voronoi_labels((70, 45, 33), 40, seed=4)
    summary = convert(labels, tmp_path / "v.n5", block_size=16, factors=[2, (2, 2, 1), 2], threads=2)
    assert summary.level_shapes == [(70, 45, 33), (35, 23, 17), (18, 12, 17), (9, 6, 9)]
    assert summary.max_id == int(labels.max()) and summary.n_labels == np.unique(labels).size
    s0 = n5.open(tmp_path / "v.n5/data/s0")[:]
    assert np.array_equal(s0.argmax(), labels)
    # every level against a numpy count-sum of the labels over its cumulative window
    for level, factors in enumerate([(1, 1, 1), (2, 2, 2), (4, 4, 2), (8, 8, 4)]):
        ours = n5.open(tmp_path / f"v.n5/data/s{level}")[:]
        if level:
            assert n5.open(tmp_path / f"v.n5/data/s{level}").attributes["downsamplingFactors"] == [
                float(f) for f in factors]
        for voxel in [(0, 0, 0), tuple(n - 1 for n in ours.shape), tuple(n // 2 for n in ours.shape)]:
            window = labels[tuple(slice(v * f, (v + 1) * f) for v, f in zip(voxel, factors))]
            values, counts = np.unique(window, return_counts=True)
            assert ours[voxel].as_dict() == dict(zip(values.tolist(), counts.tolist()))
        expected = reference_mapping_from_labels(labels, [16 * f for f in factors])
        mapping = read_label_to_block_mapping(tmp_path / "v.n5", level)
        # intervals are in level coordinates: scale the full-resolution ones down
        scaled = {label: {(tuple(a // f for a, f in zip(lo, factors)), tuple(
            min(h // f, n - 1) for h, f, n in zip(hi, factors, ours.shape))) for lo, hi in blocks}
                  for label, blocks in expected.items()}
        assert {k: set(v) for k, v in mapping.items()} == scaled


def test_level_attributes_come_from_the_one_builder_in_their_written_order(tmp_path):
    convert(voronoi_labels((20, 18, 9), 6, seed=2), tmp_path / "v.n5", block_size=4, factors=[2],
            max_num_entries=3, threads=1)
    for level, bound in [(0, -1), (1, 3)]:
        written = attributes(tmp_path / f"v.n5/data/s{level}")
        extra = {"unit": "pixel"} | ({"downsamplingFactors": [2.0, 2.0, 2.0]} if level else {})
        expected = n5.DatasetMetadata.label_multisets(written["dimensions"], (4, 4, 4), "gzip",
                                                      max_num_entries=bound, attributes=extra).to_json()
        # the key order too: the bytes of attributes.json are what they were before the builder
        assert list(written.items()) == list(expected.items())
        assert list(written) == ["dataType", "compression", "blockSize", "dimensions", "maxNumEntries",
                                 "isLabelMultiset", "unit", *(["downsamplingFactors"] if level else [])]


def test_sources_npy_tiff_n5_zarr_are_read_in_n5_order(tmp_path):
    zyx = voronoi_labels((12, 10, 8), 9, seed=1).astype(np.uint32)
    np.save(tmp_path / "l.npy", zyx)
    sources = [open_label_source(tmp_path / "l.npy")]
    tifffile = pytest.importorskip("tifffile")
    tifffile.imwrite(tmp_path / "l.tif", zyx)
    sources.append(open_label_source(tmp_path / "l.tif"))
    n5.write_array(tmp_path / "l.n5/labels", zyx.T, chunks=(4, 4, 4))
    sources.append(open_label_source(tmp_path / "l.n5", dataset="labels"))
    try:
        import zarr
    except ImportError:
        zarr = None
    if zarr is not None:
        zarr.create_array(tmp_path / "l.zarr", shape=zyx.shape, chunks=(4, 4, 4), dtype=zyx.dtype)[...] = zyx
        sources.append(open_label_source(tmp_path / "l.zarr"))
    for source in sources:
        assert source.shape == (8, 10, 12) and source.dtype == "uint32"
        region = (slice(1, 5), slice(2, 9), slice(0, 12))
        assert np.array_equal(source.read(region), zyx.T[region]), source.kind
    summary = convert(tmp_path / "l.npy", tmp_path / "out.n5", block_size=4)
    assert np.array_equal(n5.open(tmp_path / "out.n5/data/s0")[:].argmax(), zyx.T)
    assert len(summary.level_shapes) == 3


def test_bad_sources_and_parameters_raise_naming_the_field(tmp_path):
    np.save(tmp_path / "f.npy", np.zeros((4, 4, 4), np.float32))
    with pytest.raises(ConfigurationError, match="integer labels"):
        convert(tmp_path / "f.npy", tmp_path / "o.n5")
    with pytest.raises(FileNotFoundError, match="source"):
        convert(tmp_path / "missing.npy", tmp_path / "o.n5")
    labels = np.zeros((8, 8, 8), np.uint64)
    with pytest.raises(ConfigurationError, match=r"factors\[0\]"):
        convert(labels, tmp_path / "o.n5", block_size=4, factors=[3])
    with pytest.raises(ConfigurationError, match="block_size"):
        convert(labels, tmp_path / "o.n5", block_size=(4, 4))
    with pytest.raises(ConfigurationError, match="keep"):
        convert(labels, tmp_path / "o.n5", keep="java")
    multisets = n5.write(tmp_path / "lms", labels, chunks=(4, 4, 4))
    with pytest.raises(ConfigurationError, match="label multiset"):
        open_label_source(multisets.path)
    with pytest.raises(ConfigurationError, match="name the dataset"):
        open_label_source(_group(tmp_path))


def _group(tmp_path):
    n5.write_array(tmp_path / "g.n5/raw", np.zeros((2, 2), np.uint8), chunks=(2, 2))
    n5.write_attributes(tmp_path / "g.n5", {"n5": n5.N5_VERSION})
    return tmp_path / "g.n5"


class FailingSource(LabelSource):
    """Fails on one block, as a crashed worker would."""

    def read(self, region):
        if region[0].start == 8 and region[1].start == 8:
            raise RuntimeError("disk on fire")
        return super().read(region)


def test_interrupted_run_fails_loudly_then_resumes(tmp_path):
    labels = voronoi_labels((24, 24, 16), 20, seed=2).astype(np.uint32)  # no label scan before the blocks
    target = tmp_path / "r.n5"
    good = open_label_source(labels)
    failing = FailingSource("array", None, good.shape, good.dtype, labels)
    with pytest.raises(RuntimeError, match="disk on fire"):
        convert(failing, target, block_size=8, factors=[2], threads=1)
    group = attributes(target)
    assert "painteraData" not in group and group["n5mscodecs:conversion"]["complete"] is False
    with pytest.raises(FileExistsError, match="resume"):
        convert(good, target, block_size=8, factors=[2])
    with pytest.raises(ConfigurationError, match="blockSize"):
        convert(good, target, block_size=4, factors=[2], resume=True)
    blocks_before = {p for p in (target / "data/s0").rglob("*") if p.is_file()}
    summary = convert(good, target, block_size=8, factors=[2], resume=True)
    assert 0 < summary.blocks_written < summary.blocks_total
    assert blocks_before <= {p for p in (target / "data/s0").rglob("*") if p.is_file()}
    assert attributes(target)["painteraData"] == {"type": "label"}
    assert np.array_equal(n5.open(target / "data/s0")[:].argmax(), labels)
    assert n5.open(target / "data/s1")[:] == LabelMultisetArray.from_labels(labels).downsample(2)
    again = convert(good, target, block_size=8, factors=[2], resume=True)
    assert again.blocks_written == 0
    convert(good, target, block_size=8, factors=[2], overwrite=True)
    assert attributes(target)["maxId"] == int(labels.max())


def test_max_num_entries_and_keep_reach_the_datasets(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 6, (16, 16, 16)).astype(np.uint64)
    convert(labels, tmp_path / "m.n5", block_size=8, factors=[2, 2], max_num_entries=2, keep="lowest")
    s1 = n5.open(tmp_path / "m.n5/data/s1")
    assert s1.attributes["maxNumEntries"] == 2
    assert n5.open(tmp_path / "m.n5/data/s0").attributes["maxNumEntries"] == -1
    expected = LabelMultisetArray.from_labels(labels).downsample(2, 2, keep="lowest")
    assert s1[:] == expected
    assert n5.open(tmp_path / "m.n5/data/s2")[:] == expected.downsample(2, 2, keep="lowest")


def test_reserved_ids_stay_out_of_max_id_and_mapping(tmp_path):
    labels = np.full((4, 4, 4), 7, np.uint64)
    labels[0, 0, 0] = INVALID
    summary = convert(labels, tmp_path / "x.n5", block_size=4, factors=[], reserved="accept")
    assert summary.max_id == 7
    assert set(read_label_to_block_mapping(tmp_path / "x.n5", 0)) == {7}


def test_ids_from_2_63_to_max_id_convert(tmp_path):
    """Ids that are negative longs in Java: kept in the data and unique labels, out of the
    label-to-block mapping (Paintera's lookup cannot address them) and out of maxId."""
    labels = np.full((8, 4, 4), 3, np.uint64)
    labels[0, 0, 0], labels[5, 0, 0], labels[6, 1, 1] = 2**63, 2**63 + 5, MAX_ID
    summary = convert(labels, tmp_path / "h.n5", block_size=4, factors=[2], lookup_block_size=2)
    assert summary.max_id == attributes(tmp_path / "h.n5")["maxId"] == 3
    assert np.array_equal(n5.open(tmp_path / "h.n5/data/s0").read_labels(), labels)
    assert set(read_label_to_block_mapping(tmp_path / "h.n5", 0)) == {3}
    unique = n5.open(tmp_path / "h.n5/unique-labels/s0")
    assert {2**63, 2**63 + 5, MAX_ID} <= set(np.concatenate([unique.read_block(g) for g in [(0, 0, 0), (1, 0, 0)]]))


def test_background_blocks_are_skipped_and_every_level_agrees(tmp_path):
    labels = voronoi_labels((24, 16, 16), 12, seed=4)
    labels[:16, :8] = 0
    target = tmp_path / "b.n5"
    convert(labels, target, block_size=8, factors=[2, 2])
    s0 = n5.open(target / "data/s0")
    skipped = {(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1)}
    assert set(np.ndindex(*s0.grid_shape)) - set(s0.present_blocks()) == skipped
    unique = n5.open(target / "unique-labels/s0")
    assert all((unique.read_block(g) is None) == (g in skipped) for g in np.ndindex(*s0.grid_shape))
    expected = LabelMultisetArray.from_labels(labels)
    for level in range(3):
        assert n5.open(target / f"data/s{level}")[:] == expected   # missing blocks read as {0: 1}
        expected = expected.downsample(2)
    again = convert(labels, target, block_size=8, factors=[2, 2], resume=True)
    assert again.blocks_written == 0
    convert(labels, tmp_path / "all.n5", block_size=8, factors=[2, 2], write_background_blocks=True)
    assert len(n5.open(tmp_path / "all.n5/data/s0").present_blocks()) == int(np.prod(s0.grid_shape))


def test_rule_java_reaches_every_level(tmp_path):
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 9, (16, 16, 16)).astype(np.uint64)
    labels[rng.random(labels.shape) < 0.1] = 2**63 + 1
    np.save(tmp_path / "labels.npy", labels.T)   # .npy files are (z, y, x)
    assert main(["convert", str(tmp_path / "labels.npy"), str(tmp_path / "j.n5"), "--block-size", "8",
                 "--max-num-entries", "2", "--rule", "java", "--quiet"]) == 0
    expected = LabelMultisetArray.from_labels(labels)
    expected = expected.downsample(2, 2, rule="java")
    assert n5.open(tmp_path / "j.n5/data/s1")[:].equals(expected)
    assert not expected.equals(LabelMultisetArray.from_labels(labels).downsample(2, 2))
    parameters = attributes(tmp_path / "j.n5")["n5mscodecs:conversion"]["parameters"]
    assert parameters["rule"] == "java" and parameters["keep"] is None
    with pytest.raises(ConfigurationError, match="keep"):
        convert(labels, tmp_path / "k.n5", block_size=8, max_num_entries=2, keep="lowest", rule="java")


def test_distributed_local_cluster_with_processes(tmp_path):
    distributed = pytest.importorskip("distributed")
    labels = voronoi_labels((32, 32, 32), 30, seed=3)
    np.save(tmp_path / "l.npy", labels)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        convert(tmp_path / "l.npy", tmp_path / "d.n5", block_size=8, factors=[2, 2],
                scheduler=cluster.scheduler_address)
    convert(tmp_path / "l.npy", tmp_path / "t.n5", block_size=8, factors=[2, 2])
    for level in range(3):
        assert n5.open(tmp_path / f"d.n5/data/s{level}")[:] == n5.open(tmp_path / f"t.n5/data/s{level}")[:]
        assert read_label_to_block_mapping(tmp_path / "d.n5", level) == read_label_to_block_mapping(
            tmp_path / "t.n5", level)
