"""Tests for the CZI chunked (mode 7) codec.

Headers in the format tests are written out byte by byte here, never produced
by our encoder; chunk data comes straight from ``zstandard`` / ``lz4.block``.
Every test runs on both chunk paths: the kernels calling the zstd/LZ4 C
functions themselves, and the fallback through the packages' Python APIs.
"""

import json
import sys
import tracemalloc

import lz4.block
import numcodecs
import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from n5mscodecs import (
    ChunkedFormatError,
    ConfigurationError,
    CziChunked,
    InputTypeError,
    chunked_decode,
    chunked_encode,
    chunked_info,
)
from n5mscodecs._status import Status
from n5mscodecs.czi import header as czi_header

# every test runs on both chunk paths (tests/czi/conftest.py)
pytestmark = pytest.mark.usefixtures("chunk_path")


def zstd_frame(data, content_size=True):
    return zstandard.ZstdCompressor(level=1, write_content_size=content_size).compress(data)


def lz4_block(data):
    return lz4.block.compress(data, store_size=False)


def varint(value, width):
    """Bounded varint written out by hand: 7 bits per byte, 8 in the last allowed byte."""
    out = bytearray()
    while len(out) < width - 1 and value >= 0x80:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    assert value < (0x80 if len(out) < width - 1 else 0x100)
    out.append(value)
    return bytes(out)


def test_varint_helper_matches_hand_computed_bytes():
    assert varint(1000, 3) == b"\xe8\x07"
    assert varint(200_000, 4) == b"\xc0\x9a\x0c"
    assert varint(536_870_911, 4) == b"\xff\xff\xff\xff"


def one_byte_sizes(*sizes):
    """Sizes below 128 are single-byte varints."""
    assert all(s < 128 for s in sizes)
    return bytes(sizes)


def hilo_split(chunk):
    """Reference hi/lo packing of one chunk, written independently of the kernel."""
    words = len(chunk) // 2
    return chunk[0 : 2 * words : 2] + chunk[1 : 2 * words : 2] + chunk[2 * words :]


# --- hand-built headers: valid forms ---------------------------------------------


def test_minimal_zstd_payload_decodes():
    frame = zstd_frame(b"hello, chunked")
    payload = b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x0e" + b"\x00" + frame
    assert bytes(chunked_decode(payload)) == b"hello, chunked"
    info = chunked_info(payload)
    assert (info.codec, info.hilo, info.preprocessing, info.chunk_count) == ("zstd", False, None, 1)
    assert info.header_size == 7
    assert info.compressed_sizes.tolist() == [len(frame)]
    assert info.decompressed_size == 14
    assert info.trailing_bytes == 0


def test_header_chunks_are_parsed_by_id_in_any_order():
    parts = [b"abcdefgh", b"ijkl"]
    blocks = [lz4_block(p) for p in parts]
    payload = (
        b"\x04\x01\x00"  # Preprocessing: none
        + b"\x03\x02\x08\x04"  # DecompressedSizes [8, 4]
        + b"\x02\x01\x01"  # CompressionMethod: LZ4
        + b"\x01\x02" + one_byte_sizes(*map(len, blocks))  # ChunkSizes
        + b"\x00"
        + b"".join(blocks)
    )
    assert bytes(chunked_decode(payload)) == b"abcdefghijkl"
    info = chunked_info(payload)
    assert info.codec == "lz4" and info.preprocessing == 0 and not info.hilo


def test_non_minimal_varints_are_accepted():
    frame = zstd_frame(b"xyz")
    payload = (
        b"\x81\x00"  # id 1 (ChunkSizes), two bytes
        + b"\x84\x80\x00"  # length 4, three bytes
        + bytes([0x80 | len(frame), 0x80, 0x80, 0x00])  # compressed size, four bytes
        + b"\x83\x00"  # id 3 (DecompressedSizes), two bytes
        + b"\x82\x00"  # length 2
        + b"\x83\x00"  # size 3 in two bytes
        + b"\x80\x00"  # EndOfHeader (id 0) in two bytes
        + frame
    )
    assert bytes(chunked_decode(payload)) == b"xyz"
    assert chunked_info(payload).header_size == 2 + 3 + 4 + 2 + 2 + 2 + 2


def test_last_varint_byte_carries_eight_value_bits():
    block = lz4_block(b"q")
    payload = (
        b"\x01\x01" + one_byte_sizes(len(block))
        + b"\x03\x04\xff\xff\xff\xff"  # 4-byte size with all bits set: 536,870,911
        + b"\x02\x01\x01\x00"
        + block
    )  # fmt: skip
    info = chunked_info(payload)
    assert info.decompressed_sizes.tolist() == [536_870_911] == [czi_header.MAX_CHUNK_SIZE]
    # Two-byte id: 0xff 0xff is 32767 (an unknown id), not a continuation.
    with pytest.raises(ChunkedFormatError, match="unknown header chunk id 32767"):
        chunked_info(b"\xff\xff\x00")
    # Three-byte length 0xff 0xff 0xff is 4,194,303: past the end here.
    with pytest.raises(ChunkedFormatError, match="ChunkSizes payload .* runs past the end"):
        chunked_info(b"\x01\xff\xff\xff" + bytes(100))


def test_decompressed_sizes_general_suffix_form():
    # n = 3 values for N = 5 chunks: [d[n-2]] * (N - n) + d
    sizes = [20, 20, 10, 20, 30]
    parts = [bytes([65 + i]) * s for i, s in enumerate(sizes)]
    blocks = [lz4_block(p) for p in parts]
    payload = (
        b"\x01\x05" + one_byte_sizes(*map(len, blocks))
        + b"\x03\x03\x0a\x14\x1e"
        + b"\x02\x01\x01\x00"
        + b"".join(blocks)
    )  # fmt: skip
    assert chunked_info(payload).decompressed_sizes.tolist() == sizes
    assert bytes(chunked_decode(payload)) == b"".join(parts)


def test_single_decompressed_size_applies_to_all_chunks():
    parts = [b"a" * 9, b"b" * 9, b"c" * 9]
    blocks = [lz4_block(p) for p in parts]
    payload = b"\x01\x03" + one_byte_sizes(*map(len, blocks)) + b"\x03\x01\x09\x02\x01\x01\x00" + b"".join(blocks)
    assert chunked_info(payload).decompressed_sizes.tolist() == [9, 9, 9]
    assert bytes(chunked_decode(payload)) == b"".join(parts)


def test_hilo_is_undone_per_chunk():
    chunks = [b"abcdefgh", b"ijklm"]  # second chunk has an odd trailing byte
    packed = [hilo_split(c) for c in chunks]
    assert packed == [b"acegbdfh", b"ikjlm"]
    frames = [zstd_frame(p) for p in packed]
    payload = b"\x01\x02" + one_byte_sizes(*map(len, frames)) + b"\x03\x02\x08\x05\x04\x01\x01\x00" + b"".join(frames)
    assert bytes(chunked_decode(payload)) == b"abcdefghijklm"
    assert chunked_info(payload).hilo


def test_trailing_bytes_after_last_chunk_are_ignored():
    frame = zstd_frame(b"data")
    payload = b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x04\x00" + frame + b"\xde\xad\xbe\xef"
    assert bytes(chunked_decode(payload)) == b"data"
    assert chunked_info(payload).trailing_bytes == 4


def test_zstd_frame_without_content_size_is_decoded():
    frame = zstd_frame(b"no size" * 3, content_size=False)
    payload = b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x15\x00" + frame
    assert bytes(chunked_decode(payload)) == b"no size" * 3


# --- hand-built headers: errors ----------------------------------------------------

LZ4_A8 = lz4_block(b"a" * 8)


@pytest.mark.parametrize(
    "payload, message",
    [
        (b"", "before EndOfHeader"),
        (b"\x81", "before EndOfHeader"),  # id varint truncated
        (b"\x01", "ChunkSizes payload length varint truncated"),
        (b"\x01\x80\x80", "ChunkSizes payload length varint truncated"),
        (b"\x01\x05\x01\x02", "ChunkSizes payload starting at byte 2 runs past the end"),
        (b"\x01\x01\x05\x03\x01\x08", "before EndOfHeader"),  # no EndOfHeader
        (b"\x05\x00\x00", "unknown header chunk id 5"),
        (b"\x01\x01\x80\x03\x01\x08\x00", "ChunkSizes: size varint truncated"),
        (b"\x01\x01\x05\x03\x02\x08\x80\x00", "DecompressedSizes: size varint truncated"),
        (b"\x03\x01\x08\x00", "required ChunkSizes header chunk .id 1. is missing"),
        (b"\x01\x01\x05\x00", "required DecompressedSizes header chunk .id 3. is missing"),
        (b"\x01\x00\x03\x00\x00", "ChunkSizes: zero chunks, with 0 DecompressedSizes values"),
        (b"\x01\x00\x03\x02\x00\x00\x00", "ChunkSizes: zero chunks, with 2 DecompressedSizes values"),
        (b"\x01\x01\x05\x03\x00\x00", "DecompressedSizes: no values"),
        (b"\x01\x01\x05\x03\x02\x08\x08\x00", "DecompressedSizes: 2 values for 1 chunks"),
        (b"\x01\x01\x05\x03\x01\x08\x02\x01\x02\x00", "CompressionMethod: unsupported value 2"),
        (b"\x01\x01\x05\x03\x01\x08\x02\x02\x01\x00\x00", "CompressionMethod: payload must be exactly 1 byte"),
        (b"\x01\x01\x05\x03\x01\x08\x04\x01\x07\x00", "Preprocessing: unsupported value 7"),
        (b"\x01\x01\x05\x03\x01\x08\x04\x00\x00", "Preprocessing: payload must be exactly 1 byte, got 0"),
        (b"\x01\x02\x05\x7f\x03\x01\x08\x00" + bytes(10), "ChunkSizes: chunks need 132 bytes"),
    ],
)
def test_malformed_headers_name_the_problem(payload, message):
    with pytest.raises(ChunkedFormatError, match=message):
        chunked_decode(payload)
    with pytest.raises(ChunkedFormatError, match=message):
        chunked_info(payload)


def lz4_payload(blocks, declared):
    return (
        b"\x01" + bytes([len(blocks)]) + one_byte_sizes(*map(len, blocks))
        + b"\x03" + bytes([len(declared)]) + one_byte_sizes(*declared)
        + b"\x02\x01\x01\x00"
        + b"".join(blocks)
    )  # fmt: skip


def test_lz4_chunk_decompressing_to_another_size_is_rejected():
    with pytest.raises(ChunkedFormatError, match="chunk 0: decompressed to 8 bytes, DecompressedSizes says 9"):
        chunked_decode(lz4_payload([LZ4_A8], [9]))
    with pytest.raises(ChunkedFormatError, match="chunk 1: corrupt lz4 data"):
        chunked_decode(lz4_payload([LZ4_A8, LZ4_A8], [8, 7]))


def test_zstd_content_size_must_match_declared_size():
    frame = zstd_frame(b"z" * 10)
    payload = b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x09\x00" + frame
    with pytest.raises(ChunkedFormatError, match="chunk 0: zstd frame content size 10 exceeds DecompressedSizes 9"):
        chunked_decode(payload)
    payload = b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x0b\x00" + frame  # more frames could follow
    with pytest.raises(ChunkedFormatError, match="chunk 0: decompressed to 10 bytes, DecompressedSizes says 11"):
        chunked_decode(payload)
    unsized = zstd_frame(b"z" * 10, content_size=False)
    payload = b"\x01\x01" + one_byte_sizes(len(unsized)) + b"\x03\x01\x0b\x00" + unsized
    with pytest.raises(ChunkedFormatError, match="chunk 0: decompressed to 10 bytes"):
        chunked_decode(payload)
    # Declared empty: the decompressor must not run unbounded on an unsized frame.
    bomb = zstd_frame(bytes(1 << 20), content_size=False)
    payload = b"\x01\x01" + one_byte_sizes(len(bomb)) + b"\x03\x01\x00\x00" + bomb
    tracemalloc.start()
    try:
        with pytest.raises(ChunkedFormatError, match="chunk 0: corrupt zstd data"):
            chunked_decode(payload)
        assert tracemalloc.get_traced_memory()[1] < 1 << 19
    finally:
        tracemalloc.stop()


def test_corrupt_chunk_data_is_a_format_error():
    frame = bytearray(zstd_frame(b"abc" * 30))
    assert frame[4] == 0x20  # single segment, 1-byte content size: first block header at 6
    frame[6] |= 0x06  # block type 3 is reserved
    payload = b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x5a\x00" + bytes(frame)
    with pytest.raises(ChunkedFormatError, match="chunk 0: corrupt zstd data"):
        chunked_decode(payload)
    reserved_bit = b"\x28\xb5\x2f\xfd\x28\x08" + bytes(4)  # descriptor bit 3 must be 0
    with pytest.raises(ChunkedFormatError, match="chunk 0: corrupt zstd frame header"):
        chunked_decode(b"\x01\x01\x0a\x03\x01\x08\x00" + reserved_bit)
    truncated = b"\x28\xb5\x2f\xfd\xc0\x08"  # 8-byte content size announced, 1 present
    with pytest.raises(ChunkedFormatError, match="chunk 0: corrupt zstd frame header"):
        chunked_decode(b"\x01\x01\x06\x03\x01\x08\x00" + truncated)
    not_zstd = b"\x01\x01\x08\x03\x01\x08\x00" + b"notzstd!"
    with pytest.raises(ChunkedFormatError, match="chunk 0: not a zstd frame"):
        chunked_decode(not_zstd)
    with pytest.raises(ChunkedFormatError, match="chunk 0: corrupt lz4 data"):
        chunked_decode(lz4_payload([b"\xf0\xff\xff"], [8]))


def skippable_frame(content, magic_low=0):
    return (0x184D2A50 + magic_low).to_bytes(4, "little") + len(content).to_bytes(4, "little") + content


def zstd_chunk_payload(chunk, declared):
    """One zstd chunk holding ``chunk`` (frames as given), declared ``declared`` bytes."""
    return b"\x01" + varint(len(varint(len(chunk), 4)), 3) + varint(len(chunk), 4) + b"\x03" + \
        varint(len(varint(declared, 4)), 3) + varint(declared, 4) + b"\x00" + chunk


def test_zstd_chunks_read_as_zstd_decompress_reads_them():
    """libCZI decodes a chunk with ZSTD_decompress: concatenated frames add up, skippable frames
    are skipped; anything else in a chunk is an error, as there."""
    one, two = zstd_frame(b"one,"), zstd_frame(b"two", content_size=False)
    cases = {
        one + two: b"one,two",
        skippable_frame(b"meta") + one: b"one,",
        one + skippable_frame(b"", 15) + two + skippable_frame(b"x" * 40, 7): b"one,two",
    }
    for chunk, expected in cases.items():
        assert bytes(chunked_decode(zstd_chunk_payload(chunk, len(expected)))) == expected
        assert bytes(chunked_decode(zstd_chunk_payload(chunk, len(expected)), out=np.empty(len(expected), np.uint8))) \
            == expected
    assert bytes(chunked_decode(zstd_chunk_payload(skippable_frame(b"only"), 0))) == b""
    for chunk, declared, problem in [
        (one + two, 4, "(corrupt zstd data|decompressed to 7 bytes)"),  # more than declared
        (one + two, 8, "decompressed to 7 bytes"),              # less
        (one + b"garbage!", 4, "corrupt zstd data"),            # bytes that are no frame
        (one + skippable_frame(b"long")[:-2], 4, "corrupt zstd data"),  # a cut skippable frame
    ]:
        with pytest.raises(ChunkedFormatError, match=f"chunk 0: {problem}"):
            chunked_decode(zstd_chunk_payload(chunk, declared))


def test_a_skippable_frame_claiming_gigabytes_allocates_nothing():
    huge = (0x184D2A53).to_bytes(4, "little") + (0xA29D9B04).to_bytes(4, "little") + b"x" * 29  # claims 2.7 GB
    tracemalloc.start()
    try:
        with pytest.raises(ChunkedFormatError, match="chunk 0: corrupt zstd data"):
            chunked_decode(zstd_chunk_payload(huge, 7))
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


def test_repeated_header_items_keep_the_last():
    """libCZI's header walk keeps the last item of an id."""
    frame = zstd_frame(b"abc")
    payload = (b"\x01\x01\x7f" + b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x09\x03\x01\x03"
               + b"\x04\x01\x01\x04\x01\x00" + b"\x02\x01\x01\x02\x01\x00" + b"\x00" + frame)
    info = chunked_info(payload)
    assert info.compressed_sizes.tolist() == [len(frame)] and info.decompressed_size == 3
    assert info.codec == "zstd" and not info.hilo
    assert bytes(chunked_decode(payload)) == b"abc"


def test_header_forms():
    data = bytes(range(50))
    libczi, minimal = chunked_encode(data, level=1), chunked_encode(data, level=1, header="minimal")
    frame = zstd_frame(data)
    assert libczi == b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x32" + b"\x04\x01\x00" + b"\x00" + frame
    assert minimal == b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x32" + b"\x00" + frame
    assert chunked_info(libczi).header_form == "libczi" and chunked_info(libczi).preprocessing == 0
    assert chunked_info(minimal).header_form == "minimal" and chunked_info(minimal).preprocessing is None
    assert bytes(chunked_decode(libczi)) == bytes(chunked_decode(minimal)) == data
    words = np.arange(30, dtype=np.uint16)
    assert chunked_encode(words, hilo=True) == chunked_encode(words, hilo=True, header="minimal")
    with pytest.raises(ConfigurationError, match="header must be one of"):
        chunked_encode(data, header="zen")


def test_huge_claimed_sizes_fail_fast_without_allocating():
    # 1000 one-byte LZ4 chunks each claiming 536,870,911 bytes (~500 GiB in total).
    payload = b"\x01" + varint(1000, 3) + b"\x01" * 1000 + b"\x03\x04\xff\xff\xff\xff\x02\x01\x01\x00" + b"\x00" * 1000
    assert chunked_info(payload).decompressed_size == 1000 * 536_870_911
    tracemalloc.start()
    try:
        with pytest.raises(ChunkedFormatError, match="maximum expansion"):
            chunked_decode(payload)
        # A zstd frame header may claim any content size; it must agree with the header.
        frame = zstd_frame(bytes(1000))
        assert frame[4] == 0x60  # single segment, 2-byte content size: header is 7 bytes
        claim = b"\x28\xb5\x2f\xfd\xa0" + (400_000_000).to_bytes(4, "little") + frame[7:]
        chunk_sizes = b"\x01" + varint(len(varint(len(claim), 4)), 3) + varint(len(claim), 4)
        for declared, message in ((1000, "content size 400000000 exceeds"), (400_000_000, "maximum expansion")):
            sizes = varint(declared, 4)
            header = chunk_sizes + b"\x03" + varint(len(sizes), 3) + sizes + b"\x00"
            with pytest.raises(ChunkedFormatError, match=message):
                chunked_decode(header + claim)
        with pytest.raises(ChunkedFormatError, match="exceed max_decompressed_size"):
            chunked_decode(lz4_payload([LZ4_A8], [8]), max_decompressed_size=7)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # refused from the header's claims, nothing inflated


def test_out_size_must_match_unless_mismatch_is_allowed():
    payload = lz4_payload([LZ4_A8, lz4_block(b"bbbb")], [8, 4])
    with pytest.raises(ChunkedFormatError, match="decodes to 12 bytes, out holds 16"):
        chunked_decode(payload, out=bytearray(16))
    longer = bytearray(b"\xff" * 16)
    assert chunked_decode(payload, out=longer, allow_size_mismatch=True) is longer
    assert bytes(longer) == b"a" * 8 + b"bbbb" + bytes(4)
    shorter = np.zeros(10, np.uint8)
    chunked_decode(payload, out=shorter, allow_size_mismatch=True)
    assert shorter.tobytes() == b"a" * 8 + b"bb"


def test_short_out_skips_chunks_past_its_end_but_checks_those_before():
    corrupt = b"\xf0\xff\xff"
    payload = lz4_payload([LZ4_A8, LZ4_A8, corrupt], [8])
    for size, decoded in ((8, b"a" * 8), (9, b"a" * 9), (16, b"a" * 16)):
        out = bytearray(size)
        chunked_decode(payload, out=out, allow_size_mismatch=True)
        assert bytes(out) == decoded
    with pytest.raises(ChunkedFormatError, match="chunk 2: corrupt lz4 data"):
        chunked_decode(payload, out=bytearray(17), allow_size_mismatch=True)
    with pytest.raises(ChunkedFormatError, match="chunk 1: corrupt lz4 data"):
        chunked_decode(lz4_payload([LZ4_A8, corrupt, LZ4_A8], [8]), out=bytearray(9), allow_size_mismatch=True)


def test_out_truncation_undoes_hilo_before_cutting():
    chunk = b"abcdefgh"
    frame = zstd_frame(hilo_split(chunk))
    payload = b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x08\x04\x01\x01\x00" + frame
    shorter = bytearray(5)
    chunked_decode(payload, out=shorter, allow_size_mismatch=True)
    assert bytes(shorter) == b"abcde"


def test_out_may_be_a_typed_array():
    data = np.arange(1000, dtype=np.uint16).reshape(10, 100)
    out = np.empty_like(data)
    assert chunked_decode(chunked_encode(data, hilo=True, max_chunk_size=300), out=out) is out
    np.testing.assert_array_equal(out, data)
    with pytest.raises(InputTypeError, match="writable"):
        chunked_decode(chunked_encode(data), out=b"\x00" * 2000)


# --- writer ------------------------------------------------------------------------


def test_writer_header_order_lz4():
    data = b"abcdefg" * 3  # 21 bytes in chunks of 8, 8, 5
    payload = chunked_encode(data, codec="lz4", max_chunk_size=8)
    blocks = [lz4_block(data[i : i + 8]) for i in (0, 8, 16)]
    expected = (b"\x01\x03" + one_byte_sizes(*map(len, blocks)) + b"\x03\x02\x08\x05" + b"\x02\x01\x01"
                + b"\x04\x01\x00" + b"\x00")  # libCZI's writer: Preprocessing 0 even without hi/lo
    assert payload == expected + b"".join(blocks)


def test_writer_header_order_zstd_hilo():
    data = bytes(range(40))
    payload = chunked_encode(data, level=1, max_chunk_size=16, hilo=True)
    frames = [zstd_frame(hilo_split(data[i : i + 16])) for i in (0, 16, 32)]
    expected = b"\x01\x03" + one_byte_sizes(*map(len, frames)) + b"\x03\x02\x10\x08" + b"\x04\x01\x01" + b"\x00"
    assert payload == expected + b"".join(frames)


def test_writer_single_value_forms():
    # Exact multiple: [C]; single chunk: its size; zstd without hilo: Preprocessing 0, as libCZI writes.
    exact = chunked_encode(bytes(32), level=1, max_chunk_size=16)
    frame = zstd_frame(bytes(16))
    assert exact == (b"\x01\x02" + one_byte_sizes(len(frame), len(frame)) + b"\x03\x01\x10\x04\x01\x00\x00"
                     + frame + frame)
    single = chunked_encode(bytes(5), level=1, max_chunk_size=1000)
    frame = zstd_frame(bytes(5))
    assert single == b"\x01\x01" + one_byte_sizes(len(frame)) + b"\x03\x01\x05\x04\x01\x00\x00" + frame


def test_empty_input_is_one_empty_chunk():
    payload = chunked_encode(b"")
    empty = zstd_frame(b"")
    assert payload == b"\x01\x01" + one_byte_sizes(len(empty)) + b"\x03\x01\x00\x04\x01\x00\x00" + empty
    assert bytes(chunked_decode(payload)) == b""
    assert bytes(chunked_decode(chunked_encode(b"", codec="lz4"))) == b""


@pytest.mark.parametrize("payload", [
    b"\x01\x00\x03\x01\x00\x00",  # imagecodecs' chunked_encode(b"") (zstd)
    b"\x01\x00\x03\x01\x00\x02\x01\x01\x00",  # the same with codec lz4
    b"\x01\x00\x03\x01\x00\x04\x01\x01\x00",  # hi/lo
])
def test_zero_chunks_decode_to_nothing(payload):
    assert bytes(chunked_decode(payload)) == b""
    assert bytes(CziChunked().decode(payload)) == b""
    out = np.ones(0, np.uint16)
    assert chunked_decode(payload, out=out) is out
    info = chunked_info(payload)
    assert (info.chunk_count, info.decompressed_size, info.compressed_size, info.trailing_bytes) == (0, 0, 0, 0)
    with pytest.raises(ChunkedFormatError, match="0 bytes"):
        chunked_decode(payload, out=np.ones(4, np.uint8))


def test_large_sizes_use_multi_byte_varints():
    data = bytes(300_000)
    payload = chunked_encode(data, codec="lz4", max_chunk_size=200_000)
    # DecompressedSizes [200000, 100000]: 0xc0 0x9a 0x0c and 0xa0 0x8d 0x06.
    assert b"\x03\x06\xc0\x9a\x0c\xa0\x8d\x06" in payload[:32]
    assert chunked_info(payload).decompressed_sizes.tolist() == [200_000, 100_000]


# --- round trips ---------------------------------------------------------------------


ROUND_TRIP_SIZES = [(chunk, length) for chunk in (1, 999, 1000, 65536, 1 << 20)
                    for length in (0, 1, 3001, 4000, 70_001)
                    if not (chunk == 1 and length > 4000)]  # one-byte chunks: short inputs suffice


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
@pytest.mark.parametrize("max_chunk_size, length", ROUND_TRIP_SIZES)
@pytest.mark.parametrize("hilo", [False, True])
def test_round_trip(codec, max_chunk_size, length, hilo):
    rng = np.random.default_rng(length)
    data = (rng.poisson(300, length // 2 + 1).astype(np.uint16).tobytes())[:length]
    payload = chunked_encode(data, codec=codec, level=1, max_chunk_size=max_chunk_size, hilo=hilo)
    info = chunked_info(payload)
    assert info.chunk_count == max(1, -(-length // max_chunk_size))
    assert info.decompressed_size == length and info.codec == codec and info.hilo == hilo
    assert bytes(chunked_decode(payload)) == data
    out = bytearray(length)
    chunked_decode(payload, out=out)
    assert bytes(out) == data


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int32", "float64"])
def test_ndarray_stream_is_memory_order_bytes(dtype):
    # numcodecs' rule: contiguous buffers in memory order, others in C order
    array = np.asfortranarray(np.arange(3 * 50 * 7, dtype=dtype).reshape(3, 50, 7))
    payload = chunked_encode(array, codec="lz4", max_chunk_size=100)
    assert bytes(chunked_decode(payload)) == array.tobytes(order="F")
    strided = array[:, ::2]
    assert bytes(chunked_decode(chunked_encode(strided, codec="lz4", max_chunk_size=100))) == strided.tobytes("C")


def test_hilo_requires_16_bit_arrays_but_trusts_bytes():
    with pytest.raises(ConfigurationError, match="itemsize 2"):
        chunked_encode(np.zeros(10, np.uint8), hilo=True)
    with pytest.raises(ConfigurationError, match="itemsize 2"):
        chunked_encode(np.zeros(10, np.float32), hilo=True)
    samples = np.arange(1000, dtype="<u2")
    from_bytes = chunked_encode(samples.tobytes(), hilo=True)
    assert from_bytes == chunked_encode(samples, hilo=True)
    assert chunked_info(from_bytes).hilo


def test_hilo_packing_improves_smooth_16_bit_data():
    ramp = (np.arange(200_000) // 7).astype(np.uint16)
    plain = chunked_encode(ramp, codec="lz4")
    packed = chunked_encode(ramp, codec="lz4", hilo=True)
    assert len(packed) < len(plain)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"codec": "bzip2"}, "codec must be one of"),
        ({"level": 99}, "zstd level"),
        ({"level": 1.5}, "level must be None or an int"),
        ({"codec": "lz4", "level": 0}, "acceleration"),
        ({"max_chunk_size": 0}, "max_chunk_size"),
        ({"max_chunk_size": 536_870_912}, "max_chunk_size"),
        ({"hilo": "yes"}, "hilo must be a bool"),
        ({"threads": 0}, "threads"),
    ],
)
def test_invalid_encode_options(options, message):
    with pytest.raises(ConfigurationError, match=message):
        chunked_encode(b"abc", **options)


def test_too_many_chunks_for_the_header_is_refused_before_compressing():
    with pytest.raises(ConfigurationError, match="do not fit into the ChunkSizes header chunk"):
        chunked_encode(bytes(4_194_304), max_chunk_size=1)


def test_lz4_acceleration_level_trades_size_for_speed():
    data = np.random.default_rng(3).poisson(50, 100_000).astype(np.uint16).tobytes()
    default = chunked_encode(data, codec="lz4")
    faster = chunked_encode(data, codec="lz4", level=20)
    assert default == chunked_encode(data, codec="lz4", level=1)
    assert len(faster) > len(default)
    assert bytes(chunked_decode(faster)) == data


def test_output_is_identical_for_any_thread_count():
    data = np.random.default_rng(5).poisson(900, 1_500_000).astype(np.uint16)
    for codec in ("zstd", "lz4"):
        payloads = {chunked_encode(data, codec=codec, hilo=True, max_chunk_size=20_000, threads=t) for t in (1, 2, 3)}
        assert len(payloads) == 1
        payload = payloads.pop()
        assert chunked_info(payload).chunk_count == 150
        for threads in (1, 2, 3):
            assert bytes(chunked_decode(payload, threads=threads)) == data.tobytes()


def hand_built_payload(data, codec, hilo, chunk_size, level):
    """libCZI's header and chunks, built here from the libraries' Python APIs."""
    chunks = [data[i:i + chunk_size] for i in range(0, len(data), chunk_size)] or [b""]
    packed = [hilo_split(c) if hilo else c for c in chunks]
    if codec == "zstd":
        bodies = [zstandard.ZstdCompressor(level=level, write_content_size=True).compress(c) for c in packed]
    else:
        bodies = [lz4.block.compress(c, mode="fast", acceleration=level, store_size=False) for c in packed]
    sizes = b"".join(varint(len(b), 4) for b in bodies)
    decompressed = [len(chunks[0])] + ([len(chunks[-1])] if len(chunks[-1]) != len(chunks[0]) else [])
    values = b"".join(varint(v, 4) for v in decompressed)
    header = b"\x01" + varint(len(sizes), 3) + sizes + b"\x03" + varint(len(values), 3) + values
    header += (b"\x02\x01\x01" if codec == "lz4" else b"") + (b"\x04\x01\x01" if hilo else b"\x04\x01\x00") + b"\x00"
    return header + b"".join(bodies)


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
@pytest.mark.parametrize("hilo", [False, True])
@pytest.mark.parametrize("kind", ["noise", "zeros", "mixed", "empty", "one byte", "large"])
def test_one_thread_compresses_in_place_the_bytes_the_workers_stage(codec, hilo, kind):
    """On one thread the chunks are compressed straight into the result, behind room for the
    longest header they can need (every size at its bound); a shorter header (zeros: each
    size a 1-byte varint, its bound 2 bytes) moves them down once. The bytes are those of
    the staged multi-thread path and of a payload built here by hand, and the result holds
    no unused room."""
    rng = np.random.default_rng(7)
    chunk_size = 65536 if kind == "large" else 4096
    data = {
        "noise": rng.integers(0, 1 << 16, 20_001, dtype=np.uint16).tobytes(),
        "zeros": bytes(40_000),
        "mixed": bytes(12_288) + rng.integers(0, 256, 9_000, dtype=np.uint8).tobytes(),
        "empty": b"",
        "one byte": b"\x07",
        "large": rng.poisson(900, 3_000_000).astype(np.uint16).tobytes(),
    }[kind]
    one = chunked_encode(data, level=1, codec=codec, hilo=hilo, max_chunk_size=chunk_size, threads=1)
    assert isinstance(one, bytes) and sys.getsizeof(one) - len(one) < 64
    assert one == chunked_encode(data, level=1, codec=codec, hilo=hilo, max_chunk_size=chunk_size, threads=2)
    if codec == "zstd" or chunk_size < 65536:
        # (64 KiB LZ4 chunks: the lz4 package's Python API and the C function the kernels call
        # compress them differently; only zstd bytes are the same on both paths at every size)
        assert one == hand_built_payload(data, codec, hilo, chunk_size, 1)
    assert bytes(chunked_decode(one)) == data


def test_single_large_chunk_splits_hilo_work_across_threads():
    data = np.random.default_rng(6).poisson(900, 600_001).astype(np.uint16).tobytes()[:-1]  # odd length
    payloads = {chunked_encode(data, codec="lz4", hilo=True, max_chunk_size=1 << 21, threads=t) for t in (1, 2)}
    assert len(payloads) == 1
    payload = payloads.pop()
    assert chunked_info(payload).chunk_count == 1
    for threads in (1, 2):
        assert bytes(chunked_decode(payload, threads=threads)) == data


def test_concurrent_callers_share_the_pool_safely():
    from concurrent.futures import ThreadPoolExecutor

    arrays = [np.random.default_rng(seed).poisson(800, 300_000).astype(np.uint16) for seed in range(6)]
    codec = CziChunked(codec="lz4", max_chunk_size=16_384, hilo=True)  # one instance for all callers

    def round_trip(index):
        threads = 1 + index % 3  # grows the shared pool while other calls use it
        payload = chunked_encode(arrays[index], codec="zstd", level=1, max_chunk_size=16_384, threads=threads)
        assert bytes(chunked_decode(payload, threads=threads)) == arrays[index].tobytes()
        out = np.empty_like(arrays[index])
        codec.decode(codec.encode(arrays[index]), out=out)
        return np.array_equal(out, arrays[index])

    with ThreadPoolExecutor(4) as callers:
        assert all(callers.map(round_trip, range(6)))


def test_errors_from_worker_threads_propagate():
    good = lz4_block(b"a" * 8)
    blocks = [good] * 200 + [b"\xf0\xff\xff"] + [good] * 200
    payload = (
        b"\x01" + varint(len(blocks), 3) + one_byte_sizes(*map(len, blocks))
        + b"\x03\x01\x08\x02\x01\x01\x00"
        + b"".join(blocks)
    )  # fmt: skip
    with pytest.raises(ChunkedFormatError, match="chunk 200: corrupt lz4 data"):
        chunked_decode(payload, threads=2)


# --- numcodecs -----------------------------------------------------------------------


def test_numcodecs_registry_and_config_round_trip():
    codec = numcodecs.get_codec({"id": "czi_chunked", "codec": "lz4", "level": 2, "max_chunk_size": 4096, "hilo": True})
    assert isinstance(codec, CziChunked)
    config = codec.get_config()
    assert config == {"id": "czi_chunked", "codec": "lz4", "level": 2, "max_chunk_size": 4096, "hilo": True}
    clone = CziChunked.from_config({k: v for k, v in config.items() if k != "id"})
    assert clone.get_config() == config
    assert numcodecs.get_codec(config) == codec
    default = CziChunked()
    assert default.get_config() == {"id": "czi_chunked", "codec": "zstd", "level": None, "max_chunk_size": 65536,
                                    "hilo": False}
    assert "czi_chunked" in numcodecs.registry.codec_registry


def test_numcodecs_codec_round_trip():
    codec = CziChunked(codec="zstd", level=1, max_chunk_size=10_000, hilo=True)
    data = np.random.default_rng(9).poisson(1200, (64, 300)).astype(np.uint16)
    encoded = codec.encode(data)
    assert chunked_info(encoded).hilo
    decoded = codec.decode(encoded)
    np.testing.assert_array_equal(np.frombuffer(decoded, np.uint16).reshape(data.shape), data)
    out = np.empty_like(data)
    assert codec.decode(encoded, out=out) is out
    np.testing.assert_array_equal(out, data)


def test_codec_rejects_bad_configuration():
    with pytest.raises(ConfigurationError):
        CziChunked(codec="zlib")
    with pytest.raises(ConfigurationError):
        numcodecs.get_codec({"id": "czi_chunked", "max_chunk_size": -1})


def test_entry_point_is_declared():
    import importlib
    import pathlib
    import tomllib

    pyproject = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"
    entry_points = tomllib.loads(pyproject.read_text())["project"]["entry-points"]["numcodecs.codecs"]
    module, name = entry_points["czi_chunked"].split(":")
    assert getattr(importlib.import_module(module), name) is CziChunked


def test_zarr_v2_format_compressor_round_trip(tmp_path):
    zarr = pytest.importorskip("zarr")
    data = np.random.default_rng(2).poisson(500, (40, 300)).astype(np.uint16)
    array = zarr.create_array(tmp_path / "v2", shape=data.shape, chunks=(20, 150), dtype=data.dtype, zarr_format=2,
                              compressors=CziChunked(max_chunk_size=5000, hilo=True))
    array[:] = data
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "v2")[:], data)
    chunk = (tmp_path / "v2" / "1.1").read_bytes()
    assert chunked_info(chunk).hilo and bytes(chunked_decode(chunk)) == data[20:, 150:].tobytes()


def test_zarr_v3_codec_round_trip(tmp_path):
    zarr = pytest.importorskip("zarr")
    from n5mscodecs.errors import ConfigurationError
    from n5mscodecs.zarr import CziChunkedZarrCodec
    data = np.random.default_rng(3).poisson(500, (40, 300)).astype(np.uint16)
    codec = CziChunkedZarrCodec(codec="lz4", max_chunk_size=4096, hilo=True)
    array = zarr.create_array(tmp_path / "v3", shape=data.shape, chunks=(20, 150), dtype=data.dtype,
                              compressors=[codec])
    array[:] = data
    reopened = zarr.open_array(tmp_path / "v3")
    np.testing.assert_array_equal(reopened[:], data)
    metadata = json.loads((tmp_path / "v3" / "zarr.json").read_text())
    assert metadata["codecs"][-1] == {"name": "czi_chunked", "configuration": {
        "codec": "lz4", "level": None, "max_chunk_size": 4096, "hilo": True}}
    chunk = (tmp_path / "v3" / "c" / "0" / "1").read_bytes()
    assert chunked_info(chunk).codec == "lz4" and bytes(chunked_decode(chunk)) == data[:20, 150:].tobytes()
    with pytest.raises(ConfigurationError, match="16-bit"):
        zarr.create_array(tmp_path / "bad", shape=(4,), chunks=(2,), dtype=np.uint8,
                          compressors=[CziChunkedZarrCodec(hilo=True)])


# --- interop with imagecodecs -------------------------------------------------------------


@pytest.fixture(scope="module")
def imagecodecs():
    module = pytest.importorskip("imagecodecs")
    if not getattr(getattr(module, "CHUNKED", None), "available", False):
        pytest.skip("imagecodecs built without CHUNKED")
    return module


INTEROP_CASES = [
    (codec, chunk, hilo, length)
    for codec in ("zstd", "lz4")
    for chunk, length in ((1000, 10_001), (65536, 300_000), (999, 5000), (1 << 20, 7))
    for hilo in (False, True)
]


@pytest.mark.parametrize("codec, chunk, hilo, length", INTEROP_CASES)
def test_our_payloads_decode_with_imagecodecs(imagecodecs, codec, chunk, hilo, length):
    data = np.random.default_rng(length).poisson(700, length).astype(np.uint16).tobytes()[:length]
    payload = chunked_encode(data, codec=codec, level=1, max_chunk_size=chunk, hilo=hilo)
    assert bytes(imagecodecs.chunked_decode(payload)) == data


@pytest.mark.parametrize("codec, chunk, hilo, length", INTEROP_CASES)
def test_imagecodecs_payloads_decode_with_ours(imagecodecs, codec, chunk, hilo, length):
    data = np.random.default_rng(length).poisson(700, length).astype(np.uint16).tobytes()[:length]
    if hilo:  # imagecodecs packs whole samples only
        data = data[: length // 2 * 2]
    itemsize = 2 if hilo else 1
    payload = imagecodecs.chunked_encode(data, level=1, codec=codec, chunksize=chunk, itemsize=itemsize, hilo=hilo)
    info = chunked_info(payload)
    assert info.codec == codec and info.hilo == hilo
    assert bytes(chunked_decode(payload)) == data


def test_frames_and_repeated_items_read_as_imagecodecs_reads_them(imagecodecs):
    """imagecodecs decodes chunks with ZSTD_decompress too: it accepts and rejects what we do."""
    one, two = zstd_frame(b"one,"), zstd_frame(b"two", content_size=False)
    frame = zstd_frame(b"abc")
    cases = [zstd_chunk_payload(one + two, 7), zstd_chunk_payload(skippable_frame(b"m") + one, 4),
             zstd_chunk_payload(one + skippable_frame(b"") + two, 7), zstd_chunk_payload(one + b"garbage!", 4),
             zstd_chunk_payload(one + two, 4),
             b"\x01\x01\x7f\x01\x01" + bytes([len(frame)]) + b"\x03\x01\x09\x03\x01\x03\x00" + frame]
    for payload in cases:
        try:
            theirs = bytes(imagecodecs.chunked_decode(payload))
        except Exception:  # noqa: BLE001 - imagecodecs raises its own error types
            with pytest.raises(ChunkedFormatError):
                chunked_decode(payload)
        else:
            assert bytes(chunked_decode(payload)) == theirs


def test_imagecodecs_reads_our_ndarray_payload(imagecodecs):
    image = np.random.default_rng(1).poisson(2000, (256, 300)).astype(np.uint16)
    payload = chunked_encode(image, level=1, hilo=True)
    decoded = imagecodecs.chunked_decode(payload, out=np.empty_like(image))
    np.testing.assert_array_equal(np.asarray(decoded).view(np.uint16).reshape(image.shape), image)


# --- property tests ---------------------------------------------------------------------


def check_decode_never_crashes(data):
    try:
        chunked_decode(data)
        chunked_info(data)
    except ChunkedFormatError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_format_errors(data):
    check_decode_never_crashes(data)


VALID_PAYLOADS = [
    chunked_encode(bytes(range(256)) * 8, codec=c, max_chunk_size=300, hilo=h)
    for c in ("zstd", "lz4") for h in (False, True)
]


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(VALID_PAYLOADS),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    st.integers(0, 10_000),
)
def test_corrupted_valid_payloads_raise_only_format_errors(payload, edits, cut):
    mutated = bytearray(payload)
    for position, value in edits:
        mutated[position % len(mutated)] = value
    check_decode_never_crashes(bytes(mutated[: len(mutated) - cut % 64]))


def header_inputs():
    """Arbitrary bytes, and valid payloads with up to three header bytes changed, or cut."""

    def edit(payload, edits, cut):
        mutated = bytearray(payload)
        for position, value in edits:
            mutated[position % 24] = value  # the header: sizes, ids, lengths
        return bytes(mutated[: len(mutated) - cut])

    mutated = st.builds(edit, st.sampled_from(VALID_PAYLOADS),
                        st.lists(st.tuples(st.integers(0, 23), st.integers(0, 255)), max_size=3),
                        st.sampled_from([0, 0, 0, 1, 500, 2000]))
    return st.one_of(st.binary(max_size=40), mutated)


@settings(max_examples=600, deadline=None)
@given(header_inputs())
def test_one_call_header_parse_agrees_with_the_step_by_step_checks(data):
    from n5mscodecs.czi import _chunked

    payload = np.frombuffer(data, np.uint8)
    status, header = _chunked.read_header(payload)
    problem = czi_header._walk_header(payload)
    if status != Status.OK:
        assert status == Status.ERR_MALFORMED_HEADER and header is None
        # the steps name a problem, or find the one form the kernel leaves to them: zero chunks
        assert isinstance(problem, ChunkedFormatError) or problem.info.chunk_count == 0
        return
    assert isinstance(problem, RuntimeError)  # the steps find nothing wrong either
    header_size, codec, preprocessing, compressed_sizes, decompressed_sizes, compressed_offsets, _ = header
    spans = czi_header.NO_SPANS.copy()
    assert _chunked.scan_header(payload, spans)[:2] == (0, header_size)
    start, length = spans[2], spans[3]
    assert compressed_sizes.tolist() == _chunked.read_sizes(payload, start, start + length)[2].tolist()
    assert compressed_offsets[-1] == header_size + compressed_sizes.sum() <= len(data)
    assert codec in (0, 1) and preprocessing in (-1, 0, 1)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=5000), st.integers(1, 3000), st.sampled_from(["zstd", "lz4"]), st.booleans())
def test_round_trip_property(data, max_chunk_size, codec, hilo):
    payload = chunked_encode(data, codec=codec, max_chunk_size=max_chunk_size, hilo=hilo)
    assert bytes(chunked_decode(payload)) == data


# --- kernels ------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [0, 1, 2, 65535, 65536, 65537, 3 * 65536 + 7])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_hilo_kernels_match_reference(length, num_threads):
    from n5mscodecs.czi import _chunked

    data = np.random.default_rng(length).integers(0, 256, length, dtype=np.uint8)
    packed = np.empty_like(data)
    _chunked.hilo_pack(data, packed, num_threads)
    assert packed.tobytes() == hilo_split(data.tobytes())
    restored = np.empty_like(data)
    _chunked.hilo_unpack(packed, restored, num_threads)
    assert restored.tobytes() == data.tobytes()


@pytest.mark.parametrize("chunk_size", [1, 2, 7, 1000, 65537])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_hilo_kernels_pack_each_chunk_on_its_own(chunk_size, num_threads):
    from n5mscodecs.czi import _chunked

    data = np.random.default_rng(chunk_size).integers(0, 256, 3 * 65536 + 5, dtype=np.uint8)
    raw = data.tobytes()
    expected = b"".join(hilo_split(raw[i : i + chunk_size]) for i in range(0, len(raw), chunk_size))
    packed = np.empty_like(data)
    _chunked.hilo_pack(data, packed, num_threads, chunk_size)
    assert packed.tobytes() == expected
    restored = np.empty_like(data)
    _chunked.hilo_unpack(packed, restored, num_threads, chunk_size)
    assert restored.tobytes() == raw


def test_size_mismatch_names_the_chunk_inside_a_batch():
    # DecompressedSizes suffix form [8, 9]: chunks of 8, 8, 8 and 9 bytes; all four are one batch.
    with pytest.raises(ChunkedFormatError, match="chunk 3: decompressed to 8 bytes, DecompressedSizes says 9"):
        chunked_decode(lz4_payload([LZ4_A8] * 4, [8, 9]))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("hilo", [False, True])
@pytest.mark.parametrize("cut", [0, 1, 999, 1000, 1001, 150_000, 299_999])
def test_short_out_gets_the_prefix_across_batches(threads, hilo, cut):
    data = np.random.default_rng(cut).poisson(300, 150_000).astype(np.uint16)
    payload = chunked_encode(data, codec="lz4", max_chunk_size=1000, hilo=hilo)
    shorter = np.full(cut, 0xAA, dtype=np.uint8)
    chunked_decode(payload, out=shorter, allow_size_mismatch=True, threads=threads)
    assert shorter.tobytes() == data.tobytes()[:cut]


def test_stage_chunks_stops_at_a_full_block():
    from n5mscodecs.czi import _chunked

    block = np.zeros(10, np.uint8)
    offsets, sizes = np.full(5, -1, np.int64), np.full(5, -1, np.int64)
    assert _chunked.stage_chunks([b"abc", b"defg", b"hijk"], block, 1, 2, offsets, sizes) == (2, 8)
    assert block.tobytes() == b"\x00abcdefg\x00\x00"
    assert offsets.tolist() == [-1, -1, 1, 4, -1] and sizes.tolist() == [-1, -1, 3, 4, -1]
    with pytest.raises(IndexError, match="chunk index"):
        _chunked.stage_chunks([b"a", b"b"], block, 0, 4, offsets, sizes)
    with pytest.raises(TypeError, match="expected bytes"):
        _chunked.stage_chunks([bytearray(b"a")], block, 0, 0, offsets, sizes)


def test_place_chunks_checks_sizes_and_bounds():
    from n5mscodecs.czi import _chunked

    target = np.zeros(6, np.uint8)
    offsets = np.array([0, 2, 4, 6], np.int64)
    assert _chunked.place_chunks([b"ab", b"cd", b"ef"], target, offsets, 0, False) == -1
    assert target.tobytes() == b"abcdef"
    assert _chunked.place_chunks([b"xy", b"z"], target, offsets, 1, True) == 1
    assert target.tobytes() == b"abcdef"  # nothing written when a size is wrong
    assert _chunked.place_chunks([b"xy"], target, offsets, 2, True) == -1
    assert target.tobytes() == b"abcdxy"  # hi/lo of one word: low byte x, high byte y
    with pytest.raises(IndexError, match="chunk index"):
        _chunked.place_chunks([b"ab"] * 4, target, offsets, 0, False)
    with pytest.raises(IndexError, match="past the target"):
        _chunked.place_chunks([b"ab"], np.zeros(1, np.uint8), offsets, 0, False)


def test_copy_staged_checks_every_chunk_before_copying():
    from n5mscodecs.czi import _chunked

    blocks = [np.frombuffer(b"abcdef", np.uint8).copy()]
    block_of, offset_of = np.zeros(2, np.int32), np.array([0, 3], np.int64)
    size_of, positions = np.array([3, 3], np.int64), np.zeros(2, np.int64)
    status, out = _chunked.new_payload(size_of, 3, -1, 0, -1, positions)
    # ChunkSizes [3, 3], DecompressedSizes [3], EndOfHeader: an 8-byte header
    assert status == 0 and len(out) == 14 and positions.tolist() == [8, 11]
    _chunked.copy_staged(out, blocks, block_of, offset_of, size_of, positions, 0, 2)
    assert out == b"\x01\x02\x03\x03\x03\x01\x03\x00" + b"abcdef"
    with pytest.raises(IndexError, match="chunk 1 out of bounds"):
        _chunked.copy_staged(out, blocks, block_of, offset_of, size_of, np.array([8, 12], np.int64), 0, 2)
    with pytest.raises(IndexError, match="chunk 0 out of bounds"):
        _chunked.copy_staged(out, blocks, np.ones(2, np.int32), offset_of, size_of, positions, 0, 2)
    with pytest.raises(IndexError, match="range"):
        _chunked.copy_staged(out, blocks, block_of, offset_of, size_of, positions, 0, 3)


def test_new_payload_refuses_sizes_the_header_cannot_hold():
    from n5mscodecs.czi import _chunked

    positions = np.zeros(1_500_000, np.int64)
    assert _chunked.new_payload(np.array([1 << 29], np.int64), 10, -1, 0, -1, positions) == (
        Status.ERR_CHUNK_TOO_LARGE, None,
    )  # fmt: skip
    # 1.5 million 3-byte sizes: 4.5 MB of ChunkSizes, above its 4,194,303-byte length limit
    assert _chunked.new_payload(np.full(1_500_000, 20_000, np.int64), 65536, -1, 0, -1, positions) == (
        Status.ERR_PAYLOAD_TOO_LONG, None,
    )  # fmt: skip
    with pytest.raises(IndexError, match="positions"):
        _chunked.new_payload(np.ones(3, np.int64), 1, -1, 0, -1, positions[:2])


def test_copy_staged_with_streaming_stores_writes_the_same_bytes():
    from n5mscodecs.czi import _chunked

    rng = np.random.default_rng(8)
    sizes = [1, 15, 16, 17, 63, 64, 65, 200, 1000]
    staged = rng.integers(0, 256, sum(sizes), dtype=np.uint8)
    offset_of = np.cumsum([0] + sizes[:-1]).astype(np.int64)
    positions = np.zeros(len(sizes), np.int64)
    status, out = _chunked.new_payload(np.array(sizes, np.int64), 1000, 7, 1, 1, positions)
    header_size = int(positions[0])  # odd (21 bytes): every alignment follows
    assert status == 0 and header_size % 2 == 1 and (positions - header_size).tolist() == offset_of.tolist()
    _chunked.copy_staged(out, [staged], np.zeros(len(sizes), np.int32), offset_of,
                         np.array(sizes, np.int64), positions, 0, len(sizes), True)
    assert out[header_size:] == staged.tobytes()
    assert chunked_info(out).decompressed_sizes.tolist() == [1000] * 8 + [7]


@pytest.mark.parametrize("frame", [
    # declares 0 bytes (single segment, content size 0), then a last raw block of 5 bytes
    (0xFD2FB528).to_bytes(4, "little") + bytes([0x20, 0x00, 0x29, 0, 0]) + b"hello",
    # declares 0 bytes, an empty last block, and a checksum that does not match
    (0xFD2FB528).to_bytes(4, "little") + bytes([0x24, 0x00, 0x01, 0, 0]) + b"\0\0\0\0",
])
def test_a_zstd_frame_declaring_zero_bytes_is_decoded_not_trusted_on_both_backends(frame):
    """Issue 51, item 20: zstandard's decompress() returns b"" for a frame whose header says 0
    bytes without reading it; libzstd (the native path, and libCZI) rejects it."""
    from n5mscodecs.czi import backends

    payload = b"\x01\x01" + bytes([len(frame)]) + b"\x03\x01\x00\x00" + frame  # one chunk, 0 bytes
    for backend in ("native", "python") if backends.NATIVE_AVAILABLE else ("python",):
        with backends.use_backend(backend), pytest.raises(ChunkedFormatError, match="chunk 0: corrupt zstd"):
            chunked_decode(payload)
    valid = zstandard.ZstdCompressor(write_checksum=True).compress(b"")
    for backend in ("native", "python") if backends.NATIVE_AVAILABLE else ("python",):
        with backends.use_backend(backend):
            assert bytes(chunked_decode(b"\x01\x01" + bytes([len(valid)]) + b"\x03\x01\x00\x00" + valid)) == b""


def test_a_zstd_frame_declaring_a_window_above_the_streaming_limit_decodes_on_both_backends():
    """Issue 51, item 20 (found by the differential fuzz target): zstd's one-shot decoding (the
    native path, libCZI's ZSTD_decompress) ignores a frame's window; zstandard's streaming
    decoder refused a 1 GiB window ("Frame requires too much memory")."""
    from n5mscodecs.czi import backends

    # a frame without content size declaring a 1 GiB window (exponent 20), one raw block "two"
    frame = (0xFD2FB528).to_bytes(4, "little") + bytes([0x00, 20 << 3]) + bytes([0x19, 0, 0]) + b"two"
    payload = b"\x01\x01" + bytes([len(frame)]) + b"\x03\x01\x03\x00" + frame
    tracemalloc.start()
    try:
        for backend in ("native", "python") if backends.NATIVE_AVAILABLE else ("python",):
            with backends.use_backend(backend):
                assert bytes(chunked_decode(payload)) == b"two", backend
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # the window was never allocated
