"""The zstd/LZ4 C functions found in the zstandard and lz4 packages, and the
``_chunked`` kernels that call them.

The CZI chunked tests (test_czi_chunked.py) run on this path and on the
Python-API fallback; here: finding the functions, byte-identical output of
both paths, and the kernels' own bounds checks.
"""

import os
import threading

import numpy as np
import pytest

from n5mscodecs import ConfigurationError, chunked_decode, chunked_encode, chunked_info
from n5mscodecs._status import Status
from n5mscodecs.czi import _chunked, backends
from n5mscodecs.czi import libraries as _chunk_libraries

native = pytest.mark.skipif(not backends.NATIVE_AVAILABLE, reason="zstandard/lz4 build without exported C functions")


def test_functions_are_found_in_the_installed_packages():
    # CI sets N5MSCODECS_REQUIRE_NATIVE=1: there the fast path must be the one tested.
    if os.environ.get("N5MSCODECS_REQUIRE_NATIVE") == "1":
        assert backends.NATIVE_AVAILABLE
    assert _chunk_libraries.bind() == backends.NATIVE_AVAILABLE == _chunked.libraries_bound()
    if backends.NATIVE_AVAILABLE:
        found = {
            **_chunk_libraries._lookup(_chunk_libraries._ZSTD_MODULES, "ZSTD_", 10400,
                                       {_chunk_libraries._BACKPORT_ZSTD: _chunk_libraries.zstandard_zstd_version}),
            **_chunk_libraries._lookup(_chunk_libraries._LZ4_MODULES, "LZ4_", 10900),
        }
        assert sorted(found) == sorted(_chunked.LIBRARY_FUNCTIONS)
        assert all(isinstance(address, int) and address > 0 for address in found.values())


@native
def test_zstd_comes_from_backports_zstd_only_when_it_bundles_zstandards_release(monkeypatch):
    """backports.zstd (its zstd has the x86-64 assembly decoder) is preferred, but only with
    the very zstd release zstandard bundles: the bytes we write must match the Python path."""
    import importlib.util

    try:
        import backports.zstd
    except ImportError:
        pytest.skip("backports.zstd is not installed")
    modules, exact = _chunk_libraries._ZSTD_MODULES, {_chunk_libraries._BACKPORT_ZSTD:
                                                      _chunk_libraries.zstandard_zstd_version}
    same = backports.zstd.zstd_version_info == __import__("zstandard").ZSTD_VERSION
    module, addresses = _chunk_libraries._find(modules, "ZSTD_", 10400, exact)
    assert (module == _chunk_libraries._BACKPORT_ZSTD) == same
    assert _chunk_libraries.zstd_module == module  # what bind() chose at import
    if same:
        import ctypes

        library = ctypes.CDLL(importlib.util.find_spec(_chunk_libraries._BACKPORT_ZSTD).origin)
        assert addresses["ZSTD_decompressDCtx"] == ctypes.cast(library.ZSTD_decompressDCtx, ctypes.c_void_p).value
    # another zstd release than zstandard's: backports.zstd is passed over
    monkeypatch.setattr(_chunk_libraries, "zstandard_zstd_version", lambda: 1)
    found = _chunk_libraries._find(modules, "ZSTD_", 10400, {_chunk_libraries._BACKPORT_ZSTD:
                                                             _chunk_libraries.zstandard_zstd_version})
    assert found is not None and found[0] != _chunk_libraries._BACKPORT_ZSTD


def test_lookup_gives_up_cleanly():
    assert _chunk_libraries._lookup(("no_such_package.module",), "ZSTD_", 10400) is None
    assert _chunk_libraries._lookup(("json",), "ZSTD_", 10400) is None  # not a shared library
    assert _chunk_libraries._lookup(_chunk_libraries._LZ4_MODULES, "LZ4_", 10 ** 9) is None  # too old
    bound = _chunked.libraries_bound()
    with pytest.raises(RuntimeError, match="already bound") if bound else pytest.raises(ValueError):
        _chunked.bind_libraries({})


def lz4_library():
    """LZ4 itself, loaded independently of our binding, as the reference for LZ4 chunks."""
    import ctypes
    import importlib.util

    library = ctypes.CDLL(importlib.util.find_spec("lz4.block._block").origin)
    library.LZ4_compressBound.restype = ctypes.c_int
    library.LZ4_compress_fast.restype = ctypes.c_int
    return library


def lz4_reference_block(chunk, acceleration):
    """``LZ4_compress_fast``, LZ4's one-shot block compression, on one chunk."""
    import ctypes

    library = lz4_library()
    capacity = library.LZ4_compressBound(len(chunk))
    out = ctypes.create_string_buffer(capacity)
    size = library.LZ4_compress_fast(bytes(chunk), out, len(chunk), capacity, acceleration)
    assert size > 0
    return out.raw[:size]


def encode_with(path_is_native, data, **options):
    with backends.use_backend("native" if path_is_native else "python"):
        return chunked_encode(data, **options)


SAMPLES = {
    "poisson": np.random.default_rng(1).poisson(600, 200_001).astype(np.uint16).tobytes()[:-1],
    "zeros": bytes(70_000),
    "random": np.random.default_rng(2).integers(0, 256, 50_000, dtype=np.uint8).tobytes(),
    "empty": b"",
}


@native
@pytest.mark.parametrize("sample", sorted(SAMPLES))
@pytest.mark.parametrize(
    "codec, level", [("zstd", 1), ("zstd", 3), ("zstd", -5), ("zstd", 19), ("lz4", 1), ("lz4", 9)]
)
@pytest.mark.parametrize("max_chunk_size, hilo", [(65536, True), (999, True), (1, False), (1 << 20, False)])
def test_chunks_are_what_the_libraries_write(sample, codec, level, max_chunk_size, hilo):
    """zstd: the bytes of zstandard's Python API (so both paths agree); LZ4:
    LZ4's one-shot block call, per chunk (the fallback's lz4.block stream mode
    writes other, equally valid, blocks)."""
    data = SAMPLES[sample]
    if codec == "zstd" and level == 19 and len(data) > 100_000:
        data = data[:100_000]  # level 19 is slow; the size still spans several chunks
    options = dict(codec=codec, level=level, max_chunk_size=max_chunk_size, hilo=hilo, threads=2)
    ours = encode_with(True, data, **options)
    fallback = encode_with(False, data, **options)
    assert bytes(chunked_decode(ours)) == data == bytes(chunked_decode(fallback))
    if codec == "zstd":
        assert ours == fallback
        return
    info = chunked_info(ours)
    if len(data) > 5000:
        starts = info.header_size + np.concatenate([[0], np.cumsum(info.compressed_sizes, dtype=np.int64)])
        for i in (0, info.chunk_count // 2, info.chunk_count - 1):  # first, middle, last
            chunk = data[i * max_chunk_size : (i + 1) * max_chunk_size]
            if hilo:
                chunk = czi_chunked_hilo(chunk)
            assert ours[starts[i] : starts[i + 1]] == lz4_reference_block(chunk, level)


@native
def test_each_thread_has_its_own_worker():
    workers = []

    def grab():
        workers.append(backends.chunk_worker())
        workers.append(backends.chunk_worker())

    threads = [threading.Thread(target=grab) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert workers[0] is workers[1] and workers[2] is workers[3] and workers[0] is not workers[2]


@native
def test_large_scratch_is_released_after_the_call():
    data = np.random.default_rng(3).poisson(500, 3 << 20).astype(np.uint16)  # one 6 MiB chunk
    payload = chunked_encode(data, codec="lz4", max_chunk_size=8 << 20, hilo=True, threads=1)
    assert bytes(chunked_decode(payload, threads=1)) == data.tobytes()
    assert backends.chunk_worker().scratch_bytes == 0
    small = chunked_encode(data[:1000], codec="lz4", hilo=True, threads=1)
    chunked_decode(small, threads=1)
    assert backends.chunk_worker().scratch_bytes == 2000  # small scratch is kept for the next call


def lz4_layout(chunks):
    """payload, compressed offsets and decompressed offsets of raw LZ4 blocks of ``chunks``."""
    import lz4.block

    blocks = [lz4.block.compress(chunk, store_size=False) for chunk in chunks]
    compressed = np.cumsum([0] + [len(block) for block in blocks]).astype(np.int64)
    decompressed = np.cumsum([0] + [len(chunk) for chunk in chunks]).astype(np.int64)
    return np.frombuffer(b"".join(blocks), np.uint8), compressed, decompressed


@native
def test_decode_chunks_checks_every_offset_before_reading():
    worker = _chunked.ChunkWorker()
    payload, compressed, decompressed = lz4_layout([b"abcd" * 10, b"efgh" * 10])
    target = np.zeros(80, np.uint8)
    assert _chunked.decode_chunks(worker, payload, target, compressed, decompressed, 0, 2, True, False) == (0, 2, 0)
    assert target.tobytes() == b"abcd" * 10 + b"efgh" * 10
    bad = compressed.copy()
    bad[2] = payload.shape[0] + 1  # runs past the payload
    with pytest.raises(IndexError, match="chunk 1 out of bounds"):
        _chunked.decode_chunks(worker, payload, target, bad, decompressed, 0, 2, True, False)
    backwards = decompressed.copy()
    backwards[2] = 30  # chunk 1 would end before it starts
    with pytest.raises(IndexError, match="chunk 1 out of bounds"):
        _chunked.decode_chunks(worker, payload, target, compressed, backwards, 0, 2, True, False)
    with pytest.raises(IndexError, match="range"):
        _chunked.decode_chunks(worker, payload, target, compressed, decompressed, 0, 3, True, False)
    # A short target gets the prefix only; hi/lo undone before cutting.
    short = np.zeros(45, np.uint8)
    assert _chunked.decode_chunks(worker, payload, short, compressed, decompressed, 0, 2, True, False)[0] == 0
    assert short.tobytes() == (b"abcd" * 10 + b"efgh" * 10)[:45]
    status, chunk, size = _chunked.decode_chunks(
        worker, payload, target, compressed, np.array([0, 41, 80], np.int64), 0, 2, True, False
    )
    assert (status, chunk, size) == (Status.ERR_CHUNK_SIZE, 0, 40)


@native
def test_encode_chunks_stops_at_a_full_block_and_checks_bounds():
    worker = _chunked.ChunkWorker()
    source = np.frombuffer(bytes(range(256)) * 4, np.uint8)  # 4 chunks of 256 bytes
    block_of, offset_of, size_of = np.full(4, -1, np.int32), np.full(4, -1, np.int64), np.full(4, -1, np.int64)
    block = np.zeros(600, np.uint8)  # room for two worst cases (256 + 16 bytes each), not three
    status, next_chunk, fill, needed = _chunked.encode_chunks(
        worker, source, 256, 0, 4, True, 1, False, 1, block, 7, 0, block_of, offset_of, size_of
    )
    assert (status, next_chunk, needed) == (Status.ERR_BLOCK_FULL, 2, 256 + 256 // 255 + 16)
    assert block_of.tolist() == [7, 7, -1, -1] and offset_of[:2].tolist() == [0, size_of[0]]
    assert fill == size_of[0] + size_of[1]
    assert block[: size_of[0]].tobytes() == lz4_reference_block(bytes(range(256)), 1)
    with pytest.raises(IndexError, match="out of bounds"):
        _chunked.encode_chunks(worker, source, 256, 0, 5, True, 1, False, 1, block, 0, 0, block_of, offset_of, size_of)
    with pytest.raises(IndexError, match="out of bounds"):
        _chunked.encode_chunks(worker, source, 256, 0, 1, True, 1, False, 1, block, 0, 601, block_of, offset_of,
                               size_of)
    with pytest.raises(IndexError, match="out of bounds"):
        _chunked.encode_chunks(worker, source, 0, 0, 1, True, 1, False, 1, block, 0, 0, block_of, offset_of, size_of)


@native
@pytest.mark.parametrize("stream", [False, True])
def test_decode_chunks_streaming_stores_write_the_same_bytes(stream):
    # Odd chunk sizes put destinations at every alignment; the streaming
    # unpack handles the unaligned head and the tail by hand.
    rng = np.random.default_rng(4)
    chunks = [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in (1, 2, 33, 47, 64, 65, 1001, 4096)]
    packed = [czi_chunked_hilo(chunk) for chunk in chunks]
    payload, compressed, decompressed = lz4_layout(packed)
    target = np.zeros(int(decompressed[-1]) + 3, np.uint8)[3:]  # an unaligned start as well
    status = _chunked.decode_chunks(
        _chunked.ChunkWorker(), payload, target, compressed, decompressed, 0, len(chunks), True, True, 1, stream
    )
    assert status == (0, len(chunks), 0)
    assert target.tobytes() == b"".join(chunks)


def czi_chunked_hilo(chunk):
    """hi/lo packing of one chunk, written independently of the kernels."""
    words = len(chunk) // 2
    return chunk[0 : 2 * words : 2] + chunk[1 : 2 * words : 2] + chunk[2 * words :]


@native
@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_outputs_above_the_streaming_threshold_round_trip(codec):
    size = backends.STREAM_MIN_BYTES + 4097
    data = np.random.default_rng(5).integers(0, 256, size, dtype=np.uint8).tobytes()  # incompressible
    payload = chunked_encode(data, codec=codec, level=1, max_chunk_size=99_999, hilo=True, threads=2)
    assert len(payload) >= backends.STREAM_MIN_BYTES  # the encode's final copy streams too
    out = np.empty(size + 1, np.uint8)[1:]
    assert chunked_decode(payload, out=out, threads=2) is out
    assert out.tobytes() == data
    assert bytes(chunked_decode(payload, threads=1)) == data


def test_backend_switch_is_local_to_its_context():
    """use_backend in one thread leaves the others on the default (a ContextVar, not a global)."""
    import threading

    default = backends.current_backend().name
    entered, release, seen = threading.Event(), threading.Event(), {}

    def switched():
        with backends.use_backend("python"):
            seen["inside"] = backends.current_backend().name
            entered.set()
            release.wait(5)
            seen["payload"] = bytes(chunked_decode(chunked_encode(b"abc" * 100, codec="lz4")))

    thread = threading.Thread(target=switched)
    thread.start()
    entered.wait(5)
    seen["other thread"] = backends.current_backend().name  # while the switch is active there
    release.set()
    thread.join()
    assert seen == {"inside": "python", "other thread": default, "payload": b"abc" * 100}
    assert backends.current_backend().name == default
    with pytest.raises(ConfigurationError, match="backend must be one of"):
        with backends.use_backend("fast"):
            pass


def test_every_kernel_status_is_one_enum():
    from n5mscodecs._status import Status

    assert Status.OK == 0 and len({int(s) for s in Status}) == len(Status)
    # the kernels' failure codes are Status members, whatever module returns them
    from n5mscodecs.payload import _kernels as payload_kernels

    assert Status(payload_kernels.scan_list_data(np.zeros(2, np.uint8))[0]) is Status.ERR_TRUNCATED_COUNT
    assert Status(_chunked.read_header(np.zeros(0, np.uint8))[0]) is Status.ERR_MALFORMED_HEADER
