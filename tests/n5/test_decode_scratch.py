"""Blocks decompressed into a thread's scratch (``Compressor.decode_scratch``): the reads that
place a block at once reuse one buffer per thread instead of faulting in fresh memory per block,
with the bounds and errors of ``decode``."""

import threading

import numpy as np
import pytest
import zstandard

from n5mscodecs import n5
from n5mscodecs.errors import CompressionError
from n5mscodecs.n5 import compression
from n5mscodecs.n5.compression import Gzip, Zstd

PAYLOAD = np.random.default_rng(9).integers(0, 2**20, 70_000).astype(">u4").tobytes()


def test_zstd_decodes_into_the_threads_scratch():
    frame = Zstd().encode(PAYLOAD)
    first = Zstd().decode_scratch(frame, len(PAYLOAD))
    assert bytes(first) == PAYLOAD
    second = Zstd().decode_scratch(Zstd().encode(PAYLOAD[::-1]), len(PAYLOAD))
    assert bytes(second) == PAYLOAD[::-1]
    # the same memory: the first result is gone, as its callers know
    assert np.shares_memory(first, second) and bytes(first) == PAYLOAD[::-1]
    fresh = Zstd().decode(frame, len(PAYLOAD))
    assert not np.shares_memory(fresh, second) and bytes(fresh) == PAYLOAD

    seen = []

    def other_thread():
        seen.append(Zstd().decode_scratch(frame, len(PAYLOAD)))

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert not np.shares_memory(seen[0], second) and bytes(seen[0]) == PAYLOAD


def test_scratch_keeps_the_bounds_and_errors_of_decode():
    frame = zstandard.ZstdCompressor().compress(PAYLOAD)   # content size in the frame
    with pytest.raises(CompressionError, match="header expects"):
        Zstd().decode_scratch(frame, len(PAYLOAD) + 4)
    with pytest.raises(CompressionError, match=f"decompressed to {len(PAYLOAD) - 3} bytes, header expects"):
        Zstd().decode_scratch(frame, len(PAYLOAD) - 4)   # stopped one byte past the block
    with pytest.raises(CompressionError, match="corrupt"):
        Zstd().decode_scratch(b"\x28\xb5\x2f\xfd" + b"\xff" * 40, len(PAYLOAD))
    # past the size kept per thread: a buffer of its own
    big = bytes(compression._SCRATCH_KEEP + 8)
    kept = Zstd().decode_scratch(Zstd().encode(PAYLOAD), len(PAYLOAD))
    large = Zstd().decode_scratch(Zstd().encode(big), len(big))
    assert bytes(large) == big and not np.shares_memory(large, kept)
    # compressors without a scratch path decode as decode does
    assert bytes(Gzip().decode_scratch(Gzip().encode(PAYLOAD), len(PAYLOAD))) == PAYLOAD


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_reads_through_the_scratch_place_every_block(tmp_path, threads):
    data = np.random.default_rng(threads).integers(0, 2**31, (70, 45, 33)).astype(np.int64)
    dataset = n5.write_array(tmp_path / "z.n5", data, chunks=(16, 16, 16), compression="zstd")
    assert np.array_equal(dataset.read(threads=threads), data)
    assert np.array_equal(dataset.read((slice(3, 60), 7, slice(None)), threads=threads), data[3:60, 7, :])
    block = dataset.read_block((1, 1, 1))   # a user's block is never scratch
    again = dataset.read_block((0, 0, 0))
    assert np.array_equal(block, data[16:32, 16:32, 16:32].astype(">i8")) and not np.shares_memory(block, again)
