"""Make docs/images/napari_paintera.png: a Paintera label source opened in napari by this
package's reader plugin, rendered headless.

    xvfb-run -a -s "-screen 0 1280x1024x24" python docs/scripts/napari_screenshot.py \\
        ../shared/data/n5/paintera_export_test.n5/paintera_labels docs/images/napari_paintera.png

Needs napari with a Qt binding (``pip install "napari[pyqt5]"``) and this package
installed (its ``napari.manifest`` entry point registers the plugin). Without an X
server, ``QT_QPA_PLATFORM=offscreen`` renders too (Mesa's software OpenGL).
"""

from __future__ import annotations

import argparse

import napari


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="a Paintera label source, N5 label multiset dataset or container")
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--size", default="1000x640", help="window size WxH (default 1000x640)")
    parser.add_argument("--z", type=int, default=None, help="the slice to show (default: the middle one)")
    args = parser.parse_args(argv)
    width, height = (int(n) for n in args.size.split("x"))

    viewer = napari.Viewer(title="n5mscodecs: Paintera labels in napari")
    layers = viewer.open(args.source, plugin="n5mscodecs")   # the plugin, not napari's image readers
    layer = layers[0]
    viewer.window.resize(width, height)
    z_extent = layer.extent.world[:, 0]                      # world range of the first axis (z)
    viewer.dims.set_point(0, args.z if args.z is not None else float(z_extent.mean()))
    viewer.reset_view()
    viewer.layers.selection.active = layer
    print(f"{layer.name}: levels {[tuple(s) for s in layer.level_shapes]}, scale {tuple(layer.scale)}, "
          f"translate {tuple(layer.translate)}, z = {viewer.dims.point[0]}")
    viewer.screenshot(args.out, canvas_only=False, flash=False)
    viewer.close()


if __name__ == "__main__":
    main()
