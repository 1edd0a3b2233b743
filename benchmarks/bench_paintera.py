"""Paintera pyramid benchmark: 512^3 uint64 segmentation (~10k labels), 64^3 blocks, 4 levels.

    python benchmarks/bench_paintera.py [--size 512] [--labels 10000] [--repeat 3] [--threads 2]

Reports end-to-end ``convert`` throughput (labels in memory -> pyramid with
unique-labels and label-to-block-mapping on disk) for a few compressions, and
compares the label multiset work (create from labels, downsample three times
by 2, serialize every block of every level) against python-elf's
``create_multiset_from_labels`` + ``downsample_multiset`` + ``serialize_multiset``
on the same blocks, when python-elf is installed. Medians of ``--repeat`` runs.
Targets (issue 5): >= 30 Mvoxel/s end to end, >= 5x elf. Issue 30's anchor: the Java
conversion path on a 256^3 demo-like volume (``--java-only`` runs just that), when ``java``
and ``../shared/tools/lms-oracle/lms-oracle.jar`` are there. The fragment-segment-assignment
case (``--assignment-only`` runs just that): ``export_argmax`` of s0 with a source's
assignment (a third of the labels merged) against the same export of the fragments;
target <= 1.5x.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from timing import interleaved_medians, median_time

from n5mscodecs import LabelMultisetArray
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.paintera import convert, export_argmax, write_assignment
from n5mscodecs.payload import n5_label_multiset_encode


def blocks_of(labels, edge):
    grid = [-(-n // edge) for n in labels.shape]
    return [labels[tuple(slice(g * edge, (g + 1) * edge) for g in pos)] for pos in np.ndindex(*grid)]


def ours_multiset_work(blocks):
    """The per-block label multiset work of the pyramid: 8^3 source blocks of 64^3 per s3 block."""
    for block in blocks:
        level = LabelMultisetArray.from_labels(block)
        n5_label_multiset_encode(level)
        for _ in range(3):
            level = level.downsample(2)
            n5_label_multiset_encode(level)


def elf_multiset_work(blocks):
    from elf.label_multiset import create_multiset_from_labels, downsample_multiset, serialize_multiset

    for block in blocks:
        level = create_multiset_from_labels(block)
        serialize_multiset(level)
        for _ in range(3):
            level = downsample_multiset(level, (2, 2, 2))
            serialize_multiset(level)


JAR = Path(__file__).resolve().parents[2] / "shared" / "tools" / "lms-oracle" / "lms-oracle.jar"


def java_anchor(repeat, threads):
    """Issue 30's second anchor: the Java conversion path (``lms-oracle.jar``: the conversion
    helper's write of scale 0, then label-utilities-spark's downsampling one level per call)
    against ``convert`` on the same 256^3 demo-like volume (300 Voronoi labels, 64^3 blocks,
    gzip -1, three levels of factor 2). Every Java call starts a JVM: its start-up (the jar's
    usage message) is timed too and shown beside the totals."""
    java = shutil.which("java")
    if java is None or not JAR.exists():
        print("  Java anchor: no java or no ../shared/tools/lms-oracle/lms-oracle.jar, skipped")
        return
    volume = voronoi_labels((256, 256, 256), 300, seed=0)
    workdir = Path(tempfile.mkdtemp(prefix="bench-java-"))
    source = workdir / "labels.bin"
    np.asarray(volume, np.uint64).ravel(order="F").astype("<u8").tofile(source)

    def run_java(*args):
        subprocess.run([java, "-jar", str(JAR), *map(str, args)], check=True, capture_output=True, timeout=900)

    def java_pyramid():
        root = workdir / "java.n5"
        shutil.rmtree(root, ignore_errors=True)
        run_java("write", source, "256,256,256", "64,64,64", "gzip", root, "s0")
        for level in (1, 2, 3):
            run_java("downsample", root, f"s{level - 1}", f"s{level}", "2,2,2")

    def java_startup():
        subprocess.run([java, "-jar", str(JAR)], capture_output=True, timeout=300)

    def ours(n_threads):
        def run():
            target = workdir / "ours.n5"
            shutil.rmtree(target, ignore_errors=True)
            convert(volume, str(target), block_size=64, factors=[2, 2, 2], compression="gzip", threads=n_threads)
        return run

    java_seconds = median_time(java_pyramid, max(1, repeat))
    startup = median_time(java_startup, max(3, repeat))
    print(f"  Java anchor, 256^3 demo-like volume, gzip -1, 4 levels (median of {max(1, repeat)}):")
    print(f"    lms-oracle write + 3 downsample calls        {java_seconds:6.2f} s "
          f"(4 JVM start-ups of {startup:.2f} s each included)")
    for n_threads in sorted({1, threads}):
        seconds = median_time(ours(n_threads), max(3, repeat))
        print(f"    convert, {n_threads} thread(s)                          {seconds:6.2f} s  "
              f"{volume.size / seconds / 1e6:6.1f} Mvoxel/s  ({java_seconds / seconds:.1f}x faster than Java, "
              f"{(java_seconds - 4 * startup) / seconds:.1f}x without its start-ups)")
    shutil.rmtree(workdir, ignore_errors=True)


def assignment_case(size, n_labels, repeat, threads, workdir=None):
    """export_argmax of s0 with the source's fragment-segment-assignment vs. of the fragments."""
    labels = voronoi_labels((size,) * 3, n_labels, seed=0)
    workdir = tempfile.mkdtemp(prefix="bench-assignment-", dir=workdir)
    source = f"{workdir}/p.n5/labels"
    convert(labels, source, block_size=64, factors=[2], threads=threads)
    ids = np.unique(labels)
    merged = ids[ids % 3 == 1]   # a third of the fragments, merged in pairs into new segments
    write_assignment(source, {int(f): int(ids[-1]) + 1 + i // 2 for i, f in enumerate(merged)})

    def export(assignment):
        def run():
            target = f"{workdir}/a.n5/s0"
            shutil.rmtree(f"{workdir}/a.n5", ignore_errors=True)
            export_argmax(f"{source}/data/s0", target, threads=threads, assignment=assignment)
        return run
    medians = interleaved_medians({"fragments": export(None), "segments": export("auto")}, repeat)
    plain, applied = medians["fragments"][0], medians["segments"][0]
    print(f"  argmax export of s0 ({size}^3, {len(merged)} of {ids.size} fragments merged), {threads} threads: "
          f"fragments {plain:.2f} s, with the assignment {applied:.2f} s: ratio {applied / plain:.2f} "
          "(target <= 1.5)")
    shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--labels", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workdir", default=None,
                        help="where the pyramids go (default: a temporary directory; /dev/shm takes the disk out)")
    parser.add_argument("--java-only", action="store_true", help="only the Java anchor (issue 30)")
    parser.add_argument("--assignment-only", action="store_true",
                        help="only the fragment-segment-assignment export case")
    args = parser.parse_args()
    if args.java_only:
        java_anchor(args.repeat, args.threads)
        return
    if args.assignment_only:
        assignment_case(min(args.size, 256), args.labels, max(args.repeat, 5), args.threads, args.workdir)
        return
    shape = (args.size,) * 3
    labels = voronoi_labels(shape, args.labels, seed=0)
    voxels = labels.size
    print(f"{shape} Voronoi segmentation, {np.unique(labels).size} labels, 64^3 blocks, 4 levels, "
          f"{args.threads} threads, median of {args.repeat}")
    workdir = tempfile.mkdtemp(prefix="bench-paintera-", dir=args.workdir)
    for name, compression in [("gzip -1 (Paintera's default)", "gzip"),
                              ("gzip 1", {"type": "gzip", "level": 1}),
                              ("zstd 3", "zstd"), ("raw", "raw")]:
        def run():
            target = f"{workdir}/p.n5"
            shutil.rmtree(target, ignore_errors=True)
            convert(labels, target, block_size=64, factors=[2, 2, 2], compression=compression,
                    threads=args.threads)
        seconds = median_time(run, args.repeat)
        print(f"  convert, {name:30s} {seconds:6.2f} s  {voxels / seconds / 1e6:6.1f} Mvoxel/s")
    shutil.rmtree(workdir, ignore_errors=True)
    java_anchor(args.repeat, args.threads)
    assignment_case(min(args.size, 256), args.labels, max(args.repeat, 5), args.threads, args.workdir)

    # label multiset work alone, one thread, on the 64^3 blocks of a 256^3 part (elf is slow)
    part = np.ascontiguousarray(labels[:256, :256, :256])
    blocks = blocks_of(part, 64)
    ours = median_time(lambda: ours_multiset_work(blocks), args.repeat)
    print(f"  multiset work (create, 3x downsample, serialize), 1 thread, 256^3: "
          f"n5mscodecs {ours:.2f} s ({part.size / ours / 1e6:.1f} Mvoxel/s)")
    try:
        import elf.label_multiset  # noqa: F401
    except ImportError:
        print("  python-elf is not installed: no elf comparison")
        return
    theirs = median_time(lambda: elf_multiset_work(blocks), args.repeat)
    print(f"  python-elf {theirs:.2f} s ({part.size / theirs / 1e6:.1f} Mvoxel/s): n5mscodecs is "
          f"{theirs / ours:.1f}x faster")


if __name__ == "__main__":
    main()
