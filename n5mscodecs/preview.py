"""Pictures of label multiset datasets: one slice as argmax colours beside entries per voxel.

:func:`slice_arrays` gives the numbers (no Pillow needed); :func:`render_slice` draws them
with Pillow (the ``preview`` extra): nearest-neighbour upscaling, a title, axis directions,
a legend, a colour bar for the entries panel, and voxels without an entry hatched grey.
:func:`write_preview` opens a dataset (or a Paintera source's level), draws a slice and
saves the picture (what ``n5ms preview`` runs).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from . import n5
from ._extras import require
from .errors import ArgumentError, ConfigurationError
from .multiset import INVALID, LabelMultisetArray
from .n5 import LabelMultisetDataset

MIN_WIDTH = 800          # default width of the whole picture, in pixels
#: The most pixels the slice panels of one picture may hold (64 Mpx: 192 MiB of RGB, about 1 GiB
#: while drawing); a ``width`` or ``scale`` asking for more is refused before anything is drawn.
MAX_PIXELS = 2**26
HATCH = ((150, 150, 150), (215, 215, 215))   # voxels without an entry: missing blocks, INVALID
BACKGROUND = (255, 255, 255)
INK = (0, 0, 0)
_GAP = 24
# a perceptually ordered ramp (dark blue -> teal -> yellow) for entries per voxel
_RAMP = np.array([(48, 18, 94), (59, 82, 139), (33, 144, 141), (93, 201, 99), (253, 231, 37)], np.float64)


def label_colours(labels: np.ndarray) -> np.ndarray:
    """Distinct RGB colours per label (a hash of the id; 0 is black)."""
    mixed = labels.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    rgb = np.stack([(mixed >> np.uint64(s)) & np.uint64(0xFF) for s in (56, 40, 24)], -1).astype(np.uint8)
    rgb[labels == 0] = 0
    return rgb


def entry_colours(entries: np.ndarray, most: int) -> np.ndarray:
    """RGB of entries-per-voxel counts 1..``most`` on a dark-blue-to-yellow ramp."""
    position = (np.asarray(entries, np.float64) - 1) / max(most - 1, 1) * (len(_RAMP) - 1)
    position = np.clip(position, 0, len(_RAMP) - 1)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, len(_RAMP) - 1)
    t = (position - low)[..., None]
    return np.round(_RAMP[low] * (1 - t) + _RAMP[high] * t).astype(np.uint8)


def image_format(path: str | os.PathLike[str]) -> str:
    """The Pillow format name that writes ``path`` (by its extension), or a ConfigurationError
    naming the extensions Pillow can write."""
    image = require("PIL.Image", "preview", "pictures")
    image.init()
    writable = {ext: fmt for ext, fmt in image.registered_extensions().items() if fmt in image.SAVE}
    extension = os.path.splitext(os.fspath(path))[1].lower()
    if extension not in writable:
        known = ", ".join(sorted(e for e in writable if e in (".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff",
                                                               ".bmp", ".gif")))
        what = f"extension {extension!r}" if extension else "no extension"
        raise ConfigurationError(f"{os.fspath(path)}: {what} is not a picture format Pillow writes "
                                 f"(e.g. {known})")
    return writable[extension]


@dataclass
class SliceArrays:
    """One slice: ``labels`` (argmax, rows x columns), ``entries`` per voxel, ``empty`` (no
    entry: missing block or INVALID), and the names of the row and column axes."""
    labels: np.ndarray
    entries: np.ndarray
    empty: np.ndarray
    row_axis: str
    column_axis: str

    @property
    def most_entries(self) -> int:
        filled = self.entries[~self.empty]
        return int(filled.max()) if filled.size else 0

    @property
    def n_labels(self) -> int:
        return int(np.unique(self.labels[~self.empty]).size)


def slice_arrays(dataset: LabelMultisetDataset, axis: int, index: int, stride: int = 1) -> SliceArrays:
    """Slice ``index`` across N5 ``axis``: columns are the faster remaining N5 axis, rows the
    slower (a z slice has x to the right and y down, as Paintera and Fiji show it). A 2-D
    dataset is drawn whole and a 1-D one as a single row (``axis`` and ``index`` unused).
    ``stride`` > 1 keeps every ``stride``-th voxel along both axes (a downscaled picture)."""
    if dataset.ndim == 3:
        key = tuple(index if a == axis else slice(None, None, stride) for a in range(3))
        names = [n for a, n in enumerate("xyz") if a != axis]
    else:
        key = (slice(None, None, stride),) * dataset.ndim
        names = ["x", "y"] if dataset.ndim == 2 else ["x", "-"]
    plane = dataset[key]
    assert isinstance(plane, LabelMultisetArray)  # slices only: never one voxel's multiset
    labels, entries = plane.argmax(), plane.entries_per_voxel()
    if dataset.ndim == 1:
        labels, entries = labels[:, None], entries[:, None]
    labels, entries = labels.T, entries.T
    empty = labels == INVALID
    return SliceArrays(labels, entries, empty, row_axis=names[-1], column_axis=names[0])


def slice_picture(dataset: LabelMultisetDataset, axis: int, index: int) -> tuple[np.ndarray, int, int]:
    """``(RGB picture, distinct labels, most entries per voxel)`` at one pixel per voxel: argmax
    colours, a 4-pixel white gap, entries per voxel on the ramp of :func:`entry_colours`;
    voxels without an entry hatched grey in both panels."""
    arrays = slice_arrays(dataset, axis, index)
    most = max(arrays.most_entries, 1)
    left, right = label_colours(arrays.labels), entry_colours(arrays.entries, most)
    _hatch(left, arrays.empty, 1)
    _hatch(right, arrays.empty, 1)
    gap = np.full((left.shape[0], 4, 3), 255, np.uint8)
    return np.concatenate([left, gap, right], axis=1), arrays.n_labels, arrays.most_entries


def _hatch(rgb, mask, scale):
    """Paint ``mask`` (voxels; ``rgb`` is ``scale`` pixels per voxel) with diagonal grey stripes."""
    if not mask.any():
        return
    pixels = np.repeat(np.repeat(mask, scale, 0), scale, 1)
    rows, cols = np.indices(pixels.shape)
    stripe = ((rows + cols) // max(2, scale // 2)) % 2 == 0
    rgb[pixels & stripe] = HATCH[0]
    rgb[pixels & ~stripe] = HATCH[1]


def _font(size):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError, ImportError):  # Pillow < 10.1 or no FreeType: the bitmap font
        return ImageFont.load_default()


@dataclass
class RenderedSlice:
    picture: np.ndarray      # RGB, rows x columns x 3
    n_labels: int
    most_entries: int
    scale: int               # pixels per voxel
    description: str         # what the panels show, for the command line's summary


def render_slice(dataset: LabelMultisetDataset, axis: int, index: int, *, width: int | None = None,
                 scale: int | None = None, title: str | None = None) -> RenderedSlice:
    """A readable picture of one slice (needs Pillow): the argmax labels in colour and, when
    some voxel has more than one entry, the entries per voxel with a colour bar; voxels without
    an entry hatched grey; title, axis directions and a legend.

    ``scale`` is the pixels per voxel; ``width`` the slice panel's width in pixels (rounded to a
    whole number of pixels per voxel; narrower than the slice, every n-th voxel is drawn).
    Default: the smallest scale that makes the picture at least :data:`MIN_WIDTH` pixels wide.
    The panels may hold at most :data:`MAX_PIXELS` pixels: more is an
    :class:`~n5mscodecs.ArgumentError` naming ``width`` or ``scale``, before anything is drawn.
    2-D datasets are drawn whole, 1-D ones as one row.
    """
    image_module = require("PIL.Image", "preview", "pictures")
    from PIL import ImageDraw

    across = dataset.shape[0] if dataset.ndim < 3 else dataset.shape[1 if axis == 0 else 0]
    stride = max(1, math.ceil(across / width)) if width is not None and scale is None else 1
    arrays = slice_arrays(dataset, axis, index, stride)
    rows, cols = arrays.labels.shape
    most = arrays.most_entries
    two_panels = most > 1
    given_scale = scale
    if scale is None:
        if width is not None:
            scale = max(1, round(width / cols))
        else:
            voxels_across = cols * (2 if two_panels else 1)
            scale = max(1, math.ceil((MIN_WIDTH - 2 * _GAP - (_GAP if two_panels else 0)) / voxels_across))
    pixels = rows * cols * scale * scale * (2 if two_panels else 1)
    if pixels > MAX_PIXELS:
        asked = ("width", f"{width} px") if width is not None and given_scale is None else \
            ("scale", f"{scale} px per voxel")
        raise ArgumentError(
            asked[0], f"{asked[1]} makes a picture of {pixels:,} pixels for a slice of {cols} x {rows} voxels, "
                      f"more than the {MAX_PIXELS:,} (preview.MAX_PIXELS) a picture may have: pass a smaller "
                      "width or scale")
    font, small = _font(max(12, min(20, 8 + scale))), _font(13)

    left = np.repeat(np.repeat(label_colours(arrays.labels), scale, 0), scale, 1)
    _hatch(left, arrays.empty, scale)
    panels = [left]
    if two_panels:
        right = np.repeat(np.repeat(entry_colours(arrays.entries, most), scale, 0), scale, 1)
        _hatch(right, arrays.empty, scale)
        panels.append(right)
    panel_w, panel_h = cols * scale, rows * scale

    header, legend_h = 64, 96 if two_panels else 64
    picture_w = max(MIN_WIDTH if width is None and scale is None else 0,
                    2 * _GAP + len(panels) * panel_w + (len(panels) - 1) * _GAP)
    picture_w = max(picture_w, 2 * _GAP + len(panels) * panel_w + (len(panels) - 1) * _GAP, 420)
    picture_h = header + panel_h + 28 + legend_h
    canvas = image_module.new("RGB", (picture_w, picture_h), BACKGROUND)
    draw = ImageDraw.Draw(canvas)

    heading = title.strip() if title else dataset.name
    where = f"{'xyz'[axis]} = {index} of 0..{dataset.shape[axis] - 1}, " if dataset.ndim == 3 else ""
    per_voxel = f"every {stride}th voxel" if stride > 1 else f"{scale} px per voxel"
    subtitle = f"{where}{cols} x {rows} voxels, {per_voxel}, {arrays.n_labels} labels"
    legend = ["label 0", "no entry (missing block or INVALID)"]
    note = "other colours: one per label id" + ("" if two_panels else "; every voxel has one entry: no entries panel")
    # the picture is as wide as its widest text, so that nothing is cut off at small widths
    texts = [draw.textlength(heading, font=font), draw.textlength(subtitle, font=small),
             draw.textlength(note, font=small), sum(draw.textlength(t, font=small) + 14 + 28 for t in legend)]
    needed = 2 * _GAP + int(max(texts)) + 1
    if needed > picture_w:
        picture_w = needed
        canvas = image_module.new("RGB", (picture_w, picture_h), BACKGROUND)
        draw = ImageDraw.Draw(canvas)
    draw.text((_GAP, 8), heading, fill=INK, font=font)
    draw.text((_GAP, 8 + font.size + 6 if hasattr(font, "size") else 30), subtitle, fill=INK, font=small)

    x0s = [_GAP + k * (panel_w + _GAP) for k in range(len(panels))]
    captions = ["argmax label", f"entries per voxel (1..{most})"]
    for x0, panel, caption in zip(x0s, panels, captions):
        canvas.paste(image_module.fromarray(panel), (x0, header))
        draw.rectangle((x0 - 1, header - 1, x0 + panel_w, header + panel_h), outline=INK)
        draw.text((x0, header - 16), caption, fill=INK, font=small)
        # axis directions: columns to the right along the bottom, rows downwards on the left
        y = header + panel_h + 4
        draw.line((x0, y + 6, x0 + min(60, panel_w), y + 6), fill=INK, width=2)
        draw.polygon([(x0 + min(60, panel_w), y + 2), (x0 + min(60, panel_w) + 7, y + 6),
                      (x0 + min(60, panel_w), y + 10)], fill=INK)
        draw.text((x0 + min(60, panel_w) + 10, y - 1), arrays.column_axis, fill=INK, font=small)
        draw.line((x0 - 8, header, x0 - 8, header + min(60, panel_h)), fill=INK, width=2)
        draw.polygon([(x0 - 12, header + min(60, panel_h)), (x0 - 8, header + min(60, panel_h) + 7),
                      (x0 - 4, header + min(60, panel_h))], fill=INK)
        draw.text((x0 - 20, header + min(60, panel_h) + 8), arrays.row_axis, fill=INK, font=small)

    y = header + panel_h + 28
    swatch = 14

    def key(x, colour_or_hatch, text):
        box = np.zeros((swatch, swatch, 3), np.uint8)
        if colour_or_hatch == "hatch":
            _hatch(box, np.ones((1, 1), bool), swatch)
        else:
            box[:] = colour_or_hatch
        canvas.paste(image_module.fromarray(box), (x, y))
        draw.rectangle((x - 1, y - 1, x + swatch, y + swatch), outline=INK)
        draw.text((x + swatch + 6, y), text, fill=INK, font=small)
        return x + swatch + 12 + int(draw.textlength(text, font=small)) + 16

    x = key(_GAP, (0, 0, 0), legend[0])
    key(x, "hatch", legend[1])
    draw.text((_GAP, y + 26), note, fill=INK, font=small)
    if two_panels:
        # colour bar of the entries panel
        x0 = x0s[1]
        bar_w = min(panel_w, 300)
        ramp = entry_colours(np.linspace(1, most, bar_w), most)
        bar = np.repeat(ramp[None], 14, 0)
        by = y + 26
        canvas.paste(image_module.fromarray(bar), (x0, by))
        draw.rectangle((x0 - 1, by - 1, x0 + bar_w, by + 14), outline=INK)
        ticks = sorted({1, (1 + most) // 2, most})
        for tick in ticks:
            tx = x0 + round((tick - 1) / max(most - 1, 1) * (bar_w - 1))
            draw.line((tx, by + 14, tx, by + 18), fill=INK)
            draw.text((tx - 3, by + 20), str(tick), fill=INK, font=small)
        draw.text((x0 + bar_w + 8, by), "entries per voxel", fill=INK, font=small)
        description = "left: argmax labels, right: entries per voxel (colour bar)"
    else:
        description = "argmax labels; every voxel has one entry, so no entries panel"
    if arrays.empty.any():
        description += f"; {int(arrays.empty.sum())} voxels without an entry hatched grey"
    return RenderedSlice(np.asarray(canvas), arrays.n_labels, most, scale, description)


@dataclass
class PreviewSummary:
    """What :func:`write_preview` drew."""

    out: str
    dataset: str       # the dataset drawn, for messages
    where: str         # the slice: "z=20", or "2-D, whole"
    rendered: RenderedSlice


def write_preview(source: str | os.PathLike[str] | n5.Store, out: str | os.PathLike[str], *, axis: str = "z",
                  index: int | None = None, level: str = "s0", width: int | None = None, scale: int | None = None,
                  storage_options: dict | None = None) -> PreviewSummary:
    """Draw one slice of a label multiset dataset (or level ``level`` of a Paintera source
    group) with ``render_slice`` and save it to ``out``, whose extension picks the format.

    ``axis`` is the N5 axis across the slice (``"x"``, ``"y"`` or ``"z"``), ``index`` the
    slice (default: the middle); 1-D and 2-D datasets are drawn whole. Missing blocks are drawn
    as voxels without an entry (hatched), so the picture shows where there is no data.

    Raises
    ------
    MissingExtraError
        Pillow (the ``preview`` extra) is not installed.
    ConfigurationError
        Not a label multiset dataset, an index outside the axis, or an extension Pillow
        does not write.
    """
    image_module = require("PIL.Image", "preview", "previews")
    image_format_name = image_format(out)
    store = n5.open_store(source, storage_options, read_only=True)
    top = store
    if "dimensions" not in store.get_attributes():
        store = store.child(f"data/{level}")
    dataset = n5.open_dataset(store, fill_label=INVALID)
    if not isinstance(dataset, LabelMultisetDataset):
        raise ConfigurationError(f"{dataset.name}: not a label multiset dataset")
    if dataset.ndim == 3:
        axis_number = "xyz".index(axis)
        index = dataset.shape[axis_number] // 2 if index is None else index
        if not 0 <= index < dataset.shape[axis_number]:
            raise ConfigurationError(f"index {index} outside 0..{dataset.shape[axis_number] - 1} of axis {axis}")
        where = f"{axis}={index}"
    else:
        if index is not None:
            raise ConfigurationError(f"index: {dataset.name} has {dataset.ndim} dimension(s) and is drawn whole")
        axis_number, index, where = 0, 0, f"{dataset.ndim}-D, whole"
    title = f"{top.display()} {level if store is not top else ''}"
    rendered = render_slice(dataset, axis_number, index, width=width, scale=scale, title=title)
    image_module.fromarray(rendered.picture).save(out, format=image_format_name)
    return PreviewSummary(os.fspath(out), dataset.name, where, rendered)
