"""zarr v3 codecs: ``n5_default``, ``n5_varlen``, ``n5_label_multiset``, ``label_multiset``
(array -> bytes) and ``czi_chunked`` (bytes -> bytes).

They delegate to the same functions as the numcodecs codecs and :mod:`n5mscodecs.n5`;
this module only converts between zarr's chunk buffers (numeric arrays, object
arrays of elements) and those functions' arrays and
:class:`~n5mscodecs.LabelMultisetArray`. In an array of data type ``uint64``
the label multiset codecs are the read-only *labels view*: chunks decode
straight to each voxel's argmax label (no element objects) and writes raise
:class:`~n5mscodecs.errors.ReadOnlyError`. Decoding and encoding run in a worker
thread (``asyncio.to_thread``) so the GIL-free kernels leave the event loop
free; zarr 3.4's synchronous pipeline calls ``_decode_sync``/``_encode_sync``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from zarr.abc.codec import ArrayBytesCodec, BytesBytesCodec

from ..czi import CziChunked, chunked_decode, chunked_encode
from ..errors import ConfigurationError, N5HeaderError, ReadOnlyError
from ..multiset import LabelMultisetArray
from ..n5.compression import Blosc, compressor_from_config
from ..n5.default import check_block_bytes, n5_default_decode, n5_default_encode, place_block
from ..n5.varlen import CodecChain, n5_block_header, n5_varlen_decode, n5_varlen_encode
from ..payload.layout import N5_LAYOUT, ZARR_LAYOUT, Layout, c_order, decode_payload, encode_payload
from ._compat import parse_named_configuration
from .dtype import LabelMultisetDType

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ._compat import ArraySpec, NDBuffer


def chunk_to_multisets(chunk_array: NDBuffer) -> LabelMultisetArray:
    """A zarr chunk (object array of elements, or integer labels) as a LabelMultisetArray."""
    return LabelMultisetArray.from_elements(chunk_array.as_numpy_array())


def multisets_to_chunk(multisets: LabelMultisetArray, chunk_spec: ArraySpec) -> NDBuffer:
    """Pad a (possibly truncated) block with the fill value and hand zarr an element array."""
    multisets = multisets.padded(chunk_spec.shape, chunk_spec.fill_value)
    return chunk_spec.prototype.nd_buffer.from_numpy_array(multisets.to_elements())


def is_labels_view(dtype) -> bool:
    """Whether a label multiset codec serves an array of this zarr data type as labels (uint64)."""
    return not isinstance(dtype, LabelMultisetDType) and dtype.to_native_dtype() == np.uint64


def full_chunk(labels: np.ndarray, chunk_shape: tuple[int, ...], fill_value: int) -> np.ndarray:
    """A (possibly truncated) block of labels as a C-ordered chunk, padded with ``fill_value``."""
    if labels.shape == tuple(chunk_shape):
        return c_order(labels)
    chunk = np.full(chunk_shape, fill_value, np.uint64)
    chunk[tuple(slice(0, n) for n in labels.shape)] = labels
    return chunk


def labels_to_chunk(labels: np.ndarray, chunk_spec: ArraySpec) -> NDBuffer:
    """Labels as zarr's chunk buffer (see :func:`full_chunk`)."""
    chunk = full_chunk(labels, tuple(chunk_spec.shape), int(chunk_spec.fill_value))
    return chunk_spec.prototype.nd_buffer.from_numpy_array(chunk)


class _WorkerThreadCodec:
    """Async entry points that run the codec's sync methods off the event loop thread."""

    async def _decode_single(self, chunk_data, chunk_spec):
        return await asyncio.to_thread(self._decode_sync, chunk_data, chunk_spec)

    async def _encode_single(self, chunk_data, chunk_spec):
        return await asyncio.to_thread(self._encode_sync, chunk_data, chunk_spec)


@dataclass(frozen=True)
class _MultisetCodec(_WorkerThreadCodec, ArrayBytesCodec):
    """Shared plumbing of the label multiset array-to-bytes codecs."""

    codec_name: ClassVar[str] = ""
    layout: ClassVar[Layout]
    is_fixed_size = False

    @classmethod
    def from_dict(cls, data):
        _, configuration = parse_named_configuration(data, cls.codec_name, require_configuration=False)
        if configuration:
            raise ConfigurationError(f"{cls.codec_name}: takes no configuration, got {configuration!r}")
        return cls()

    def to_dict(self):
        return {"name": self.codec_name}

    def evolve_from_array_spec(self, array_spec):
        return self

    def validate(self, *, shape, dtype, chunk_grid):
        if not isinstance(dtype, LabelMultisetDType) and not is_labels_view(dtype):
            raise ConfigurationError(
                f"{self.codec_name}: needs the label_multiset data type (or uint64 for the read-only "
                f"labels view), the array has {dtype}"
            )

    def compute_encoded_size(self, input_byte_length, chunk_spec):
        raise NotImplementedError(f"{self.codec_name} output size depends on the data")

    def decode_chunk(self, data: np.ndarray, shape: tuple[int, ...], labels: bool) -> np.ndarray | LabelMultisetArray:
        """One chunk's bytes (after the bytes-to-bytes codecs) in one view, C-ordered: labels
        (uint64) or multisets; a truncated N5 block keeps its own shape. What zarr's reads and
        :func:`~n5mscodecs.zarr.read_multisets` decode with."""
        return decode_payload(data, shape, self.layout, labels=labels, threads=1, order="C")

    def encode_chunk(self, data: LabelMultisetArray | np.ndarray) -> bytes | bytearray:
        """One chunk's bytes (before the bytes-to-bytes codecs) from its multisets or integer
        labels (the chunk's shape). What zarr's writes and
        :func:`~n5mscodecs.zarr.write_label_multisets` encode with."""
        return encode_payload(data, self.layout, threads=1)

    def _decode_sync(self, chunk_bytes, chunk_spec):
        labels = is_labels_view(chunk_spec.dtype)
        decoded = self.decode_chunk(chunk_bytes.as_numpy_array(), tuple(chunk_spec.shape), labels)
        return labels_to_chunk(decoded, chunk_spec) if labels else multisets_to_chunk(decoded, chunk_spec)

    def _encode_sync(self, chunk_array, chunk_spec):
        if is_labels_view(chunk_spec.dtype):
            raise ReadOnlyError(
                f"{self.codec_name}: a uint64 array is the read-only labels view of label multisets; "
                "write through the label_multiset data type (e.g. N5Store(store) without multisets='labels')"
            )
        encoded = self.encode_chunk(chunk_to_multisets(chunk_array))
        return chunk_spec.prototype.buffer.from_bytes(bytes(encoded))


@dataclass(frozen=True)
class LabelMultisetZarrCodec(_MultisetCodec):
    """``label_multiset``: zarr-native payload, C order over the chunk."""

    codec_name: ClassVar[str] = "label_multiset"
    layout: ClassVar[Layout] = ZARR_LAYOUT


@dataclass(frozen=True)
class N5LabelMultisetZarrCodec(_MultisetCodec):
    """``n5_label_multiset`` as an outer codec: the N5 legacy payload without a block header."""

    codec_name: ClassVar[str] = "n5_label_multiset"
    layout: ClassVar[Layout] = N5_LAYOUT


@dataclass(frozen=True, init=False)
class N5VarlenZarrCodec(_MultisetCodec):
    """``n5_varlen``: N5 varlength blocks around an inner chain (``configuration.codecs``).

    Truncated boundary blocks (Java) decode to the full chunk, padded with the
    fill value. Encoding writes the chunk zarr hands over (full chunk shape);
    :class:`~n5mscodecs.zarr.N5Store` truncates boundary blocks as Java does.
    """

    codec_name: ClassVar[str] = "n5_varlen"
    codecs: tuple = ()

    def __init__(self, *, codecs: Iterable[str | dict[str, Any]]) -> None:
        chain = CodecChain(codecs)  # validates: errors at open time, not deep in decode
        object.__setattr__(self, "codecs", tuple(chain.v3_configs()))
        object.__setattr__(self, "_chain", chain)

    @classmethod
    def from_dict(cls, data):
        _, configuration = parse_named_configuration(data, cls.codec_name, require_configuration=True)
        if set(configuration) != {"codecs"}:
            raise ConfigurationError(
                f"n5_varlen: configuration must hold exactly 'codecs', got {sorted(configuration)}"
            )
        return cls(codecs=configuration["codecs"])

    def to_dict(self):
        return {"name": self.codec_name, "configuration": {"codecs": list(self.codecs)}}

    def decode_chunk(self, data, shape, labels):
        self._check_header(data, shape)
        return n5_varlen_decode(data, self._chain, labels=labels, threads=1, order="C")

    def encode_chunk(self, data):
        return n5_varlen_encode(data, self._chain, threads=1)

    def _check_header(self, data, shape):
        header = n5_block_header(data)
        if len(header.shape) != len(shape):
            raise N5HeaderError(
                f"n5_varlen: block has ndim {len(header.shape)}, the array {len(shape)}"
            )
        if any(h > c for h, c in zip(header.shape, shape)):
            raise N5HeaderError(
                f"n5_varlen: block dims {header.shape} exceed the chunk shape {shape}"
            )


#: The data types of N5's ``dataType`` (zarr v3 names: the same).
N5_DATA_TYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64")


def _named(config, what):
    """``(name, configuration)`` of a zarr v3 codec spelled as a dict or a bare name."""
    if isinstance(config, str):
        return config, {}
    if not isinstance(config, dict) or "name" not in config:
        raise ConfigurationError(f"n5_default: {what} must be a zarr v3 codec object, got {config!r}")
    return config["name"], dict(config.get("configuration") or {})


@dataclass(frozen=True, init=False)
class N5DefaultZarrCodec(_WorkerThreadCodec, ArrayBytesCodec):
    """``n5_default``: N5 default-mode blocks of a numeric array (the companion spec).

    ``codecs`` is the spec's inner chain: a full ``transpose`` (N5 axis order is F
    order), ``bytes`` big-endian (``endian`` may be left out for 1-byte types), then
    at most one compressor: any N5 compression the package reads, in the spelling of
    :mod:`n5mscodecs.n5.compression` (``gzip``; ``numcodecs.zlib`` for N5's gzip with
    ``useZlib``; ``zstd``; ``blosc``; ``numcodecs.lzma`` for xz; ``numcodecs.bz2``;
    ``n5_lz4`` for N5's LZ4Block framing). Blocks are decoded and encoded by
    :func:`~n5mscodecs.n5.n5_default_decode`/``n5_default_encode``, as
    :func:`n5mscodecs.n5.open` does. Truncated boundary blocks (Java) decode padded
    with the fill value, padded ones as they are; dims beyond the chunk shape are an
    error. Encoding writes the full chunk zarr hands over: :class:`~n5mscodecs.zarr.N5Store`
    truncates boundary blocks to the grid, as Java writes them.

    Examples
    --------
    >>> import numpy as np, zarr
    >>> codec = N5DefaultZarrCodec.from_compression(2, "gzip")
    >>> codec.to_dict()["configuration"]["codecs"][2]
    {'name': 'gzip', 'configuration': {'level': 6}}
    >>> a = zarr.create_array({}, shape=(3, 5), chunks=(2, 2), dtype="uint16", serializer=codec, compressors=None)
    >>> a[:] = np.arange(15).reshape(3, 5)
    >>> int(a[2, 4])
    14
    """

    codec_name: ClassVar[str] = "n5_default"
    is_fixed_size = False
    codecs: tuple = ()

    def __init__(self, *, codecs: Iterable[str | dict[str, Any]]) -> None:
        codecs = list(codecs)
        if not 2 <= len(codecs) <= 3:
            raise ConfigurationError(f"n5_default: codecs must be transpose, bytes and at most one compressor, "
                                     f"got {len(codecs)} codecs")
        name, transpose = _named(codecs[0], "codecs[0]")
        order = transpose.get("order")
        if name != "transpose" or not isinstance(order, list | tuple) or list(order) != list(range(len(order)))[::-1]:
            raise ConfigurationError(f"n5_default: the first codec must be a full transpose "
                                     f"(order [N-1, ..., 0]), got {codecs[0]!r}")
        name, configuration = _named(codecs[1], "codecs[1]")
        endian = configuration.get("endian")
        if name != "bytes" or set(configuration) - {"endian"} or endian not in (None, "big"):
            raise ConfigurationError(f"n5_default: the second codec must be bytes with endian 'big' (N5 blocks "
                                     f"are big-endian), got {codecs[1]!r}")
        compressor = compressor_from_config(codecs[2]) if len(codecs) == 3 else None
        configs = [{"name": "transpose", "configuration": {"order": list(order)}},
                   {"name": "bytes", "configuration": {"endian": "big"}} if endian else {"name": "bytes"}]
        if compressor is not None:
            configs.append(compressor.v3_config())
        object.__setattr__(self, "codecs", tuple(configs))
        object.__setattr__(self, "_compressor", compressor)

    @classmethod
    def from_compression(cls, ndim: int, compression: Any = None, dtype: Any = None) -> N5DefaultZarrCodec:
        """The codec of an ``ndim``-dimensional N5 dataset with ``compression`` in any spelling
        ``n5.open`` reads (None: raw), e.g. an
        N5 ``compression`` attribute. With ``dtype``, blosc shuffles by its item size (as
        zarr-n5 writes it) and 1-byte types get a ``bytes`` codec without ``endian``."""
        compressor = None if compression is None else compressor_from_config(compression)
        itemsize = 0 if dtype is None else np.dtype(dtype).itemsize
        if isinstance(compressor, Blosc) and itemsize:
            compressor = Blosc(compressor.cname, compressor.clevel, compressor.shuffle, compressor.blocksize,
                               itemsize, compressor.nthreads)
        codecs = [{"name": "transpose", "configuration": {"order": list(range(ndim))[::-1]}},
                  {"name": "bytes"} if itemsize == 1 else {"name": "bytes", "configuration": {"endian": "big"}}]
        return cls(codecs=codecs if compressor is None else [*codecs, compressor.v3_config()])

    @property
    def compressor(self):
        """The N5 compressor (:mod:`n5mscodecs.n5.compression`), None for raw."""
        return self._compressor

    @classmethod
    def from_dict(cls, data):
        _, configuration = parse_named_configuration(data, cls.codec_name, require_configuration=True)
        if set(configuration) != {"codecs"}:
            raise ConfigurationError(
                f"n5_default: configuration must hold exactly 'codecs', got {sorted(configuration)}")
        return cls(codecs=configuration["codecs"])

    def to_dict(self):
        return {"name": self.codec_name, "configuration": {"codecs": [dict(c) for c in self.codecs]}}

    def evolve_from_array_spec(self, array_spec):
        return self

    def validate(self, *, shape, dtype, chunk_grid):
        ndim = len(self.codecs[0]["configuration"]["order"])
        if len(shape) != ndim:
            raise ConfigurationError(f"n5_default: the transpose order is {ndim}-D, the array {len(shape)}-D")
        native = dtype.to_native_dtype()
        if native.hasobject or native.name not in N5_DATA_TYPES:
            raise ConfigurationError(f"n5_default: N5 has no data type {dtype}; one of {', '.join(N5_DATA_TYPES)}")
        if native.itemsize > 1 and "configuration" not in self.codecs[1]:
            raise ConfigurationError(f"n5_default: {native.name} needs the bytes codec's endian 'big'")

    def compute_encoded_size(self, input_byte_length, chunk_spec):
        raise NotImplementedError("n5_default: the output size depends on the data")

    def _decode_sync(self, chunk_bytes, chunk_spec):
        shape, dtype = tuple(chunk_spec.shape), chunk_spec.dtype.to_native_dtype()
        check_block_bytes(shape, dtype, "n5_default: chunk shape")  # before zarr's chunk is allocated
        block = n5_default_decode(chunk_bytes.as_numpy_array(), dtype, self._compressor, chunk_shape=shape,
                                  native=False, scratch=True)  # placed below, on this thread
        # a C-ordered chunk in one tiled byte-swapping transpose: zarr's copy into the result is
        # then a plain one (a truncated boundary block, as Java writes it, is padded)
        chunk = np.empty(shape, dtype) if block.shape == shape else np.full(shape, chunk_spec.fill_value, dtype)
        place_block(chunk[tuple(slice(0, n) for n in block.shape)], block, tuple(slice(0, n) for n in block.shape))
        return chunk_spec.prototype.nd_buffer.from_numpy_array(chunk)

    def _encode_sync(self, chunk_array, chunk_spec):
        encoded = n5_default_encode(chunk_array.as_numpy_array(), self._compressor)
        return chunk_spec.prototype.buffer.from_bytes(encoded)


#: The package's zarr v3 codecs by name.
ZARR_CODECS: dict[str, type[ArrayBytesCodec | BytesBytesCodec]] = {
    cls.codec_name: cls
    for cls in (N5DefaultZarrCodec, N5VarlenZarrCodec, N5LabelMultisetZarrCodec, LabelMultisetZarrCodec)
}


@dataclass(frozen=True, init=False)
class CziChunkedZarrCodec(_WorkerThreadCodec, BytesBytesCodec):
    """``czi_chunked`` as a zarr v3 bytes-to-bytes codec (CZI mode 7 payloads).

    Configuration as the numcodecs codec: ``codec`` ("zstd" or "lz4"), ``level``,
    ``max_chunk_size``, ``hilo`` (16-bit data types only).
    """

    codec_name: ClassVar[str] = "czi_chunked"
    is_fixed_size = False
    codec: str = "zstd"
    level: int | None = None
    max_chunk_size: int = 65536
    hilo: bool = False

    def __init__(
        self, *, codec: str = "zstd", level: int | None = None, max_chunk_size: int = 65536, hilo: bool = False
    ) -> None:
        numcodecs_codec = CziChunked(codec=codec, level=level, max_chunk_size=max_chunk_size, hilo=hilo)
        for key, value in numcodecs_codec.get_config().items():
            if key != "id":
                object.__setattr__(self, key, value)

    @classmethod
    def from_dict(cls, data):
        _, configuration = parse_named_configuration(data, cls.codec_name, require_configuration=False)
        configuration = dict(configuration or {})
        if configuration.get("id", "czi_chunked") == "czi_chunked":  # numcodecs' spelling keeps its id
            configuration.pop("id", None)
        unknown = set(configuration) - {"codec", "level", "max_chunk_size", "hilo"}
        if unknown:
            raise ConfigurationError(f"czi_chunked: unknown configuration keys {sorted(unknown)}")
        return cls(**configuration)

    def to_dict(self):
        return {"name": self.codec_name, "configuration": {
            "codec": self.codec, "level": self.level, "max_chunk_size": self.max_chunk_size, "hilo": self.hilo}}

    def evolve_from_array_spec(self, array_spec):
        return self

    def validate(self, *, shape, dtype, chunk_grid):
        if self.hilo and dtype.to_native_dtype().itemsize != 2:
            raise ConfigurationError(f"czi_chunked: hilo needs 16-bit samples, the array has {dtype}")

    def compute_encoded_size(self, input_byte_length, chunk_spec):
        raise NotImplementedError("czi_chunked output size depends on the data")

    def _decode_sync(self, chunk_bytes, chunk_spec):
        native = chunk_spec.dtype.to_native_dtype()
        limit = None if native.hasobject else int(np.prod(chunk_spec.shape)) * native.itemsize
        decoded = chunked_decode(chunk_bytes.as_numpy_array(), max_decompressed_size=limit, threads=1)
        return chunk_spec.prototype.buffer.from_bytes(bytes(decoded))

    def _encode_sync(self, chunk_bytes, chunk_spec):
        # a bytes-like view: the 16-bit check for hilo was done in validate()
        encoded = chunked_encode(memoryview(chunk_bytes.as_numpy_array()), codec=self.codec, level=self.level,
                                 max_chunk_size=self.max_chunk_size, hilo=self.hilo, threads=1)
        return chunk_spec.prototype.buffer.from_bytes(encoded)


@dataclass(frozen=True, init=False)
class NumcodecsCziChunkedZarrCodec(CziChunkedZarrCodec):
    """``numcodecs.czi_chunked``: the name zarr's numcodecs adapter gives :class:`~n5mscodecs.CziChunked`.

    zarr 3 reaches numcodecs codecs in v3 arrays as ``numcodecs.<id>`` (its
    ``zarr.codecs.numcodecs`` classes). Metadata written that way names this
    codec, found through the ``zarr.codecs`` entry point in a fresh process; it
    is :class:`CziChunkedZarrCodec` under the adapter's name.
    """

    codec_name: ClassVar[str] = "numcodecs.czi_chunked"


for _cls in (CziChunkedZarrCodec, NumcodecsCziChunkedZarrCodec):
    ZARR_CODECS[_cls.codec_name] = _cls
