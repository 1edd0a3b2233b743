"""OME-Zarr export of the demo's pyramid (256^3 Voronoi labels, 64^3 blocks, gzip), against the
baseline measured in the same run: reading every level's labels (``open_pyramid`` levels
computed) plus writing plain zarr arrays of the same chunks with the same compressor (what a
user's own loop over levels costs). Target (issue 31): export within 1.5x the baseline.

``--part multisets`` (issue 44): the lossless export (``multisets=True``, zarr v3
``label_multiset`` arrays) against the plain export (NGFF 0.5, unsharded and with the default
shards), same compressor, interleaved. Target: within 1.5x the plain export.

    python benchmarks/bench_ome_zarr.py [--size 256] [--repeat 5] [--threads 2] [--part all|hand|multisets]
"""

import argparse
import shutil
import tempfile

import numcodecs
import numpy as np
import zarr
from timing import interleaved_medians

from n5mscodecs import INVALID, paintera
from n5mscodecs.demo import voronoi_labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--labels", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--part", choices=("all", "hand", "multisets"), default="all")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-ome-")
    try:
        source = f"{work}/demo.n5/labels"
        paintera.convert(voronoi_labels((args.size,) * 3, args.labels, 0), source, block_size=64,
                         compression={"type": "gzip", "level": 6}, threads=args.threads)
        pyramid = paintera.open_pyramid(source, fill_label=0)
        gzip = {2: [numcodecs.GZip(level=6)], 3: [zarr.codecs.GzipCodec(level=6)]}

        def by_hand(zarr_format):
            def run():
                group = zarr.open_group(f"{work}/hand.zarr", mode="w", zarr_format=zarr_format)
                for k, level in enumerate(pyramid.levels):
                    labels = level.compute(scheduler="threads", num_workers=args.threads).T
                    labels[labels == INVALID] = 0
                    array = group.create_array(f"s{k}", shape=labels.shape, chunks=(64, 64, 64), dtype="uint64",
                                               fill_value=0, compressors=gzip[zarr_format])
                    array[...] = labels
            return run

        def export(version, multisets=False, shards=False):
            def run():
                paintera.to_ome_zarr(source, f"{work}/export.zarr", version=version, shards=shards,
                                     threads=args.threads, overwrite=True, multisets=multisets,
                                     compressors=gzip[2 if version == "0.4" else 3])
            return run

        if args.part in ("all", "multisets"):
            results = interleaved_medians({"plain, unsharded": export("0.5"), "plain, default shards": export(
                "0.5", shards=True), "multisets": export("0.5", multisets=True)}, args.repeat)
            print(f"Lossless OME-Zarr export (multisets=True) of the demo pyramid ({args.size}^3, {len(pyramid)} "
                  f"levels, 64^3 blocks, gzip 6), {args.threads} threads, interleaved medians of {args.repeat}")
            for name, (seconds, cores) in results.items():
                print(f"  {name:<22} {seconds * 1e3:8.1f} ms  ({cores:.1f} cores busy)")
            for plain in ("plain, unsharded", "plain, default shards"):
                ratio = results["multisets"][0] / results[plain][0]
                print(f"  multisets / {plain}: {ratio:4.2f}x (target <= 1.5x) {'PASS' if ratio <= 1.5 else 'MISS'}")
            if args.part == "multisets":
                return

        results = interleaved_medians({"by hand, zarr v2": by_hand(2), "to_ome_zarr 0.4": export("0.4"),
                                       "by hand, zarr v3": by_hand(3), "to_ome_zarr 0.5": export("0.5")},
                                      args.repeat)
        print(f"OME-Zarr export of the demo pyramid ({args.size}^3, {len(pyramid)} levels, 64^3 blocks, gzip 6), "
              f"{args.threads} threads, medians of {args.repeat}")
        for version, hand in (("0.4", "by hand, zarr v2"), ("0.5", "by hand, zarr v3")):
            ours, baseline = results[f"to_ome_zarr {version}"][0], results[hand][0]
            print(f"  NGFF {version}: to_ome_zarr {ours * 1e3:7.1f} ms, by hand {baseline * 1e3:7.1f} ms: "
                  f"{ours / baseline:4.2f}x (target <= 1.5x)")
        exported, hand = (zarr.open_array(f"{work}/{name}.zarr/s1")[...] for name in ("export", "hand"))
        assert np.array_equal(exported, hand)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
