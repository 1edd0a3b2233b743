"""Label multisets through zarr: reads vs decoding the same chunks directly (issue 4), and the
columnar path against the N5 path (issue 44).

    python benchmarks/bench_zarr.py [--size 256] [--repeat 5] [--part all|read|columnar] [--object-repeat 1]

A size^3 array of scale-0 singletons (~1000 labels), 64^3 chunks, gzip 6.

``read`` (issue 4): zarr read time <= 1.5x the direct decode of the same chunks with the codec
functions, and 2 threads >= 1.5x one thread.

``columnar`` (issue 44), every variant timed in turn in each round (interleaved medians):
``write_label_multisets`` of the integer labels into a zarr v3 ``label_multiset`` array
<= 1.5x ``n5.write`` of the same labels (same chunking, gzip 6); ``read_labels`` of a region
(and of the whole array) <= 1.5x ``open_labels(...)[region]``; ``read_multisets`` and zarr's
object path (``a[:] = labels``, ``a[region]``) for comparison, the writes ``--object-repeat``
times only (they take seconds). Prints medians and ratios.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import zarr
from timing import interleaved_medians, median_time
from zarr.codecs import GzipCodec

import n5mscodecs.zarr as nz
from n5mscodecs import n5
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.payload import label_multiset_decode

CHUNKS = (64, 64, 64)


def create(path):
    """The array of docs/zarr.md's first example: label_multiset, 64^3 chunks, gzip 6."""
    return zarr.create_array(path, shape=create.shape, chunks=CHUNKS, dtype=nz.LabelMultisetDType(),
                             fill_value="0xFFFFFFFFFFFFFFFE", serializer=nz.LabelMultisetZarrCodec(),
                             compressors=[GzipCodec(level=6)], overwrite=True)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--part", choices=("all", "read", "columnar"), default="all")
    parser.add_argument("--object-repeat", type=int, default=1)
    args = parser.parse_args(argv)
    shape = create.shape = (args.size,) * 3
    labels = voronoi_labels(shape, 1000, seed=2)
    workdir = Path(tempfile.mkdtemp(prefix="n5ms-bench-zarr-"))
    if args.part in ("all", "columnar"):
        columnar(labels, workdir, args.repeat, args.object_repeat)
    if args.part in ("all", "read"):
        read(labels, workdir, args.repeat)
    return 0


def columnar(labels, workdir, repeat, object_repeat):
    """Issue 44: the columnar path against n5.write / open_labels (interleaved medians)."""
    size = labels.shape[0]
    region = (slice(size // 8, size - size // 8),) * 3  # across chunk boundaries, partial chunks included

    def n5_write():
        n5.write(workdir / "c.n5" / "labels", labels, chunks=CHUNKS, compression={"type": "gzip", "level": 6},
                 overwrite=True)

    def columnar_write():
        nz.write_label_multisets(create(workdir / "columnar"), labels)

    writes = interleaved_medians({"n5.write": n5_write, "write_label_multisets": columnar_write}, repeat)
    source = zarr.open_array(workdir / "columnar", mode="r")
    reads = interleaved_medians({
        "open_labels(...)[region]": lambda: nz.open_labels(workdir, "columnar")[region],
        "read_labels(a, region)": lambda: nz.read_labels(zarr.open_array(workdir / "columnar", mode="r"), region),
        "open_labels(...)[:]": lambda: nz.open_labels(workdir, "columnar")[:],
        "read_labels(a)": lambda: nz.read_labels(zarr.open_array(workdir / "columnar", mode="r")),
        "read_multisets(a, region)": lambda: nz.read_multisets(source, region),
    }, repeat)
    started = time.perf_counter()
    for _ in range(object_repeat):
        create(workdir / "object")[:] = labels
    object_write = (time.perf_counter() - started) / object_repeat
    started = time.perf_counter()
    elements = zarr.open_array(workdir / "object", mode="r")[region]
    object_read = time.perf_counter() - started
    # the same chunk bytes (gzip headers aside: zarr's gzip writes the time), the same labels
    files = sorted(p.relative_to(workdir / "columnar") for p in (workdir / "columnar" / "c").rglob("*") if p.is_file())
    assert all(gzip.decompress((workdir / "columnar" / f).read_bytes())
               == gzip.decompress((workdir / "object" / f).read_bytes()) for f in files)
    assert np.array_equal(nz.read_labels(source, region), labels[region])
    assert nz.read_multisets(source, region).equals(nz.chunk_to_multisets(
        zarr.core.buffer.cpu.NDBuffer.from_numpy_array(elements)))
    print(f"columnar path (issue 44), zarr {zarr.__version__}: {labels.shape} labels, {CHUNKS} chunks, gzip 6, "
          f"{os.cpu_count()} cores; interleaved medians of {repeat} (object path: {object_repeat} run(s))")
    for name, (seconds, cores) in {**writes, **reads}.items():
        print(f"  {name:<27} {seconds * 1e3:8.1f} ms  ({cores:.1f} cores busy)")
    print(f"  {'a[:] = labels (objects)':<27} {object_write * 1e3:8.1f} ms")
    print(f"  {'a[region] (objects)':<27} {object_read * 1e3:8.1f} ms")

    def ratio(what, ours, baseline, target=1.5):
        value = ours / baseline
        print(f"  {what}: {value:.2f}x  (target <= {target}) {'PASS' if value <= target else 'MISS'}")

    ratio("write_label_multisets / n5.write", writes["write_label_multisets"][0], writes["n5.write"][0])
    ratio("read_labels / open_labels, region", reads["read_labels(a, region)"][0],
          reads["open_labels(...)[region]"][0])
    ratio("read_labels / open_labels, whole array", reads["read_labels(a)"][0], reads["open_labels(...)[:]"][0])
    print(f"  a[:] = labels (objects) / write_label_multisets: {object_write / writes['write_label_multisets'][0]:.1f}x"
          f";  a[region] / read_multisets: {object_read / reads['read_multisets(a, region)'][0]:.1f}x")


def read(labels, workdir, repeat):
    """Issue 4: reading through zarr vs decoding the same chunks directly."""
    shape, chunks = labels.shape, CHUNKS
    nz.write_label_multisets(create(workdir / "a"), labels)
    chunk_files = sorted(p for p in (workdir / "a" / "c").rglob("*") if p.is_file())
    print(f"zarr {zarr.__version__}: {shape} label_multiset array, {len(chunk_files)} chunks of {chunks}, "
          f"gzip, {len(np.unique(labels))} labels; {os.cpu_count()} cores; median of {repeat}")

    def direct_one(path):
        return label_multiset_decode(gzip.decompress(path.read_bytes()), chunks, threads=1)

    def direct(n_threads):
        with ThreadPoolExecutor(n_threads) as pool:
            return list(pool.map(direct_one, chunk_files))

    def through_zarr(name="a"):
        return zarr.open_array(workdir / name)[:]

    def time_zarr(kind, name="a"):
        for n in (1, 2):
            # zarr sizes its thread pool once: zarr_threads rebuilds it with n workers
            with nz.zarr_threads(n):
                results[kind, n] = median_time(lambda: through_zarr(name), repeat)

    assert np.array_equal(nz.chunk_to_multisets(
        zarr.core.buffer.cpu.NDBuffer.from_numpy_array(through_zarr())).argmax(), labels)
    results = {}
    for n in (1, 2):
        results["direct", n] = median_time(lambda: direct(n), repeat)
    time_zarr("zarr")
    # zarr's own floor for object arrays: the same read with our codec replaced by a
    # lookup of an already decoded chunk (gzip and zarr's copying still run)
    from n5mscodecs.zarr import codecs as zarr_codecs
    decode_sync = zarr_codecs.LabelMultisetZarrCodec._decode_sync
    decoded = {}

    def cached(self, chunk_bytes, chunk_spec):
        if "chunk" not in decoded:
            decoded["chunk"] = decode_sync(self, chunk_bytes, chunk_spec)
        return decoded["chunk"]

    zarr_codecs.LabelMultisetZarrCodec._decode_sync = cached
    try:
        time_zarr("zarr floor")
    finally:
        zarr_codecs.LabelMultisetZarrCodec._decode_sync = decode_sync
    # the same labels as a plain uint64 array: zarr's overhead without object dtype
    plain = zarr.create_array(workdir / "u", shape=shape, chunks=chunks, dtype="uint64",
                              compressors=[GzipCodec(level=6)])
    plain[:] = labels
    time_zarr("zarr uint64", "u")
    voxels = labels.size
    for (kind, n), t in results.items():
        print(f"  {kind:<11} {n} thread(s): {t * 1e3:8.1f} ms  {voxels / t / 1e6:7.1f} Mvoxel/s")
    for n in (1, 2):
        ratio = results["zarr", n] / results["direct", n]
        print(f"  zarr / direct, {n} thread(s): {ratio:.2f}x  (target <= 1.5) {'PASS' if ratio <= 1.5 else 'MISS'}")
    speedup = results["zarr", 1] / results["zarr", 2]
    print(f"  zarr 2 threads vs 1: {speedup:.2f}x  (target >= 1.5) {'PASS' if speedup >= 1.5 else 'MISS'}")
    print(f"  direct 2 threads vs 1: {results['direct', 1] / results['direct', 2]:.2f}x")
    for n in (1, 2):
        print(f"  zarr floor (codec replaced by a cached chunk) / direct, {n} thread(s): "
              f"{results['zarr floor', n] / results['direct', n]:.2f}x")
    print(f"  zarr uint64 (same labels, no object dtype) 2 threads vs 1: "
          f"{results['zarr uint64', 1] / results['zarr uint64', 2]:.2f}x")
    print(f"  zarr floor 2 threads vs 1: {results['zarr floor', 1] / results['zarr floor', 2]:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
