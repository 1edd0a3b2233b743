"""The ``n5ms`` command line (also ``python -m n5mscodecs``): argument parsing and reporting;
the work is done by the library (``paintera``, ``n5``, ``demo``, ``preview``, ``zarr``).

Exit status: 0 done; 1 the command ran and found problems (``info --check``, the demo's
verification); 2 bad arguments, unreadable or corrupt input, or a target in the way;
3 an optional dependency is missing (the message names the extra to install);
130 interrupted."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings

from . import __version__, demo, paintera, preview
from . import cli_values as values
from ._extras import require
from .errors import ArgumentError, ConfigurationError, MissingExtraError, N5msCodecsError
from .n5 import storage
from .n5.group import UnreadableAttributesWarning
from .n5.store import Store
from .n5.stores import open_store, open_target
from .paintera.conventions import FINISH_HINT

EXIT_OK = 0
EXIT_PROBLEMS = 1       # the command ran and found problems (info --check, demo verification)
EXIT_ERROR = 2          # bad arguments, unreadable or corrupt input, a target in the way
EXIT_MISSING_EXTRA = 3  # an optional dependency is missing; the message names the extra
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


def _error(message):
    print(f"n5ms: {message}", file=sys.stderr)
    return EXIT_ERROR


class _Parser(argparse.ArgumentParser):
    """argparse, its usage errors on one line: ``n5ms: convert: argument --block-size: ...``."""

    def error(self, message):
        command = self.prog.removeprefix("n5ms").strip()
        where = f"{command}: " if command else ""
        self.exit(EXIT_ERROR, f"n5ms: {where}{message} (see {self.prog} --help)\n")


#: The command line's option for each library argument an :class:`ArgumentError` names.
_OPTIONS = {"version": "--ngff", "block_size": "--block-size", "max_num_entries": "--max-num-entries",
            "lookup_block_size": "--lookup-block-size", "factors": "--scale"}


def _option(argument):
    return _OPTIONS.get(argument, "--" + argument.replace("_", "-"))


#: Library arguments that library messages advise (``pass reserved='accept'``), spelled as the
#: options that set them here (``--reserved accept``).
_ADVISED = re.compile(r"\b(reserved|rule|overwrite|resume|force)=(?:'([^']*)'|\"([^\"]*)\"|True)")


def _for_the_command_line(message):
    """A library message with its argument advice in the command line's words."""
    def option(match):
        value = match.group(2) if match.group(2) is not None else match.group(3)
        return _option(match.group(1)) + (f" {value}" if value is not None else "")
    return _ADVISED.sub(option, str(message))


def _os_error(exc):
    """An :class:`OSError` on one line, naming the file: ``x.n5/0/0: Permission denied``."""
    if isinstance(exc, N5msCodecsError) or exc.strerror is None:
        return str(exc)
    name = exc.filename if exc.filename2 is None else f"{exc.filename} -> {exc.filename2}"
    return f"{storage.display(os.fsdecode(name)) if name is not None else ''}: {exc.strerror}".lstrip(": ")


# ---------------------------------------------------------------------------------------------
# progress and summaries

class _TextProgress:
    """Progress without tqdm: one line per stage."""

    def __init__(self, description, total):
        self.description, self.total, self.done = description, total, 0
        self.started = time.perf_counter()

    def update(self, n=1):
        self.done += n

    def close(self):
        done = self.done if self.total is None else f"{self.done}/{self.total}"   # None: counted as they go
        print(f"  {self.description}: {done} in {time.perf_counter() - self.started:.1f} s", file=sys.stderr)


def _stage_name(description):
    # the converter's level-1 tasks write the s0 blocks they downsample: one stage for both
    return "s0+s1" if description == "s1" else description


def _progress(enabled, unit="block"):
    """A ``progress(description, total)`` factory: tqdm bars when tqdm is installed."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return lambda description, total: _TextProgress(_stage_name(description), total)
    return lambda description, total: tqdm(desc=f"  {_stage_name(description)}", total=total, unit=unit,
                                           file=sys.stderr, leave=True)


def _print_summary(summary, stored_bytes):
    seconds = summary.seconds
    print(f"  wrote {storage.display(summary.target)}: {len(summary.level_shapes)} levels "
          + " ".join(f"s{k}={list(shape)}" for k, shape in enumerate(summary.level_shapes)))
    print(f"    {summary.blocks_written}/{summary.blocks_total} blocks written, {summary.n_labels} labels, "
          f"maxId {summary.max_id}, {stored_bytes / 2**20:.2f} MiB stored")
    if summary.blocks_written == 0 and summary.blocks_total:
        print("    nothing to do: the conversion was complete already")
    else:
        print(f"    {seconds:.2f} s, {summary.voxels / max(seconds, 1e-9) / 1e6:.1f} Mvoxel/s on {summary.engine}")


# ---------------------------------------------------------------------------------------------
# commands

def cmd_demo(args):
    shortfall = demo.memory_shortfall(args.size)
    if shortfall is not None:
        return _error(f"--size {args.size}: {shortfall}")
    print(f"n5mscodecs {__version__} demo: {(args.size,) * 3} Voronoi segmentation, {args.labels} labels")
    report = demo.run_demo(args.size, args.labels, args.seed, out=args.out, threads=args.threads,
                           progress=_progress(not args.quiet))
    print(f"  generated labels in {report.label_seconds:.2f} s")
    _print_summary(report.summary, report.stored_bytes)
    print(f"    {report.label_bytes / 2**20:.0f} MiB of uint64 labels")
    print(f"  verified by reading back in {report.verify_seconds:.2f} s: "
          + ("OK" if not report.problems else "MISMATCH: " + "; ".join(report.problems)))
    if not report.kept:
        print(f"  removed {report.workdir} (pass --out DIR to keep the output)")
    return EXIT_OK if not report.problems else EXIT_PROBLEMS


_CONTAINER_HELP = ("the N5 container root holding TARGET, which gets the attribute n5: 4.0.0 "
                   "(default: the nearest of TARGET and its parents named *.n5)")


def _refused(exc):
    """Whether ``exc`` refused the command before its first write."""
    return isinstance(exc, (FileExistsError, ConfigurationError, MissingExtraError))


def _say_stopped(what, exc, target: Store):
    """After a failure that started writing (not a refusal before the first write): the target
    is incomplete, and how to go on."""
    if not _refused(exc) and target.exists():
        print(f"n5ms: {what} stopped; {target.display()} is incomplete: rerun with "
              "--resume to finish it (same arguments) or --overwrite to start again", file=sys.stderr)


def cmd_convert(args):
    # the locations become stores here, once: the library call and the reports around it share them
    source = open_store(args.source, args.storage_options)
    target = open_target(args.target, args.storage_options, args.container)
    if target.exists() and not (args.overwrite or args.resume):
        return _error(f"{target.display()} exists (pass --overwrite to replace it "
                      "or --resume to finish an interrupted conversion)")
    print(f"n5ms convert {source.display()} -> {target.display()}")
    try:
        summary = paintera.convert(
            source, target, dataset=args.dataset, block_size=args.block_size,
            factors=args.scale or "resolution",  # by default, levels that make the voxels isotropic first
            compression=args.compression, max_num_entries=args.max_num_entries, keep=args.keep,
            rule=args.rule, write_background_blocks=args.write_background_blocks,
            resolution=args.resolution, offset=args.offset, lookup_block_size=args.lookup_block_size,
            threads=args.threads, scheduler=args.scheduler, overwrite=args.overwrite, resume=args.resume,
            progress=_progress(not args.quiet), container=args.container, reserved=args.reserved, level=args.level)
    except (Exception, KeyboardInterrupt) as exc:
        _say_stopped("conversion", exc, target)
        raise
    if args.scale is None and summary.factors:
        print(f"  downsampling factors for resolution {list(summary.resolution)}: "
              + " ".join(",".join(map(str, f)) for f in summary.factors))
    _print_summary(summary, target.total_size())
    return EXIT_OK


def cmd_argmax(args):
    source = open_store(args.source, args.storage_options)
    target = open_target(args.target, args.storage_options, args.container)
    if target.exists() and not args.overwrite:
        return _error(f"{target.display()} exists (pass --overwrite to replace it)")
    try:
        assignment, additional = _assignment_options(args)
        summary = paintera.export_argmax(source, target, rule=args.rule, overwrite=args.overwrite,
                                         threads=args.threads, scheduler=args.scheduler, container=args.container,
                                         progress=_progress(not args.quiet),
                                         assignment=assignment, additional_assignment=additional)
    except (Exception, KeyboardInterrupt) as exc:
        if not _refused(exc):
            print(f"n5ms: argmax stopped; removed the partial {target.display()}", file=sys.stderr)
        raise
    _say_assignment("argmax", summary.assignment, args)
    order = "(z, y, x) " if summary.zarr else ""
    print(f"n5ms argmax: wrote {storage.display(summary.target)} {order}({list(summary.shape)} x,y,z, "
          f"{summary.blocks_present} of {summary.blocks_total} blocks present, {summary.seconds:.1f} s on "
          f"{summary.engine})")
    return EXIT_OK


def _assignment_options(args):
    """``(assignment, additional_assignment)`` of ``--fragments``, ``--assignment-file`` and
    ``--additional-assignment`` (the file's pairs first, the command line's over them)."""
    additional = {}
    if args.assignment_file:
        additional.update(paintera.parse_assignment_file(args.assignment_file))
    additional.update(dict(args.additional_assignment))
    return (None if args.fragments else "auto"), (additional or None)


def _say_assignment(command, applied, args):
    """On stderr: how many fragments the lookup mapped into how many segments, or that none was."""
    if applied is not None:
        print(f"n5ms {command}: fragment-segment-assignment: {applied.describe()}", file=sys.stderr)
    elif args.fragments:
        print(f"n5ms {command}: --fragments: wrote the stored fragment ids", file=sys.stderr)




def _add_assignment_options(command):
    command.add_argument("--fragments", action="store_true",
                         help="write the stored fragment ids: do not apply the source's fragment-segment-assignment "
                              "(applied by default: the segments Paintera shows)")
    command.add_argument("--additional-assignment", type=values.assignment_pair, action="append", default=[],
                         metavar="FRAGMENT=SEGMENT",
                         help="map FRAGMENT to SEGMENT on top of the stored assignment (repeat; as "
                              "paintera-conversion-helper to-scalar --additional-assignment)")
    command.add_argument("--assignment-file", type=values.path, metavar="FILE",
                         help="more FRAGMENT SEGMENT pairs: one per line ('k v' or 'k=v') or a JSON object; "
                              "--additional-assignment wins over the file")


def cmd_preview(args):
    source = open_store(args.source, args.storage_options, read_only=True)
    drawn = preview.write_preview(source, args.out, axis=args.axis, index=args.index, level=args.level,
                                  width=args.width, scale=args.scale)
    picture = drawn.rendered.picture
    print(f"n5ms preview: {args.out}: {drawn.dataset} {drawn.where}, {drawn.rendered.n_labels} labels, "
          f"{picture.shape[1]}x{picture.shape[0]} px; {drawn.rendered.description}")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# info

def cmd_info(args):
    with warnings.catch_warnings():  # an unreadable attributes.json is reported as its entry, below
        warnings.simplefilter("ignore", UnreadableAttributesWarning)
        found = paintera.survey(open_store(args.path, args.storage_options, read_only=True), check=args.check,
                                scheduler=args.scheduler)
    incomplete, bad, checked, checked_on = [], [], 0, None
    if found.heading is not None:
        print(f"{storage.display(found.path)}: {found.heading[0]}")
        for line in found.heading[1:]:
            print(line)
        if found.interrupted:
            print(f"  INCOMPLETE: an interrupted n5ms convert; {FINISH_HINT}")
            incomplete.append(found.path)
    indent = "" if found.heading is None else "  "
    for entry in found.datasets:
        name = indent + entry.name
        if entry.incomplete is not None:
            print(f"{name}: INCOMPLETE: {entry.incomplete}", flush=True)
            incomplete.append(entry.path)
        elif entry.unreadable is not None:
            print(f"{name}: unreadable: {entry.unreadable}", flush=True)
        else:
            problem = entry.first_block_problem
            print(f"{name}: {entry.description}" + (f"; first block unreadable: {problem}" if problem else ""),
                  flush=True)
        checked += entry.blocks_checked
        bad.extend(entry.bad)
        checked_on = entry.checked_on or checked_on
    if args.check:
        for problem in bad:
            print(f"  BAD {problem}")
        print(f"checked {checked} blocks" + (f" on {checked_on}" if checked_on else "") + ": "
              + (f"{len(bad)} bad" if bad else "all readable")
              + (f"; {len(incomplete)} INCOMPLETE" if incomplete else ""))
        return EXIT_PROBLEMS if bad or incomplete else EXIT_OK
    if bad:
        print(f"n5ms: {len(bad)} unreadable (n5ms info --check PATH reads every block)", file=sys.stderr)
        return EXIT_ERROR
    if incomplete:
        print(f"n5ms: {len(incomplete)} INCOMPLETE (an interrupted write)", file=sys.stderr)
        return EXIT_PROBLEMS
    return EXIT_OK






def _flagged(source: Store):
    """Whether ``source`` carries the incomplete marker (a commit stopped after its first write)."""
    from .n5.writing import INCOMPLETE_KEY

    try:
        return INCOMPLETE_KEY in source.get_attributes()
    except (N5msCodecsError, OSError):
        return False


def cmd_commit(args):
    source = open_target(args.source, args.storage_options)
    edit = open_store(args.edit, args.storage_options)
    print(f"n5ms commit {edit.display()} -> {source.display()} at {','.join(map(str, args.offset))}")
    try:
        summary = paintera.commit(source, edit, args.offset, dataset=args.dataset, level=args.level,
                                  ignore=args.ignore, rule=args.rule, reserved=args.reserved, threads=args.threads,
                                  scheduler=args.scheduler)
    except (Exception, KeyboardInterrupt) as exc:
        if not _refused(exc) and _flagged(source):
            print(f"n5ms: commit stopped; {source.display()} is flagged INCOMPLETE: run the same commit again "
                  "to finish it", file=sys.stderr)
        raise
    per_level = ", ".join(f"s{k} {w}" for k, w in enumerate(summary.blocks_written))
    print(f"  {summary.voxels_painted} voxels painted; blocks rewritten: {per_level}; lookup files: "
          f"{sum(summary.lookup_files)}; maxId {summary.max_id}; {summary.seconds:.2f} s on {summary.engine}"
          + (" (finished an interrupted commit)" if summary.finished_interrupted else ""))
    return EXIT_OK


def cmd_ome_zarr(args):
    target = open_store(args.target, args.storage_options)
    if args.shards and args.ngff != "0.5":
        return _error(f"--shards: NGFF {args.ngff} arrays are zarr v2 arrays, which have no shards (use --ngff 0.5)")
    if args.shards and args.multisets:
        return _error("--shards: label multiset arrays (--multisets) are not sharded")
    if target.exists() and not (args.overwrite or args.resume):
        return _error(f"{target.display()} exists (pass --overwrite to replace it "
                      "or --resume to finish an interrupted export)")
    print(f"n5ms ome-zarr {storage.display(args.source)} -> {target.display()} (NGFF {args.ngff})")
    shards = False if args.no_shards else (args.shards[::-1] if args.shards else True)
    try:
        assignment, additional = _assignment_options(args)
        summary = paintera.to_ome_zarr(
            args.source, args.target, version=args.ngff, multisets=args.multisets, shards=shards, name=args.name,
            threads=args.threads, scheduler=args.scheduler, overwrite=args.overwrite, resume=args.resume,
            progress=_progress(not args.quiet, unit="chunk"), storage_options=args.storage_options,
            assignment=assignment, additional_assignment=additional)
    except (Exception, KeyboardInterrupt) as exc:
        _say_stopped("export", exc, target)
        raise
    _say_assignment("ome-zarr", summary.assignment, args)
    for note in summary.notes:
        print(f"n5ms ome-zarr: {note}", file=sys.stderr)
    print(f"  wrote {storage.display(summary.target)}: {len(summary.level_shapes)} levels "
          + " ".join(f"s{k}={list(shape)}" for k, shape in enumerate(summary.level_shapes)) + " (z, y, x)")
    pieces = "shards" if shards and args.ngff == "0.5" and not args.multisets else "chunks"
    print(f"    {summary.chunks_written} {pieces} written ({summary.chunks_total} in the grids), "
          f"{summary.seconds:.2f} s on {summary.engine}")
    return EXIT_OK


def cmd_unlock(args):
    from .n5.writing import break_lock

    target = open_store(args.target, args.storage_options)
    owner = break_lock(target, force=args.force)
    if owner is None:
        print(f"{target.display()}: no writer lock")
    else:
        print(f"removed the writer lock of {target.display()}"
              + (f" (process {owner.get('pid', '?')} on {owner.get('host', '?')})" if owner else ""))
    return EXIT_OK


def cmd_serve(args):
    from .paintera.serve import serve

    assignment, additional = _assignment_options(args)
    server = serve(args.sources, port=args.port, bind=args.bind, ngff=args.ngff, assignment=assignment,
                   additional_assignment=additional, viewer=args.viewer, storage_options=args.storage_options,
                   log=lambda line: print(f"n5ms serve: {line}", file=sys.stderr))
    with server:
        print(server.url, server.viewer_url or server.neuroglancer_url(), *map(server.source_url, server.sources),
              sep="\n", flush=True)
        print("n5ms serve: serving until Ctrl-C", file=sys.stderr)
        try:
            server.wait()
        except KeyboardInterrupt:
            print(f"n5ms serve: stopped ({server.requests} requests)", file=sys.stderr)
    return EXIT_OK


def cmd_zarr_json(args):
    container = open_store(args.container, args.storage_options)
    if not container.is_directory():
        return _error(f"{container.display()}: no such directory")
    require("zarr", "zarr", "zarr-json")
    from .zarr import write_zarr_json
    from .zarr.dtype import UNKNOWN_DATA_TYPE_ERROR, zarr_finds_the_data_type

    written, skipped = write_zarr_json(container, overwrite=args.overwrite)
    for directory in written:
        print(f"  wrote {storage.display(directory)}/zarr.json")
    for directory in skipped:
        print(f"  skipped {storage.display(directory)} (zarr.json exists, or attributes zarr cannot describe)")
    print(f"{len(written)} zarr.json written, {len(skipped)} skipped; no block was touched")
    if written and not zarr_finds_the_data_type():
        import zarr

        print(f"note: zarr {zarr.__version__} (< 3.4.1) does not load data types from entry points: run "
              "`import n5mscodecs` before opening label multiset arrays with zarr, which otherwise says "
              f'"{UNKNOWN_DATA_TYPE_ERROR}" (plain datasets open without it)')
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# parser

def _add_storage_options(command):
    command.add_argument("--storage-option", dest="storage_option", type=values.storage_option, action="append",
                         default=[], metavar="KEY=VALUE",
                         help="fsspec storage option for URL locations (repeat), e.g. endpoint_url=http://... "
                              "or anon=true; credentials also come from the usual environment variables")


def build_parser():
    parser = _Parser(prog="n5ms", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"n5mscodecs {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    threads_help = "worker threads (default: every core)"
    scheduler_help = ("a dask.distributed scheduler address: the per-block work runs as tasks on its workers, "
                      "which must reach the source and the target (default: local threads)")
    demo_command = commands.add_parser(
        "demo", help="convert a generated segmentation to a Paintera pyramid and verify it")
    demo_command.add_argument("--size", type=values.int_at_least(1), default=256,
                              help="edge length of the cube (default 256)")
    demo_command.add_argument("--labels", type=values.int_at_least(1), default=300,
                              help="number of cells (default 300)")
    demo_command.add_argument("--seed", type=int, default=0)
    demo_command.add_argument("--threads", type=values.int_at_least(1), default=None, help=threads_help)
    demo_command.add_argument("--out", type=values.path,
                              help="directory to keep the output in (default: a temporary directory, "
                                   "removed at the end)")
    demo_command.add_argument("--quiet", action="store_true", help="no progress bars")
    demo_command.set_defaults(run=cmd_demo)
    info = commands.add_parser("info", help="summarise an N5 container, Paintera source or dataset")
    info.add_argument("path", type=values.path)
    info.add_argument("--check", action="store_true",
                      help="read and decode every block; list each bad one, exit 1 if any")
    info.add_argument("--scheduler", help="with --check: " + scheduler_help)
    _add_storage_options(info)
    info.set_defaults(run=cmd_info)
    convert = commands.add_parser(
        "convert", help="integer labels -> Paintera label source (label multiset pyramid)",
        description="Convert integer labels into a Paintera label source. Axes are N5's: x, y, z.")
    convert.add_argument("source", type=values.path,
                         help="N5 dataset (or group with --dataset), zarr array, .npy or TIFF")
    convert.add_argument("target", type=values.path, help="the Paintera source group to create, e.g. out.n5/labels")
    convert.add_argument("--dataset", type=values.path, help="dataset inside an N5 group SOURCE")
    convert.add_argument("--level", type=values.int_at_least(0), default=0,
                         help="level of an OME-Zarr multiscale SOURCE (default 0); its scale and translation "
                              "are the defaults of --resolution and --offset")
    convert.add_argument("--block-size", type=values.block_size, default=64,
                         help=f"edge of the blocks of every level, 1..{values.MAX_BLOCK_EDGE} (default 64)")
    convert.add_argument("--scale", type=values.factors, action="append",
                         help="factors of one more level, e.g. 2 or 2,2,1 (repeat). Default: halve until the "
                              "volume fits one block; with an anisotropic --resolution only the axes whose "
                              "voxel size is at most half the coarsest are halved (4,4,40: 2,2,1 until x and y "
                              "reach 32, then 2,2,2)")
    convert.add_argument("--compression", type=values.compression_config, default="gzip", help=values.COMPRESSION_HELP)
    convert.add_argument("--max-num-entries", type=values.max_num_entries_per_level, default=-1,
                         help="cut downsampled lists to this many entries (default -1: no cut); N1,N2,...: one "
                              "per level from s1 on, the last for the levels above (-1,-1,20: s3 and up cut)")
    convert.add_argument("--keep", choices=("highest", "lowest"), default=None,
                         help="entries kept by --max-num-entries with --rule spec (default: highest)")
    convert.add_argument("--rule", choices=("spec", "java"), default="spec",
                         help="java: downsampled lists exactly as Java's label-utilities-spark writes them "
                              "(signed id order, wrapping counts, its --max-num-entries cut); default spec")
    convert.add_argument("--write-background-blocks", action="store_true",
                         help="also write blocks whose voxels are all 0 (skipped by default, as Java does: "
                              "a missing block reads as 0)")
    convert.add_argument("--resolution", type=values.resolution, help="voxel size x,y,z")
    convert.add_argument("--offset", type=values.triple,
                         help="offset x,y,z (negative values allowed: --offset -10,0,0)")
    convert.add_argument("--lookup-block-size", type=values.int_at_least(1), default=10000,
                         help="ids per label-to-block-mapping file")
    convert.add_argument("--threads", type=values.int_at_least(1), default=None, help=threads_help)
    convert.add_argument("--scheduler", help=scheduler_help)
    convert.add_argument("--reserved", choices=("reject", "accept"), default="reject",
                         help="negative labels and labels above MAX_ID (Paintera's reserved ids): reject (default; "
                              "refused before anything is written) or accept (signed labels read as two's-complement "
                              "uint64: -1 TRANSPARENT, -2 INVALID, -3 OUTSIDE)")
    existing = convert.add_mutually_exclusive_group()
    existing.add_argument("--overwrite", action="store_true",
                          help="replace an existing target (never one that is, holds or lies inside SOURCE)")
    existing.add_argument("--resume", action="store_true", help="finish an interrupted conversion")
    convert.add_argument("--quiet", action="store_true", help="no progress bars")
    convert.add_argument("--container", type=values.path, help=_CONTAINER_HELP)
    _add_storage_options(convert)
    convert.set_defaults(run=cmd_convert)
    argmax = commands.add_parser(
        "argmax", help="label multiset dataset -> uint64 N5 (or .zarr) dataset",
        description="Write the argmax labels (highest count wins) of a label multiset dataset as uint64. "
                    "Missing blocks and voxels without an entry (INVALID) become 0. An N5 target keeps "
                    "the N5 axis order (x, y, z); a TARGET ending in .zarr is a zarr v3 array in C order, "
                    "axes (z, y, x). Resolution and offset are copied (for zarr as attributes, z, y, x).")
    argmax.add_argument("source", type=values.path)
    argmax.add_argument("target", type=values.path, help="N5 dataset path, or PATH.zarr for a zarr array (z, y, x)")
    argmax.add_argument("--overwrite", action="store_true")
    argmax.add_argument("--threads", type=values.int_at_least(1), default=None, help=threads_help)
    argmax.add_argument("--scheduler", help=scheduler_help)
    argmax.add_argument("--quiet", action="store_true", help="no progress bar")
    argmax.add_argument("--rule", choices=("spec", "java"), default="spec",
                        help="java: the labels Paintera shows (Java's argmax, cached argmax values); default spec")
    argmax.add_argument("--container", type=values.path, help=_CONTAINER_HELP + " (N5 targets)")
    _add_assignment_options(argmax)
    _add_storage_options(argmax)
    argmax.set_defaults(run=cmd_argmax)
    preview = commands.add_parser(
        "preview", help="picture of one slice: argmax colours beside entries per voxel",
        description="Draw one slice of a label multiset dataset: argmax labels in colour and, when some voxel "
                    "has more than one entry, the entries per voxel with a colour bar. Voxels without an "
                    "entry (missing blocks, INVALID) are hatched grey.")
    preview.add_argument("source", type=values.path, help="label multiset dataset or Paintera source group")
    preview.add_argument("--out", type=values.path, required=True,
                         help="picture to write; the extension picks the format (.png, .jpg, .webp, .tif, ...)")
    preview.add_argument("--axis", choices=("x", "y", "z"), default="z", help="axis across the slice (default z)")
    preview.add_argument("--index", type=int, help="slice index (default: the middle)")
    preview.add_argument("--level", default="s0", help="level of a source group (default s0)")
    size = preview.add_mutually_exclusive_group()
    size.add_argument("--width", type=values.int_at_least(1), default=None,
                      help="width of the slice panel in pixels (default: at least 800 px for the whole picture)")
    size.add_argument("--scale", type=values.int_at_least(1), default=None, help="pixels per voxel (nearest neighbour)")
    _add_storage_options(preview)
    preview.set_defaults(run=cmd_preview)
    ome = commands.add_parser(
        "ome-zarr", help="Paintera label source -> OME-Zarr multiscale labels image (NGFF 0.4 or 0.5)",
        description="Export a Paintera label source (or label multiset pyramid or dataset) as an OME-Zarr "
                    "multiscale labels image: uint64 argmax labels per level (INVALID and missing blocks as 0), "
                    "axes z, y, x, scale and translation from Paintera's resolution, offset and "
                    "downsamplingFactors. Written as IMAGE.zarr/labels/NAME, it points back to the image.")
    ome.add_argument("source", type=values.path, help="Paintera label source, label multiset pyramid or dataset (N5)")
    ome.add_argument("target", type=values.path,
                     help="the labels image to write, e.g. labels.zarr or image.zarr/labels/cells")
    ome.add_argument("--ngff", choices=("0.4", "0.5"), default="0.5",
                     help="NGFF version: 0.4 (zarr v2 arrays) or 0.5 (zarr v3, sharded; default)")
    ome.add_argument("--multisets", action="store_true",
                     help="write the label multisets (lossless zarr v3 label_multiset arrays, an extension that "
                          "generic NGFF readers cannot decode; 0.5 only)")
    sharding = ome.add_mutually_exclusive_group()
    sharding.add_argument("--shards", type=values.shards,
                          help="shard shape x,y,z (0.5; default: whole blocks up to 64 MiB per shard)")
    sharding.add_argument("--no-shards", action="store_true", help="no sharding (0.5)")
    ome.add_argument("--name", help="the multiscale's name (default: the target's name)")
    ome.add_argument("--threads", type=values.int_at_least(1), default=None, help=threads_help)
    ome.add_argument("--scheduler", help=scheduler_help)
    existing = ome.add_mutually_exclusive_group()
    existing.add_argument("--overwrite", action="store_true", help="replace an existing target")
    existing.add_argument("--resume", action="store_true", help="finish an interrupted export")
    ome.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_assignment_options(ome)
    _add_storage_options(ome)
    ome.set_defaults(run=cmd_ome_zarr)
    commit = commands.add_parser(
        "commit", help="write labels into a region of a Paintera label source (every level, lookups, maxId)",
        description="Commit an edit into an existing Paintera label source as Paintera commits its canvas: the "
                    "edit's voxels replace those of s0 (INVALID, 2**64-2, and --ignore keep the old voxel), the "
                    "lower levels are downsampled again where they cover a changed block (each level's factors "
                    "and maxNumEntries, the source's rule), unique-labels and the label-to-block lookup are "
                    "patched, maxId is raised. Axes are N5's: x, y, z. An interrupted commit leaves the source "
                    "flagged INCOMPLETE; running the same commit again finishes it.")
    commit.add_argument("source", type=values.path, help="the Paintera label source, e.g. out.n5/labels")
    commit.add_argument("edit", type=values.path,
                        help="the edited labels: N5 dataset (or group with --dataset), zarr array, "
                             "OME-Zarr image, .npy or TIFF, as convert reads them")
    commit.add_argument("--offset", type=values.offset, required=True,
                        help="voxel position x,y,z of the edit's corner in s0")
    commit.add_argument("--dataset", type=values.path, help="dataset inside an N5 group EDIT")
    commit.add_argument("--level", type=values.int_at_least(0), default=0, help="level of an OME-Zarr multiscale EDIT")
    commit.add_argument("--ignore", type=values.label_id, default=None,
                        help="one more id that keeps the old voxel (besides INVALID), e.g. 0")
    commit.add_argument("--rule", choices=("spec", "java"), default=None,
                        help="downsampling rule of the lower levels (default: the source's conversion rule, "
                             "else java, what Paintera writes)")
    commit.add_argument("--reserved", choices=("reject", "accept"), default="reject",
                        help="painted negative or reserved labels: reject (default) or accept")
    commit.add_argument("--threads", type=values.int_at_least(1), default=None, help=threads_help)
    commit.add_argument("--scheduler", help=scheduler_help)
    _add_storage_options(commit)
    commit.set_defaults(run=cmd_commit)
    unlock = commands.add_parser(
        "unlock", help="remove a writer lock (.n5ms-lock) a dead writer left behind",
        description="Remove the writer lock of TARGET that a writer which died left behind. On object stores a lock "
                    "counts as abandoned 120 s after its last heartbeat and is removed then; a fresher one only "
                    "with --force (its writer may still run). A local lock held by a running process is refused.")
    unlock.add_argument("target", type=values.path, help="the locked location (the one a refusal names)")
    unlock.add_argument("--force", action="store_true",
                        help="remove an object-store lock whose heartbeat is fresh: only when no writer runs")
    _add_storage_options(unlock)
    unlock.set_defaults(run=cmd_unlock)
    serve = commands.add_parser("serve", help="serve Paintera sources live over HTTP as OME-Zarr (neuroglancer)",
                                description="Serve label sources read-only and live as OME-Zarr multiscales of "
                                            "segments; prints the root URL, then a neuroglancer link.")
    serve.add_argument("sources", type=values.path, nargs="+", metavar="SOURCE")
    serve.add_argument("--port", type=values.int_at_least(0, 65535), default=0, help="TCP port (default 0: a free one)")
    serve.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine)")
    serve.add_argument("--ngff", choices=("0.4", "0.5"), default="0.4", help="0.4 (zarr v2; default) or 0.5")
    serve.add_argument("--viewer", action="store_true", help="also serve the neuroglancer client (the view extra)")
    _add_assignment_options(serve)
    _add_storage_options(serve)
    serve.set_defaults(run=cmd_serve)
    zarr_json = commands.add_parser("zarr-json", help="write zarr.json beside each attributes.json (N5 + zarr)")
    zarr_json.add_argument("container", type=values.path)
    zarr_json.add_argument("--overwrite", action="store_true", help="replace existing zarr.json files")
    _add_storage_options(zarr_json)
    zarr_json.set_defaults(run=cmd_zarr_json)
    return parser


def _quiet_broken_pipe():
    """stdout's reader went away (``n5ms info ... | head``): drop what is left, say nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_OK


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(values.join_negative_values(sys.argv[1:] if argv is None else argv))
    args.storage_options = dict(getattr(args, "storage_option", [])) or None
    try:
        code = args.run(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except MissingExtraError as exc:  # the one way the library reports a missing extra: it names the extra
        print(f"n5ms: {exc}", file=sys.stderr)
        return EXIT_MISSING_EXTRA
    except ArgumentError as exc:  # a library argument the command line passed: named by its option
        return _error(f"{_option(exc.argument)}: {_for_the_command_line(exc.detail)}")
    except OSError as exc:  # StorageError, and the operating system's refusals (a loop of links, a socket, ...)
        return _error(_for_the_command_line(_os_error(exc)))
    except N5msCodecsError as exc:
        return _error(_for_the_command_line(exc))
    except OverflowError as exc:  # a number from the command line or a file beyond what it may be
        return _error(f"a number out of range: {exc}")
    except KeyboardInterrupt:
        print("n5ms: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
