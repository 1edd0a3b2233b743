"""Plain N5 reads (issues 32, 44): a 256^3 uint32 dataset in 64^3 blocks written by
``n5.write_array``, page cache warm, read whole and as a 100^3 window across 8 blocks, against
baselines measured in the same run: a 20-line numpy loop (read each file, ``frombuffer('>u4')``,
assign into place), z5py and tensorstore (when installed), zarr through ``N5Store`` (the
``n5_default`` codec). The machine's own two-thread ceiling (numpy copies of 16 MiB, one thread vs
two) is printed beside our two-thread gain.

What is timed is what a user gets: ``n5.open(path)[...]`` (open included, the default threads:
one per CPU) and ``n5.open(path).read(..., threads=1)``; z5py likewise opens the file each call
and reads with ``n_threads`` 1 and with as many threads as ours (its default is 1: comparing our
default with z5py's default compares two threads with one). The z5py ratios are taken at equal
thread counts.

    python benchmarks/bench_plain_read.py [--repeat 9] [--compression raw gzip zstd] [--data random]

``--data random`` (default): 20-bit random values, what compresses least; ``smooth``: a
microscopy-like volume (blobs and Poisson noise, 12 bits used), what compresses well.

Targets: raw within 1.3x of the numpy loop on one thread; >= 1.2x faster than z5py (same
threads) and >= 1.5x faster than tensorstore; two threads faster than one where the machine
allows it.
"""

import argparse
import os
import shutil
import tempfile
import threading

import numpy as np
from timing import interleaved_medians

from n5mscodecs import n5
from n5mscodecs._threads import default_threads

SHAPE, BLOCK = (256, 256, 256), 64
WINDOW = (slice(14, 114), slice(20, 120), slice(27, 127))   # 100^3 across 8 blocks (2 along each axis)


def numpy_loop(path):
    def run():
        out = np.empty(SHAPE, np.uint32)
        for position in np.ndindex(*(n // BLOCK for n in SHAPE)):
            with open(os.path.join(path, *map(str, position)), "rb") as f:
                data = f.read()
            block = np.frombuffer(data, ">u4", offset=16).reshape((BLOCK,) * 3).T
            out[tuple(slice(p * BLOCK, (p + 1) * BLOCK) for p in position)] = block
        return out
    return run


def decompress_alone(path, compression):
    """Decompressing every block from memory with the same library our read uses: the floor of a
    one-thread read, whatever is done around it."""
    from n5mscodecs.n5.compression import compressor_from_config

    compressor = compressor_from_config({"type": compression})
    blocks = []
    for position in np.ndindex(*(n // BLOCK for n in SHAPE)):
        with open(os.path.join(path, *map(str, position)), "rb") as f:
            blocks.append(f.read()[16:])
    size = BLOCK ** 3 * 4

    def run():
        for block in blocks:  # each result dropped at once, as a read does after placing it
            compressor.decode(block, expected_size=size)
    return run


def zarr_native(work, data, compression):
    """zarr reading a zarr v3 array of the same values, chunks and compression: zarr's own floor
    for the ``N5Store`` route."""
    import zarr

    codecs = {"raw": [], "gzip": [zarr.codecs.GzipCodec(level=6)], "zstd": [zarr.codecs.ZstdCodec(level=3)]}
    array = zarr.create_array(os.path.join(work, f"{compression}.zarr"), shape=SHAPE, chunks=(BLOCK,) * 3,
                              dtype=data.dtype, serializer=zarr.codecs.BytesCodec(endian="big"),
                              compressors=codecs[compression])
    array[...] = data
    return lambda: array[...]


def volume(kind):
    """The dataset's values: ``random`` (20-bit, incompressible) or ``smooth`` (microscopy-like)."""
    rng = np.random.default_rng(0)
    if kind == "random":
        return rng.integers(0, 2**20, SHAPE).astype(np.uint32)
    z, y, x = np.ogrid[: SHAPE[0], : SHAPE[1], : SHAPE[2]]
    expected = 300 + 200 * np.sin(x / 23.0) * np.cos(y / 31.0) * np.cos(z / 17.0)
    for _ in range(30):
        cz, cy, cx = rng.uniform(0, SHAPE[0], 3)
        expected = expected + rng.uniform(500, 3000) * np.exp(
            -((x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2) / (2 * rng.uniform(8, 40) ** 2))
    return rng.poisson(expected).astype(np.uint32)


def two_thread_ceiling(repeat):
    """Median seconds of 2 x 16 MiB numpy copies on one thread and on two."""
    sources = [np.random.default_rng(k).integers(0, 255, 16 << 20, dtype=np.uint8) for k in range(2)]
    targets = [np.empty_like(s) for s in sources]

    def one():
        for s, t in zip(sources, targets):
            np.copyto(t, s)

    def two():
        threads = [threading.Thread(target=np.copyto, args=(t, s)) for s, t in zip(sources, targets)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    results = interleaved_medians({"one": one, "two": two}, repeat)
    return results["one"][0] / results["two"][0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--compression", nargs="+", default=["raw", "gzip", "zstd"])
    parser.add_argument("--data", choices=["random", "smooth"], default="random")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-plain-")
    data = volume(args.data)
    cpus = default_threads(None)
    try:
        print(f"plain N5 reads: {SHAPE} uint32 ({args.data}), {BLOCK}^3 blocks, medians of {args.repeat} "
              f"interleaved rounds, {cpus} threads by default, load average {os.getloadavg()[0]:.2f}")
        print(f"  machine: two threads of numpy copies run {two_thread_ceiling(args.repeat):.2f}x one thread")
        for compression in args.compression:
            path = os.path.join(work, f"{compression}.n5", "data")
            compression_config = {"type": compression, **({"level": 6} if compression == "gzip" else {})}
            n5.write_array(path, data, chunks=BLOCK, compression=compression_config)
            cases = {"ours, 1 thread": lambda: n5.open(path).read((), threads=1),
                     "ours, n5.open(path)[...]": lambda: n5.open(path)[...],
                     "ours, window, 1 thread": lambda: n5.open(path).read(WINDOW, threads=1),
                     "ours, window, default": lambda: n5.open(path)[WINDOW]}
            if compression == "raw":
                cases["numpy loop"] = numpy_loop(path)
            else:
                cases["decompress alone"] = decompress_alone(path, compression)
            try:
                import z5py

                def z5_read(selection, n_threads):
                    def run():
                        dataset = z5py.File(os.path.dirname(path), mode="r")["data"]
                        dataset.n_threads = n_threads
                        return dataset[selection]
                    return run

                whole, window = (slice(None),) * 3, WINDOW[::-1]  # z5py's axes are N5's reversed
                cases["z5py, 1 thread"] = z5_read(whole, 1)
                cases[f"z5py, {cpus} threads"] = z5_read(whole, cpus)
                cases["z5py, window, 1 thread"] = z5_read(window, 1)
                cases[f"z5py, window, {cpus} threads"] = z5_read(window, cpus)
            except ImportError:
                pass
            try:
                import tensorstore as ts

                store = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": path}}).result()
                cases["tensorstore"] = lambda: store.read().result()
            except ImportError:
                pass
            try:
                import zarr

                from n5mscodecs.zarr import N5Store

                array = zarr.open_array(N5Store(zarr.storage.LocalStore(os.path.dirname(path))), path="data",
                                        mode="r")
                cases["zarr through N5Store"] = lambda: array[...]
                cases["zarr, native v3 array"] = zarr_native(work, data, compression)
            except ImportError:
                pass
            for name, function in cases.items():
                if name == "decompress alone":
                    continue
                result, expected = np.asarray(function()), data[WINDOW] if "window" in name else data
                if name.startswith("z5py"):  # z5py's axes are N5's reversed
                    result = result.T
                assert np.array_equal(result, expected), name
            results = interleaved_medians(cases, args.repeat)
            ours = results["ours, 1 thread"][0]
            print(f"  {compression}:")
            for name, (seconds, cores) in results.items():
                print(f"    {name:28s} {seconds * 1e3:7.1f} ms  {seconds / ours:5.2f}x ours on 1 thread"
                      f"  (cores busy {cores:.2f}, cpu {seconds * cores * 1e3:.1f} ms)")
            if "z5py, 1 thread" in results:
                pairs = {"whole, 1 thread": ("z5py, 1 thread", "ours, 1 thread"),
                         f"whole, {cpus} threads": (f"z5py, {cpus} threads", "ours, n5.open(path)[...]"),
                         "window, 1 thread": ("z5py, window, 1 thread", "ours, window, 1 thread"),
                         f"window, {cpus} threads": (f"z5py, window, {cpus} threads", "ours, window, default")}
                ratios = ", ".join(f"{what} {results[theirs][0] / results[mine][0]:.2f}x"
                                   for what, (theirs, mine) in pairs.items())
                print(f"    z5py / ours at equal threads (target >= 1.2x): {ratios}")
                defaults = results["z5py, 1 thread"][0] / results["ours, n5.open(path)[...]"][0]
                print(f"    z5py's default (1 thread) / ours' default ({cpus} threads), whole: {defaults:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
