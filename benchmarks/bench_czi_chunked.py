"""Throughput of n5mscodecs' CZI chunked codec, side by side with imagecodecs.

Data: a realistic 16-bit microscopy-like image (smooth structures plus Poisson
noise), 64 MiB by default; 64 KiB chunks, zstd level 1 and LZ4, hi/lo packing.
Prints the median of several repeats (MB/s, 1 MB = 1e6 bytes) and the ratio to
imagecodecs measured in the same run. Without imagecodecs (it needs
Python >= 3.12) the comparison columns are skipped.

Usage: python benchmarks/bench_czi_chunked.py [--mib 64] [--repeat 7] [--threads 1 2]
"""

import argparse
import os
import statistics
import time

import numpy as np

import n5mscodecs

try:
    import imagecodecs

    if not getattr(imagecodecs, "CHUNKED", None) or not imagecodecs.CHUNKED.available:
        imagecodecs = None
except ImportError:
    imagecodecs = None


def realistic_image(nbytes, seed=0):
    """Smooth cell-like blobs and gradients with Poisson noise, as uint16."""
    rng = np.random.default_rng(seed)
    height = 2048
    width = max(1, nbytes // 2 // height)
    y = np.arange(height, dtype=np.float32)[:, None]
    x = np.arange(width, dtype=np.float32)[None, :]
    expected = 400 + 300 * np.sin(x / 97.0) * np.cos(y / 131.0)
    for _ in range(40):
        cy, cx = rng.uniform(0, height), rng.uniform(0, width)
        radius = rng.uniform(20, 120)
        expected = expected + rng.uniform(500, 3000) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * radius**2))
    return rng.poisson(expected).astype(np.uint16)


def median_seconds(function, repeat):
    function()  # warm up: pools, contexts, page cache
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--chunk", type=int, default=65536)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, len(os.sched_getaffinity(0))])
    args = parser.parse_args()

    image = realistic_image(args.mib << 20)
    nbytes = image.nbytes
    print(f"image {image.shape} uint16, {nbytes / 2**20:.1f} MiB, chunks {args.chunk} B, hi/lo, "
          f"{len(os.sched_getaffinity(0))} CPUs, imagecodecs {getattr(imagecodecs, '__version__', 'absent')}")
    out = np.empty(nbytes, dtype=np.uint8)

    def rate(seconds):
        return nbytes / seconds / 1e6

    for codec in ("zstd", "lz4"):
        level = 1 if codec == "zstd" else None
        ours = n5mscodecs.chunked_encode(image, codec=codec, level=level, max_chunk_size=args.chunk, hilo=True)
        reference = {}
        if imagecodecs is not None:
            theirs = imagecodecs.chunked_encode(
                image, level=level, codec=codec, chunksize=args.chunk, itemsize=2, hilo=True
            )
            assert bytes(n5mscodecs.chunked_decode(theirs)) == image.tobytes()
            assert bytes(imagecodecs.chunked_decode(ours)) == image.tobytes()
            reference["encode"] = median_seconds(
                lambda: imagecodecs.chunked_encode(
                    image, level=level, codec=codec, chunksize=args.chunk, itemsize=2, hilo=True
                ),
                args.repeat,
            )
            reference["decode"] = median_seconds(lambda: imagecodecs.chunked_decode(theirs), args.repeat)
            reference["decode out="] = median_seconds(lambda: imagecodecs.chunked_decode(theirs, out=out), args.repeat)
        print(f"\n{codec}: ratio {nbytes / len(ours):.3f} (ours), "
              + (f"{nbytes / len(theirs):.3f} (imagecodecs)" if imagecodecs is not None else ""))
        outputs = set()
        for threads in args.threads:
            def encode():
                return n5mscodecs.chunked_encode(
                    image, codec=codec, level=level, max_chunk_size=args.chunk, hilo=True, threads=threads
                )

            outputs.add(encode())
            measured = {
                "encode": median_seconds(encode, args.repeat),
                "decode": median_seconds(lambda: n5mscodecs.chunked_decode(ours, threads=threads), args.repeat),
                "decode out=": median_seconds(
                    lambda: n5mscodecs.chunked_decode(ours, out=out, threads=threads), args.repeat
                ),
            }
            for operation, seconds in measured.items():
                line = f"  {operation:<12} threads={threads}: {rate(seconds):8.0f} MB/s"
                if operation in reference:
                    line += (f"   imagecodecs {rate(reference[operation]):8.0f} MB/s"
                             f"   ratio {reference[operation] / seconds:5.2f}x")
                print(line)
        print(f"  output identical for threads {args.threads}: {len(outputs) == 1}")


if __name__ == "__main__":
    main()
