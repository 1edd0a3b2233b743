"""Paintera label pyramids to OME-Zarr (NGFF 0.4 and 0.5) and back, checked with the readers
people use: ome-zarr-models validates the metadata, ome-zarr-py's Reader finds the labels."""

import json
import os
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
pytest.importorskip("dask")

from n5mscodecs import INVALID, ConfigurationError, IncompleteError, LabelMultisetArray, n5, paintera  # noqa: E402
from n5mscodecs.cli import main  # noqa: E402
from n5mscodecs.demo import voronoi_labels  # noqa: E402
from n5mscodecs.paintera.ome_zarr import default_shards  # noqa: E402

SHAPE = (40, 36, 20)   # N5 order x, y, z
RESOLUTION, OFFSET = (4.0, 4.0, 40.0), (10.0, -5.0, 200.0)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A Paintera source with an INVALID voxel, a missing block and three levels."""
    root = tmp_path_factory.mktemp("ome") / "p.n5"
    labels = voronoi_labels(SHAPE[::-1], 30, seed=6).T.copy().astype(np.uint64)
    labels[0, 0, 0] = INVALID
    paintera.convert(labels, root / "labels", block_size=8, factors=[2, (2, 2, 1)], resolution=RESOLUTION,
                     offset=OFFSET, reserved="accept")
    os.unlink(root / "labels" / "data" / "s0" / "4" / "4" / "2")   # a missing block: 0 in NGFF
    attributes = n5.read_attributes(root / "labels" / "data" / "s0")
    n5.write_attributes(root / "labels" / "data" / "s0", {**attributes, "unit": "nm"})
    return root / "labels"


def expected_levels(source):
    """Our own argmax of every level, missing blocks and INVALID as 0, in (z, y, x)."""
    pyramid = paintera.open_pyramid(source, fill_label=0)
    levels = []
    for level in pyramid.levels:
        labels = level.compute()
        labels[labels == INVALID] = 0
        levels.append(labels.T)
    return pyramid, levels


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_export_matches_our_argmax_and_placement(source, tmp_path, version):
    target = tmp_path / "labels.zarr"
    summary = paintera.to_ome_zarr(source, target, version=version)
    pyramid, levels = expected_levels(source)
    assert summary.level_shapes == [level.shape for level in levels]
    group = zarr.open_group(target, mode="r")
    attributes = group.attrs.asdict()
    ome = attributes["ome"] if version == "0.5" else attributes
    assert (version == "0.5") == ("ome" in attributes) and "n5mscodecs:incomplete" not in attributes
    multiscale = ome["multiscales"][0]
    assert [axis["name"] for axis in multiscale["axes"]] == ["z", "y", "x"]
    assert {axis["unit"] for axis in multiscale["axes"]} == {"nanometer"}
    for k, level in enumerate(levels):
        assert group[f"s{k}"].metadata.zarr_format == (2 if version == "0.4" else 3)
        assert np.array_equal(group[f"s{k}"][...], level)
        scale, translation = multiscale["datasets"][k]["coordinateTransformations"]
        assert scale["scale"] == list(pyramid.voxel_sizes[k][::-1])
        assert translation["translation"] == list(pyramid.offsets[k][::-1])
    # s2: factors 4,4,2 of (4, 4, 40): voxel centres (f - 1) / 2 s0 voxels from s0's
    assert multiscale["datasets"][2]["coordinateTransformations"][1]["translation"] == [220.0, 1.0, 16.0]
    assert levels[0][0, 0, 0] == 0 and levels[0][16:20, 32:36, 32:36].max() == 0


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_ome_zarr_models_and_ome_zarr_py_read_it(source, tmp_path, version):
    models = pytest.importorskip("ome_zarr_models")
    target = tmp_path / "labels.zarr"
    paintera.to_ome_zarr(source, target, version=version)
    model = models.open_ome_zarr(zarr.open_group(target, mode="r"), version=version)
    assert type(model).__name__ == "ImageLabel"
    reader = pytest.importorskip("ome_zarr.reader")
    from ome_zarr.io import parse_url

    _, levels = expected_levels(source)
    nodes = list(reader.Reader(parse_url(str(target)))())
    assert {type(spec).__name__ for spec in nodes[0].specs} >= {"Label", "Multiscales"}
    assert [np.asarray(data).shape for data in nodes[0].data] == [level.shape for level in levels]
    assert np.array_equal(np.asarray(nodes[0].data[1]), levels[1])


def test_as_labels_of_an_image_it_points_back(source, tmp_path):
    image = tmp_path / "image.zarr"
    zarr.open_group(image, mode="w", zarr_format=3)
    paintera.to_ome_zarr(source, image / "labels" / "cells")
    cells = zarr.open_group(image / "labels" / "cells", mode="r").attrs["ome"]
    assert cells["image-label"] == {"source": {"image": "../../"}} and cells["multiscales"][0]["name"] == "cells"
    assert zarr.open_group(image / "labels", mode="r").attrs["ome"]["labels"] == ["cells"]


def test_multisets_are_lossless(source, tmp_path):
    import n5mscodecs.zarr as nz

    target = tmp_path / "multisets.zarr"
    paintera.to_ome_zarr(source, target, multisets=True)
    for k in range(3):
        stored = n5.open(source / "data" / f"s{k}", fill_label=0)[:]
        assert zarr.open_array(target / f"s{k}", mode="r").metadata.data_type.to_json(3) == "label_multiset"
        labels = nz.open_labels(target / f"s{k}")[...]
        expected = stored.argmax().T
        assert np.array_equal(labels, expected)
        elements = zarr.open_array(target / f"s{k}", mode="r")[8:16, 0:8, 0:8]
        assert LabelMultisetArray.from_elements(elements).equals(stored[0:8, 0:8, 8:16].T)
    with pytest.raises(ConfigurationError, match="version 0.5 only"):
        paintera.to_ome_zarr(source, tmp_path / "m4.zarr", multisets=True, version="0.4")


def test_round_trip_paintera_ome_zarr_paintera(source, tmp_path, capsys):
    target = tmp_path / "labels.zarr"
    assert main(["ome-zarr", str(source), str(target), "--quiet"]) == 0
    assert "3 levels s0=[20, 36, 40]" in capsys.readouterr().out
    back = tmp_path / "back.n5" / "labels"
    assert main(["convert", str(target), str(back), "--block-size", "8", "--quiet"]) == 0
    _, levels = expected_levels(source)
    assert np.array_equal(n5.open(back / "data" / "s0").read_labels(), levels[0].T)
    data = n5.read_attributes(back / "data")
    assert data["resolution"] == list(RESOLUTION) and data["offset"] == list(OFFSET)
    # a coarser level, with its own voxel size and centre
    assert main(["convert", str(target), str(tmp_path / "s1.n5"), "--level", "1", "--quiet"]) == 0
    s1 = n5.read_attributes(tmp_path / "s1.n5" / "data")
    assert s1["resolution"] == [8.0, 8.0, 80.0] and s1["offset"] == [12.0, -3.0, 220.0]


def test_an_interrupted_export_is_no_image_until_resumed(source, tmp_path, monkeypatch):
    from n5mscodecs.paintera import ome_zarr

    target = tmp_path / "half.zarr"
    real = ome_zarr._labels_piece
    calls = []

    def failing(dataset, region, positions):
        calls.append(region)
        if len(calls) == 3:
            raise OSError("connection reset")
        return real(dataset, region, positions)

    monkeypatch.setattr(ome_zarr, "_labels_piece", failing)
    with pytest.raises(OSError, match="connection reset"):
        paintera.to_ome_zarr(source, target, version="0.4", threads=1)
    attributes = json.loads((target / ".zattrs").read_text())
    assert "multiscales" not in attributes and "n5mscodecs:incomplete" in attributes
    with pytest.raises(FileExistsError, match="resume=True"):
        paintera.to_ome_zarr(source, target, version="0.4")
    monkeypatch.setattr(ome_zarr, "_labels_piece", real)

    def chunk_files():
        return sum(1 for p in target.rglob("*") if p.is_file() and not p.name.startswith("."))

    before = chunk_files()
    summary = paintera.to_ome_zarr(source, target, version="0.4", resume=True)
    assert before >= 2 and summary.chunks_written == chunk_files() - before  # the written ones were kept
    _, levels = expected_levels(source)
    assert np.array_equal(zarr.open_array(target / "s0", mode="r")[...], levels[0])
    with pytest.raises(ConfigurationError, match="overlaps the source"):
        paintera.to_ome_zarr(source, source / "data", overwrite=True)


def test_the_export_holds_the_targets_writer_lock(source, tmp_path):
    """A second writer of the target is refused before it writes a byte; the lock file goes with
    the export, and an overwrite keeps it while it replaces the old export."""
    from n5mscodecs import TargetInUseError
    from n5mscodecs.n5.writing import LOCK_NAME, WriterLock

    target = tmp_path / "locked.zarr"
    paintera.to_ome_zarr(source, target, version="0.5", shards=False)
    assert not (target / LOCK_NAME).exists()
    (target / "s0" / "stray").write_text("from the old export")

    def files():
        return {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}

    before = files()
    with WriterLock(target):   # another writer of it, here the same process
        with pytest.raises(TargetInUseError, match="is being written by"):
            paintera.to_ome_zarr(source, target, version="0.5", overwrite=True)
        assert files().keys() - {Path(LOCK_NAME)} == before.keys()
        assert all(files()[k] == v for k, v in before.items())
    seen = []
    real_clear = type(n5.open_store(target)).clear

    def clear(store, key="", keep=()):
        seen.append((store.local_file(LOCK_NAME), os.path.exists(store.local_file(LOCK_NAME))))
        return real_clear(store, key, keep)

    with mock.patch.object(type(n5.open_store(target)), "clear", clear):
        paintera.to_ome_zarr(source, target, version="0.5", overwrite=True)
    assert seen and seen[0][1]   # the lock was held while the old export was removed
    assert not (target / "s0" / "stray").exists() and not (target / LOCK_NAME).exists()
    _, levels = expected_levels(source)
    assert np.array_equal(zarr.open_array(target / "s0", mode="r")[...], levels[0])


def test_incomplete_paintera_sources_are_not_exported(source, tmp_path):
    half = tmp_path / "half.n5"
    paintera.convert(np.ones((8, 8, 8), np.uint8), half, block_size=4)
    attributes = n5.read_attributes(half)
    attributes[paintera.CONVERSION_KEY]["complete"] = False
    n5.write_attributes(half, attributes)
    with pytest.raises(IncompleteError):
        paintera.to_ome_zarr(half, tmp_path / "o.zarr")
    assert not (tmp_path / "o.zarr").exists()


def test_default_shards_hold_whole_blocks_within_the_bound():
    shards = default_shards((64, 64, 64), (1024, 1024, 1024))
    assert all(s % 64 == 0 for s in shards) and np.prod(shards) * 8 <= 64 * 2**20
    assert default_shards((8, 8, 8), (20, 36, 40)) == (24, 40, 40)


def test_an_ome_zarr_level_is_found_and_opened_through_one_store():
    """An object store's OME-Zarr image: its level is a key of the image's store, opened through it."""
    pytest.importorskip("fsspec")
    import uuid

    from n5mscodecs.n5 import open_store
    from n5mscodecs.paintera.ome_zarr import ome_zarr_level
    from n5mscodecs.paintera.sources import open_label_source

    image = open_store(f"memory://{uuid.uuid4().hex}/image")
    transforms = [{"type": "scale", "scale": [2, 3]}, {"type": "translation", "translation": [5, 7]}]
    image.set_json(".zattrs", {"multiscales": [{"axes": [{"name": "y"}, {"name": "x"}],
                                                "datasets": [{"path": "0", "coordinateTransformations": transforms}]}]})
    labels = np.arange(12, dtype=np.uint32).reshape(3, 4)
    n5.write_array(image.url("0"), labels, chunks=2)
    assert ome_zarr_level(image.url()) == (image.url("0"), (3.0, 2.0), (7.0, 5.0))
    source = open_label_source(image.url())
    assert (source.kind, source.path) == ("n5", image.url("0"))
    assert (source.resolution, source.offset) == ((3.0, 2.0), (7.0, 5.0))
    assert np.array_equal(source.read((slice(None), slice(None))), labels)


def _image(path, shapes):
    """An NGFF 0.5 multiscale image with one uint8 level per shape (z, y, x)."""
    group = zarr.open_group(path, mode="w", zarr_format=3)
    datasets = []
    for k, shape in enumerate(shapes):
        group.create_array(f"s{k}", shape=shape, dtype="uint8", dimension_names=["z", "y", "x"])
        factor = [float(2**k)] * 3
        datasets.append({"path": f"s{k}", "coordinateTransformations": [{"type": "scale", "scale": factor}]})
    axes = [{"name": a, "type": "space"} for a in "zyx"]
    group.attrs.put({"ome": {"version": "0.5", "multiscales": [{"axes": axes, "datasets": datasets}]}})
    return path


def test_labels_of_an_image_get_as_many_levels_as_the_image(source, tmp_path, capsys):
    """Issue 42, item 12: NGFF 0.5 wants a labels image with the image's number of levels."""
    _, levels = expected_levels(source)                       # three levels
    image = _image(tmp_path / "image.zarr", [level.shape for level in levels[:2]])
    assert main(["ome-zarr", str(source), str(image / "labels" / "cells"), "--quiet"]) == 0
    assert "wrote levels s0..s1 of 3" in capsys.readouterr().err
    cells = zarr.open_group(image / "labels" / "cells", mode="r")
    assert len(cells.attrs["ome"]["multiscales"][0]["datasets"]) == 2 and "s2" not in cells
    assert np.array_equal(cells["s1"][...], levels[1])
    models = pytest.importorskip("ome_zarr_models")
    model = models.open_ome_zarr(zarr.open_group(image, mode="r"), version="0.5")
    assert type(model).__name__ == "Image" and model.labels is not None
    # an image with more levels than the source: refused, nothing written
    deeper = _image(tmp_path / "deeper.zarr", [level.shape for level in levels] + [(5, 5, 5)])
    assert main(["ome-zarr", str(source), str(deeper / "labels" / "cells"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "has 4 levels" in err and "only 3" in err and len(err.splitlines()) == 1
    assert not (deeper / "labels").exists()
