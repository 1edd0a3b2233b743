"""The numcodecs codec contract, checked for every codec of this package.

numcodecs' own helpers (``numcodecs/tests/common.py``) ship in its source, not
its wheel, so this module restates their checks: encode and decode with every
buffer type in and out and with C- and F-ordered arrays (memory order in, the
same bytes out), configuration through JSON and ``get_codec``, repr, pickle,
decoding committed fixtures (backwards compatibility), and the errors for
object buffers, non-buffers, a wrong ``out`` and ``max_buffer_size``.
Regenerate missing fixtures with ``N5MSCODECS_WRITE_FIXTURES=1``.
"""

import array
import json
import os
import pickle
from pathlib import Path

import numcodecs
import numpy as np
import pytest
from numcodecs.compat import ensure_bytes, ensure_ndarray

import n5mscodecs
from n5mscodecs import (
    CziChunked,
    LabelMultiset,
    LabelMultisetArray,
    LabelMultisetCodec,
    LabelMultisetVLen,
    N5LabelMultiset,
    N5Varlen,
)

FIXTURES = Path(__file__).parent / "fixtures" / "codecs"
WRITE_FIXTURES = os.environ.get("N5MSCODECS_WRITE_FIXTURES") == "1"

BYTES_CODECS = [
    CziChunked(),
    CziChunked(codec="lz4"),
    CziChunked(codec="zstd", level=1, max_chunk_size=1000, hilo=True),
    CziChunked(codec="lz4", level=9, max_chunk_size=4096, hilo=True),
]
# name, codec, pinned: encoded bytes are pinned (no compressor whose output may change between library versions)
LABEL_CODECS = [
    ("n5_label_multiset", N5LabelMultiset(), True),
    ("label_multiset", LabelMultisetCodec(), True),
    ("n5_varlen", N5Varlen(), True),
    ("n5_varlen_gzip", N5Varlen([{"name": "n5_label_multiset"}, {"name": "gzip", "configuration": {"level": 6}}]),
     False),
    ("n5_varlen_zstd", N5Varlen([{"name": "label_multiset"}, {"name": "zstd", "configuration": {"level": 3}}]), False),
    ("label_multiset_vlen", LabelMultisetVLen(), True),
]
ALL_CODECS = BYTES_CODECS + [codec for _, codec, _ in LABEL_CODECS]


def pattern(n, modulus, dtype):
    """Deterministic data without an RNG (whose stream may change between numpy versions)."""
    return ((np.arange(n, dtype=np.uint64) * 7919 + 13) % modulus).astype(dtype)


def bytes_arrays(hilo):
    """Arrays for the bytes codecs, in C and F order (16-bit only with hilo)."""
    base = [pattern(1000, 65536, "<u2"), pattern(6000, 3000, "<i2").reshape(30, 200),
            pattern(2400, 1000, "<f2").reshape(4, 20, 30)]
    if not hilo:
        base += [np.arange(1000, dtype="<i4"), np.linspace(1000, 1001, 3000, dtype="<f8").reshape(100, 30),
                 (pattern(1000, 2, "u1") == 1).reshape(100, 10), pattern(1000, 2**60, "<u8").view("M8[ns]"),
                 np.zeros((0, 5), "<u2")]
    arrays = []
    for a in base:
        arrays += [np.ascontiguousarray(a), np.asfortranarray(a)]
    return arrays


def element_arrays():
    """Object arrays of elements and integer label arrays, in C and F order."""
    labels = pattern(4 * 5 * 6, 11, np.uint64).reshape(4, 5, 6)
    pool = [LabelMultiset([1, 2], [3, 4]), LabelMultiset(), LabelMultiset([2**64 - 2], [1]), LabelMultiset([9], [1])]
    elements = np.empty(labels.shape, object)
    for index in np.ndindex(labels.shape):
        elements[index] = pool[int(labels[index]) % 4]
    return [np.ascontiguousarray(elements), np.asfortranarray(elements),
            np.ascontiguousarray(labels), np.asfortranarray(labels)]


def compare_arrays(arr, res):
    """numcodecs' compare_arrays: ``res`` read as ``arr``'s dtype in ``arr``'s memory order."""
    res = ensure_ndarray(res).view(arr.dtype)
    res = res.reshape(arr.shape, order="F" if arr.flags.f_contiguous else "C")
    np.testing.assert_array_equal(arr, res)


def as_multisets(arr):
    return LabelMultisetArray.coerce(arr)


def assert_items_equal(expected, result):
    """Element-wise equality of object arrays (None and ints read as this package reads them)."""
    assert result.shape == expected.shape
    assert as_multisets(np.asarray(result)) == as_multisets(expected)


# --- bytes codecs (czi_chunked) ---------------------------------------------------


@pytest.mark.parametrize("codec", BYTES_CODECS, ids=repr)
def test_bytes_codec_encode_decode(codec):
    for arr in bytes_arrays(codec.hilo):
        enc = codec.encode(arr)
        compare_arrays(arr, codec.decode(enc))
        # the same bytes from every buffer type holding arr's memory
        raw = arr.tobytes(order="A")
        for buf in (raw, bytearray(raw), array.array("b", raw), memoryview(raw)):
            assert ensure_bytes(codec.encode(buf)) == ensure_bytes(enc)
        enc_bytes = ensure_bytes(enc)
        for buf in (enc_bytes, bytearray(enc_bytes), array.array("b", enc_bytes), np.frombuffer(enc_bytes, "u1")):
            compare_arrays(arr, codec.decode(buf))
        out = np.empty_like(arr)  # keeps arr's memory order: filled in place
        assert codec.decode(enc_bytes, out=out) is out
        compare_arrays(arr, out)
        np.testing.assert_array_equal(out, arr)
        out = bytearray(arr.nbytes)
        codec.decode(enc_bytes, out=out)
        compare_arrays(arr, out)


def test_bytes_codec_f_order_is_memory_order():
    """The case that silently transposed zarr 2 chunks: encode(F array) is the F-order bytes."""
    codec = CziChunked()
    arr = np.asfortranarray(np.arange(6, dtype="<u2").reshape(2, 3))
    assert bytes(codec.decode(codec.encode(arr))) == arr.tobytes(order="F") != arr.tobytes(order="C")
    out = np.zeros((2, 3), "<u2", order="F")
    codec.decode(codec.encode(arr), out=out)
    assert out.tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("codec", BYTES_CODECS, ids=repr)
def test_bytes_codec_errors(codec):
    enc = codec.encode(np.arange(10, dtype="<u2"))
    with pytest.raises(TypeError):  # check_err_encode_object_buffer
        codec.encode(np.array(["foo", "bar", "baz"], dtype=object))
    with pytest.raises(TypeError):  # check_err_decode_object_buffer
        codec.decode(enc, out=np.empty(10, dtype=object))
    for bad in (1234, "foo", None):
        with pytest.raises(TypeError):
            codec.decode(bad)
        with pytest.raises(TypeError):
            codec.encode(bad)
    for bad_out in (b"x" * 20, "foo", 123):
        with pytest.raises(TypeError):
            codec.decode(enc, out=bad_out)
    with pytest.raises(ValueError):
        codec.decode(b"foo")
    with pytest.raises(ValueError):
        codec.decode(enc, out=np.zeros(3, "<u2"))  # wrong size
    with pytest.raises(ValueError):
        codec.decode(enc, out=np.zeros((20, 20), "<u2")[:, :1])  # not contiguous
    # every error is also a ValueError subclass of the package's hierarchy
    with pytest.raises(n5mscodecs.N5msCodecsError):
        codec.decode(1234)


def test_max_buffer_size():
    """numcodecs' check_max_buffer_size, plus the decoded size."""
    codec = CziChunked()
    assert codec.max_buffer_size == 0x7E000000
    for max_buffer_size in (4, 64, 1024):
        codec.max_buffer_size = max_buffer_size
        codec.encode(np.zeros(max_buffer_size - 1, dtype=np.int8))
        codec.encode(np.zeros(max_buffer_size, dtype=np.int8))
        buf = np.zeros(max_buffer_size + 1, dtype=np.int8)
        with pytest.raises(ValueError, match="max_buffer_size"):
            codec.encode(buf)
        with pytest.raises(ValueError, match="max_buffer_size"):
            codec.decode(buf)
    codec.max_buffer_size = 1 << 20
    with pytest.raises(ValueError, match="DecompressedSizes"):  # small payload, large decoded size
        codec.decode(CziChunked().encode(np.zeros(2 << 20, np.uint8)))
    assert "max_buffer_size" not in codec.get_config()  # an attribute, as in numcodecs
    assert CziChunked.max_buffer_size == 0x7E000000


# --- label multiset codecs ----------------------------------------------------------


def decode_label(name, codec, enc, arr):
    """Decode without ``out``: vlen gives a flat element array in memory order, the others multisets."""
    if isinstance(codec, LabelMultisetVLen):
        return codec.decode(enc)
    if isinstance(codec, N5Varlen):
        return codec.decode(enc)
    return codec.decode(enc, shape=arr.shape)


@pytest.mark.parametrize(("name", "codec", "pinned"), LABEL_CODECS, ids=[c[0] for c in LABEL_CODECS])
def test_label_codec_encode_decode(name, codec, pinned):
    arrays = element_arrays()
    for arr in arrays:
        enc = codec.encode(arr)
        enc_bytes = ensure_bytes(enc)
        for buf in (enc, enc_bytes, bytearray(enc_bytes), array.array("b", enc_bytes), np.frombuffer(enc_bytes, "u1")):
            dec = decode_label(name, codec, buf, arr)
            if isinstance(codec, LabelMultisetVLen):
                assert_items_equal(arr.reshape(-1, order="A"), dec)  # numcodecs: flat, memory order
            else:
                assert dec == as_multisets(arr)
        # out: an object array (elements) or uint64 (argmax labels), filled in place; any memory
        # order for the array codecs, the input's for vlen (a flat sequence, numcodecs' rule)
        for order in ("A",) if isinstance(codec, LabelMultisetVLen) else "CF":
            out = np.empty_like(arr, dtype=object, order=order)
            assert codec.decode(enc_bytes, out=out) is out
            assert_items_equal(arr, out)
            labels = np.zeros_like(arr, dtype=np.uint64, order=order)
            assert codec.decode(enc_bytes, out=labels) is labels
            np.testing.assert_array_equal(labels, as_multisets(arr).argmax())
    # the array codecs' payload order is set by the format, not the input's memory order
    if not isinstance(codec, LabelMultisetVLen):
        assert ensure_bytes(codec.encode(arrays[0])) == ensure_bytes(codec.encode(arrays[1]))
    else:
        f_ordered = arrays[1]
        assert ensure_bytes(codec.encode(f_ordered)) == ensure_bytes(codec.encode(f_ordered.ravel(order="F")))


def test_vlen_f_order_is_memory_order():
    """zarr 2 reshapes what an object codec returns in the array's order: F chunks must stay F."""
    codec = LabelMultisetVLen()
    arr = np.asfortranarray(np.arange(6, dtype=np.uint64).reshape(2, 3))
    flat = codec.decode(codec.encode(arr))
    assert [e.argmax for e in flat] == [0, 3, 1, 4, 2, 5]
    out = np.empty((2, 3), object, order="F")
    codec.decode(codec.encode(arr), out=out)
    assert argmax_of(out) == [[0, 1, 2], [3, 4, 5]]


def argmax_of(elements):
    return [[e.argmax for e in row] for row in elements]


def test_vlen_writes_none_as_empty():
    codec = LabelMultisetVLen()
    arr = np.array([LabelMultiset([3], [1]), None, 7], dtype=object)
    dec = codec.decode(codec.encode(arr))
    assert dec[0] == LabelMultiset([3], [1]) and dec[1] == LabelMultiset() and dec[2] == LabelMultiset([7], [1])


@pytest.mark.parametrize(("name", "codec", "pinned"), LABEL_CODECS, ids=[c[0] for c in LABEL_CODECS])
def test_label_codec_errors(name, codec, pinned):
    arr = element_arrays()[2]
    enc = codec.encode(arr)
    for bad in (1234, "foo", b"foo", np.ones(10, dtype="f4"), np.array(["a", "b"])):
        with pytest.raises(TypeError):
            codec.encode(bad)
    with pytest.raises(TypeError):
        codec.encode(np.array(["foo", "bar"], dtype=object))  # elements of the wrong type
    kwargs = {} if isinstance(codec, LabelMultisetVLen | N5Varlen) else {"shape": (2, 2)}
    for bad in (1234, "foo", None):
        with pytest.raises(TypeError):
            codec.decode(bad, **kwargs)
    with pytest.raises(ValueError):
        codec.decode(b"foo", **kwargs)  # corrupt data
    for bad_out in (b"foo", "foo", 123, [None] * arr.size):
        with pytest.raises(TypeError):
            codec.decode(enc, out=bad_out)
    with pytest.raises(ValueError, match="out"):
        codec.decode(enc, out=np.zeros(arr.shape, dtype="i4"))
    read_only = np.empty(arr.shape, object)
    read_only.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        codec.decode(enc, out=read_only)
    with pytest.raises(n5mscodecs.N5msCodecsError):  # all of it in the one hierarchy (ValueError)
        codec.encode(1234)


def test_zero_dimensional_ndarrays_are_arrays_not_scalars():
    codec = LabelMultisetCodec()
    enc = codec.encode(np.array(5, np.uint64))
    assert codec.decode(enc, shape=()).argmax()[()] == 5


# --- every codec ----------------------------------------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS, ids=repr)
def test_config_repr_pickle(codec):
    config = json.loads(json.dumps(codec.get_config()))  # check_config: through JSON
    assert numcodecs.get_codec(config) == codec
    namespace = vars(n5mscodecs).copy()
    assert eval(repr(codec), namespace) == codec  # check_repr, up to the module prefix
    assert pickle.loads(pickle.dumps(codec)) == codec


def fixture_arrays(codec):
    if isinstance(codec, CziChunked):
        return [a for a in bytes_arrays(codec.hilo) if a.dtype.kind != "M"][:6]
    return element_arrays()


def fixture_codecs():
    named = [(f"czi_chunked.{j}", codec, False) for j, codec in enumerate(BYTES_CODECS)]
    return named + LABEL_CODECS


@pytest.mark.parametrize(("name", "codec", "pinned"), fixture_codecs(), ids=[c[0] for c in fixture_codecs()])
def test_backwards_compatibility(name, codec, pinned):
    """check_backwards_compatibility: committed encodings still decode (and pinned ones are re-made)."""
    directory = FIXTURES / name
    config_file = directory / "config.json"
    if WRITE_FIXTURES and not config_file.exists():
        directory.mkdir(parents=True, exist_ok=True)
        config_file.write_text(json.dumps(codec.get_config(), sort_keys=True, indent=4) + "\n")
    assert numcodecs.get_codec(json.loads(config_file.read_text())) == codec
    for i, arr in enumerate(fixture_arrays(codec)):
        encoded_file = directory / f"encoded.{i:02d}.dat"
        if WRITE_FIXTURES and not encoded_file.exists():
            encoded_file.write_bytes(ensure_bytes(codec.encode(arr)))
        encoded = encoded_file.read_bytes()
        if isinstance(codec, CziChunked):
            compare_arrays(arr, codec.decode(encoded))
            assert arr.tobytes(order="A") == ensure_bytes(codec.decode(encoded))
        elif isinstance(codec, LabelMultisetVLen):
            assert_items_equal(arr.reshape(-1, order="A"), codec.decode(encoded))
        else:
            assert decode_label(name, codec, encoded, arr) == as_multisets(arr)
        if pinned:
            assert ensure_bytes(codec.encode(arr)) == encoded
