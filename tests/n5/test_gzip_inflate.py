"""N5 gzip blocks: the whole-block libdeflate path (blocks of known size) and the streaming
zlib-ng path must agree on every input, and hostile trailers must not reserve what they claim."""

import gzip
import tracemalloc
import zlib

import numpy as np
import pytest

from n5mscodecs.errors import CompressionError
from n5mscodecs.n5 import compression
from n5mscodecs.n5.compression import Gzip

pytest.importorskip("deflate")

PAYLOAD = np.random.default_rng(3).integers(0, 2**20, 4096).astype(">u4").tobytes()


def streaming(data, expected_size):
    """The same decode with the whole-block path switched off."""
    saved, compression._libdeflate = compression._libdeflate, None
    try:
        return Gzip().decode(data, expected_size)
    finally:
        compression._libdeflate = saved


@pytest.mark.parametrize("stream", [
    gzip.compress(PAYLOAD, 6),                  # what Java and we write by default
    zlib.compress(PAYLOAD, 6),                  # useZlib: true
    Gzip(1, use_zlib=False).encode(PAYLOAD),
    gzip.compress(PAYLOAD[:100]) + gzip.compress(PAYLOAD[100:]),   # concatenated members
], ids=["gzip", "zlib", "ours", "members"])
def test_both_paths_decode_every_framing(stream):
    assert Gzip().decode(stream, len(PAYLOAD)) == PAYLOAD == streaming(stream, len(PAYLOAD))
    assert Gzip().decode(stream, max_size=len(PAYLOAD)) == PAYLOAD


def test_whole_block_path_is_taken_for_a_single_member():
    stream = gzip.compress(PAYLOAD)
    assert compression._inflate_whole(memoryview(stream), len(PAYLOAD)) == PAYLOAD
    # a size the trailer does not claim goes to the streaming path, which words the error
    assert compression._inflate_whole(memoryview(stream), len(PAYLOAD) - 4) is None
    with pytest.raises(CompressionError, match="decompresses past|header expects"):
        Gzip().decode(stream, len(PAYLOAD) - 4)


@pytest.mark.parametrize("damage", ["crc", "adler", "truncated"])
def test_damaged_streams_raise_the_same_error_on_both_paths(damage):
    if damage == "crc":
        stream = bytearray(gzip.compress(PAYLOAD))
        stream[-8] ^= 0xFF
    elif damage == "adler":
        stream = bytearray(zlib.compress(PAYLOAD))
        stream[-1] ^= 0xFF
    else:
        stream = bytearray(gzip.compress(PAYLOAD)[:-100])
    for decode in (lambda: Gzip().decode(bytes(stream), len(PAYLOAD)),
                   lambda: streaming(bytes(stream), len(PAYLOAD))):
        with pytest.raises(CompressionError, match="gzip"):
            decode()


def test_a_trailer_claiming_4_gib_reserves_nothing_like_it():
    stream = bytearray(gzip.compress(b"\0" * 1000))
    stream[-4:] = (2**32 - 1).to_bytes(4, "little")
    tracemalloc.start()
    try:
        with pytest.raises(CompressionError):
            Gzip().decode(bytes(stream), max_size=1 << 20)
        with pytest.raises(CompressionError):
            Gzip().decode(bytes(stream), expected_size=1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
