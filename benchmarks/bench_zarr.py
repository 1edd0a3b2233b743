"""Reading label multisets through zarr vs decoding the same chunks directly (issue 4).

    python benchmarks/bench_zarr.py [--size 256] [--repeat 5]

A size^3 array of scale-0 singletons (~1000 labels), 64^3 chunks, gzip. Targets:
zarr read time <= 1.5x the direct decode of the same chunks with the codec
functions, and 2 threads >= 1.5x one thread. Prints medians and ratios.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import zarr
from timing import median_time
from zarr.codecs import GzipCodec

import n5mscodecs.zarr as nz
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.payload import label_multiset_decode


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    shape, chunks = (args.size,) * 3, (64, 64, 64)
    labels = voronoi_labels(shape, 1000, seed=2)
    workdir = Path(tempfile.mkdtemp(prefix="n5ms-bench-zarr-"))
    array = zarr.create_array(workdir / "a", shape=shape, chunks=chunks, dtype=nz.LabelMultisetDType(),
                              fill_value="0xFFFFFFFFFFFFFFFE", serializer=nz.LabelMultisetZarrCodec(),
                              compressors=[GzipCodec(level=6)])
    array[:] = labels
    chunk_files = sorted(p for p in (workdir / "a" / "c").rglob("*") if p.is_file())
    print(f"zarr {zarr.__version__}: {shape} label_multiset array, {len(chunk_files)} chunks of {chunks}, "
          f"gzip, {len(np.unique(labels))} labels; {os.cpu_count()} cores; median of {args.repeat}")

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
                results[kind, n] = median_time(lambda: through_zarr(name), args.repeat)

    assert np.array_equal(nz.chunk_to_multisets(
        zarr.core.buffer.cpu.NDBuffer.from_numpy_array(through_zarr())).argmax(), labels)
    results = {}
    for n in (1, 2):
        results["direct", n] = median_time(lambda: direct(n), args.repeat)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
