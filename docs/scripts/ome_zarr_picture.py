"""The picture in docs/ome_zarr.md: one slice of Paintera's export_test.n5 exported to OME-Zarr,
as ome-zarr-py's Reader returns it (left) beside this package's own open_pyramid (right).

Run from the repository root with ome-zarr and Pillow installed:
``python docs/scripts/ome_zarr_picture.py ../shared/data/n5/paintera_export_test.n5/paintera_labels``.
"""

import sys
import tempfile

import numpy as np
from ome_zarr.io import parse_url
from ome_zarr.reader import Reader
from PIL import Image, ImageDraw

from n5mscodecs import INVALID, paintera
from n5mscodecs.preview import label_colours

source = sys.argv[1]
target = tempfile.mkdtemp() + "/labels.zarr"
paintera.to_ome_zarr(source, target, version="0.4")
level, z = 1, 20
theirs = np.asarray(list(Reader(parse_url(target))())[0].data[level])[z]          # (y, x)
ours = paintera.open_pyramid(source, fill_label=0).levels[level][:, :, z].compute().T
ours[ours == INVALID] = 0
assert np.array_equal(theirs, ours)
scale, gap = 6, 24
panels = [np.repeat(np.repeat(label_colours(a), scale, 0), scale, 1) for a in (theirs, ours)]
height, width = panels[0].shape[:2]
canvas = Image.new("RGB", (2 * width + 3 * gap, height + 2 * gap + 10), (255, 255, 255))
draw = ImageDraw.Draw(canvas)
for k, (panel, caption) in enumerate(zip(panels, ["ome-zarr-py Reader, s1 z=20", "n5mscodecs open_pyramid, s1 z=20"])):
    x = gap + k * (width + gap)
    canvas.paste(Image.fromarray(panel), (x, gap + 10))
    draw.text((x, 8), caption, fill=(0, 0, 0))
canvas.save("docs/images/ome_zarr_readers.png")
print("docs/images/ome_zarr_readers.png: the two readers agree on every voxel of the slice")
