"""The napari reader plugin through npe2 (no napari, no GUI), and once through napari.Viewer
where napari and a Qt binding are installed (in a subprocess, offscreen without a display)."""

import importlib.metadata
import importlib.resources
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
from support import n5_data

npe2 = pytest.importorskip("npe2")
pytest.importorskip("dask.array")

from n5mscodecs import _napari, n5
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.errors import IncompleteError, N5msCodecsError
from n5mscodecs.paintera import CONVERSION_KEY, convert

PAINTERA = "paintera_export_test.n5"
MANIFEST = importlib.resources.files("n5mscodecs") / "napari.yaml"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def plugin_manager():
    """npe2's plugin manager knowing this plugin: discovered through the entry point when the
    installed metadata has it, else registered from the manifest (an editable install made
    before the entry point existed)."""
    pm = npe2.PluginManager.instance()
    pm.discover()
    try:
        pm.get_manifest("n5mscodecs")
    except KeyError:
        pm.register(npe2.PluginManifest.from_file(str(MANIFEST)))
    return pm


def read(path):
    plugin_manager()
    return npe2.read([os.fspath(path)], stack=False, plugin_name="n5mscodecs")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("napari") / "c.n5"
    labels = voronoi_labels((10, 24, 32), 20).T.copy()   # N5 order (x, y, z) = (32, 24, 10)
    convert(labels, root / "labels", block_size=8, factors=[2, (2, 2, 1)], resolution=(4.0, 5.0, 40.0),
            offset=(10.0, -20.0, 300.0))
    return root, labels


def test_manifest_is_valid_shipped_and_registered():
    manifest = npe2.PluginManifest.from_file(str(MANIFEST))
    assert manifest.name == "n5mscodecs"
    (reader,) = manifest.contributions.readers
    assert reader.accepts_directories and reader.command == "n5mscodecs.get_reader"
    (command,) = manifest.contributions.commands
    assert command.python_name == "n5mscodecs._napari:get_reader"
    if PYPROJECT.is_file():   # the source tree (the wheel's metadata is checked by .ci/dist.sh)
        project = tomllib.loads(PYPROJECT.read_text())["project"]
        assert project["entry-points"]["napari.manifest"] == {"n5mscodecs": "n5mscodecs:napari.yaml"}
        assert set(project["optional-dependencies"]["napari"]) == {"npe2>=0.7", "dask[array]>=2024.1"}
    installed = [ep for ep in importlib.metadata.entry_points(group="napari.manifest") if ep.name == "n5mscodecs"]
    if not installed:
        pytest.skip("the installed n5mscodecs metadata predates the napari.manifest entry point (reinstall)")
    assert installed[0].value == "n5mscodecs:napari.yaml"


def test_reader_gives_a_lazy_multiscale_labels_layer_in_zyx(converted):
    root, labels = converted
    (layer,) = read(root / "labels")
    data, kwargs, kind = layer
    assert kind == "labels"
    assert [type(level).__module__.split(".")[0] for level in data] == ["dask"] * 3   # lazy
    assert [level.shape for level in data] == [(10, 24, 32), (5, 12, 16), (5, 6, 8)]
    assert kwargs["multiscale"] is True and kwargs["name"] == "labels"
    assert kwargs["scale"] == (40, 5, 4) and kwargs["translate"] == (300, -20, 10)
    metadata = kwargs["metadata"]
    assert metadata["voxel_sizes"] == [[40, 5, 4], [80, 10, 8], [80, 20, 16]]
    assert metadata["offsets"] == [[300, -20, 10], [320, -17.5, 12], [320, -12.5, 16]]
    assert metadata["datasets"] == [str(root / "labels" / "data" / f"s{k}") for k in range(3)]
    assert metadata["fill_label"] == 0
    for k, level in enumerate(data):
        expected = n5.open(root / "labels" / "data" / f"s{k}", fill_label=0).read().argmax().T
        assert level.dtype == np.uint64 and np.array_equal(level.compute(), expected)
    assert np.array_equal(data[0].compute(), labels.T)


def test_every_path_form_opens(converted):
    root, _ = converted
    for path, name in ((root, "labels"), (root / "labels" / "data", "data"),
                       (root / "labels" / "attributes.json", "labels")):
        (layer,) = read(path)
        assert layer[1]["name"] == name and len(layer[0]) == 3
    (single,) = read(root / "labels" / "data" / "s1")
    data, kwargs, _ = single
    assert kwargs["multiscale"] is False and data.shape == (5, 12, 16)   # one level: a plain layer
    assert kwargs["scale"] == (80, 10, 8) and kwargs["translate"] == (320, -17.5, 12)


def test_paintera_export_test_container():
    container = n5_data(PAINTERA)
    (layer,) = read(container)   # the container holds one label source (the scalar exports are plain)
    data, kwargs, kind = layer
    assert kind == "labels" and kwargs["name"] == "paintera_labels"
    assert [level.shape for level in data] == [(100, 100, 100), (50, 50, 50), (25, 25, 25)]
    assert kwargs["scale"] == (1, 1, 1) and kwargs["translate"] == (0, 0, 0)
    assert kwargs["metadata"]["voxel_sizes"] == [[1, 1, 1], [2, 2, 2], [4, 4, 4]]
    assert kwargs["metadata"]["offsets"] == [[0, 0, 0], [0.5, 0.5, 0.5], [1.5, 1.5, 1.5]]
    for k, level in enumerate(data):
        expected = n5.open(container / "paintera_labels" / "data" / f"s{k}", fill_label=0).read().argmax()
        assert np.array_equal(level.compute(), expected.T)


def test_a_container_gives_one_layer_per_pyramid(tmp_path):
    root = tmp_path / "two.n5"
    n5.write_attributes(root, {"n5": n5.N5_VERSION})
    convert(np.ones((8, 8, 8), np.uint64), root / "a", block_size=4)
    n5.write(root / "more" / "seg", np.full((6, 4), 7, np.uint64), (2, 2))
    layers = read(root)
    assert [layer[1]["name"] for layer in layers] == ["a", "more/seg"]
    assert [layer[2] for layer in layers] == ["labels", "labels"]
    assert layers[1][0].shape == (4, 6) and (layers[1][0].compute() == 7).all()


def test_paths_it_cannot_open_get_no_reader(converted, tmp_path):
    root, _ = converted
    (tmp_path / "plain").mkdir()
    np.save(tmp_path / "labels.npy", np.zeros((2, 2), np.uint64))
    n5.write_array(tmp_path / "raw.n5" / "raw", np.zeros((4, 4), np.uint8), (2, 2))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "attributes.json").write_text("{not json")
    half = tmp_path / "half.n5"
    convert(np.zeros((4, 4), np.uint64), half, block_size=2)
    attributes = json.loads((half / "attributes.json").read_text())
    del attributes["painteraData"]
    attributes[CONVERSION_KEY]["complete"] = False
    n5.write_attributes(half, attributes)
    for path in (tmp_path / "nowhere", tmp_path / "plain", tmp_path / "labels.npy", tmp_path / "raw.n5",
                 tmp_path / "raw.n5" / "raw", tmp_path / "broken", root / "labels" / "unique-labels",
                 "s3://bucket/c.n5", [str(root / "labels"), str(root / "labels")], 42):
        assert _napari.get_reader(path) is None, path
    # an interrupted conversion is found, and reading it says how to finish it (issue 25)
    with pytest.raises(IncompleteError, match=r"half\.n5: .*INCOMPLETE.*--resume"):
        _napari.get_reader(half)(half)
    assert callable(_napari.get_reader(str(root / "labels"))) and callable(_napari.get_reader([str(root)]))
    with pytest.raises(ValueError):
        read(tmp_path / "raw.n5")


def test_a_broken_source_raises_the_package_error_when_read(tmp_path):
    """Found, so the reader is napari's choice, but not openable: the error names what is wrong."""
    source = tmp_path / "odd.n5" / "labels"
    convert(np.zeros((4, 4, 4), np.uint64), source, block_size=2)
    n5.write_attributes(source / "data", {"multiScale": True, "resolution": [1.0, 1.0], "isLabelMultiset": True})
    assert callable(_napari.get_reader(str(source)))
    with pytest.raises(N5msCodecsError, match=r"labels/data: resolution must be 3 numbers"):
        read(source)


def test_corrupt_block_raises_the_package_error_naming_the_block(tmp_path):
    target = tmp_path / "bad.n5" / "labels"
    convert(np.arange(16 * 16, dtype=np.uint64).reshape(16, 16) // 7, target, block_size=8, factors=[2])
    block = target / "data" / "s0" / "1" / "0"
    block.write_bytes(block.read_bytes()[:-4])
    (layer,) = read(target)   # reading the layer reads metadata only
    data = layer[0]
    assert data[1].compute().shape == (8, 8)
    with pytest.raises(N5msCodecsError, match=r"bad\.n5/labels/data/s0/1/0"):
        data[0].compute()


def _qt_binding():
    return next((name for name in ("PyQt5", "PyQt6", "PySide2", "PySide6") if importlib.util.find_spec(name)), None)


def run_in_a_viewer(body, *needed):
    """Run ``body`` (Python, with ``viewer`` a napari.Viewer(show=False) that has this package's
    plugin registered) in a subprocess, Qt offscreen: Qt state stays out of pytest. Skips
    without napari, a Qt binding or the modules ``needed``; returns its stdout."""
    for module in ("napari", *needed):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (CI's napari step installs napari, napari-ome-zarr and Qt)")
    if _qt_binding() is None:
        pytest.skip("no Qt binding (PyQt5/PyQt6/PySide2/PySide6) is installed for napari")
    script = textwrap.dedent(f"""
        import sys, npe2, numpy as np
        pm = npe2.PluginManager.instance()
        pm.discover()
        try:
            pm.get_manifest("n5mscodecs")
        except KeyError:
            pm.register(npe2.PluginManifest.from_file({str(MANIFEST)!r}))
        import napari
        viewer = napari.Viewer(show=False)
    """) + textwrap.dedent(body) + "\nviewer.close()\n"
    env = dict(os.environ)
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    return result.stdout


def test_layer_in_a_napari_viewer(converted):
    """napari.Viewer(show=False) adds the layer."""
    root, _ = converted
    out = run_in_a_viewer(f"""
        (layer,) = viewer.open({str(root / "labels")!r}, plugin="n5mscodecs")
        assert type(layer).__name__ == "Labels" and layer.multiscale, layer
        assert [tuple(s) for s in layer.level_shapes] == [(10, 24, 32), (5, 12, 16), (5, 6, 8)]
        assert tuple(layer.scale) == (40, 5, 4) and tuple(layer.translate) == (300, -20, 10)
        assert layer.data.dtype == np.uint64
        viewer.dims.ndisplay = 3
        viewer.dims.ndisplay = 2
        print("viewer ok")
    """)
    assert "viewer ok" in out


def test_napari_ome_zarr_shows_the_export_as_our_reader_shows_the_source(converted, tmp_path):
    """napari-ome-zarr's reader on an OME-Zarr export, ours on the N5 source, in one viewer:
    the same levels, voxel sizes and labels (issue 31)."""
    for module in ("napari", "napari_ome_zarr", "zarr"):  # before exporting
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (CI's napari step installs napari and napari-ome-zarr)")
    from n5mscodecs.paintera import to_ome_zarr

    root, _ = converted
    to_ome_zarr(root / "labels", tmp_path / "labels.zarr", version="0.4")
    out = run_in_a_viewer(f"""
        (ours,) = viewer.open({str(root / "labels")!r}, plugin="n5mscodecs")
        (theirs,) = viewer.open({str(tmp_path / "labels.zarr")!r}, plugin="napari-ome-zarr")
        assert type(theirs).__name__ == "Labels" and theirs.multiscale, theirs
        assert [tuple(s) for s in theirs.level_shapes] == [tuple(s) for s in ours.level_shapes]
        assert np.allclose(theirs.scale, ours.scale), (theirs.scale, ours.scale)
        # napari-ome-zarr 0.10 applies only the first transform of datasets[0] (the scale), so its
        # layer starts at the world origin; ours at the source's offset (docs/ome_zarr.md)
        for voxel in ([0, 0, 0], [3, 7, 11]):
            shift = np.subtract(ours.data_to_world(voxel), theirs.data_to_world(voxel))
            assert np.allclose(shift, ours.translate), (voxel, shift)
        assert np.array_equal(np.asarray(theirs.data[1]), np.asarray(ours.data[1]))
        print("same labels")
    """, "napari_ome_zarr")
    assert "same labels" in out
