"""The ``n5ms`` command line (also ``python -m n5mscodecs``): argument parsing and reporting;
the work is done by the library (``paintera``, ``n5``, ``demo``, ``preview``, ``zarr``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from . import __version__, n5, paintera
from .demo import verify_pyramid, voronoi_labels
from .errors import N5msCodecsError
from .n5 import storage
from .preview import slice_picture


class _TextProgress:
    """Progress without tqdm: one line per stage."""

    def __init__(self, description, total):
        self.description, self.total, self.done = description, total, 0
        self.started = time.perf_counter()

    def update(self, n=1):
        self.done += n

    def close(self):
        print(f"  {self.description}: {self.done}/{self.total} in {time.perf_counter() - self.started:.1f} s",
              file=sys.stderr)


def _progress(enabled):
    """A ``progress(description, total)`` factory: tqdm bars when tqdm is installed."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return _TextProgress
    return lambda description, total: tqdm(desc=f"  {description}", total=total, unit="block",
                                           file=sys.stderr, leave=True)


def _print_summary(summary, options=None):
    seconds = summary.seconds
    print(f"  wrote {storage.display(summary.target)}: {len(summary.level_shapes)} levels "
          + " ".join(f"s{k}={list(shape)}" for k, shape in enumerate(summary.level_shapes)))
    print(f"    {summary.blocks_written}/{summary.blocks_total} blocks written, {summary.n_labels} labels, "
          f"maxId {summary.max_id}, {storage.total_size(summary.target, options) / 2**20:.2f} MiB stored")
    print(f"    {seconds:.2f} s, {summary.voxels / seconds / 1e6:.1f} Mvoxel/s")


def cmd_demo(args):
    shape = (args.size,) * 3
    print(f"n5mscodecs {__version__} demo: {shape} Voronoi segmentation, {args.labels} labels")
    t0 = time.perf_counter()
    labels = voronoi_labels(shape, args.labels, args.seed)
    print(f"  generated labels in {time.perf_counter() - t0:.2f} s")
    workdir = args.out or tempfile.mkdtemp(prefix="n5ms-demo-")
    target = os.path.join(workdir, "demo.n5", "labels")
    summary = paintera.convert(labels, target, block_size=64, compression={"type": "gzip", "level": 6},
                               overwrite=True, threads=args.threads, progress=_progress(not args.quiet))
    _print_summary(summary)
    print(f"    {labels.nbytes / 2**20:.0f} MiB of uint64 labels")
    t0 = time.perf_counter()
    problems = verify_pyramid(target, labels)
    print(f"  verified by reading back in {time.perf_counter() - t0:.2f} s: "
          + ("OK" if not problems else "MISMATCH: " + "; ".join(problems)))
    return 0 if not problems else 1


def _triple(text):
    return tuple(float(v) for v in text.split(","))


def _factors(text):
    values = tuple(int(v) for v in text.split(","))
    return values[0] if len(values) == 1 else values


def cmd_convert(args):
    options = args.storage_options
    if storage.exists(args.target, options) and not (args.overwrite or args.resume):
        print(f"n5ms: {storage.display(args.target)} exists (pass --overwrite to replace it or --resume to finish it)",
              file=sys.stderr)
        return 2
    print(f"n5ms convert {storage.display(args.source)} -> {storage.display(args.target)}")
    summary = paintera.convert(
        args.source, args.target, dataset=args.dataset, block_size=args.block_size, factors=args.scale,
        compression=args.compression, max_num_entries=args.max_num_entries, keep=args.keep,
        resolution=args.resolution, offset=args.offset, lookup_block_size=args.lookup_block_size,
        threads=args.threads, scheduler=args.scheduler, overwrite=args.overwrite, resume=args.resume,
        progress=_progress(not args.quiet), storage_options=options)
    _print_summary(summary, options)
    return 0


def cmd_argmax(args):
    options = args.storage_options
    source = n5.open(args.source, storage_options=options)
    if not isinstance(source, n5.LabelMultisetDataset):
        print(f"n5ms: {source.name}: not a label multiset dataset", file=sys.stderr)
        return 2
    if storage.exists(args.target, options) and not args.overwrite:
        print(f"n5ms: {storage.display(args.target)} exists (pass --overwrite to replace it)", file=sys.stderr)
        return 2
    grids = list(np.ndindex(*source.grid_shape))
    if args.target.rstrip("/").endswith(".zarr"):
        zarr = _import_or_exit("zarr", "zarr", "a zarr target")
        # zarr arrays are C-ordered (z, y, x): the N5 axes reversed
        target = zarr.create_array(args.target, shape=source.shape[::-1], chunks=source.chunks[::-1],
                                   dtype="uint64", overwrite=args.overwrite, fill_value=0,
                                   **({"storage_options": options} if options else {}))

        def write(grid, labels):
            target[source.block_region(grid)[::-1]] = labels.T
    else:
        target = n5.create_array_dataset(args.target, source.shape, source.chunks, "uint64",
                                         compression=source.attributes.get("compression", "gzip"),
                                         overwrite=args.overwrite, storage_options=options)

        def write(grid, labels):
            target.write_block(grid, labels)

    for grid in grids:
        block = source.read_block(grid)
        if block is not None:
            write(grid, block.argmax())
    print(f"n5ms argmax: wrote {storage.display(args.target)} ({list(source.shape)}, {len(grids)} blocks)")
    return 0


def _import_or_exit(module, extra, what):
    try:
        return __import__(module)
    except ImportError:
        raise SystemExit(f"n5ms: {what} needs {module}: pip install 'n5mscodecs[{extra}]'") from None


def cmd_preview(args):
    image_module = _import_or_exit("PIL.Image", "preview", "preview")
    path, options = args.source, args.storage_options
    if "dimensions" not in n5.read_attributes(path, storage_options=options):
        path = storage.join(path, "data", args.level)
    dataset = n5.open(path, storage_options=options)
    if not isinstance(dataset, n5.LabelMultisetDataset):
        print(f"n5ms: {dataset.name}: not a label multiset dataset", file=sys.stderr)
        return 2
    axis = "xyz".index(args.axis)
    index = dataset.shape[axis] // 2 if args.index is None else args.index
    if not 0 <= index < dataset.shape[axis]:
        print(f"n5ms: --index {index} outside 0..{dataset.shape[axis] - 1} of axis {args.axis}", file=sys.stderr)
        return 2
    picture, n_labels, most_entries = slice_picture(dataset, axis, index)
    image_module.Image.fromarray(picture).save(args.out)
    print(f"n5ms preview: {args.out}: {dataset.name} {args.axis}={index}, {n_labels} labels, "
          f"entries per voxel 1..{most_entries} (left: argmax, right: entries, white = most)")
    return 0


def cmd_info(args):
    path, options = args.path, args.storage_options
    if not storage.is_directory(path, options):
        print(f"n5ms: {storage.display(path)}: no such directory", file=sys.stderr)
        return 2
    attributes = n5.read_attributes(path, storage_options=options)
    if "dimensions" not in attributes:
        print(f"{storage.display(path)}: N5 group {attributes.get('n5', '')}".rstrip())
        for directory in n5.dataset_paths(path, storage_options=options):
            dataset = n5.open(directory, storage_options=options)
            print(f"  {storage.relative(directory, path)}: " + _describe(dataset))
        return 0
    print(f"{storage.display(path)}: " + _describe(n5.open(path, storage_options=options)))
    return 0


def _describe(dataset):
    present_blocks = dataset.present_blocks()
    present = len(present_blocks)
    n_blocks = int(np.prod(dataset.grid_shape, dtype=object))
    compression = dataset.attributes.get("compression", {}).get("type", "raw")
    kind = "label multiset" if isinstance(dataset, n5.LabelMultisetDataset) else dataset.dtype.name
    text = (f"{kind}, shape {list(dataset.shape)}, blocks {list(dataset.chunks)}, {compression}, "
            f"{present}/{n_blocks} blocks present")
    if isinstance(dataset, n5.LabelMultisetDataset) and present:
        first = present_blocks[0]
        block = dataset.read_block(first)
        text += (f"; block {list(first)}: {block.n_lists} distinct lists, "
                 f"{block.entries_per_voxel().mean():.2f} entries/voxel, max {block.list_lengths().max()}")
    return text


def cmd_zarr_json(args):
    options = args.storage_options
    if not storage.is_directory(args.container, options):
        print(f"n5ms: {storage.display(args.container)}: no such directory", file=sys.stderr)
        return 2
    try:
        from .zarr import write_zarr_json
    except ImportError:
        print("n5ms: zarr-json needs zarr-python 3 (pip install 'n5mscodecs[zarr]')", file=sys.stderr)
        return 2
    written, skipped = write_zarr_json(args.container, overwrite=args.overwrite, storage_options=options)
    for directory in written:
        print(f"  wrote {storage.display(storage.join(directory, 'zarr.json'))}")
    for directory in skipped:
        print(f"  skipped {storage.display(directory)} (zarr.json exists, or plain dataset without zarr-n5)")
    print(f"{len(written)} zarr.json written, {len(skipped)} skipped; no block was touched")
    return 0


def _storage_option(text):
    """``KEY=VALUE`` with VALUE read as JSON where it parses (true, 3, {"a": 1}), else a string."""
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def _add_storage_options(command):
    command.add_argument("--storage-option", dest="storage_option", type=_storage_option, action="append",
                         default=[], metavar="KEY=VALUE",
                         help="fsspec storage option for URL locations (repeat), e.g. endpoint_url=http://... "
                              "or anon=true; credentials also come from the usual environment variables")


def build_parser():
    parser = argparse.ArgumentParser(prog="n5ms", description=__doc__)
    parser.add_argument("--version", action="version", version=f"n5mscodecs {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="convert a generated segmentation to a Paintera pyramid and verify it")
    demo.add_argument("--size", type=int, default=256, help="edge length of the cube (default 256)")
    demo.add_argument("--labels", type=int, default=300, help="number of cells (default 300)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--threads", type=int, default=None)
    demo.add_argument("--out", help="directory for the output (default: a new temporary directory)")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(run=cmd_demo)
    info = commands.add_parser("info", help="summarise an N5 container or dataset")
    info.add_argument("path")
    _add_storage_options(info)
    info.set_defaults(run=cmd_info)
    convert = commands.add_parser("convert", help="integer labels -> Paintera label source (label multiset pyramid)")
    convert.add_argument("source", help="N5 dataset (or group with --dataset), zarr array, .npy or TIFF")
    convert.add_argument("target", help="the Paintera source group to create, e.g. out.n5/labels")
    convert.add_argument("--dataset", help="dataset inside an N5 group SOURCE")
    convert.add_argument("--block-size", type=int, default=64)
    convert.add_argument("--scale", type=_factors, action="append",
                         help="factors of one more level, e.g. 2 or 2,2,1 (repeat; default: halve until one block)")
    convert.add_argument("--compression", default="gzip", help="raw, gzip, zstd, lz4, ... (default gzip)")
    convert.add_argument("--max-num-entries", type=int, default=-1)
    convert.add_argument("--keep", choices=("highest", "lowest"), default="highest",
                         help="entries kept by --max-num-entries (lowest: Java since 2024)")
    convert.add_argument("--resolution", type=_triple, help="voxel size x,y,z")
    convert.add_argument("--offset", type=_triple, help="offset x,y,z")
    convert.add_argument("--lookup-block-size", type=int, default=10000, help="ids per label-to-block-mapping file")
    convert.add_argument("--threads", type=int, default=None)
    convert.add_argument("--scheduler", help="dask.distributed scheduler address (default: local threads)")
    convert.add_argument("--overwrite", action="store_true")
    convert.add_argument("--resume", action="store_true", help="finish an interrupted conversion")
    convert.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_storage_options(convert)
    convert.set_defaults(run=cmd_convert)
    argmax = commands.add_parser("argmax", help="label multiset dataset -> uint64 N5 (or .zarr) dataset")
    argmax.add_argument("source")
    argmax.add_argument("target")
    argmax.add_argument("--overwrite", action="store_true")
    _add_storage_options(argmax)
    argmax.set_defaults(run=cmd_argmax)
    preview = commands.add_parser("preview", help="PNG of one slice: argmax colours beside entries per voxel")
    preview.add_argument("source", help="label multiset dataset or Paintera source group")
    preview.add_argument("--out", required=True, help="PNG file to write")
    preview.add_argument("--axis", choices=("x", "y", "z"), default="z")
    preview.add_argument("--index", type=int, help="slice index (default: the middle)")
    preview.add_argument("--level", default="s0", help="level of a source group (default s0)")
    _add_storage_options(preview)
    preview.set_defaults(run=cmd_preview)
    zarr_json = commands.add_parser("zarr-json", help="write zarr.json beside each attributes.json (N5 + zarr)")
    zarr_json.add_argument("container")
    zarr_json.add_argument("--overwrite", action="store_true", help="replace existing zarr.json files")
    _add_storage_options(zarr_json)
    zarr_json.set_defaults(run=cmd_zarr_json)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    args.storage_options = dict(getattr(args, "storage_option", [])) or None
    try:
        return args.run(args)
    except (N5msCodecsError, OSError) as exc:
        print(f"n5ms: {exc}", file=sys.stderr)
        return 2
