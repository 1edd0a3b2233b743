"""Paintera labels as uint64: the zarr labels view, to_dask() and the decode-to-labels kernel (issue 14).

    python benchmarks/bench_labels.py [--size 256] [--repeat 5] [--data ../shared/data/n5]

A size^3 N5 label multiset dataset of scale-0 singletons (~1000 labels, 64^3
blocks, gzip level 6) and a plain uint64 zarr v3 array of the same labels with
the same gzip. Targets, all measured in this run:

- the labels view (``open_labels(...)[:]``) takes <= 1.25x the plain uint64
  zarr read (zarr's own floor) and <= 2x the direct decode-to-labels of the same
  blocks on one thread;
- decode-to-labels of the real downscaleTest block 0/0/0 >= 1.5 GB/s of payload
  on one thread (printed beside decode + argmax, the path it replaces);
- ``to_dask()`` on dask's threaded scheduler: 2 threads >= 1.6x one (printed
  beside what this machine gives two threads of GIL-free hashing and of memory
  copies, its ceilings for compute- and memory-bound work).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import zarr
from timing import interleaved_medians, median_time
from zarr.codecs import GzipCodec

from n5mscodecs import n5
from n5mscodecs.demo import voronoi_labels
from n5mscodecs.payload import N5_LAYOUT, decode_payload, decode_payload_labels
from n5mscodecs.zarr import open_labels


def row(name, value, unit, target="", ok=None):
    verdict = "" if ok is None else ("  ok" if ok else "  MISSED")
    print(f"  {name:<46} {value:>9.3f} {unit:<5} {target}{verdict}")


def interleaved(functions, rounds):
    """Median time of each function, the functions taking turns in every round."""
    medians = interleaved_medians(dict(enumerate(functions)), rounds)
    return [medians[i][0] for i in range(len(functions))]


def zarr_views(labels, workdir, repeat):
    dataset = n5.write(workdir / "c.n5" / "labels", labels, chunks=(64, 64, 64),
                       compression={"type": "gzip", "level": 6})
    plain = zarr.create_array(workdir / "plain", shape=labels.shape, chunks=(64, 64, 64), dtype="uint64",
                              compressors=[GzipCodec(level=6)])
    plain[:] = labels
    view = open_labels(workdir / "c.n5", "labels")
    assert np.array_equal(view[:], labels) and np.array_equal(plain[:], labels)
    print(f"zarr {zarr.__version__}, python {sys.version.split()[0]}: {labels.shape} labels "
          f"({len(np.unique(labels))} ids), {np.prod(dataset.grid_shape)} blocks of 64^3, gzip 6; "
          f"{os.cpu_count()} cores; medians of {repeat}")

    def direct():
        out = np.empty(labels.shape, np.uint64)
        for position in np.ndindex(*dataset.grid_shape):
            out[dataset.block_region(position)] = dataset.read_block_labels(position)
        return out

    t_plain = median_time(lambda: plain[:], repeat)
    t_view = median_time(lambda: view[:], repeat)
    t_direct = median_time(direct, repeat)
    print("zarr labels view")
    row("plain uint64 zarr array, gzip (floor)", t_plain * 1e3, "ms")
    row("labels view: open_labels(...)[:]", t_view * 1e3, "ms")
    row("direct decode-to-labels, 1 thread", t_direct * 1e3, "ms")
    row("view / plain uint64", t_view / t_plain, "x", "<= 1.25", t_view / t_plain <= 1.25)
    row("view / direct 1 thread", t_view / t_direct, "x", "<= 2", t_view / t_direct <= 2)

    print("to_dask(), threaded scheduler")
    lazy = dataset.to_dask()
    # interleaved rounds: this machine's speed drifts between runs
    t1, t2 = interleaved([lambda: lazy.compute(scheduler="threads", num_workers=1),
                          lambda: lazy.compute(scheduler="threads", num_workers=2)], 2 * repeat + 1)
    row("compute(), 1 thread", t1 * 1e3, "ms")
    row("compute(), 2 threads", t2 * 1e3, "ms")
    row("speed-up", t1 / t2, "x", ">= 1.6", t1 / t2 >= 1.6)
    # without the serial part of compute(): dask's concatenation into a fresh 128 MiB array
    out = np.empty(labels.shape, np.uint64)
    s1, s2 = interleaved([lambda: da.store(lazy, out, lock=False, scheduler="threads", num_workers=1),
                          lambda: da.store(lazy, out, lock=False, scheduler="threads", num_workers=2)], 2 * repeat + 1)
    row("store into an array, 1 thread", s1 * 1e3, "ms")
    row("store into an array, 2 threads", s2 * 1e3, "ms")
    row("speed-up", s1 / s2, "x")
    # what this machine gives two threads right now: GIL-free work with nothing shared
    data = os.urandom(8 << 20)

    def hashing(n_threads):
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(lambda _: hashlib.sha256(data).digest(), range(16)))

    h1, h2 = interleaved([lambda: hashing(1), lambda: hashing(2)], 2 * repeat + 1)
    row("ceiling: sha256 on 2 threads vs 1", h1 / h2, "x")
    # and memory-bound work (decoding a block moves ~6 MiB for 2 MiB of labels)
    blocks = [np.ones(1 << 18, np.uint64) for _ in range(64)]
    copies = [np.empty_like(b) for b in blocks]

    def copying(n_threads):
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(lambda i: np.copyto(copies[i], blocks[i]), range(len(blocks))))

    c1, c2 = interleaved([lambda: copying(1), lambda: copying(2)], 2 * repeat + 1)
    row("ceiling: 2 MiB copies on 2 threads vs 1", c1 / c2, "x")


def real_block(data_dir, repeat):
    block = Path(data_dir) / "downscaleTest.n5" / "sourceImg" / "0" / "0" / "0"
    if block.exists():
        payload, what = block.read_bytes()[20:], "real downscaleTest block 0/0/0"
    else:  # the same statistics: 0-9 entries per voxel, ids < 100
        rng = np.random.default_rng(0)
        from n5mscodecs import LabelMultisetArray
        from n5mscodecs.payload import n5_label_multiset_encode

        elements = [dict(zip(rng.integers(0, 100, n).tolist(), rng.integers(0, 100, n).tolist()))
                    for n in rng.integers(0, 10, 32**3)]
        payload = n5_label_multiset_encode(LabelMultisetArray.from_elements(elements).reshape(32, 32, 32))
        what = "synthetic block like downscaleTest (no shared data)"
    shape = (32, 32, 32)
    assert np.array_equal(decode_payload_labels(payload, shape, N5_LAYOUT, threads=1),
                          decode_payload(payload, shape, N5_LAYOUT, threads=1).argmax(threads=1))
    n = 200

    def labels():
        for _ in range(n):
            decode_payload_labels(payload, shape, N5_LAYOUT, threads=1)

    def full():
        for _ in range(n):
            decode_payload(payload, shape, N5_LAYOUT, threads=1).argmax(threads=1)

    t_labels = median_time(labels, repeat) / n
    t_full = median_time(full, repeat) / n
    print(f"decode to labels: {what} ({len(payload)} bytes), 1 thread")
    row("decode_payload_labels", len(payload) / t_labels / 1e9, "GB/s", ">= 1.5", len(payload) / t_labels >= 1.5e9)
    row("decode_payload + argmax (before)", len(payload) / t_full / 1e9, "GB/s")
    row("speed-up", t_full / t_labels, "x")


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "n5"))
    args = parser.parse_args(argv)
    dask.config.set({"array.slicing.split_large_chunks": False})
    with tempfile.TemporaryDirectory(prefix="n5ms-bench-labels-") as workdir:
        zarr_views(voronoi_labels((args.size,) * 3, 1000, seed=2), Path(workdir), args.repeat)
    real_block(args.data, args.repeat)


if __name__ == "__main__":
    main()
