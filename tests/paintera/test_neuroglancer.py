"""n5ms serve in a real browser: the neuroglancer client the ``neuroglancer`` package ships
(``serve(..., viewer=True)``, as ``n5ms serve --viewer``), in headless chromium driven by
selenium, with no internet (``SE_OFFLINE``: selenium may not fetch a driver). The served
source's picture (NGFF 0.4, and 0.5 with raw chunks) equals the picture of the same level
exported by ``n5ms argmax`` (a static N5 dataset, served by Python's http.server), and a merge
made while serving changes it.

Skipped unless chromium, chromedriver, neuroglancer and selenium are installed (CI installs them:
Debian ``chromium chromium-driver``, pip ``neuroglancer selenium``)."""

import functools
import http.server
import io
import json
import shutil
import threading

import numpy as np
import pytest

pytestmark = pytest.mark.browser

neuroglancer = pytest.importorskip("neuroglancer")
pytest.importorskip("neuroglancer.webdriver")
pytest.importorskip("selenium")
Image = pytest.importorskip("PIL.Image")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
if CHROMIUM is None or shutil.which("chromedriver") is None:
    pytest.skip("chromium and chromedriver are not installed", allow_module_level=True)

from n5mscodecs import paintera  # noqa: E402
from n5mscodecs.demo import voronoi_labels  # noqa: E402
from n5mscodecs.paintera.serve import serve  # noqa: E402

SIZE = 64          # voxels across the view (x and y)
PIXELS = 256       # pixels across the screenshot


class _StaticHandler(http.server.SimpleHTTPRequestHandler):
    """A plain static file server, with the CORS header a page of another origin needs."""

    def end_headers(self):
        self.send_header("Access-Control-Allow-Origin", "*")
        super().end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture()
def static_server(tmp_path):
    handler = functools.partial(_StaticHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


DIMENSIONS = {"x": [1e-9, "m"], "y": [1e-9, "m"], "z": [1e-9, "m"]}
#: neuroglancer's N5 source puts voxel (0, 0, 0)'s corner at the origin, NGFF (and Paintera's
#: offset) its centre: the static export is drawn half a voxel back to line up
HALF_VOXEL_BACK = {"outputDimensions": DIMENSIONS, "matrix": [[1, 0, 0, -0.5], [0, 1, 0, -0.5], [0, 0, 1, -0.5]]}


def _state(source):
    """One segmentation layer seen from above, one voxel per 4 pixels, nothing but the data drawn."""
    return neuroglancer.ViewerState({
        "dimensions": DIMENSIONS,
        "position": [SIZE / 2, SIZE / 2, 8.25],
        "crossSectionScale": SIZE / PIXELS,
        "layers": [{"type": "segmentation", "source": source, "name": "labels"}],
        "layout": "xy",
        "showAxisLines": False,
        "showScaleBar": False,
        "showDefaultAnnotations": False,
    })


def _picture(viewer, source):
    viewer.set_state(_state(source))
    shot = viewer.screenshot(size=[PIXELS, PIXELS])
    return np.asarray(Image.open(io.BytesIO(shot.screenshot.image)).convert("RGB"))


def test_neuroglancer_shows_the_served_source_as_the_static_export(tmp_path, static_server, monkeypatch):
    monkeypatch.setenv("SE_OFFLINE", "true")   # selenium must not download a driver
    labels = voronoi_labels((16, SIZE, SIZE), 24, seed=3).T.copy().astype(np.uint64) + 1   # N5 order (x, y, z)
    source = tmp_path / "p.n5" / "labels"
    paintera.convert(labels, source, block_size=32, factors=[2], resolution=(1, 1, 1))
    attributes = json.loads((source / "data" / "s0" / "attributes.json").read_text())
    (source / "data" / "s0" / "attributes.json").write_text(json.dumps({**attributes, "unit": "nm"}))
    paintera.merge_fragments(source, [1, 2])
    paintera.export_argmax(source / "data" / "s0", tmp_path / "argmax.n5" / "s0")
    with serve(source, viewer=True) as server:
        assert server.viewer_url.startswith("http://127.0.0.1:")
        webdriver = neuroglancer.webdriver.Webdriver(server.viewer, headless=True, docker=True,
                                                     browser_binary_path=CHROMIUM, print_logs=False)
        try:
            served = _picture(server.viewer, f"zarr://{server.source_url('labels')}")
            static = _picture(server.viewer, {"url": f"n5://{static_server}argmax.n5/s0",
                                              "transform": HALF_VOXEL_BACK})
            assert len({tuple(p) for p in served.reshape(-1, 3)}) > 10   # segments drawn, not an empty view
            assert np.array_equal(served, static)
            with serve(source, ngff="0.5", encoding="raw") as zarr3:   # zarr v3, raw chunks: the same picture
                assert np.array_equal(_picture(server.viewer, f"zarr://{zarr3.source_url('labels')}"), served)
            visible = np.unique(labels[:, :, 8])
            paintera.merge_fragments(source, [int(visible[3]), int(visible[4]), int(visible[5])])
            webdriver.driver.refresh()   # neuroglancer keeps the chunks it has: a new page asks again
            merged = _picture(server.viewer, f"zarr://{server.source_url('labels')}")
            assert not np.array_equal(merged, served)
            assert server.errors == 0
        finally:
            webdriver.__exit__(None, None, None)
