"""Plain N5 datasets through zarr (``N5Store`` and the ``n5_default`` codec) against
``n5.open(...)[...]`` on the same blocks: a whole-array read and a read of one block's worth
across eight blocks, for raw, gzip and zstd.

Target: zarr within 1.3x of ``n5.open``. Both decode every block with the same function
(:func:`n5mscodecs.n5.n5_default_decode`); the difference is zarr's pipeline around it.

Run from the repository root: ``python benchmarks/bench_n5_default.py [--size 256] [--repeat 7]``.
"""

import argparse
import os
import shutil
import tempfile

import numpy as np
import zarr
from timing import interleaved_medians
from zarr.storage import LocalStore

from n5mscodecs import n5
from n5mscodecs.zarr import N5Store, zarr_threads

COMPRESSIONS = {"raw": {"type": "raw"}, "gzip": {"type": "gzip", "level": 6}, "zstd": {"type": "zstd", "level": 3}}
TARGET = 1.3


def main_(size, repeat, threads):
    work = tempfile.mkdtemp(prefix="bench-n5-default-")
    try:
        rng = np.random.default_rng(0)
        # smooth values (compressible, like an image), uint16, N5 axis order
        data = (np.cumsum(rng.integers(0, 3, (size, size, size), dtype=np.uint16), axis=0) % 4096).astype(np.uint16)
        half, quarter = size // 2, size // 4
        region = (slice(half - quarter // 2, half + quarter // 2),) * 3  # straddles 8 blocks of size/4
        print(f"{size}^3 uint16, blocks {size // 4}^3, {threads} threads, medians of {repeat} interleaved rounds")
        worst = 0.0
        for name, compression in COMPRESSIONS.items():
            path = os.path.join(work, "c.n5", name)
            n5.write_array(path, data, chunks=size // 4, compression=compression)
            dataset = n5.open(path)
            array = zarr.open_array(N5Store(LocalStore(os.path.join(work, "c.n5"), read_only=True)), path=name,
                                    mode="r")
            assert np.array_equal(array[region], dataset[region])
            with zarr_threads(threads):
                results = interleaved_medians({
                    "n5.open whole": lambda: dataset.read(threads=threads),
                    "zarr whole": lambda: array[:],
                    "n5.open region": lambda: dataset.read(region, threads=threads),
                    "zarr region": lambda: array[region],
                }, repeat)
            for what in ("whole", "region"):
                direct, through = results[f"n5.open {what}"][0], results[f"zarr {what}"][0]
                worst = max(worst, through / direct)
                print(f"  {name:5s} {what:6s} n5.open {direct * 1e3:8.1f} ms   zarr {through * 1e3:8.1f} ms   "
                      f"zarr / n5.open {through / direct:5.2f}x")
        print(f"worst ratio {worst:.2f}x (target <= {TARGET}x): {'met' if worst <= TARGET else 'NOT met'}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    main_(args.size, args.repeat, args.threads)
