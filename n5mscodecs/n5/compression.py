"""N5 block compressors as bytes-to-bytes steps of an inner codec chain.

Every compressor decodes *bounded*: it is told how many bytes to expect (the
header's ``numElements`` for varlength blocks, the block shape for default
blocks) or, for the outer stages of a chain, the most it may produce
(``max_size``), and never produces more, so a decompression bomb costs at most
that size. Configurations are accepted in three spellings:

- zarr v3: ``{"name": "gzip", "configuration": {"level": 6}}`` (or just ``"gzip"``)
- numcodecs: ``{"id": "gzip", "level": 6}``
- N5 ``attributes.json``: ``{"type": "gzip", "level": -1, "useZlib": false}``
"""

from __future__ import annotations

import bz2
import lzma
import os
import struct
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import TYPE_CHECKING

import lz4.block
import numcodecs
import numpy as np
import zstandard
from numcodecs import blosc as _blosc

from .._buffers import as_bytes, read_bytes, thread_scratch
from ..errors import CompressionError, ConfigurationError
from . import _xxhash

_deflate: ModuleType  # zlib's API: zlib-ng's where it is installed
_libdeflate: ModuleType | None
try:  # zlib-ng writes the same gzip/zlib formats about 5x faster at the same level
    from zlib_ng import zlib_ng as _deflate
except ImportError:  # pragma: no cover - the stdlib fallback
    _deflate = zlib
try:  # libdeflate inflates a whole block of known size about 1.5x faster than zlib-ng
    import deflate as _libdeflate
except ImportError:  # pragma: no cover - zlib-ng inflates everything
    _libdeflate = None

if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from numcodecs.abc import Codec

    from .._buffers import BytesLike

    #: A compressor spelled any way :func:`compressor_from_config` reads: a name,
    #: a zarr v3, numcodecs or N5 configuration, or a :class:`Compressor`.
    CompressorConfig: TypeAlias = "str | dict[str, Any] | Compressor"

_READ_STEP = 1 << 20
# Decoder state a header may demand before any output exists: xz/lzma dictionaries
# (preset 9 needs 64 MiB) and zstd windows (zstd -19 uses 8 MiB; larger only for
# data that large). Without these caps a 60-byte block can make liblzma reserve 4 GiB.
_XZ_MEMLIMIT = 1 << 27
_ZSTD_MIN_WINDOW = 1 << 23
# Largest expansion of one compressed byte: an LZ4 length byte adds at most 255
# bytes of output; no blosc codec (zstd RLE blocks included) exceeds 2**16.
_LZ4_MAX_RATIO = 255
_BLOSC_MAX_RATIO = 1 << 16
# numcodecs >= 0.16: blosc.compress(..., typesize=None); earlier versions take five arguments
_BLOSC_TYPESIZE = "typesize" in (_blosc.compress.__doc__ or "")


def _check_size(name, got, expected, max_size=None):
    if expected is not None and got != expected:
        raise CompressionError(
            f"{name}: payload decompressed to {got} bytes, header expects {expected}"
        )
    if max_size is not None and got > max_size:
        raise CompressionError(f"{name}: payload decompresses past the {max_size} bytes its block can hold")


def _limit(expected_size, max_size):
    """The most output a decode may produce: the exact size if known, else ``max_size`` (or None)."""
    return expected_size if expected_size is not None else max_size


def max_compressed_size(size: int) -> int:
    """An upper bound of the compressed size of ``size`` bytes for every N5 compressor
    (incompressible input grows by at most 1% plus framing)."""
    return size + size // 100 + (1 << 16)


class Compressor:
    """Base class. ``name`` is the zarr v3 name, ``n5_type`` the N5 ``compression.type``."""

    name: str = ""
    n5_type: str | None = ""

    def encode(self, data: BytesLike) -> bytes:
        raise NotImplementedError

    def decode(self, data: BytesLike, expected_size: int | None = None,
               max_size: int | None = None) -> bytes | bytearray | np.ndarray:
        """Decompress ``data``: exactly ``expected_size`` bytes when given, else at most ``max_size``
        (when given); more output is a :class:`~n5mscodecs.CompressionError`, raised before it is produced.
        The result may be a bytearray (gzip blocks of known size: no copy) or a uint8 array (zstd
        with a bound: filled in place)."""
        raise NotImplementedError

    def decode_scratch(self, data: BytesLike, expected_size: int) -> bytes | bytearray | np.ndarray:
        """:meth:`decode` of a block whose ``expected_size`` bytes its caller consumes at once (a
        read placing it into its result): the result may live in this thread's scratch, valid
        until the thread's next ``decode_scratch``. Fresh memory per block costs page faults
        (the allocator hands back and re-faults the heap's top between blocks)."""
        return self.decode(data, expected_size)

    def configuration(self) -> dict[str, Any]:
        return {}

    def v3_config(self) -> dict[str, Any]:
        conf = self.configuration()
        return {"name": self.name, "configuration": conf} if conf else {"name": self.name}

    def n5_config(self) -> dict[str, Any]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.v3_config() == other.v3_config()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.configuration().items())
        return f"{type(self).__name__}({args})"


class Gzip(Compressor):
    """N5 ``gzip``: Java writes one gzip member (``useZlib: false``) or a zlib stream.

    Decoding accepts either framing whatever ``use_zlib`` says.
    """

    name = "gzip"
    n5_type = "gzip"

    def __init__(self, level: int = -1, use_zlib: bool = False) -> None:
        self.level = int(level)
        if not -1 <= self.level <= 9:
            raise ConfigurationError(f"gzip: level must be in -1..9, got {level}")
        self.use_zlib = bool(use_zlib)

    def encode(self, data: BytesLike) -> bytes:
        wbits = 15 if self.use_zlib else 31
        compressor = _deflate.compressobj(self.level, _deflate.DEFLATED, wbits)
        return compressor.compress(data) + compressor.flush()

    def decode(self, data: BytesLike, expected_size: int | None = None,
               max_size: int | None = None) -> bytes | bytearray:
        view = read_bytes(data, "gzip").data  # zlib reads any buffer: no copy of the input
        limit = _limit(expected_size, max_size)
        whole = _inflate_whole(view, expected_size)
        if whole is not None:
            return whole
        budget = None if limit is None else limit + 1
        parts, produced = [], 0
        remaining: memoryview | bytes = view
        try:
            while len(remaining) and (budget is None or produced < budget):
                stream = _deflate.decompressobj(47)  # 32 + 15: gzip or zlib header, detected
                part = stream.decompress(remaining, 0 if budget is None else budget - produced)
                parts.append(part)
                produced += len(part)
                if not stream.eof:
                    if budget is not None and produced >= budget:
                        break  # more output than expected: the size check reports it
                    raise CompressionError("gzip: compressed stream is truncated")
                remaining = stream.unused_data  # concatenated members continue the stream
        except (zlib.error, _deflate.error) as exc:
            raise CompressionError(f"gzip: corrupt compressed data ({exc})") from exc
        out = b"".join(parts)
        _check_size(self.name, len(out), expected_size, max_size)
        return out

    def configuration(self) -> dict[str, Any]:
        return {"level": self.level if self.level >= 0 else 6}

    def v3_config(self) -> dict[str, Any]:
        # zarr's gzip codec writes and reads gzip members only; a zlib stream is numcodecs' zlib
        return {"name": "numcodecs.zlib" if self.use_zlib else "gzip", "configuration": self.configuration()}

    def n5_config(self) -> dict[str, Any]:
        return {"type": "gzip", "level": self.level, "useZlib": self.use_zlib}


# decode_scratch's output: this thread's scratch up to this many bytes (a 128^3 block of uint64)
_SCRATCH_KEEP = 16 << 20


def _scratch_buffer(size: int) -> np.ndarray:
    return thread_scratch("compression.output", size, np.uint8, _SCRATCH_KEEP)


# deflate expands at most 1032:1 (a 258-byte match in two 1-bit codes: four per byte)
_DEFLATE_MAX_RATIO = 1032


def _inflate_whole(data: memoryview, expected_size: int | None) -> bytearray | None:
    """One gzip member or zlib stream of known size inflated by libdeflate in one call, or None
    where that cannot be done within the bounds (no size known, a trailer that claims another size,
    several members, a damaged stream): the streaming path then decodes it and words any error.

    libdeflate allocates what the gzip trailer (ISIZE) or the caller claims, and both come from the
    file, so a claim no stream of this length can meet is not passed to it; like
    Java's GZIPInputStream it ignores bytes after the member's trailer.
    """
    if _libdeflate is None or expected_size is None or len(data) < 18:
        return None
    if expected_size > _DEFLATE_MAX_RATIO * len(data):
        return None  # no stream this short inflates that far: libdeflate would still reserve it all
    try:
        if data[0] == 0x1F and data[1] == 0x8B:
            if int.from_bytes(data[-4:], "little") != expected_size:
                return None
            out = _libdeflate.gzip_decompress(data)
        elif (data[0] << 8 | data[1]) % 31 == 0 and data[0] & 0x0F == 8:  # a zlib header
            out = _libdeflate.zlib_decompress(data, expected_size)
        else:
            return None
    except _libdeflate.DeflateError:
        return None
    # several members: libdeflate stops after the first, whose size the last trailer does not give.
    # The bytearray is returned as is: a copy to bytes costs a third of the inflating (page faults)
    return out if len(out) == expected_size else None


# a zstd block needs at least 4 bytes (3 of header, 1 of RLE content) for its at most 128 KiB
_ZSTD_MAX_RATIO = (128 << 10) // 4


class Zstd(Compressor):
    """N5 ``zstd`` (n5-zstandard): zstd frames, possibly without content size."""

    name = "zstd"
    n5_type = "zstd"

    def __init__(self, level: int = 3, checksum: bool = False) -> None:
        self.level = int(level)
        self.checksum = bool(checksum)

    def encode(self, data: BytesLike) -> bytes:
        return zstandard.ZstdCompressor(level=self.level, write_checksum=self.checksum).compress(read_bytes(data).data)

    def decode(
        self, data: BytesLike, expected_size: int | None = None, max_size: int | None = None
    ) -> bytes | np.ndarray:
        return self._decode(data, expected_size, max_size, None)

    def decode_scratch(self, data: BytesLike, expected_size: int) -> bytes | np.ndarray:
        return self._decode(data, expected_size, None, _scratch_buffer)

    def _decode(self, data, expected_size, max_size, buffer_of):
        """``buffer_of(size)``: the uint8 array to fill (None: a new one)."""
        bound = _limit(expected_size, max_size)
        window = 0 if bound is None else min(1 << 31, max(_ZSTD_MIN_WINDOW, 1 << bound.bit_length()))
        source = read_bytes(data, "zstd").data  # zstandard reads any buffer: no copy of the input
        out: bytes | np.ndarray
        try:
            reader = zstandard.ZstdDecompressor(max_window_size=window).stream_reader(source, read_across_frames=True)
            if bound is None:
                out = reader.readall()
            else:
                # one buffer, filled in place (pages are touched only as output arrives), never
                # larger than what the input can expand to
                size = min(bound, len(source) * _ZSTD_MAX_RATIO) + 1
                buffer = np.empty(size, np.uint8) if buffer_of is None else buffer_of(size)
                view, produced = buffer.data, 0
                while produced <= bound:
                    n = reader.readinto(view[produced:produced + _READ_STEP])
                    if not n:
                        break
                    produced += n
                out = buffer[:produced]
        except zstandard.ZstdError as exc:
            raise CompressionError(f"zstd: corrupt compressed data ({exc})") from exc
        _check_size(self.name, len(out), expected_size, max_size)
        return out

    def configuration(self) -> dict[str, Any]:
        return {"level": self.level, "checksum": self.checksum}

    def n5_config(self) -> dict[str, Any]:
        return {"type": "zstd", "level": self.level}


class Blosc(Compressor):
    """N5 ``blosc`` (n5-blosc); the blosc header states its own sizes, checked first.

    ``nthreads`` is only written to the N5 attributes (compression always uses one
    thread): 1 by default, as n5-blosc and z5py write it; None leaves it out, which
    tensorstore (0.1.86) needs: it refuses a blosc compression with ``nthreads``.
    """

    name = "blosc"
    n5_type = "blosc"
    _SHUFFLE_NAMES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}

    def __init__(
        self, cname: str = "lz4", clevel: int = 5, shuffle: int | str = 1, blocksize: int = 0, typesize: int = 1,
        nthreads: int | None = 1,
    ) -> None:
        self.cname = str(cname)
        self.clevel = int(clevel)
        if isinstance(shuffle, str):
            names = {v: k for k, v in self._SHUFFLE_NAMES.items()}
            if shuffle not in names:
                raise ConfigurationError(f"blosc: unknown shuffle {shuffle!r}")
            shuffle = names[shuffle]
        self.shuffle = int(shuffle)
        self.blocksize = int(blocksize)
        self.typesize = int(typesize)
        self.nthreads = None if nthreads is None else int(nthreads)

    def encode(self, data: BytesLike) -> bytes:
        """Compress with one blosc thread, as the attributes say (``nthreads: 1``): numcodecs
        uses its global thread pool when called from the main thread, whose output is not
        byte-deterministic, and one internal thread from any other thread."""
        if threading.current_thread() is threading.main_thread():
            return _blosc_worker().submit(self._encode, data).result()
        return self._encode(data)

    def _encode(self, data):
        data = as_bytes(data)
        args = (self.cname.encode(), self.clevel, self.shuffle, self.blocksize)
        if self.typesize > 1 and len(data) % self.typesize == 0:
            # numcodecs < 0.16 has no typesize argument: blosc takes the buffer's itemsize
            return _blosc.compress(np.frombuffer(data, f"V{self.typesize}"), *args)
        if self.typesize > 1 and _BLOSC_TYPESIZE:
            return _blosc.compress(data, *args, self.typesize)
        return _blosc.compress(data, *args)  # typesize 1 (or numcodecs < 0.16 and a partial last item)

    def decode(self, data: BytesLike, expected_size: int | None = None, max_size: int | None = None) -> bytes:
        data = as_bytes(data)
        if len(data) < 16:
            raise CompressionError(f"blosc: {len(data)} bytes cannot hold the 16-byte blosc header")
        # blosc header: version, versionlz, flags, typesize, nbytes, blocksize, cbytes (LE)
        nbytes, _, cbytes = struct.unpack_from("<III", data, 4)
        if cbytes > len(data):
            raise CompressionError(f"blosc: header claims {cbytes} compressed bytes, block has {len(data)}")
        _check_size(self.name, nbytes, expected_size, max_size)
        if nbytes > max(cbytes - 16, 1) * _BLOSC_MAX_RATIO:
            raise CompressionError(f"blosc: header claims {nbytes} bytes from {cbytes} compressed bytes, "
                                   "more than blosc can expand")
        try:
            out = _blosc.decompress(data)
        except (RuntimeError, ValueError) as exc:
            raise CompressionError(f"blosc: corrupt compressed data ({exc})") from exc
        _check_size(self.name, len(out), expected_size)
        return out

    def configuration(self) -> dict[str, Any]:
        return {"cname": self.cname, "clevel": self.clevel,
                "shuffle": self._SHUFFLE_NAMES.get(self.shuffle, self.shuffle),
                "typesize": self.typesize, "blocksize": self.blocksize}

    def n5_config(self) -> dict[str, Any]:
        config = {"type": "blosc", "cname": self.cname, "clevel": self.clevel,
                  "shuffle": self.shuffle, "blocksize": self.blocksize}
        return config if self.nthreads is None else {**config, "nthreads": self.nthreads}


_BLOSC_WORKER: list[ThreadPoolExecutor] = []
_BLOSC_WORKER_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child has no such thread: it makes its own
    os.register_at_fork(after_in_child=_BLOSC_WORKER.clear)


def _blosc_worker():
    """The thread that compresses main-thread blosc requests (created on first use)."""
    with _BLOSC_WORKER_LOCK:
        if not _BLOSC_WORKER:
            _BLOSC_WORKER.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="n5ms-blosc"))
        return _BLOSC_WORKER[0]


class _StreamCompressor(Compressor):
    """Shared bounded decode for the stdlib's incremental decompressors."""

    def _decompressor(self):
        raise NotImplementedError

    _errors: tuple[type[Exception], ...] = ()

    def decode(self, data: BytesLike, expected_size: int | None = None, max_size: int | None = None) -> bytes:
        decompressor = self._decompressor()
        limit = _limit(expected_size, max_size)
        try:
            out = decompressor.decompress(as_bytes(data), -1 if limit is None else limit + 1)
        except self._errors as exc:
            raise CompressionError(f"{self.n5_type}: corrupt compressed data ({exc})") from exc
        if limit is not None and len(out) > limit:  # stopped early: more output than allowed
            _check_size(self.n5_type, len(out), expected_size, max_size)
        if not decompressor.eof:  # data missing, or only the stream's check and footer
            raise CompressionError(f"{self.n5_type}: compressed stream is truncated")
        _check_size(self.n5_type, len(out), expected_size, max_size)
        return out


class Xz(_StreamCompressor):
    """N5 ``xz`` (Java XZ streams)."""

    name = "numcodecs.lzma"
    n5_type = "xz"
    _errors = (lzma.LZMAError,)

    def __init__(self, preset: int = 6) -> None:
        self.preset = int(preset)

    def _decompressor(self):
        return lzma.LZMADecompressor(lzma.FORMAT_AUTO, memlimit=_XZ_MEMLIMIT)

    def encode(self, data: BytesLike) -> bytes:
        return lzma.compress(read_bytes(data).data, format=lzma.FORMAT_XZ, preset=self.preset)

    def configuration(self) -> dict[str, Any]:
        return {"format": lzma.FORMAT_XZ, "preset": self.preset}

    def n5_config(self) -> dict[str, Any]:
        return {"type": "xz", "preset": self.preset}


class Bzip2(_StreamCompressor):
    """N5 ``bzip2``."""

    name = "numcodecs.bz2"
    n5_type = "bzip2"
    _errors = (OSError, ValueError)

    def __init__(self, level: int = 9) -> None:
        self.level = int(level)
        if not 1 <= self.level <= 9:
            raise ConfigurationError(f"bzip2: blockSize/level must be in 1..9, got {level}")

    def _decompressor(self):
        return bz2.BZ2Decompressor()

    def encode(self, data: BytesLike) -> bytes:
        return bz2.compress(read_bytes(data).data, self.level)

    def configuration(self) -> dict[str, Any]:
        return {"level": self.level}

    def n5_config(self) -> dict[str, Any]:
        return {"type": "bzip2", "blockSize": self.level}


class Lz4(Compressor):
    """N5 ``lz4``: Java's ``LZ4BlockOutputStream`` framing, not the LZ4 frame format.

    Each block: magic ``LZ4Block``, a token (method 0x10 raw / 0x20 lz4, low
    nibble log2(blockSize) - 10), compressed and decompressed lengths and an
    xxHash32 checksum (seed 0x9747b28c, low 28 bits) of the decompressed
    bytes, all little-endian, then the data; an empty block ends the stream.

    z5py writes N5 ``lz4`` as one bare LZ4 block instead (no framing, no size).
    Data without the ``LZ4Block`` magic is read that way when the expected size is
    known (every N5 block states it): it must decompress to exactly that size.
    Encoding writes Java's framing, which z5py cannot read.
    """

    name = "n5_lz4"
    n5_type = "lz4"
    _MAGIC = b"LZ4Block"
    _HEADER = 21
    _SEED = 0x9747B28C

    def __init__(self, block_size: int = 65536) -> None:
        # Any value is read (decoding never uses it; z5py writes e.g. 6);
        # only encode needs one that Java's LZ4BlockOutputStream accepts.
        if isinstance(block_size, bool) or not isinstance(block_size, int | np.integer):
            raise ConfigurationError(f"lz4: blockSize must be an int, got {block_size!r}")
        self.block_size = int(block_size)
        self._level = max(0, (self.block_size - 1).bit_length() - 10)

    def _checksum(self, data):
        return _xxhash.xxh32(np.frombuffer(data, np.uint8), self._SEED) & 0xFFFFFFF

    def encode(self, data: BytesLike) -> bytes:
        if not 64 <= self.block_size <= 1 << 25:
            raise ConfigurationError(f"lz4: writing needs a blockSize in 64..2**25, got {self.block_size}")
        data = as_bytes(data)
        parts = []
        for start in range(0, len(data), self.block_size):
            chunk = data[start:start + self.block_size]
            packed = lz4.block.compress(chunk, store_size=False)
            method = 0x20
            if len(packed) >= len(chunk):
                packed, method = chunk, 0x10
            parts.append(self._MAGIC + struct.pack("<Biii", method | self._level, len(packed), len(chunk),
                                                   self._checksum(chunk)) + packed)
        parts.append(self._MAGIC + struct.pack("<Biii", 0x10 | self._level, 0, 0, 0))
        return b"".join(parts)

    def decode(self, data: BytesLike, expected_size: int | None = None, max_size: int | None = None) -> bytes:
        data = as_bytes(data)
        if data[:8] != self._MAGIC:
            return self._decode_bare(data, expected_size, max_size)
        limit = _limit(expected_size, max_size)
        parts, produced, pos = [], 0, 0
        while True:
            if len(data) - pos < self._HEADER:
                raise CompressionError(f"lz4: block header at byte {pos} is truncated")
            if data[pos:pos + 8] != self._MAGIC:
                raise CompressionError(f"lz4: no LZ4Block magic at byte {pos}")
            token, compressed, decompressed, checksum = struct.unpack_from("<Biii", data, pos + 8)
            method, level = token & 0xF0, token & 0x0F
            pos += self._HEADER
            if compressed == 0 and decompressed == 0:
                break  # end of stream
            if method not in (0x10, 0x20) or decompressed < 0 or decompressed > 1 << (level + 10):
                raise CompressionError(f"lz4: bad block token 0x{token:02x} or length {decompressed}")
            if compressed < 0 or compressed > len(data) - pos or (method == 0x10 and compressed != decompressed):
                raise CompressionError(f"lz4: compressed length {compressed} does not fit the block")
            if decompressed > compressed * _LZ4_MAX_RATIO + 16:
                raise CompressionError(f"lz4: block claims {decompressed} bytes from {compressed} compressed bytes, "
                                       "more than LZ4 can expand")
            if limit is not None and produced + decompressed > limit:
                raise CompressionError(f"lz4: payload decompresses past the {limit} bytes expected")
            body = data[pos:pos + compressed]
            pos += compressed
            if method == 0x20:
                try:
                    body = lz4.block.decompress(body, uncompressed_size=decompressed)
                except lz4.block.LZ4BlockError as exc:
                    raise CompressionError(f"lz4: corrupt compressed data ({exc})") from exc
                if len(body) != decompressed:
                    raise CompressionError(f"lz4: block decompressed to {len(body)} bytes, header says {decompressed}")
            if self._checksum(body) != checksum:
                raise CompressionError(f"lz4: checksum mismatch in the block ending at byte {pos}")
            parts.append(body)
            produced += decompressed
        out = b"".join(parts)
        _check_size("lz4", len(out), expected_size, max_size)
        return out

    def _decode_bare(self, data, expected_size, max_size=None):
        """z5py's form: one LZ4 block of exactly ``expected_size`` bytes."""
        if expected_size is None:
            raise CompressionError("lz4: no LZ4Block magic at byte 0 (a bare LZ4 block, as z5py writes, "
                                   "is read only where the decompressed size is known)")
        if expected_size > len(data) * _LZ4_MAX_RATIO + 16:
            raise CompressionError(f"lz4: a bare LZ4 block of {len(data)} bytes cannot expand to the "
                                   f"{expected_size} bytes expected")
        try:
            out = lz4.block.decompress(data, uncompressed_size=expected_size)
        except lz4.block.LZ4BlockError as exc:
            raise CompressionError(f"lz4: no LZ4Block magic at byte 0, and not a bare LZ4 block of {expected_size} "
                                   f"bytes (z5py's form) either ({exc})") from exc
        _check_size("lz4", len(out), expected_size, max_size)
        return out

    def configuration(self) -> dict[str, Any]:
        return {"blockSize": self.block_size}

    def n5_config(self) -> dict[str, Any]:
        return {"type": "lz4", "blockSize": self.block_size}


class NumcodecsCompressor(Compressor):
    """Any other numcodecs bytes-to-bytes codec (decode size checked afterwards)."""

    n5_type = None

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.name = codec.codec_id

    def encode(self, data: BytesLike) -> bytes:
        return as_bytes(self.codec.encode(data))

    def decode(self, data: BytesLike, expected_size: int | None = None, max_size: int | None = None) -> bytes:
        try:
            out = as_bytes(self.codec.decode(data))
        except Exception as exc:  # foreign codecs raise anything; report it as ours
            raise CompressionError(f"{self.name}: cannot decode ({exc})") from exc
        _check_size(self.name, len(out), expected_size, max_size)
        return out

    def configuration(self) -> dict[str, Any]:
        conf = self.codec.get_config()
        conf.pop("id", None)
        return conf

    def v3_config(self) -> dict[str, Any]:
        return {"id": self.name, **self.configuration()}

    def n5_config(self) -> dict[str, Any]:
        raise ConfigurationError(f"{self.name}: has no N5 compression equivalent")


def _gzip(conf):
    return Gzip(conf.get("level", -1), conf.get("useZlib", conf.get("use_zlib", False)))


def _blosc_from(conf):
    return Blosc(conf.get("cname", "lz4"), conf.get("clevel", 5), conf.get("shuffle", 1),
                 conf.get("blocksize", 0), conf.get("typesize", 1), conf.get("nthreads", 1))


# name -> factory taking the configuration mapping; v3, numcodecs and N5 spellings
_FACTORIES = {
    "raw": lambda conf: None,
    "gzip": _gzip,
    "zlib": lambda conf: Gzip(conf.get("level", -1), use_zlib=True),
    "numcodecs.zlib": lambda conf: Gzip(conf.get("level", -1), use_zlib=True),
    "zstd": lambda conf: Zstd(conf.get("level", 3), conf.get("checksum", False)),
    "blosc": _blosc_from,
    "xz": lambda conf: Xz(conf.get("preset", 6)),
    "lzma": lambda conf: Xz(conf.get("preset", 6) if conf.get("preset") is not None else 6),
    "numcodecs.lzma": lambda conf: Xz(conf.get("preset", 6) if conf.get("preset") is not None else 6),
    "bzip2": lambda conf: Bzip2(conf.get("blockSize", conf.get("level", 9))),
    "bz2": lambda conf: Bzip2(conf.get("level", 9)),
    "numcodecs.bz2": lambda conf: Bzip2(conf.get("level", 9)),
    "n5_lz4": lambda conf: Lz4(conf.get("blockSize", 65536)),
}


def compressor_from_config(config: CompressorConfig) -> Compressor | None:
    """A :class:`Compressor` (or None for raw) from any of the three spellings."""
    if isinstance(config, Compressor):
        return config
    if isinstance(config, str):
        name, conf = config, {}
    elif isinstance(config, dict):
        if "name" in config:
            extra = set(config) - {"name", "configuration"}
            if extra:
                raise ConfigurationError(f"codec {config['name']!r}: unexpected keys {sorted(extra)}")
            name, conf = config["name"], dict(config.get("configuration") or {})
        elif "type" in config:
            name, conf = config["type"], {k: v for k, v in config.items() if k != "type"}
            # N5's "lz4" is the LZ4Block framing, unlike numcodecs' or zarr's lz4
            name = "n5_lz4" if name == "lz4" else name
        elif "id" in config:
            name, conf = config["id"], {k: v for k, v in config.items() if k != "id"}
            if name not in _FACTORIES:
                try:
                    return NumcodecsCompressor(numcodecs.get_codec(config))
                except (ValueError, KeyError, TypeError) as exc:
                    raise ConfigurationError(f"codec {name!r}: {exc}") from exc
        else:
            raise ConfigurationError(f"codec: {config!r} has no 'name', 'id' or 'type'")
    else:
        raise ConfigurationError(f"codec: cannot interpret {config!r}")
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigurationError(
            f"compression: unknown compressor {name!r} (known: {', '.join(sorted(_FACTORIES))})"
        )
    try:
        return factory(conf)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigurationError):
            raise
        raise ConfigurationError(f"compression {name!r}: bad configuration {conf!r} ({exc})") from exc


def writing_compressor(config: CompressorConfig) -> Compressor | None:
    """:func:`compressor_from_config` for a writer: also checks that the compressor can
    compress (an xz preset, a blosc ``cname``/``clevel``/``shuffle`` or a zstd level its
    library refuses only shows when compressing), by compressing a few bytes, so that a
    writer refuses it before its first write. Raises :class:`ConfigurationError` naming
    the compression."""
    compressor = compressor_from_config(config)
    if isinstance(compressor, Blosc) and not 0 <= compressor.clevel <= 9:  # c-blosc would print and fail
        raise ConfigurationError(f"compression: blosc clevel must be in 0..9, got {compressor.clevel}")
    if compressor is not None:
        try:
            compressor.encode(bytes(range(256)))
        except ConfigurationError:
            raise
        except Exception as exc:  # each library raises its own kind (LZMAError, RuntimeError, OverflowError)
            raise ConfigurationError(
                f"compression: {compressor.n5_type or compressor.name} {compressor.configuration()} cannot "
                f"compress ({type(exc).__name__}: {exc})") from exc
    return compressor
