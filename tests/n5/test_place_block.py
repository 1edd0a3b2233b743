"""The tiled byte-swapping transpose that places plain blocks (n5.default.place_block) against
numpy's own assignment, for every N5 item size, 1 to 3 dimensions, cropped and offset regions."""

import numpy as np
import pytest

from n5mscodecs import n5
from n5mscodecs.n5.default import place_block


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint32", "float32", "int64", "float64"])
@pytest.mark.parametrize("shape", [(70,), (9, 70), (5, 67, 3), (33, 40, 65)])
def test_place_block_equals_numpy(dtype, shape):
    rng = np.random.default_rng(len(shape))
    native = (rng.standard_normal(shape) * 1000).astype(dtype)
    stored = np.asfortranarray(native.astype(native.dtype.newbyteorder(">")))  # as decoded: BE, F order
    usable = tuple(slice(1, n - 1) if n > 2 else slice(0, n) for n in shape)
    out = np.full(tuple(n + 5 for n in shape), 7, dtype)
    region = tuple(slice(2, 2 + u.stop - u.start) for u in usable)
    expected = out.copy()
    expected[region] = native[usable]
    place_block(out[region], stored, usable)
    assert np.array_equal(out, expected)


def test_reads_of_every_dtype_and_window_match_the_data(tmp_path):
    rng = np.random.default_rng(5)
    for dtype in ("uint8", "int16", "uint32", "float32", "int64", "float64"):
        data = (rng.standard_normal((50, 37, 21)) * 100).astype(dtype)
        dataset = n5.write_array(tmp_path / f"{dtype}.n5", data, chunks=(16, 16, 8), compression="raw")
        assert np.array_equal(dataset[...], data)
        assert np.array_equal(dataset.read((slice(3, 45), slice(30, 37), 5), threads=2), data[3:45, 30:37, 5])
        assert np.array_equal(dataset[10:40:3, :, 2:19], data[10:40:3, :, 2:19])


@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_vector_tiles_equal_the_portable_loop(itemsize):
    """The AVX2 tiles (2-, 4- and 8-byte values; where the CPU has it) and the portable loop place
    every box of a block alike: offsets into the block, sizes around the tile sides (4, 8, 16,
    32 and one past), destinations with padded rows."""
    from n5mscodecs.n5 import _place

    rng = np.random.default_rng(itemsize)
    dims = (70, 11, 70)
    block = rng.integers(0, 255, int(np.prod(dims)) * itemsize, dtype=np.uint8)
    values = block.view(f">u{itemsize}").reshape(dims, order="F")
    boxes = [(1, 1, 1), (8, 3, 8), (16, 2, 16), (17, 1, 33), (32, 4, 64), (33, 11, 65), (4, 5, 9), (64, 2, 48),
             (65, 3, 70)]
    for count in boxes:
        start = tuple(int(rng.integers(0, d - c + 1)) for d, c in zip(dims, count))
        results = []
        for simd in (True, False):
            out = np.zeros((count[0] + 3, count[1] + 2, count[2] + 5), f"u{itemsize}")
            region = out[1:1 + count[0], 2:2 + count[1], 3:3 + count[2]]
            _place.place_block(block, dims, start, region.view(np.uint8), itemsize, simd)
            results.append(out)
        box = tuple(slice(s, s + c) for s, c in zip(start, count))
        assert np.array_equal(results[0][1:1 + count[0], 2:2 + count[1], 3:3 + count[2]], values[box])
        assert np.array_equal(results[0], results[1])
