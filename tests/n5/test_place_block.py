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
