"""N5 gzip blocks: the whole-block libdeflate path (blocks of known size) and the streaming
zlib-ng path must agree on every input, and hostile trailers must not reserve what they claim."""

import gzip
import os
import subprocess
import sys
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



ASAN = "asan" in os.environ.get("LD_PRELOAD", "")
CLAIM_PROBE = """
import gzip, resource, sys, zlib
from n5mscodecs.errors import CompressionError
from n5mscodecs.n5.compression import Gzip
claim = 1 << 30
if sys.argv[1] == "gzip":
    stream = bytearray(gzip.compress(b"\\0" * 1000))
    stream[-4:] = claim.to_bytes(4, "little")
else:
    stream = bytearray(zlib.compress(b"\\0" * 1000))
# no more address space than the interpreter has plus 256 MiB: reserving the claim fails loudly
with open("/proc/self/statm") as statm:
    used = int(statm.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + (256 << 20), resource.RLIM_INFINITY))
try:
    Gzip().decode(bytes(stream), expected_size=claim)
except CompressionError as exc:
    print("CompressionError", exc)
"""


@pytest.mark.skipif(ASAN or not sys.platform.startswith("linux"),
                    reason="an address-space limit needs Linux and no ASan shadow memory")
@pytest.mark.parametrize("framing", ["gzip", "zlib"])
def test_a_size_claim_past_deflates_ratio_reserves_nothing_like_it(framing):
    # the expected size comes from a block header (varlen numElements) and is as hostile as the
    # trailer: deflate expands at most 1032:1, so no stream of these few bytes inflates to 1 GiB
    # and nothing that large may be reserved for it (the fuzzer's n5_varlen out-of-memory finding)
    done = subprocess.run([sys.executable, "-c", CLAIM_PROBE, framing], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("CompressionError gzip:"), done.stdout


def test_libdeflate_is_never_asked_for_more_than_the_stream_can_give(monkeypatch):
    # libdeflate mallocs the zlib output size it is given before inflating (outside tracemalloc and,
    # where malloc is lazy, outside RLIMIT_AS): watch what it is asked for
    asked, real = [], compression._libdeflate

    class Spy:
        DeflateError = real.DeflateError

        def zlib_decompress(self, data, size):
            asked.append(size)
            return real.zlib_decompress(data, size)

        def gzip_decompress(self, data):
            asked.append(int.from_bytes(bytes(data[-4:]), "little"))
            return real.gzip_decompress(data)

    monkeypatch.setattr(compression, "_libdeflate", Spy())
    stream = zlib.compress(PAYLOAD)
    with pytest.raises(CompressionError, match="gzip"):
        Gzip().decode(stream, expected_size=1 << 30)
    assert Gzip().decode(stream, expected_size=len(PAYLOAD)) == PAYLOAD
    assert asked == [len(PAYLOAD)]
