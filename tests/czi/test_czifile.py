"""``accelerate_czifile``: czifile reading mode-7 (chunked) CZI files through ``chunked_decode``.

The files are made here: pylibCZIrw (libCZI's own writer, from PyPI) writes an uncompressed
CZI, and ``mode7_czi`` rewrites it with each subblock's pixels replaced by a chunked payload
and compression 7 in the subblock and the directory (pixel types pylibCZIrw cannot write are
set in the same step over a Gray8 file). Every test compares czifile's own read (imagecodecs)
with the accelerated one and the original pixels. The tests that need czifile, imagecodecs
(wheels for Python >= 3.12) or pylibCZIrw skip without them; the "czifile missing" path runs
everywhere.
"""

import struct
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import n5mscodecs
from n5mscodecs import ChunkedFormatError, ConfigurationError, accelerate_czifile, chunked_encode
from n5mscodecs.czi import CzifileAccelerationWarning, restore_czifile
from n5mscodecs.czi import czifile as acceleration_module

# name, CZI PixelType value, dtype, samples (czifile's CziPixelType)
PIXEL_TYPES = [
    ("Gray8", 0, "<u1", 1),
    ("Gray16", 1, "<u2", 1),
    ("Gray32Float", 2, "<f4", 1),
    ("Bgr24", 3, "<u1", 3),
    ("Bgr48", 4, "<u2", 3),
    ("Bgr96Float", 8, "<f4", 3),
    ("Bgra32", 9, "<u1", 4),
    ("Gray64ComplexFloat", 10, "<c8", 1),
    ("Bgr192ComplexFloat", 11, "<c8", 3),
    ("Gray32", 12, "<i4", 1),
    ("Gray64", 13, "<f8", 1),
]
WRITTEN_BY_PYLIBCZIRW = {"Gray8", "Gray16", "Gray32Float", "Bgr24", "Bgr48", "Bgr96Float"}
PLANES = [{"C": c, "Z": z} for c in range(2) for z in range(2)]  # four subblocks per file


@pytest.fixture(autouse=True)
def clean_state():
    """Every test starts with czifile unpatched and no warning given yet."""
    restore_czifile()
    acceleration_module._warned.clear()
    yield
    restore_czifile()
    acceleration_module._warned.clear()


@pytest.fixture
def czifile():
    module = pytest.importorskip("czifile")
    imagecodecs = pytest.importorskip("imagecodecs")
    if not getattr(imagecodecs, "CHUNKED", None) or not imagecodecs.CHUNKED.available:
        pytest.skip("this imagecodecs has no chunked codec")
    return module


@pytest.fixture
def pylibczirw():
    return pytest.importorskip("pylibCZIrw.czi")


# --- mode-7 CZI files ---------------------------------------------------------------------------

SEGMENT = struct.Struct("<16sqq")  # Id, AllocatedSize, UsedSize; the segment's data follow
DIRECTORY_POSITION = 32 + 52  # in the ZISRAWFILE header's data


def stored_pixels(dtype, samples, shape, seed):
    """A subblock's pixels as stored (BGR order for 3 and 4 samples); smooth with noise, so
    the payloads compress; floats finite, integers using their high bytes too."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    full = shape + ((samples,) if samples > 1 else ())
    ramp = np.add.outer(np.arange(shape[0]), np.arange(shape[1])).reshape(shape + (1,) * (len(full) - 2))
    if dtype.kind == "f":
        return (ramp * 10.5 + rng.normal(0, 100, full)).astype(dtype)
    if dtype.kind == "c":
        return (ramp + rng.normal(0, 100, full) + 1j * rng.normal(0, 100, full)).astype(dtype)
    high = np.iinfo(dtype).max
    return np.clip(ramp * (high // 200) + rng.integers(0, 50, full), 0, high).astype(dtype)


def as_read(stored, samples):
    """What czifile returns for stored pixels: BGR(A) as RGB(A), an 8-bit alpha 255."""
    if samples == 1:
        return stored
    result = stored.copy()
    result[..., [0, 2]] = stored[..., [2, 0]]
    if samples == 4 and stored.dtype.itemsize == 1:
        result[..., 3] = 255
    return result


def rewrite_subblocks(source, target, replace):
    """Copy the CZI ``source`` to ``target`` with new subblock data.

    ``replace(index, data)`` gives ``(pixel_type, compression, new data)`` for the index-th
    directory entry and its subblock's data. The new subblock segments and directory are
    appended (32-byte aligned), the old ones are marked DELETED and the file header points to
    the new directory, so metadata and attachments keep their places."""
    raw = bytearray(Path(source).read_bytes())
    directory = struct.unpack_from("<q", raw, DIRECTORY_POSITION)[0]
    assert SEGMENT.unpack_from(raw, directory)[0].rstrip(b"\0") == b"ZISRAWDIRECTORY"
    count = struct.unpack_from("<i", raw, directory + 32)[0]
    position = directory + 32 + 128
    entries = []
    for index in range(count):
        dimensions = struct.unpack_from("<i", raw, position + 28)[0]
        entry = bytearray(raw[position : position + 32 + 20 * dimensions])
        position += len(entry)
        segment = struct.unpack_from("<q", entry, 6)[0]
        assert SEGMENT.unpack_from(raw, segment)[0].rstrip(b"\0") == b"ZISRAWSUBBLOCK"
        start = segment + 32
        metadata_size, attachment_size, data_size = struct.unpack_from("<iiq", raw, start)
        header_size = max(240, len(entry))  # the inline directory entry and its padding
        metadata_at = start + 16 + header_size
        data_at = metadata_at + metadata_size
        metadata = raw[metadata_at:data_at]
        attachment = raw[data_at + data_size : data_at + data_size + attachment_size]
        pixel_type, compression, data = replace(index, bytes(raw[data_at : data_at + data_size]))
        raw[segment : segment + 16] = b"DELETED".ljust(16, b"\0")
        raw.extend(bytes(-len(raw) % 32))
        struct.pack_into("<iqii", entry, 2, pixel_type, len(raw), 0, compression)
        body = struct.pack("<iiq", metadata_size, attachment_size, len(data))
        body += bytes(entry).ljust(header_size, b"\0") + metadata + bytes(data) + attachment
        raw += SEGMENT.pack(b"ZISRAWSUBBLOCK", len(body) + -len(body) % 32, len(body)) + body
        entries.append(entry)
    raw[directory : directory + 16] = b"DELETED".ljust(16, b"\0")
    raw.extend(bytes(-len(raw) % 32))
    struct.pack_into("<q", raw, DIRECTORY_POSITION, len(raw))
    body = struct.pack("<i", count) + bytes(124) + b"".join(entries)
    raw += SEGMENT.pack(b"ZISRAWDIRECTORY", len(body) + -len(body) % 32, len(body)) + body
    Path(target).write_bytes(raw)


def mode7_czi(folder, name, planes, *, shape=(37, 53), codec="zstd", hilo=True, level=1, max_chunk_size=65536, seed=0):
    """Write ``name`` (a PIXEL_TYPES name) with one subblock per plane twice: uncompressed
    (``plain.czi``) and mode 7 (``mode7.czi``). Returns both paths and the pixels czifile
    should return for each plane, in plane order."""
    from pylibCZIrw import czi as pyczi

    _, pixel_type, dtype, samples = next(row for row in PIXEL_TYPES if row[0] == name)
    stored = [stored_pixels(dtype, samples, shape, seed + index) for index in range(len(planes))]
    written = Path(folder) / "written.czi"
    with pyczi.create_czi(str(written), exist_ok=True) as writer:
        for plane, pixels in zip(planes, stored, strict=True):
            # pylibCZIrw takes (Y, X, samples) in stored (BGR) order; others are set over Gray8
            if name in WRITTEN_BY_PYLIBCZIRW:
                writer.write(data=pixels.reshape(shape + (samples,)) if samples > 1 else pixels, plane=plane)
            else:
                writer.write(data=np.zeros(shape, np.uint8), plane=plane)
    plain, mode7 = Path(folder) / "plain.czi", Path(folder) / "mode7.czi"
    rewrite_subblocks(written, plain, lambda index, _: (pixel_type, 0, stored[index].tobytes()))

    def chunked(index, _):
        payload = chunked_encode(
            stored[index].tobytes(), level=level, codec=codec, hilo=hilo, max_chunk_size=max_chunk_size
        )
        assert len(payload) != stored[index].nbytes  # czifile reads a subblock of the raw size as raw
        return pixel_type, 7, payload

    rewrite_subblocks(written, mode7, chunked)
    return plain, mode7, [as_read(pixels, samples) for pixels in stored]


def read_subblocks(czifile, path):
    """czifile's pixels of every subblock (directory order) and its composed image."""
    with czifile.CziFile(path) as czi:
        tiles = [subblock.data().squeeze() for subblock in czi.subblocks()]
        return tiles, czi.asarray()


def count_calls(monkeypatch):
    """Record the threads of every call czifile makes into n5mscodecs' decode."""
    calls = []
    original = acceleration_module.chunked_decode

    def spy(data, **keywords):
        calls.append(keywords["threads"])
        return original(data, **keywords)

    monkeypatch.setattr(acceleration_module, "chunked_decode", spy)
    return calls


# --- every pixel type ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", [row[0] for row in PIXEL_TYPES])
@pytest.mark.parametrize("hilo", [False, True], ids=["plain", "hilo"])
@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_every_pixel_type(czifile, pylibczirw, tmp_path, monkeypatch, name, hilo, codec):
    # 1000-byte chunks: boundaries cut pixels and samples; many chunks per subblock
    plain, mode7, expected = mode7_czi(tmp_path, name, PLANES, codec=codec, hilo=hilo, max_chunk_size=1000)
    calls = count_calls(monkeypatch)
    plain_tiles, plain_image = read_subblocks(czifile, plain)
    own_tiles, own_image = read_subblocks(czifile, mode7)  # imagecodecs
    assert calls == []
    with accelerate_czifile(threads=2) as acceleration:
        assert acceleration.active
        fast_tiles, fast_image = read_subblocks(czifile, mode7)
    assert len(calls) >= len(PLANES) and set(calls) == {2}  # every subblock, on 2 threads
    for tiles in (plain_tiles, own_tiles, fast_tiles):
        for tile, pixels in zip(tiles, expected, strict=True):
            assert tile.dtype == pixels.dtype
            np.testing.assert_array_equal(tile, pixels)
    assert [tile.flags.writeable for tile in fast_tiles] == [tile.flags.writeable for tile in own_tiles]
    assert fast_image.dtype == own_image.dtype == plain_image.dtype
    np.testing.assert_array_equal(fast_image, own_image)
    np.testing.assert_array_equal(fast_image, plain_image)


@pytest.mark.parametrize("name, dtype, samples", [("Gray16", "<u2", 1), ("Bgr48", "<u2", 3), ("Bgra32", "<u1", 4)])
def test_decoder_results_as_imagecodecs(czifile, name, dtype, samples):
    import imagecodecs

    stored = stored_pixels(dtype, samples, (40, 30), seed=3)
    payload = chunked_encode(stored.tobytes(), hilo=True, max_chunk_size=999)
    size = stored.nbytes
    decode = acceleration_module.chunked_decode_for_czifile
    expected = imagecodecs.chunked_decode(payload, itemsize=stored.dtype.itemsize, samples=samples, out=size)
    assert expected == as_read(stored, samples).tobytes()
    with accelerate_czifile(threads=2):
        # czifile's call: the same bytes, as a read-only uint8 array (no copy into bytes)
        result = decode(payload, itemsize=stored.dtype.itemsize, samples=samples, out=size)
        assert isinstance(result, np.ndarray) and result.dtype == np.uint8 and not result.flags.writeable
        assert result.tobytes() == expected
        # the size is not checked, as in imagecodecs (czifile reconciles a different one)
        unchecked = decode(memoryview(payload), itemsize=stored.dtype.itemsize, samples=samples, out=size + 7)
        assert unchecked.tobytes() == expected
        # other calls: imagecodecs' result types
        assert decode(payload, itemsize=stored.dtype.itemsize, samples=samples) == expected
        target = bytearray(size)
        assert decode(payload, itemsize=stored.dtype.itemsize, samples=samples, out=target) is target
        assert target == expected
        with pytest.raises(ChunkedFormatError):  # checked before anything is allocated
            decode(payload[:5], itemsize=2, samples=1, out=size)


def test_large_subblock_and_default_threads(czifile, pylibczirw, tmp_path, monkeypatch):
    # 840 KB, 13 chunks of 64 KiB, zstd level 1 with hi/lo: as ZEN writes
    _, mode7, expected = mode7_czi(tmp_path, "Gray16", [{"C": 0}], shape=(600, 700))
    calls = count_calls(monkeypatch)
    accelerate_czifile()  # plain call: on for the process
    tiles, image = read_subblocks(czifile, mode7)
    assert calls and set(calls) == {None}
    np.testing.assert_array_equal(tiles[0], expected[0])
    np.testing.assert_array_equal(image, expected[0])
    assert czifile.imread(mode7).tobytes() == expected[0].tobytes()


def test_corrupt_subblock_raises_our_error(czifile, pylibczirw, tmp_path):
    _, mode7, _ = mode7_czi(tmp_path, "Gray16", [{"C": 0}])
    raw = bytearray(mode7.read_bytes())
    directory = struct.unpack_from("<q", raw, DIRECTORY_POSITION)[0]
    subblock = struct.unpack_from("<q", raw, directory + 32 + 128 + 6)[0]
    metadata_size = struct.unpack_from("<i", raw, subblock + 32)[0]
    payload = subblock + 32 + 16 + 240 + metadata_size
    assert raw[payload] == 1  # the ChunkSizes id
    raw[payload] = 5  # an unknown header item
    bad = tmp_path / "bad.czi"
    bad.write_bytes(raw)
    with accelerate_czifile(), czifile.CziFile(bad) as czi:
        with pytest.raises(ChunkedFormatError, match="unknown header chunk id 5"):
            next(iter(czi.subblocks())).data()
    with czifile.CziFile(bad) as czi, pytest.raises(RuntimeError):  # imagecodecs' ChunkedError
        next(iter(czi.subblocks())).data()


# --- switching on and off ----------------------------------------------------------------------


def decoder_slot(czifile):
    return czifile.CziCompressionType.__dict__["decoder"]


def test_on_and_off_restore_czifiles_decoder(czifile):
    import imagecodecs

    kind = czifile.CziCompressionType
    original = decoder_slot(czifile)
    assert kind.decoder(7) is imagecodecs.chunked_decode
    with accelerate_czifile(threads=1) as acceleration:
        assert acceleration.active and acceleration.czifile_version == czifile.__version__
        assert decoder_slot(czifile) is not original
        assert kind.decoder(7) is acceleration_module.chunked_decode_for_czifile
        assert kind.decoder(5) is imagecodecs.zstd1_decode  # every other mode: czifile's own
        assert kind.decoder(0) is None
    assert not acceleration.active
    assert decoder_slot(czifile) is original and kind.decoder(7) is imagecodecs.chunked_decode

    handle = accelerate_czifile()  # a plain call stays on
    assert handle.active and decoder_slot(czifile) is not original
    with accelerate_czifile(threads=3):
        pass
    assert handle.active and kind.decoder(7) is acceleration_module.chunked_decode_for_czifile
    handle.restore()
    handle.restore()  # twice: nothing
    assert decoder_slot(czifile) is original

    with handle:  # a restored handle switches on again as a context manager
        assert handle.active
    assert decoder_slot(czifile) is original

    accelerate_czifile()
    accelerate_czifile(threads=2)
    assert restore_czifile() is True  # everything off at once
    assert decoder_slot(czifile) is original
    assert restore_czifile() is False


def test_nested_threads(czifile, pylibczirw, tmp_path, monkeypatch):
    _, mode7, expected = mode7_czi(tmp_path, "Gray16", [{"C": 0}])
    calls = count_calls(monkeypatch)

    def threads_of_a_read():
        first = len(calls)
        tiles, _ = read_subblocks(czifile, mode7)
        np.testing.assert_array_equal(tiles[0], expected[0])
        return set(calls[first:])

    with accelerate_czifile(threads=1):
        assert threads_of_a_read() == {1}
        with accelerate_czifile(threads=2):
            assert threads_of_a_read() == {2}
            outer = accelerate_czifile(threads=3)  # a plain call inside: outlives the blocks
            assert threads_of_a_read() == {3}
        assert threads_of_a_read() == {3}
    assert threads_of_a_read() == {3}
    outer.restore()
    assert not acceleration_module._route[0]


def test_reads_after_off_use_czifiles_decoder(czifile, pylibczirw, tmp_path, monkeypatch):
    _, mode7, expected = mode7_czi(tmp_path, "Bgr48", [{"C": 0}])
    calls = count_calls(monkeypatch)
    with accelerate_czifile():
        czi = czifile.CziFile(mode7)  # directory parsed while on
    try:
        np.testing.assert_array_equal(czi.asarray(), expected[0])
    finally:
        czi.close()
    assert calls == []  # decoded by imagecodecs
    # an entry that kept our function from while it was on hands over to imagecodecs
    payload = chunked_encode(b"\x01\x00\x02\x00\x03\x00", hilo=True)
    on_call = acceleration_module.chunked_decode_for_czifile(payload, itemsize=2, samples=3, out=6)
    assert on_call == b"\x03\x00\x02\x00\x01\x00" and calls == []


def test_concurrent_uses(czifile, pylibczirw, tmp_path):
    _, mode7, expected = mode7_czi(tmp_path, "Gray16", [{"C": 0}, {"C": 1}])
    original = decoder_slot(czifile)
    errors = []
    barrier = threading.Barrier(4)

    def work(threads):
        try:
            barrier.wait()
            for _ in range(5):
                with accelerate_czifile(threads=threads):
                    tiles, _ = read_subblocks(czifile, mode7)
                    assert all(np.array_equal(t, e) for t, e in zip(tiles, expected, strict=True))
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    workers = [threading.Thread(target=work, args=(1 + index % 2,)) for index in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert decoder_slot(czifile) is original


def test_threads_are_checked():
    with pytest.raises(ConfigurationError):
        accelerate_czifile(threads=0)
    with pytest.raises(ConfigurationError):
        accelerate_czifile(threads=1.5)


def test_exported():
    assert n5mscodecs.accelerate_czifile is accelerate_czifile
    assert "accelerate_czifile" in n5mscodecs.__all__
    assert issubclass(CzifileAccelerationWarning, UserWarning)


# --- czifile missing or changed: warn once, leave it alone ----------------------------------------


def test_czifile_missing_warns_once(monkeypatch):
    monkeypatch.setitem(sys.modules, "czifile", None)  # import czifile raises ImportError
    with pytest.warns(CzifileAccelerationWarning, match="czifile cannot be imported"):
        handle = accelerate_czifile()
    assert not handle.active and handle.czifile_version is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with accelerate_czifile(threads=2) as again:  # no second warning, no error
            assert not again.active
    handle.restore()


def _not_static(czifile):
    czifile.CziCompressionType.decoder = lambda value: None


def _two_arguments(czifile):
    czifile.CziCompressionType.decoder = staticmethod(lambda value, other: None)


def _other_function(czifile):
    czifile.CziCompressionType.decoder = staticmethod(lambda value: len)


def _other_keywords(czifile):
    def chunked_decode(data, /, *, out=None):
        return data

    chunked_decode.__module__ = "imagecodecs"
    czifile.CziCompressionType.decoder = staticmethod(lambda value: chunked_decode)


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda czifile: setattr(czifile, "__version__", "2026.6.12"), "older than 2026.8.16"),
        (lambda czifile: setattr(czifile, "__version__", "3.0"), "older than"),
        (lambda czifile: setattr(czifile, "__version__", "2027.1.dev0"), "is not YYYY.M.D"),
        (lambda czifile: setattr(czifile, "CziCompressionType", None), "no class CziCompressionType"),
        (_not_static, "is not czifile's static method"),
        (_two_arguments, "does not take exactly one value"),
        (_other_function, "not imagecodecs.chunked_decode"),
        (_other_keywords, "not itemsize, samples, out"),
    ],
    ids=["old", "old-scheme", "unparsable", "no-class", "not-static", "two-arguments", "other-function", "keywords"],
)
def test_changed_czifile_warns_once_and_stays_untouched(czifile, monkeypatch, change, problem):
    monkeypatch.setattr(czifile, "__version__", czifile.__version__)
    monkeypatch.setattr(czifile, "CziCompressionType", czifile.CziCompressionType)
    monkeypatch.setattr(czifile.CziCompressionType, "decoder", decoder_slot(czifile))
    change(czifile)
    kind = czifile.CziCompressionType
    before = kind.__dict__.get("decoder") if isinstance(kind, type) else None
    with pytest.warns(CzifileAccelerationWarning, match=problem) as record:
        handle = accelerate_czifile()
    assert len(record) == 1 and f"czifile {czifile.__version__} " in str(record[0].message)
    assert not handle.active
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with accelerate_czifile():  # warned once
            pass
    if isinstance(kind, type):
        assert kind.__dict__.get("decoder") is before
