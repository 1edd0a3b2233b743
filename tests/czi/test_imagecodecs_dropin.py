"""``chunked_decode`` / ``chunked_encode`` called the way imagecodecs' functions are called.

CZI readers (czifile 2026.10) call ``imagecodecs.chunked_decode(data, itemsize=...,
samples=..., out=<size in bytes>)``. Our functions take the same keywords with the same
meaning and result types, so one can stand in for the other (docs/czi_chunked.md,
"imagecodecs' calling convention"). The first part checks the convention on its own; the
second compares both libraries call by call for every CZI pixel type, and skips where
imagecodecs is not installed (it has wheels for Python >= 3.12 only).
"""

import numpy as np
import pytest

from n5mscodecs import (
    ChunkedFormatError,
    ConfigurationError,
    InputTypeError,
    chunked_decode,
    chunked_encode,
    chunked_info,
)

# every test runs on both chunk paths (tests/czi/conftest.py)
pytestmark = pytest.mark.usefixtures("chunk_path")


# name, dtype, samples: the pixel types of a CZI subblock (czifile's CziPixelType)
PIXEL_TYPES = [
    ("Gray8", "<u1", 1),
    ("Gray16", "<u2", 1),
    ("Gray32Float", "<f4", 1),
    ("Bgr24", "<u1", 3),
    ("Bgr48", "<u2", 3),
    ("Bgr96Float", "<f4", 3),
    ("Bgra32", "<u1", 4),
    ("Gray64ComplexFloat", "<c8", 1),
    ("Bgr192ComplexFloat", "<c8", 3),
    ("Gray32", "<i4", 1),
    ("Gray64", "<f8", 1),
]
PIXEL_IDS = [name for name, _, _ in PIXEL_TYPES]


def pixels(dtype, samples, shape=(37, 53), seed=0):
    """A subblock image (rows, columns[, samples]); integer samples use all their bytes,
    floats are finite (so values compare with ==)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    full = shape + ((samples,) if samples > 1 else ())
    if dtype.kind == "f":
        return rng.normal(0, 1000, full).astype(dtype)
    if dtype.kind == "c":
        return (rng.normal(0, 1000, full) + 1j * rng.normal(0, 1000, full)).astype(dtype)
    return rng.integers(0, 256, int(np.prod(full)) * dtype.itemsize, dtype=np.uint8).view(dtype).reshape(full)


def rgb(image, samples):
    """What imagecodecs returns for BGR(A) pixels: samples 0 and 2 exchanged, 8-bit alpha 255."""
    if samples == 1:
        return image
    result = image.copy()
    result[..., [0, 2]] = image[..., [2, 0]]
    if samples == 4 and image.dtype.itemsize == 1:
        result[..., 3] = 255
    return result


# --- the convention on its own ------------------------------------------------------------


@pytest.mark.parametrize("name, dtype, samples", PIXEL_TYPES, ids=PIXEL_IDS)
@pytest.mark.parametrize("hilo", [False, True])
@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_czi_reader_call(name, dtype, samples, hilo, codec):
    image = pixels(dtype, samples)
    itemsize = image.dtype.itemsize
    # chunk boundaries cut pixels and samples; hilo on the bytes of any type
    payload = chunked_encode(image.tobytes(), codec=codec, max_chunk_size=1001, hilo=hilo)
    size = image.nbytes
    decoded = chunked_decode(payload, itemsize=itemsize, samples=samples, out=size)
    assert type(decoded) is bytes
    expected = rgb(image, samples)
    np.testing.assert_array_equal(np.frombuffer(decoded, image.dtype).reshape(image.shape), expected)
    assert chunked_decode(payload, itemsize=itemsize, samples=samples) == decoded

    out = np.zeros_like(image)
    view = chunked_decode(payload, itemsize=itemsize, samples=samples, out=out, threads=2)
    assert type(view) is np.ndarray and view.dtype == np.uint8 and view.shape == (size,)
    assert np.shares_memory(view, out) and view.tobytes() == decoded
    np.testing.assert_array_equal(out, expected)


def test_bgr_swap_by_hand():
    two = bytes(range(1, 7))
    payload = chunked_encode(two, max_chunk_size=4)  # the second pixel straddles two chunks
    assert chunked_decode(payload, itemsize=1, samples=3) == bytes([3, 2, 1, 6, 5, 4])
    assert chunked_decode(payload, itemsize=2, samples=3) == bytes([5, 6, 3, 4, 1, 2])
    assert chunked_decode(payload, itemsize=1, samples=1) == two
    bgra = chunked_encode(bytes(range(1, 9)))
    assert chunked_decode(bgra, itemsize=1, samples=4) == bytes([3, 2, 1, 255, 7, 6, 5, 255])
    assert chunked_decode(bgra, itemsize=2, samples=4) == bytes([5, 6, 3, 4, 1, 2, 7, 8])  # alpha kept
    odd = chunked_encode(bytes(range(9)))  # 3-byte samples are exchanged as wholes
    assert chunked_decode(odd, itemsize=3, samples=3) == bytes([6, 7, 8, 3, 4, 5, 0, 1, 2])
    assert chunked_decode(odd, itemsize=3) == bytes(range(9))  # itemsize alone changes nothing


def test_result_types():
    data = bytes(range(96))
    payload = chunked_encode(data, codec="lz4", max_chunk_size=40)
    for size in (96, 10, 1000, 0):  # the size is imagecodecs' expectation; it is not checked
        result = chunked_decode(payload, out=size)
        assert type(result) is bytes and result == data
    exact = bytearray(96)
    assert chunked_decode(payload, itemsize=1, out=exact) is exact and exact == data
    larger = bytearray(b"\xaa" * 100)
    view = chunked_decode(payload, itemsize=1, out=larger)
    assert type(view) is memoryview and view.nbytes == 96 and bytes(view) == data
    assert larger[96:] == b"\xaa" * 4  # the rest is left alone, as imagecodecs does
    target = memoryview(bytearray(96))
    assert type(chunked_decode(payload, samples=1, out=target)) is memoryview
    shaped = np.zeros((2, 3, 4), np.uint32)
    flat = chunked_decode(payload, itemsize=4, out=shaped)
    assert flat.shape == (96,) and flat.dtype == np.uint8 and np.shares_memory(flat, shaped)
    assert shaped.tobytes() == data
    with pytest.raises(ChunkedFormatError, match="out holds 95"):
        chunked_decode(payload, itemsize=1, out=bytearray(95))


def test_our_conventions_are_unchanged():
    image = np.arange(300, dtype=np.uint16).reshape(15, 20)
    payload = chunked_encode(image, hilo=True, max_chunk_size=128)
    plain = chunked_decode(payload)
    assert type(plain) is np.ndarray and plain.dtype == np.uint8 and plain.tobytes() == image.tobytes()
    out = np.empty_like(image)
    assert chunked_decode(payload, out=out) is out
    with pytest.raises(ChunkedFormatError, match="out holds"):
        chunked_decode(payload, out=np.empty(301, np.uint16))
    padded = np.full(301, 7, np.uint16)
    assert chunked_decode(payload, out=padded, allow_size_mismatch=True) is padded and padded[-1] == 0
    with pytest.raises(InputTypeError):
        chunked_decode(payload, out=b"\0" * 600)


@pytest.mark.parametrize("keywords, message", [
    ({"samples": 2}, "samples must be one of"),
    ({"samples": 0}, "samples must be one of"),
    ({"samples": True}, "samples must be one of"),
    ({"itemsize": 0}, "itemsize must be"),
    ({"itemsize": 1.5}, "itemsize must be"),
    ({"itemsize": True}, "itemsize must be"),
])  # fmt: skip
def test_bad_pixel_keywords(keywords, message):
    with pytest.raises(ConfigurationError, match=message):
        chunked_decode(chunked_encode(b"abcdef"), **keywords)


def test_pixel_size_mismatch_is_refused_before_decoding():
    payload = chunked_encode(bytes(range(10)))
    out = bytearray(b"\xaa" * 10)
    with pytest.raises(ChunkedFormatError, match="not a whole number of pixels of 6 bytes"):
        chunked_decode(payload, itemsize=2, samples=3, out=out)
    assert out == b"\xaa" * 10
    with pytest.raises(ChunkedFormatError, match="max_decompressed_size"):
        chunked_decode(payload, itemsize=1, out=10, max_decompressed_size=9)


def test_encode_keywords():
    image = np.arange(5000, dtype=np.uint16)
    reference = chunked_encode(image, codec="lz4", level=1, max_chunk_size=1000, hilo=True)
    assert chunked_encode(image, 1, codec=1, chunksize=1000, itemsize=2, hilo=True) == reference
    assert chunked_encode(image, codec="LZ4", chunksize=1000, hilo=True) == reference
    assert chunked_encode(image, codec=None) == chunked_encode(image, codec="zstd")
    assert chunked_encode(image, 5) == chunked_encode(image, level=5)
    # itemsize 1: hilo does not apply (imagecodecs); itemsize 4: the bytes are packed as 16-bit words
    assert not chunked_info(chunked_encode(image, hilo=True, itemsize=1)).hilo
    floats = np.linspace(0, 1, 999, dtype=np.float32)
    packed = chunked_encode(floats, hilo=True, itemsize=4)
    assert chunked_info(packed).hilo and bytes(chunked_decode(packed)) == floats.tobytes()
    with pytest.raises(ConfigurationError, match="16-bit"):
        chunked_encode(floats, hilo=True)  # without itemsize our dtype check stays
    with pytest.raises(ConfigurationError, match="disagree"):
        chunked_encode(image, chunksize=1000, max_chunk_size=2000)
    with pytest.raises(ConfigurationError, match="codec must be"):
        chunked_encode(image, codec=2)
    with pytest.raises(ConfigurationError, match="itemsize"):
        chunked_encode(image, itemsize=0)


def test_encode_out():
    data = bytes(range(256)) * 8
    payload = chunked_encode(data, max_chunk_size=500)
    size = len(payload)
    assert chunked_encode(data, chunksize=500, out=size) == payload
    with pytest.raises(ConfigurationError, match=f"needs {size}"):
        chunked_encode(data, chunksize=500, out=size - 1)
    exact = bytearray(size)
    assert chunked_encode(data, chunksize=500, out=exact) is exact and exact == payload
    larger = bytearray(size + 10)
    view = chunked_encode(data, chunksize=500, out=larger)
    assert type(view) is memoryview and bytes(view) == payload
    array = np.zeros(size + 3, np.uint8)
    result = chunked_encode(data, chunksize=500, out=array)
    assert result.shape == (size,) and np.shares_memory(result, array) and result.tobytes() == payload
    with pytest.raises(ConfigurationError, match="out holds"):
        chunked_encode(data, chunksize=500, out=bytearray(size - 1))
    with pytest.raises(InputTypeError):
        chunked_encode(data, out=b"\0" * 4096)


def test_reader_taking_a_decoder_function():
    """A CZI reader that is handed its decoder, as czifile calls imagecodecs'."""

    def read_subblock(data, decode, dtype, samples, shape):
        dtype = np.dtype(dtype)
        size = int(np.prod(shape)) * samples * dtype.itemsize
        decoded = decode(data, itemsize=dtype.itemsize, samples=samples, out=size)
        return np.frombuffer(decoded, dtype).reshape(shape + ((samples,) if samples > 1 else ()))

    image = pixels("<u2", 3, shape=(20, 30))
    subblock = chunked_encode(image, hilo=True)
    np.testing.assert_array_equal(read_subblock(subblock, chunked_decode, "<u2", 3, (20, 30)), rgb(image, 3))


# --- side by side with imagecodecs ---------------------------------------------------------


@pytest.fixture(scope="module")
def imagecodecs():
    module = pytest.importorskip("imagecodecs", reason="imagecodecs is not installed (wheels for Python >= 3.12)")
    if not getattr(getattr(module, "CHUNKED", None), "available", False):
        pytest.skip("imagecodecs built without CHUNKED")
    return module


def same_result(ours, theirs):
    assert type(ours) is type(theirs)
    if isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert bytes(ours) == bytes(theirs)


def outs(image):
    """imagecodecs' three kinds of ``out``: none, a size in bytes, an array."""
    yield "None", lambda: None
    yield "int", lambda: image.nbytes
    yield "array", lambda: np.zeros_like(image)
    yield "larger array", lambda: np.zeros(image.nbytes + 5, np.uint8)


@pytest.mark.parametrize("name, dtype, samples", PIXEL_TYPES, ids=PIXEL_IDS)
@pytest.mark.parametrize("hilo", [False, True])
@pytest.mark.parametrize("codec", ["zstd", "lz4"])
@pytest.mark.parametrize("writer", ["imagecodecs", "ours"])
def test_decode_like_imagecodecs(imagecodecs, name, dtype, samples, hilo, codec, writer):
    image = pixels(dtype, samples, seed=len(name))
    itemsize = image.dtype.itemsize
    if writer == "imagecodecs":  # hilo needs itemsize > 1 there; it packs 16-bit words for any width
        payload = imagecodecs.chunked_encode(image.tobytes(), 1, codec=codec, chunksize=1001,
                                             itemsize=2 if hilo else 1, hilo=hilo)  # fmt: skip
    else:
        payload = chunked_encode(image.tobytes(), 1, codec=codec, chunksize=1001, hilo=hilo)
    assert chunked_info(payload).hilo == hilo
    for kind, make_out in outs(image):
        out_ours, out_theirs = make_out(), make_out()
        ours = chunked_decode(payload, itemsize=itemsize, samples=samples, out=out_ours)
        theirs = imagecodecs.chunked_decode(payload, itemsize=itemsize, samples=samples, out=out_theirs)
        same_result(ours, theirs)
        if isinstance(out_theirs, np.ndarray):
            np.testing.assert_array_equal(out_ours, out_theirs)
            assert np.shares_memory(ours, out_ours) and np.shares_memory(theirs, out_theirs), kind
        np.testing.assert_array_equal(np.frombuffer(ours, image.dtype).reshape(image.shape), rgb(image, samples))


@pytest.mark.parametrize("out", ["bytearray", "larger bytearray", "memoryview"])
def test_buffer_outs_like_imagecodecs(imagecodecs, out):
    data = bytes(range(240))
    payload = imagecodecs.chunked_encode(data, chunksize=100)
    make = {"bytearray": lambda: bytearray(240), "larger bytearray": lambda: bytearray(250),
            "memoryview": lambda: memoryview(bytearray(240))}[out]  # fmt: skip
    for itemsize, samples in ((1, 1), (1, 3), (2, 3), (1, 4), (4, 3)):
        mine, theirs = make(), make()
        ours = chunked_decode(payload, itemsize=itemsize, samples=samples, out=mine)
        expected = imagecodecs.chunked_decode(payload, itemsize=itemsize, samples=samples, out=theirs)
        same_result(ours, expected)
        assert (ours is mine) == (expected is theirs) and bytes(mine) == bytes(theirs)


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
@pytest.mark.parametrize("itemsize, hilo", [(1, False), (1, True), (2, False), (2, True), (4, True)])
def test_encode_like_imagecodecs(imagecodecs, codec, itemsize, hilo):
    data = np.random.default_rng(itemsize).poisson(900, 20_000).astype(np.uint16).tobytes()
    keywords = {"codec": codec, "chunksize": 3000, "itemsize": itemsize, "hilo": hilo}
    theirs = imagecodecs.chunked_encode(data, 1 if codec == "zstd" else None, **keywords)
    for out in (None, 100_000, np.zeros(100_000, np.uint8), bytearray(100_000)):
        # imagecodecs writes the minimal header (no Preprocessing item without hi/lo)
        ours = chunked_encode(data, 1 if codec == "zstd" else None, out=out, header="minimal", **keywords)
        reference = imagecodecs.chunked_encode(data, 1 if codec == "zstd" else None, out=_copy(out), **keywords)
        assert type(ours) is type(reference)
        info = chunked_info(ours)
        assert info.hilo == (hilo and itemsize > 1) == chunked_info(theirs).hilo and info.codec == codec
        assert bytes(imagecodecs.chunked_decode(ours)) == data == bytes(chunked_decode(theirs))
        if codec == "zstd":  # the same zstd frames; LZ4 blocks may differ between LZ4 versions
            assert bytes(ours) == bytes(reference) == theirs
    libczi = chunked_encode(data, 1 if codec == "zstd" else None, **keywords)
    assert bytes(imagecodecs.chunked_decode(libczi)) == data  # libCZI's header form reads there too
    assert chunked_info(libczi).header_form == "libczi"
    assert chunked_info(theirs).header_form == ("libczi" if hilo and itemsize > 1 else "minimal")


def _copy(out):
    return out.copy() if isinstance(out, np.ndarray | bytearray) else out


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_empty_input_both_ways(imagecodecs, codec):
    """imagecodecs writes zero chunks for empty input, we one empty chunk: each reads the other's."""
    theirs = imagecodecs.chunked_encode(b"", codec=codec)
    assert chunked_info(theirs).chunk_count == 0
    assert bytes(chunked_decode(theirs)) == b""
    ours = chunked_encode(b"", codec=codec)
    assert chunked_info(ours).chunk_count == 1
    assert bytes(imagecodecs.chunked_decode(ours)) == b""
