"""Bad bytes raise our ValueError subclasses, never anything else, and allocate only what the input justifies."""

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import hand_list, hand_n5_payload, hand_varlen_block

from n5mscodecs import N5msCodecsError
from n5mscodecs.n5 import n5_varlen_decode, n5_varlen_encode
from n5mscodecs.n5.compression import Blosc, Lz4
from n5mscodecs.payload import label_multiset_decode, n5_label_multiset_decode

CHAINS = [["n5_label_multiset"], ["n5_label_multiset", "gzip"], ["n5_label_multiset", "zstd"],
          ["label_multiset", {"type": "bzip2"}], ["n5_label_multiset", {"type": "xz"}],
          ["n5_label_multiset", {"type": "blosc", "cname": "lz4"}], ["n5_label_multiset", {"type": "lz4"}]]

multisets = st.lists(
    st.dictionaries(st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1), max_size=4),
    min_size=1, max_size=40,
)


def sample_block(chain):
    rng = np.random.default_rng(0)
    return n5_varlen_encode(rng.integers(0, 5, (3, 4, 2)).astype(np.uint64), chain)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200), chain=st.sampled_from(CHAINS))
def test_random_bytes_into_varlen(data, chain):
    try:
        n5_varlen_decode(data, chain)
    except N5msCodecsError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(position=st.integers(0, 10_000), value=st.integers(0, 255), cut=st.integers(0, 10_000),
       chain=st.sampled_from(CHAINS))
def test_mutated_blocks(position, value, cut, chain):
    block = bytearray(sample_block(chain))
    block[position % len(block)] = value
    block = bytes(block[: max(cut % (len(block) + 1), 0)]) if cut % 3 == 0 else bytes(block)
    try:
        result = n5_varlen_decode(block, chain)
    except N5msCodecsError:
        return
    # whatever decodes must be internally consistent
    assert result.index.min() >= 0 and result.index.max() < result.n_lists
    result.argmax()


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300), shape=st.tuples(st.integers(0, 6), st.integers(0, 6)))
def test_random_payloads(data, shape):
    for decode in (n5_label_multiset_decode, label_multiset_decode):
        try:
            a = decode(data, shape)
        except N5msCodecsError:
            continue
        assert a.shape == shape
        a.canonical()


def test_huge_header_dims_do_not_allocate():
    payload = hand_n5_payload([0], [hand_list([(1, 1)])])
    block = hand_varlen_block((2**31, 2**31, 2**31), payload)
    with pytest.raises(N5msCodecsError, match="listEntryOffsets"):
        n5_varlen_decode(block)


def test_huge_num_elements_with_tiny_body_fails_fast():
    block = hand_varlen_block((1,), b"\x1f\x8b", 2**32 - 1)
    with pytest.raises(N5msCodecsError):
        n5_varlen_decode(block, ["n5_label_multiset", "gzip"])
    raw = hand_varlen_block((1,), b"abc", 2**32 - 1)
    with pytest.raises(N5msCodecsError, match="numElements"):
        n5_varlen_decode(raw)


def test_offsets_negative_when_read_signed():
    payload = hand_n5_payload([0], [hand_list([(1, 1)])])
    bad = payload[:4] + struct.pack(">I", 0x80000000) + payload[8:]
    with pytest.raises(N5msCodecsError, match="-2147483648"):
        n5_label_multiset_decode(bad, (1,))


def traced_peak(function):
    """Peak of Python-tracked allocations (liblzma and numpy allocate through them) while calling."""
    import tracemalloc
    tracemalloc.start()
    try:
        function()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_xz_header_claiming_a_huge_dictionary_allocates_little():
    # found by fuzzing: a .lzma ("alone") header is 13 bytes and names the dictionary size,
    # which liblzma reserved before reading any data (4 GiB here)
    lzma_alone = b"\x5d" + struct.pack("<I", 0xFFFFFFFF) + struct.pack("<q", -1) + b"\x00" * 8
    block = hand_varlen_block((1,), lzma_alone, 16)

    def decode():
        with pytest.raises(N5msCodecsError, match="xz|lzma"):
            n5_varlen_decode(block, ["n5_label_multiset", {"type": "xz"}])

    assert traced_peak(decode) < 1 << 24


def test_lz4_block_claiming_more_than_lz4_can_expand():
    magic = b"LZ4Block"
    block = magic + struct.pack("<Biii", 0x20 | 15, 1, 1 << 25, 0) + b"\x00"
    # the compressor's own check (inside n5_varlen, numElements is bounded before it runs)
    with pytest.raises(N5msCodecsError, match="more than LZ4 can expand"):
        Lz4().decode(block, 1 << 25)


def test_blosc_header_claiming_more_than_blosc_can_expand():
    header = bytes([2, 1, 1, 1]) + struct.pack("<III", 1 << 30, 1 << 16, 40) + b"\x00" * 24
    with pytest.raises(N5msCodecsError, match="more than blosc can expand"):
        Blosc().decode(header, 1 << 30)


def test_unbuilt_source_checkout_says_what_to_run(tmp_path):
    """Importing from a checkout without compiled kernels names the kernel and the build command."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import n5mscodecs

    package = Path(n5mscodecs.__file__).parent
    shutil.copytree(package, tmp_path / "n5mscodecs", ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c"))
    (tmp_path / "setup.py").write_text("")
    script = (
        "import sys\n"
        # an editable install's finder would serve the built kernels of the real checkout
        "sys.meta_path[:] = [f for f in sys.meta_path if 'Editable' not in getattr(f, '__name__', '')]\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import n5mscodecs\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: n5mscodecs: the compiled kernel n5mscodecs.")
    assert "pip install -e ." in message and "partially initialized" not in message
