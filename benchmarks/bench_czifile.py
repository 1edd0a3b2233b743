"""czifile reading a mode-7 (chunked) CZI image, with and without ``accelerate_czifile``.

The file: an 8192 x 8192 uint16 image (smooth structures plus Poisson noise, 128 MiB),
written uncompressed by pylibCZIrw (libCZI's writer: 3 x 3 tiles of about 2730 x 2730 for
this size, one subblock each) and rewritten as mode 7 the way ZEN writes it (zstd level 1,
hi/lo, 64 KiB chunks) by the test helper ``rewrite_subblocks``. Each round reads it
with ``czifile.imread`` twice, once plainly (imagecodecs, one thread) and once inside
``accelerate_czifile(threads=...)``; the medians and their ratio come from the same run.

The ceiling: how much faster two threads are than one on this machine right now, measured
by hashing (``hashlib.sha256`` releases the GIL) two buffers on one thread and on two, in the
same rounds. A ratio near that ceiling is what the machine allows; a weak or busy second core
lowers both.

Needs Python >= 3.12 with czifile, imagecodecs and pylibCZIrw.

Usage: python benchmarks/bench_czifile.py [--size 8192] [--repeat 7] [--threads 2]
"""

import argparse
import hashlib
import os
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
from timing import interleaved_medians

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "czi"))

import czifile
import imagecodecs
from pylibCZIrw import czi as pyczi
from test_czifile import rewrite_subblocks

import n5mscodecs
from n5mscodecs import accelerate_czifile


def realistic_image(size, seed=0):
    """Smooth cell-like blobs and gradients (computed at 1/8 resolution, then upsampled)
    with Poisson noise, as uint16."""
    rng = np.random.default_rng(seed)
    small = size // 8
    y = np.arange(small, dtype=np.float32)[:, None]
    x = np.arange(small, dtype=np.float32)[None, :]
    expected = 400 + 300 * np.sin(x / 12.0) * np.cos(y / 16.0)
    for _ in range(60):
        cy, cx = rng.uniform(0, small), rng.uniform(0, small)
        radius = rng.uniform(3, 15)
        expected = expected + rng.uniform(500, 3000) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * radius**2))
    smooth = np.repeat(np.repeat(expected, 8, axis=0), 8, axis=1)
    return rng.poisson(smooth).astype(np.uint16)


def hashing(buffers, threads):
    """sha256 of every buffer, on one thread or one thread per buffer."""
    if threads == 1:
        for buffer in buffers:
            hashlib.sha256(buffer).digest()
        return
    workers = [threading.Thread(target=lambda b=buffer: hashlib.sha256(b).digest()) for buffer in buffers]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()




def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="image rows and columns")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--level", type=int, default=1, help="zstd level")
    args = parser.parse_args()

    image = realistic_image(args.size)
    with tempfile.TemporaryDirectory() as folder:
        written, mode7 = Path(folder) / "written.czi", Path(folder) / "mode7.czi"
        with pyczi.create_czi(str(written), exist_ok=True) as writer:
            writer.write(data=image, plane={"C": 0})
        sizes = []

        def chunked(index, pixels):  # each tile pylibCZIrw wrote, as Gray16 mode 7
            payload = n5mscodecs.chunked_encode(pixels, level=args.level, max_chunk_size=65536, hilo=True)
            sizes.append(len(payload))
            return 1, 7, payload

        rewrite_subblocks(written, mode7, chunked)
        written.unlink()
        print(
            f"czifile {czifile.__version__}, imagecodecs {imagecodecs.__version__}, n5mscodecs "
            f"{n5mscodecs.__version__}; image {image.shape} uint16 ({image.nbytes / 2**20:.0f} MiB) in "
            f"{len(sizes)} subblocks (pylibCZIrw's tiles), zstd level {args.level} + hi/lo, 64 KiB chunks, "
            f"compression ratio {image.nbytes / sum(sizes):.3f}; {len(os.sched_getaffinity(0))} CPUs, {args.repeat} "
            f"interleaved rounds, load average {os.getloadavg()[0]:.2f}"
        )

        def plain():
            return czifile.imread(mode7)

        def accelerated():
            with accelerate_czifile(threads=args.threads):
                return czifile.imread(mode7)

        def accelerated_one_thread():
            with accelerate_czifile(threads=1):
                return czifile.imread(mode7)

        assert np.array_equal(plain(), image) and np.array_equal(accelerated(), image)
        buffers = [np.random.default_rng(1).bytes(32 << 20) for _ in range(2)]
        functions = {
            "czifile (imagecodecs)": plain,
            "czifile accelerated, 1 thread": accelerated_one_thread,
            f"czifile accelerated, {args.threads} threads": accelerated,
            "sha256 2 x 32 MiB, 1 thread": lambda: hashing(buffers, 1),
            "sha256 2 x 32 MiB, 2 threads": lambda: hashing(buffers, 2),
        }
        medians = interleaved_medians(functions, args.repeat)

    reference = medians["czifile (imagecodecs)"][0]
    for name, (seconds, busy) in medians.items():
        line = f"  {name:<34} {seconds * 1e3:8.1f} ms  cpu {busy:.2f}"
        if name.startswith("czifile"):
            line += f"  {image.nbytes / seconds / 1e6:7.0f} MB/s  {reference / seconds:.2f}x"
        print(line)
    ratio = reference / medians[f"czifile accelerated, {args.threads} threads"][0]
    ceiling = medians["sha256 2 x 32 MiB, 1 thread"][0] / medians["sha256 2 x 32 MiB, 2 threads"][0]
    print(
        f"accelerated czifile: {ratio:.2f}x czifile's own read; two-thread ceiling of this machine now "
        f"(sha256): {ceiling:.2f}x; load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
