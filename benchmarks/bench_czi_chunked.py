"""Throughput of n5mscodecs' CZI chunked codec, side by side with imagecodecs.

Data: a realistic 16-bit microscopy-like image (smooth structures plus Poisson
noise), 64 MiB by default; 64 KiB chunks, zstd level 1 and LZ4, hi/lo packing.
Prints the median of several repeats (MB/s, 1 MB = 1e6 bytes) and the ratio to
imagecodecs measured in the same run. Without imagecodecs (it needs
Python >= 3.12) the comparison columns are skipped.

With ``--python-path`` the chunks also go through zstandard's / lz4's Python
APIs (the fallback used when their C functions cannot be found), as the
before/after baseline of calling the C functions from the kernels.

Encode also shows its floor: the same kernels compressing chunks that were hi/lo packed
beforehand (``hilo=False`` on the packed stream: the same compressed chunks, no packing pass),
i.e. the time spent inside the zstd / LZ4 library, and the ratio imagecodecs / that floor;
and, at one thread, the bare library loop (the kernel compressing those chunks into one
buffer: no header, staging or copy): no encoder calling that library build can beat
imagecodecs by more at one thread.

With 1 among several ``--threads``, it also prints the machine's own two-thread
ceiling (two threads copying memory against one) and, per operation, our gain
from one thread to the most, so a reader can tell our limits from the machine's.

Usage: python benchmarks/bench_czi_chunked.py [--mib 64] [--repeat 7] [--threads 1 2] [--python-path] [--no-hilo]
"""

import argparse
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from timing import interleaved_medians

import n5mscodecs
from n5mscodecs.czi import _chunked, backends, libraries

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




def two_thread_ceiling(nbytes, rounds):
    """The machine's own two-thread gain on memory-bound work: two threads each copying
    ``nbytes`` against one thread copying both, in interleaved rounds."""
    sources = [np.ones(nbytes, np.uint8) for _ in range(2)]
    targets = [np.empty(nbytes, np.uint8) for _ in range(2)]
    copy = lambda k: np.copyto(targets[k], sources[k])  # noqa: E731
    with ThreadPoolExecutor(2) as pool:
        medians = interleaved_medians({
            "one": lambda: [copy(0), copy(1)],
            "two": lambda: list(pool.map(copy, (0, 1))),
        }, rounds)
    return medians["one"][0] / medians["two"][0]


def bare_library_loop(packed, chunk_size, lz4, level):
    """One thread calling the library on every (packed) chunk into one preallocated buffer,
    through the same kernel as the encoder: no hi/lo pass, no header, no staging, no copy.
    No encoder that writes these bytes with this library build can beat imagecodecs by more
    than this at one thread."""
    chunks = -(-packed.size // chunk_size)
    worker = _chunked.ChunkWorker()
    block = np.empty(packed.size + 1024 * chunks + (1 << 20), np.uint8)
    block_of, offset_of, size_of = np.zeros(chunks, np.int32), np.zeros(chunks, np.int64), np.zeros(chunks, np.int64)

    def run():
        status = _chunked.encode_chunks(worker, packed, chunk_size, 0, chunks, lz4, level, False, 1, block, 0, 0,
                                        block_of, offset_of, size_of)
        assert status[0] == 0, status

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--chunk", type=int, default=65536)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, len(os.sched_getaffinity(0))])
    parser.add_argument("--python-path", action="store_true", help="also time the Python-API fallback")
    parser.add_argument("--hilo", action=argparse.BooleanOptionalAction, default=True, help="hi/lo packing")
    args = parser.parse_args()
    native = backends.NATIVE_AVAILABLE
    paths = [native] + ([False] if args.python_path and native else [])

    def on_path(path_is_native, function):
        def call():
            with backends.use_backend("native" if path_is_native else "python"):
                return function()

        return call

    def label(threads, path_is_native):
        return f"ours threads={threads}" + ("" if path_is_native == native else " python-API path")

    image = realistic_image(args.mib << 20)
    nbytes = image.nbytes
    print(f"image {image.shape} uint16, {nbytes / 2**20:.1f} MiB, chunks {args.chunk} B, "
          f"{'hi/lo' if args.hilo else 'no hi/lo'}, "
          f"{len(os.sched_getaffinity(0))} CPUs, {args.repeat} interleaved rounds, "
          f"imagecodecs {getattr(imagecodecs, '__version__', 'absent')}, "
          f"zstd/LZ4 called {'from the kernels' if native else 'through the Python APIs'}"
          f"{f' (zstd of {libraries.zstd_module})' if native else ''}, "
          f"load average {os.getloadavg()[0]:.2f}")
    out = np.empty(nbytes, dtype=np.uint8)
    scaling = sorted(args.threads)[0] == 1 and len(args.threads) > 1
    if scaling:
        print(f"this machine's two-thread ceiling: copying {nbytes >> 21} MiB per thread, 2 threads / 1: "
              f"{two_thread_ceiling(nbytes // 2, args.repeat):.2f}x")
    for codec in ("zstd", "lz4"):
        level = 1 if codec == "zstd" else None
        options = dict(codec=codec, level=level, max_chunk_size=args.chunk, hilo=args.hilo)
        ours = n5mscodecs.chunked_encode(image, **options)
        payloads = {n5mscodecs.chunked_encode(image, threads=t, **options) for t in args.threads}
        line = f"\n{codec}: compression ratio {nbytes / len(ours):.3f} (ours)"
        operations = {"encode": {}, "decode": {}, "decode out=": {}}
        if imagecodecs is not None:
            theirs = imagecodecs.chunked_encode(
                image, level=level, codec=codec, chunksize=args.chunk, itemsize=2, hilo=args.hilo
            )
            line += f", {nbytes / len(theirs):.3f} (imagecodecs)"
            assert bytes(n5mscodecs.chunked_decode(theirs)) == image.tobytes()
            assert bytes(imagecodecs.chunked_decode(ours)) == image.tobytes()
            operations["encode"]["imagecodecs"] = lambda: imagecodecs.chunked_encode(
                image, level=level, codec=codec, chunksize=args.chunk, itemsize=2, hilo=args.hilo
            )
            operations["decode"]["imagecodecs"] = lambda: imagecodecs.chunked_decode(theirs)
            operations["decode out="]["imagecodecs"] = lambda: imagecodecs.chunked_decode(theirs, out=out)
        if len(paths) > 1:
            fallback = on_path(False, lambda: n5mscodecs.chunked_encode(image, **options))()
            line += f"; python-API path output identical: {fallback == ours}"
        print(line + f"; identical output for threads {args.threads}: {len(payloads) == 1}")
        for path in paths:
            for threads in args.threads:
                name = label(threads, path)
                operations["encode"][name] = on_path(
                    path, lambda t=threads: n5mscodecs.chunked_encode(image, threads=t, **options)
                )
                operations["decode"][name] = on_path(
                    path, lambda t=threads: n5mscodecs.chunked_decode(ours, threads=t)
                )
                operations["decode out="][name] = on_path(
                    path, lambda t=threads: n5mscodecs.chunked_decode(ours, out=out, threads=t)
                )
        if args.hilo:
            packed = np.empty(nbytes, np.uint8)
            _chunked.hilo_pack(image.reshape(-1).view(np.uint8), packed, 1, args.chunk)
        else:
            packed = image
        floor_options = {**options, "hilo": False}
        assert len(n5mscodecs.chunked_encode(packed, **floor_options)) == len(ours), "floor compresses other bytes"
        for threads in args.threads:
            operations["encode"][f"floor: library alone, threads={threads}"] = on_path(
                native, lambda t=threads: n5mscodecs.chunked_encode(packed, threads=t, **floor_options))
        operations["encode"]["bare library loop, 1 thread"] = on_path(
            native, bare_library_loop(packed.reshape(-1).view(np.uint8), args.chunk, codec == "lz4", level or 1))
        for operation, functions in operations.items():
            medians = interleaved_medians(functions, args.repeat)
            reference = medians["imagecodecs"][0] if "imagecodecs" in medians else None
            text = f"  {operation}:"
            if reference is not None:
                text += f"\n    imagecodecs {nbytes / reference / 1e6:6.0f} MB/s"
            for name, (seconds, busy) in medians.items():
                if name == "imagecodecs":
                    continue
                text += f"\n    {name:<40} {nbytes / seconds / 1e6:6.0f} MB/s"
                if reference is not None:
                    text += f" ({reference / seconds:4.2f}x)"
                text += f" cpu {busy:3.1f}"
            if scaling:
                gain = medians[label(1, native)][0] / medians[label(max(args.threads), native)][0]
                text += f"\n    ours, {max(args.threads)} threads / 1 (beside the machine's ceiling above): {gain:.2f}x"
            print(text)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}; 'cpu' = cores our process kept busy "
          "(about 1.0 at threads=2 means another process held the second core)")


if __name__ == "__main__":
    main()
