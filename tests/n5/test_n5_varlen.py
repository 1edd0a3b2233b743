import bz2
import gzip
import lzma
import struct
import subprocess
import sys
import textwrap
import zlib

import numcodecs
import numpy as np
import pytest
import zstandard
from support import hand_list, hand_n5_payload, hand_varlen_block, n5_data

from n5mscodecs import CompressionError, LabelMultisetArray, N5HeaderError, N5Varlen
from n5mscodecs.errors import ConfigurationError
from n5mscodecs.n5 import N5BlockHeader, n5_block_header, n5_varlen_decode, n5_varlen_encode

LABELS = (np.arange(4 * 5 * 6, dtype=np.uint64).reshape(4, 5, 6) // 7) % 5


def test_spec_annotated_block_layout():
    block = n5_varlen_encode(np.zeros((32, 32, 32), np.uint64))
    assert block[:20].hex(" ") == "00 01 00 03 00 00 00 20 00 00 00 20 00 00 00 20 " + \
        struct.pack(">I", 131076 + 16).hex(" ")
    assert block[20:24] == b"\0\0\0\0"  # argMaxSize
    # listData starts at block byte 20 + 131076 = 131096; the n5_varlen spec's
    # annotation ("Bytes 24-131099" for the offsets) overstates it by 4
    assert len(block) == 131096 + 16
    assert block[131096:] == hand_list([(0, 1)])


def test_hand_built_block_decodes():
    payload = hand_n5_payload([0, 0, 16], [hand_list([(1, 1)]), hand_list([(2, 2), (3, 2)])])
    a = n5_varlen_decode(hand_varlen_block((3, 1), payload))
    assert a.shape == (3, 1)
    assert a.argmax().ravel().tolist() == [1, 1, 2]


# compressed bodies are made by the standard tools, not by our encoders
@pytest.mark.parametrize("config, compress", [
    ({"name": "gzip", "configuration": {"level": 6}}, lambda b: gzip.compress(b, 6)),
    ({"type": "gzip", "useZlib": True, "level": -1}, zlib.compress),
    ({"id": "zlib", "level": 3}, lambda b: zlib.compress(b, 3)),
    ({"name": "zstd", "configuration": {"level": 1, "checksum": False}},
     lambda b: zstandard.ZstdCompressor(level=1).compress(b)),
    # n5-zstandard streams: frame without content size
    ({"type": "zstd", "level": 3},
     lambda b: zstandard.ZstdCompressor(level=3, write_content_size=False).compress(b)),
    ({"type": "xz", "preset": 6}, lambda b: lzma.compress(b, format=lzma.FORMAT_XZ)),
    ({"type": "bzip2", "blockSize": 9}, bz2.compress),
    ({"id": "bz2", "level": 5}, lambda b: bz2.compress(b, 5)),
    ({"type": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 1, "blocksize": 0, "nthreads": 1},
     lambda b: numcodecs.Blosc("zstd", 5, 1).encode(b)),
])
def test_compressors_decode_foreign_streams_and_round_trip(config, compress):
    payload = hand_n5_payload([0, 16, 0, 16], [hand_list([(8, 1)]), hand_list([(9, 1)])])
    chain = [{"name": "n5_label_multiset"}, config]
    block = hand_varlen_block((2, 2), compress(payload), len(payload))
    assert n5_varlen_decode(block, chain).argmax().tolist() == [[8, 8], [9, 9]]
    ours = n5_varlen_encode(LABELS, chain)
    assert n5_block_header(ours).num_elements == len(n5_varlen_encode(LABELS)) - 20
    assert np.array_equal(n5_varlen_decode(ours, chain).argmax(), LABELS)


def test_java_gzip_members_concatenated():
    payload = hand_n5_payload([0], [hand_list([(4, 1)])])
    body = gzip.compress(payload[:10]) + gzip.compress(payload[10:])
    block = hand_varlen_block((1,), body, len(payload))
    assert n5_varlen_decode(block, ["n5_label_multiset", "gzip"]).argmax().tolist() == [4]


def test_codec_config_round_trip_and_spellings():
    v3 = {"id": "n5_varlen", "codecs": [{"name": "n5_label_multiset"},
                                        {"name": "gzip", "configuration": {"level": 6}}]}
    codec = numcodecs.get_codec(v3)
    assert codec.get_config() == v3
    assert numcodecs.get_codec(codec.get_config()).get_config() == v3
    numcodecs_style = N5Varlen(codecs=[{"id": "n5_label_multiset"}, {"id": "gzip", "level": 6}])
    assert numcodecs_style.get_config() == v3
    raw = N5Varlen(codecs=["n5_label_multiset", {"type": "raw"}])
    assert raw.get_config() == {"id": "n5_varlen", "codecs": [{"name": "n5_label_multiset"}]}
    assert codec.decode(codec.encode(LABELS)) == LabelMultisetArray.from_labels(LABELS)


@pytest.mark.parametrize("codecs, field", [
    ([], "array-to-bytes"),
    ([{"name": "gzip"}], "first inner codec"),
    (["n5_label_multiset", "n5_label_multiset"], "only the first"),
    (["n5_label_multiset", {"name": "snappy"}], "unknown compressor"),
    ([{"name": "n5_label_multiset", "configuration": {"x": 1}}], "takes no configuration"),
    (["n5_label_multiset", {"name": "gzip", "configuration": {"level": 12}}], "level"),
    (["n5_label_multiset", {"name": "gzip", "extra": 1}], "unexpected keys"),
])
def test_bad_configuration(codecs, field):
    with pytest.raises(ConfigurationError, match=field):
        N5Varlen(codecs=codecs)


def test_bad_blocks_name_the_field():
    payload = hand_n5_payload([0], [hand_list([(4, 1)])])
    good = hand_varlen_block((1,), payload)
    with pytest.raises(N5HeaderError, match="mode and ndim"):
        n5_varlen_decode(good[:3])
    with pytest.raises(N5HeaderError, match="needs 12 header bytes"):
        n5_varlen_decode(good[:10])
    with pytest.raises(N5HeaderError, match="expected 0x0001"):
        n5_varlen_decode(b"\0\2" + good[2:])
    with pytest.raises(N5HeaderError, match="mode 0x0007"):
        n5_varlen_decode(b"\0\7" + good[2:])
    with pytest.raises(N5HeaderError, match="ndim is 0"):
        n5_varlen_decode(b"\0\1\0\0" + good[4:])
    with pytest.raises(N5HeaderError, match="ndim is 1, expected 3"):
        n5_varlen_decode(good, shape=(1, 1, 1))
    with pytest.raises(N5HeaderError, match="numElements is 21"):
        n5_varlen_decode(good[:8] + struct.pack(">I", 21) + good[12:])
    gz = ["n5_label_multiset", "gzip"]
    compressed = hand_varlen_block((1,), gzip.compress(payload), len(payload))
    with pytest.raises(CompressionError, match="header expects 999"):
        n5_varlen_decode(compressed[:8] + struct.pack(">I", 999) + compressed[12:], gz)
    # a claim past what any block of one voxel can need (16 MiB) is refused undecompressed
    with pytest.raises(N5HeaderError, match="numElements 16777217 exceeds the 16777216 bytes a block of 1 voxels"):
        n5_varlen_decode(compressed[:8] + struct.pack(">I", 2**24 + 1) + compressed[12:], gz)
    with pytest.raises(CompressionError, match="truncated"):
        n5_varlen_decode(compressed[:-12], gz)
    with pytest.raises(CompressionError, match="corrupt"):
        n5_varlen_decode(compressed[:12] + b"\x1f\x8b\x08\0garbage-garbage", gz)


def test_decompression_bomb_is_bounded_by_num_elements():
    bomb = gzip.compress(b"\0" * (200 << 20))  # 200 MiB of zeros in ~200 KiB
    block = hand_varlen_block((1,), bomb, 100)
    with pytest.raises(CompressionError, match="header expects 100"):
        n5_varlen_decode(block, ["n5_label_multiset", "gzip"])


def test_header_class():
    h = N5BlockHeader.from_bytes(hand_varlen_block((16, 32, 32), b"x" * 5))
    assert h == N5BlockHeader(1, (16, 32, 32), 5) and h.nbytes == 20
    with pytest.raises(N5HeaderError, match="uint32"):
        N5BlockHeader(1, (2**32,), 1).to_bytes()


def test_entry_point_in_fresh_interpreter():
    block = (n5_data("downscaleTest.n5/sourceImg/2/1/0")).read_bytes()
    script = textwrap.dedent("""
        import sys, numcodecs
        block = sys.stdin.buffer.read()
        codec = numcodecs.get_codec({"id": "n5_varlen", "codecs": [{"name": "n5_label_multiset"}]})
        a = codec.decode(block)
        print(a.shape, a.n_lists)
    """)
    result = subprocess.run([sys.executable, "-c", script], input=block, capture_output=True, check=True)
    assert result.stdout.decode().split() == ["(16,", "32,", "32)", str(n5_varlen_decode(block).n_lists)]


def test_entry_point_without_real_data():
    block = n5_varlen_encode(LABELS)
    script = ("import sys, numcodecs; assert 'n5mscodecs' not in sys.modules; "
              "c = numcodecs.get_codec({'id': 'n5_varlen', 'codecs': [{'name': 'n5_label_multiset'}]}); "
              "print(c.decode(sys.stdin.buffer.read()).argmax().sum())")
    result = subprocess.run([sys.executable, "-c", script], input=block, capture_output=True, check=True)
    assert int(result.stdout) == int(LABELS.sum())


@pytest.mark.parametrize("data, expected", [
    (b"", 0x02CC5D05), (b"a", 0x550D7456), (b"abc", 0x32D153FF),
    (b"Nobody inspects the spammish repetition", 0xE2293B2F),
])
def test_xxh32_reference_vectors(data, expected):
    from n5mscodecs.n5._xxhash import xxh32
    assert xxh32(np.frombuffer(data, np.uint8)) == expected


def hand_lz4_blocks(payload, block_size=64):
    """Java LZ4BlockOutputStream framing built by hand (lz4.block for the data)."""
    import lz4.block

    from n5mscodecs.n5._xxhash import xxh32
    level = (block_size - 1).bit_length() - 10 if block_size > 1024 else 0
    out = b""
    for start in range(0, len(payload), block_size):
        chunk = payload[start:start + block_size]
        packed = lz4.block.compress(chunk, store_size=False)
        check = xxh32(np.frombuffer(chunk, np.uint8), 0x9747B28C) & 0xFFFFFFF
        out += b"LZ4Block" + struct.pack("<Biii", 0x20 | level, len(packed), len(chunk), check) + packed
    return out + b"LZ4Block" + struct.pack("<Biii", 0x10 | level, 0, 0, 0)


def test_n5_lz4_framing():
    payload = hand_n5_payload([0, 16] * 40, [hand_list([(8, 1)]), hand_list([(9, 1)])])
    chain = ["n5_label_multiset", {"type": "lz4", "blockSize": 64}]
    block = hand_varlen_block((80,), hand_lz4_blocks(payload, 64), len(payload))
    assert n5_varlen_decode(block, chain).argmax().tolist() == [8, 9] * 40
    ours = n5_varlen_encode(LABELS, chain)
    assert np.array_equal(n5_varlen_decode(ours, chain).argmax(), LABELS)
    codec = N5Varlen(codecs=chain)
    assert codec.get_config()["codecs"][1] == {"name": "n5_lz4", "configuration": {"blockSize": 64}}
    corrupt = bytearray(block)
    corrupt[-30] ^= 0xFF
    with pytest.raises(CompressionError):
        n5_varlen_decode(bytes(corrupt), chain)
    with pytest.raises(CompressionError, match="truncated"):
        n5_varlen_decode(block[:-5], chain)


def test_numcodecs_lz4_is_not_n5_lz4():
    codec = N5Varlen(codecs=["n5_label_multiset", {"id": "lz4"}])
    assert codec.get_config()["codecs"][1]["id"] == "lz4"  # numcodecs' own framing
    assert n5_varlen_decode(codec.encode(LABELS), codec.codecs).argmax().tolist() == LABELS.tolist()
    with pytest.raises(ConfigurationError, match="unknown compressor"):
        N5Varlen(codecs=["n5_label_multiset", {"name": "lz4"}])


def test_n5_lz4_block_size_is_read_whatever_it_says():
    """z5py writes ``"blockSize": 6``; decoding never uses it (Java's reader ignores it too)."""
    payload = hand_n5_payload([0, 16] * 40, [hand_list([(8, 1)]), hand_list([(9, 1)])])
    block = hand_varlen_block((80,), hand_lz4_blocks(payload, 64), len(payload))
    for block_size in (6, 0, 1 << 30):
        chain = ["n5_label_multiset", {"type": "lz4", "blockSize": block_size}]
        assert n5_varlen_decode(block, chain).argmax().tolist() == [8, 9] * 40
        with pytest.raises(ConfigurationError, match="blockSize in 64..2\\*\\*25, got"):
            n5_varlen_encode(LABELS, chain)
    with pytest.raises(ConfigurationError, match="blockSize must be an int"):
        N5Varlen(codecs=["n5_label_multiset", {"type": "lz4", "blockSize": "6"}])
