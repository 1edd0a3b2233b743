"""Work proportional to what is stored: ``n5ms argmax`` and ``info --check`` of a sparse label
multiset dataset (8192 x 8192 x 1024 voxels, 64^3 blocks: 262,144 grid positions, 27 blocks
present), against the baseline of decoding those 27 blocks to labels and writing them to a uint64
dataset by hand (argmax's work, nothing else), in the same run.

Run from the repository root: ``python benchmarks/bench_sparse.py [--repeat 5]``. Before issue 25
the argmax visited every grid position (44.5 s and 3.9 GB for the same shape with 2M positions).
"""

import argparse
import contextlib
import io
import os
import resource
import shutil
import tempfile

import numpy as np
from timing import interleaved_medians

from n5mscodecs import n5
from n5mscodecs.cli import main


def sparse_dataset(path, n_blocks=27, seed=3):
    attributes = {"dataType": "uint8", "compression": {"type": "gzip"}, "blockSize": [64, 64, 64],
                  "dimensions": [8192, 8192, 1024], "isLabelMultiset": True}
    n5.write_attributes(path, attributes)
    dataset = n5.open(path)
    rng = np.random.default_rng(seed)
    positions = set()
    while len(positions) < n_blocks:
        positions.add(tuple(int(g) for g in rng.integers(0, dataset.grid_shape)))
    for k, position in enumerate(sorted(positions)):
        dataset.write_block(position, rng.integers(1, 50, (64, 64, 64)).astype(np.uint64) + 100 * k)
    return dataset


def main_(repeat):
    work = tempfile.mkdtemp(prefix="bench-sparse-")
    try:
        source = os.path.join(work, "sparse.n5", "s0")
        dataset = sparse_dataset(source)
        positions = dataset.present_blocks()
        target = os.path.join(work, "argmax.n5", "s0")

        by_hand = n5.create_array_dataset(os.path.join(work, "by-hand.n5", "s0"), dataset.shape, dataset.chunks,
                                          "uint64", compression=dataset.attributes["compression"])

        def decode_present():
            for position in positions:
                by_hand.write_block(position, dataset.read_block_labels(position))

        def argmax():
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["argmax", source, target, "--overwrite", "--quiet", "--threads", "1"]) == 0

        def check():
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["info", "--check", source]) == 0

        results = interleaved_medians({"by hand": decode_present, "n5ms argmax": argmax,
                                       "n5ms info --check": check}, repeat)
        baseline = results["by hand"][0]
        print(f"sparse dataset: {dataset.shape} voxels, {int(np.prod(dataset.grid_shape))} grid positions, "
              f"{len(positions)} blocks present; medians of {repeat}")
        for name, (seconds, _) in results.items():
            ratio = seconds / baseline
            print(f"  {name:20s} {seconds * 1e3:8.1f} ms  {ratio:5.2f}x by hand (decode + write the 27 blocks)")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  peak memory of the whole run: {peak:.0f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    main_(parser.parse_args().repeat)
