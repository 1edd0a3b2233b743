"""Paintera's conventions (one definition each) and the library functions the CLI calls:
level placement, default factors, compression spellings, the argmax export, the pyramid job."""

import pickle

import numpy as np
import pytest

from n5mscodecs import n5, paintera
from n5mscodecs.errors import ConfigurationError, N5msCodecsError
from n5mscodecs.multiset import INVALID
from n5mscodecs.n5 import open_store
from n5mscodecs.paintera.argmax import world_placement
from n5mscodecs.paintera.conventions import default_factors, level_placement, parse_compression
from n5mscodecs.paintera.pyramid import normalized_factors


def test_level_placement_centres_a_downsampled_voxel_on_the_voxels_it_summarises():
    assert level_placement((4, 4, 40), (0, 0, 0), (1, 1, 1)) == ((4.0, 4.0, 40.0), (0.0, 0.0, 0.0))
    # s2 of 4,4,40 with factors 4,4,1: its voxel 0 covers s0 voxels 0..3, centred at 1.5 voxels
    assert level_placement((4, 4, 40), (-10, 0, 100), (4, 4, 1)) == ((16.0, 16.0, 40.0), (-4.0, 6.0, 100.0))


def test_the_pyramid_reader_places_levels_by_the_same_rule(tmp_path):
    labels = np.arange(8 * 8 * 4, dtype=np.uint64).reshape(8, 8, 4) % 5
    paintera.convert(labels, tmp_path / "p.n5/labels", block_size=4, factors=[2, (2, 2, 1)],
                     resolution=(4, 4, 40), offset=(1, 2, 3))
    pyramid = paintera.open_pyramid(tmp_path / "p.n5/labels")
    for k, factors in enumerate(pyramid.downsampling_factors):
        assert (pyramid.voxel_sizes[k], pyramid.offsets[k]) == level_placement((4, 4, 40), (1, 2, 3), factors)


def test_default_factors_without_resolution_halve_every_open_axis():
    assert default_factors((256, 256, 256), (64,) * 3) == [(2, 2, 2), (2, 2, 2)]
    assert default_factors((200, 1, 70), (64,) * 3) == [(2, 1, 2), (2, 1, 2)]
    assert default_factors((64, 64, 64), (64,) * 3) == []
    # the same as an isotropic resolution: one policy
    assert default_factors((300, 90, 17), (16,) * 3) == default_factors((300, 90, 17), (16,) * 3, (3, 3, 3))


def test_convert_takes_resolution_as_the_factor_policy_and_reports_the_factors(tmp_path):
    labels = np.zeros((32, 32, 8), np.uint64)
    summary = paintera.convert(labels, tmp_path / "a.n5/labels", block_size=8, factors="resolution",
                               resolution=(4, 4, 40))
    assert summary.factors == [(2, 2, 1), (2, 2, 1)] and summary.resolution == (4.0, 4.0, 40.0)
    summary = paintera.convert(labels, tmp_path / "b.n5/labels", block_size=8, resolution=(4, 4, 40))
    assert summary.factors == [(2, 2, 2), (2, 2, 2)]   # factors=None: halve every open axis, as documented
    with pytest.raises(ConfigurationError, match="'resolution' required"):
        paintera.convert(labels, tmp_path / "c.n5/labels", block_size=8, factors="anisotropic")


@pytest.mark.parametrize(("text", "config"), [
    ("raw", {"type": "raw"}),
    ("gzip", {"type": "gzip"}),
    ("gzip:9", {"type": "gzip", "level": 9}),
    ("gzip:-1", {"type": "gzip", "level": -1}),
    ("zstd:3", {"type": "zstd", "level": 3}),
    ("xz:6", {"type": "xz", "preset": 6}),
    ("bzip2:9", {"type": "bzip2", "blockSize": 9}),
    ("lz4:65536", {"type": "lz4", "blockSize": 65536}),
    ("blosc:zstd:5:1", {"type": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 1}),
    (' {"type": "gzip", "level": 1}', {"type": "gzip", "level": 1}),
])
def test_parse_compression_spells_the_n5_attributes(text, config):
    assert parse_compression(text) == config
    assert n5.compression_attributes(config)["type"] == config["type"]


@pytest.mark.parametrize(("text", "words"), [
    ("gzip:12", "level must be in -1..9"),
    ("snappy", "unknown compressor 'snappy'"),
    ("raw:3", "NAME or NAME:LEVEL"),
    ("gzip:fast", "NAME or NAME:LEVEL"),
    ("gzip:1:2", "NAME or NAME:LEVEL"),
    ("blosc:zstd:x", "clevel: expected an integer"),
    ("blosc:zstd:-1", "clevel: must be >= 0"),
    ("blosc::5", "blosc[:CNAME"),
    ("{not json", "not valid JSON"),
])
def test_parse_compression_refuses_naming_the_problem(text, words):
    with pytest.raises(N5msCodecsError, match=words.replace("[", r"\[").replace("(", r"\(")):
        parse_compression(text)


def _multisets(tmp_path, name="m.n5/s0", **world):
    labels = np.arange(4 * 6 * 5, dtype=np.uint64).reshape(4, 6, 5) % 7
    labels[0, 0, 0] = INVALID
    n5.write(tmp_path / name, labels, chunks=(2, 4, 4), reserved="accept")
    if world:
        n5.write_attributes(tmp_path / name, {**n5.read_attributes(tmp_path / name), **world})
    expected = labels.copy()
    expected[0, 0, 0] = 0
    return str(tmp_path / name), expected


def test_export_argmax_to_n5_places_the_level_and_reports(tmp_path):
    source, expected = _multisets(tmp_path, resolution=[4.0, 4.0, 40.0], offset=[-10.0, 0.0, 0.0],
                                  downsamplingFactors=[2.0, 2.0, 1.0])
    bars = []

    class Bar:
        def __init__(self, description, total):
            self.description, self.total, self.done, self.closed = description, total, 0, False
            bars.append(self)

        def update(self, n=1):
            self.done += n

        def close(self):
            self.closed = True

    summary = paintera.export_argmax(source, tmp_path / "a.n5/s0", threads=2, progress=Bar)
    assert (summary.shape, summary.zarr, summary.blocks_present, summary.blocks_total) == ((4, 6, 5), False, 8, 8)
    # the blocks are counted as they are exported: the client never lists them, so no total
    assert [(b.description, b.total, b.done, b.closed) for b in bars] == [("argmax", None, 8, True)]
    written = n5.open(tmp_path / "a.n5/s0")
    assert np.array_equal(written[:], expected)
    assert written.attributes["resolution"] == [8.0, 8.0, 40.0]
    assert written.attributes["offset"] == [-8.0, 2.0, 0.0]    # level_placement's centre
    with pytest.raises(FileExistsError, match="overwrite=True"):
        paintera.export_argmax(source, tmp_path / "a.n5/s0")
    paintera.export_argmax(source, tmp_path / "a.n5/s0", overwrite=True)


def test_export_argmax_world_comes_from_the_group_and_is_absent_without_one(tmp_path):
    source, _ = _multisets(tmp_path, "g.n5/data/s0")
    assert world_placement(n5.open(source)) is None
    paintera.export_argmax(source, tmp_path / "plain.n5/s0")
    assert "resolution" not in n5.read_attributes(tmp_path / "plain.n5/s0")
    n5.write_attributes(tmp_path / "g.n5/data", {"resolution": [2.0, 2.0, 2.0]})
    assert world_placement(n5.open(source)) == ([2.0, 2.0, 2.0], [0.0, 0.0, 0.0])


def test_export_argmax_to_zarr_reverses_the_axes(tmp_path):
    zarr = pytest.importorskip("zarr")
    source, expected = _multisets(tmp_path, resolution=[4.0, 4.0, 40.0])
    summary = paintera.export_argmax(source, tmp_path / "a.zarr")
    assert summary.zarr
    array = zarr.open_array(tmp_path / "a.zarr")
    assert np.array_equal(array[...], expected.T)
    assert array.attrs["resolution"] == [40.0, 4.0, 4.0] and array.attrs["axes"] == ["z", "y", "x"]


def test_export_argmax_refuses_plain_sources_and_overlap_and_leaves_nothing_after_a_failure(tmp_path):
    n5.write_array(tmp_path / "p.n5/raw", np.zeros((4, 4), np.uint8), chunks=2)
    with pytest.raises(ConfigurationError, match="not a label multiset dataset"):
        paintera.export_argmax(tmp_path / "p.n5/raw", tmp_path / "a.n5/s0")
    assert not (tmp_path / "a.n5/s0").exists()
    source, _ = _multisets(tmp_path)
    with pytest.raises(N5msCodecsError):
        paintera.export_argmax(source, tmp_path / "m.n5/s0/inside")
    (tmp_path / "m.n5/s0/1/0/0").write_bytes(b"\0\0\0")   # a truncated block
    with pytest.raises(N5msCodecsError, match="1/0/0"):
        paintera.export_argmax(source, tmp_path / "b.n5/s0")
    assert not (tmp_path / "b.n5/s0").exists()


def test_pyramid_job_makes_each_level_dataset_once_and_pickles_without_them(tmp_path):
    labels = np.zeros((8, 8, 8), np.uint64)
    summary = paintera.convert(labels, tmp_path / "p.n5/labels", block_size=4, factors=[2])
    source = paintera.open_label_source(tmp_path / "p.n5/labels/unique-labels/s0")
    job = paintera.PyramidJob(open_store(summary.target), source, (4, 4, 4),
                              normalized_factors([2], (8, 8, 8), (4, 4, 4)), {"type": "gzip"}, -1, "highest")
    assert job.data(1) is job.data(1) and job.unique_labels(0) is job.unique_labels(0)
    assert job.data(0) is not job.data(1)
    copy = pickle.loads(pickle.dumps(job))
    assert copy._datasets == {} and copy.data(1).path == job.data(1).path


def test_survey_describes_groups_datasets_and_what_is_not_n5(tmp_path):
    labels = np.arange(8 * 8 * 8, dtype=np.uint64).reshape(8, 8, 8) % 5
    paintera.convert(labels, tmp_path / "p.n5/labels", block_size=4, factors=[2], resolution=(4, 4, 40))
    found = paintera.survey(tmp_path / "p.n5/labels")
    assert found.heading[0] == "Paintera label source, maxId 4" and not found.interrupted
    assert "  resolution [4.0, 4.0, 40.0], offset [0.0, 0.0, 0.0] (x, y, z)" in found.heading
    entries = {entry.name: entry for entry in found.datasets}
    assert entries["data/s1"].description.startswith("label multiset, shape [4, 4, 4], blocks [4, 4, 4], gzip, "
                                                     "1/1 blocks present, factors 2,2,2; block [0, 0, 0]:")
    assert entries["unique-labels/s0"].description == (
        "uint64, shape [8, 8, 8], blocks [4, 4, 4], gzip, 8/8 blocks present")
    single = paintera.survey(tmp_path / "p.n5/labels/data/s0", check=True)
    (entry,) = list(single.datasets)
    assert single.heading is None and entry.name == str(tmp_path / "p.n5/labels/data/s0")
    assert entry.blocks_checked == 8 and entry.bad == []
    (tmp_path / "p.n5/labels/data/s0/1/1/1").write_bytes(b"\0\0")
    (entry,) = list(paintera.survey(tmp_path / "p.n5/labels/data/s0", check=True).datasets)
    assert len(entry.bad) == 1 and "1/1/1" in entry.bad[0]
    (tmp_path / "z").mkdir()
    (tmp_path / "z/.zarray").write_text("{}")
    with pytest.raises(ConfigurationError, match="a zarr \\(v2\\) array, not N5"):
        paintera.survey(tmp_path / "z")
    with pytest.raises(FileNotFoundError, match="no such directory"):
        paintera.survey(tmp_path / "missing")
    with pytest.raises(ConfigurationError, match="a file, not an N5 container"):
        paintera.survey(tmp_path / "z/.zarray")
