"""``n5_varlen``: the N5 varlength block (mode 0x0001) around an inner codec chain.

A block is an :class:`~n5mscodecs.n5.N5BlockHeader` (mode, ndim,
dims, numElements; big-endian) followed by the payload of the inner chain:
one array-to-bytes codec (``n5_label_multiset``, or ``label_multiset``)
then zero or more N5 compressors. ``numElements`` is the payload size in
bytes *before* compression; it is checked against what a block of that many
voxels can need (:func:`~n5mscodecs.payload.max_payload_size`) before
anything is decompressed, and every stage of the chain is bounded.

Blocks in default mode (0x0000) are read too: N5's Java writer stores a varlength
block that way whenever its payload size happens to equal the product of its dims
(downsampled boundary blocks, whose dims are clipped by the source), and Java reads
such a block as that many bytes; so do we.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import numpy as np
from numcodecs.abc import Codec

from .._buffers import read_bytes
from ..errors import ConfigurationError, N5HeaderError
from ..payload.layout import (
    MAX_ENTRIES_PER_VOXEL,
    MIN_PAYLOAD_BOUND,
    N5_LAYOUT,
    ZARR_LAYOUT,
    check_out,
    check_reserved,
    decode_payload,
    encode_payload,
    fill_out,
    max_payload_size,
    multiset_input,
    wants_labels,
)
from .compression import compressor_from_config, max_compressed_size
from .grid import voxels
from .header import MODE_DEFAULT, MODE_VARLENGTH, N5BlockHeader

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, TypeAlias

    from .._buffers import BytesLike
    from ..multiset import LabelMultisetArray
    from ..multiset.array import MultisetsLike, Rule
    from ..multiset.rules import ReservedRule
    from ..payload.layout import Order
    from .compression import Compressor, CompressorConfig

    #: An inner codec chain: a parsed :class:`CodecChain` or its codec configurations.
    CodecsLike: TypeAlias = "CodecChain | Iterable[CompressorConfig]"

DEFAULT_CODECS = ({"name": "n5_label_multiset"},)
#: Without the expected shape (``shape=``, or ``out=`` of the codec), a block is bounded by its own
#: size: ``numElements`` and 4 bytes per voxel of the header dims at most
#: ``max(MIN_PAYLOAD_BOUND, max_ratio * block bytes)``. Every gzip, LZ4, blosc and raw block
#: fits any ratio above 1032 (deflate's own limit); the largest ratio of real blocks
#: (/work/shared/data/n5, Java-written) is 508, of this package's writers 974 (gzip), 11,275
#: (zstd), 13,981 (bzip2) for constant 64^3 blocks, which the 16 MiB floor admits whatever
#: their ratio. Only constant blocks of more than 4 M voxels under zstd, xz or bzip2 go above:
#: read those with ``shape=`` (datasets always pass it) or a larger ``max_ratio``.
DEFAULT_MAX_RATIO = 2048
#: Dimensions a block header may have (numpy's oldest supported limit).
MAX_NDIM = 32
_ARRAY_CODECS = {"n5_label_multiset": N5_LAYOUT, "label_multiset": ZARR_LAYOUT}


def _codec_name(config):
    if isinstance(config, str):
        return config
    if isinstance(config, dict):
        return config.get("name", config.get("id"))
    return None


class CodecChain:
    """A parsed inner chain: the payload layout and the compressors in encode order."""

    def __init__(self, codecs: Iterable[CompressorConfig] = DEFAULT_CODECS) -> None:
        codecs = list(codecs)
        if not codecs:
            raise ConfigurationError("n5_varlen: codecs must start with an array-to-bytes codec")
        first = _codec_name(codecs[0])
        if first not in _ARRAY_CODECS:
            raise ConfigurationError(
                f"n5_varlen: first inner codec must be one of {sorted(_ARRAY_CODECS)}, got {first!r}"
            )
        if isinstance(codecs[0], dict):
            extra = {k: v for k, v in codecs[0].items() if k not in ("name", "id")}
            if extra.get("configuration"):
                raise ConfigurationError(f"{first}: takes no configuration, got {extra['configuration']!r}")
        self.layout = _ARRAY_CODECS[first]
        self.compressors: list[Compressor] = []
        for config in codecs[1:]:
            if _codec_name(config) in _ARRAY_CODECS:
                raise ConfigurationError("n5_varlen: only the first inner codec may be array-to-bytes")
            compressor = compressor_from_config(config)
            if compressor is not None:
                self.compressors.append(compressor)

    def v3_configs(self) -> list[dict[str, Any]]:
        return [{"name": self.layout.name}] + [c.v3_config() for c in self.compressors]

    def compress(self, payload: BytesLike) -> BytesLike:
        for compressor in self.compressors:
            payload = compressor.encode(payload)
        return payload

    def decompress(self, data: BytesLike, payload_size: int) -> BytesLike:
        """The payload of ``payload_size`` bytes (numElements) under the compressors' layers;
        each outer layer may produce at most what compressing the layer below can take."""
        bounds = [payload_size]
        for _ in self.compressors[1:]:
            bounds.append(max_compressed_size(bounds[-1]))
        for position, compressor in reversed(list(enumerate(self.compressors))):
            if position == 0:
                data = compressor.decode(data, payload_size)
            else:
                data = compressor.decode(data, max_size=bounds[position])
        return data


def _chain(codecs):
    return codecs if isinstance(codecs, CodecChain) else CodecChain(codecs)


def n5_varlen_encode(data: MultisetsLike, codecs: CodecsLike = DEFAULT_CODECS, *, threads: int | None = None,
                     reserved: ReservedRule = "reject") -> bytes:
    """Encode one block: header with the array's shape (N5 axis order), then the compressed payload.
    Labels and ids must be non-negative integers up to MAX_ID unless ``reserved="accept"``
    (see :func:`~n5mscodecs.payload.encode_payload`).

    >>> import numpy as np
    >>> block = n5_varlen_encode(np.array([[3, 3]], np.uint64))
    >>> n5_block_header(block)
    N5BlockHeader(mode=1, shape=(1, 2), num_elements=28)
    """
    chain = _chain(codecs)
    data = multiset_input(data)
    payload = encode_payload(data, chain.layout, threads=threads, reserved=reserved)
    header = N5BlockHeader(MODE_VARLENGTH, tuple(data.shape), len(payload))
    return header.to_bytes() + chain.compress(payload)


def n5_block_header(data: BytesLike) -> N5BlockHeader:
    """The :class:`N5BlockHeader` at the start of ``data``."""
    return N5BlockHeader.from_bytes(read_bytes(data, "block"))


def varlen_payload(
    data: BytesLike, chain: CodecChain, shape: Sequence[int] | None = None, *,
    max_voxels: int | None = None, max_entries: int = MAX_ENTRIES_PER_VOXEL,
    max_ratio: float | None = None,
) -> tuple[N5BlockHeader, BytesLike]:
    """``(header, payload)`` of a varlength block: the header checked, the body decompressed.

    ``numElements`` may be at most what ``max_voxels`` voxels (default: those of ``shape``,
    else of the header dims) can need with ``max_entries`` entries per voxel on average
    (:func:`~n5mscodecs.payload.max_payload_size`); a larger claim is rejected before
    anything is decompressed. Without ``shape`` and ``max_voxels`` (nothing but the header
    says how large the block is), ``max_ratio`` bounds it by its own size (see
    ``DEFAULT_MAX_RATIO``).
    """
    buf = read_bytes(data, "block")
    header = N5BlockHeader.from_bytes(buf)
    if header.mode == MODE_DEFAULT:
        # N5's Java writer marks a varlength block as default mode whenever its byte count
        # equals the product of the header dims; Java then reads that many bytes
        num_elements = voxels(header.shape)
        if num_elements >= 2**31:   # Java's element count is an int
            raise N5HeaderError(f"n5_varlen: mode-0 block dims {list(header.shape)} claim {num_elements} bytes, "
                                "more than a Java int (2**31 - 1)")
    elif header.mode == MODE_VARLENGTH and header.num_elements is not None:
        num_elements = header.num_elements
    else:
        raise N5HeaderError(f"n5_varlen: mode is 0x{header.mode:04x}, expected 0x0001 (varlength) "
                            "or 0x0000 (a varlength block whose byte count equals its element count)")
    if shape is None and len(header.shape) > MAX_NDIM:
        raise N5HeaderError(f"n5_varlen: ndim is {len(header.shape)}, more than {MAX_NDIM}")
    if shape is not None and len(shape) != len(header.shape):
        raise N5HeaderError(f"n5_varlen: ndim is {len(header.shape)}, expected {len(shape)}")
    if shape is None and max_voxels is None and max_ratio is not None:
        _check_ratio(header, num_elements, buf.size, max_ratio)
    if max_voxels is None:
        max_voxels = voxels(header.shape if shape is None else shape)
    bound = max_payload_size(max_voxels, chain.layout, max_entries)
    if num_elements > bound:
        raise N5HeaderError(
            f"n5_varlen: numElements {num_elements} exceeds the {bound} bytes a block of "
            f"{max_voxels} voxels can need (at most {max_entries} entries per voxel on average, and "
            f"never more than payload.MAX_PAYLOAD_BOUND)"
        )
    body = buf[header.nbytes:]
    if not chain.compressors and body.size != num_elements:
        raise N5HeaderError(
            f"n5_varlen: numElements is {num_elements} but the raw payload has {body.size} bytes"
        )
    return header, chain.decompress(body, num_elements)


def check_max_ratio(max_ratio: object, what: str = "n5_varlen") -> float:
    """A ``max_ratio`` setting: a number of at least 1."""
    if isinstance(max_ratio, bool) or not isinstance(max_ratio, int | float) or not max_ratio >= 1:
        raise ConfigurationError(f"{what}: max_ratio must be a number >= 1, got {max_ratio!r}")
    return max_ratio


def _check_ratio(header: N5BlockHeader, num_elements: int, nbytes: int, max_ratio: float) -> None:
    limit = max(MIN_PAYLOAD_BOUND, int(max_ratio * nbytes))
    for field, claimed in (("numElements", num_elements), ("the header dims' voxels x 4", 4 * voxels(header.shape))):
        if claimed > limit:
            raise N5HeaderError(
                f"n5_varlen: {field} {claimed} exceeds {limit} bytes: max_ratio {max_ratio:g} x the block's "
                f"{nbytes} bytes (at least {MIN_PAYLOAD_BOUND}); pass shape= (or out=) with the block's "
                "expected shape, or a larger max_ratio, to read a block compressed that well")


@overload
def n5_varlen_decode(
    data: BytesLike, codecs: CodecsLike = ..., *, shape: Sequence[int] | None = ..., labels: Literal[False] = ...,
    threads: int | None = ..., order: Order = ..., rule: Rule = ..., max_ratio: float | None = ...,
) -> LabelMultisetArray: ...
@overload
def n5_varlen_decode(
    data: BytesLike, codecs: CodecsLike = ..., *, shape: Sequence[int] | None = ..., labels: Literal[True],
    threads: int | None = ..., order: Order = ..., rule: Rule = ..., max_ratio: float | None = ...,
) -> np.ndarray: ...
@overload
def n5_varlen_decode(
    data: BytesLike, codecs: CodecsLike = ..., *, shape: Sequence[int] | None = ..., labels: bool,
    threads: int | None = ..., order: Order = ..., rule: Rule = ..., max_ratio: float | None = ...,
) -> LabelMultisetArray | np.ndarray: ...
def n5_varlen_decode(
    data: BytesLike,
    codecs: CodecsLike = DEFAULT_CODECS,
    *,
    shape: Sequence[int] | None = None,
    labels: bool = False,
    threads: int | None = None,
    order: Order = "K",
    rule: Rule = "spec",
    max_ratio: float | None = None,
) -> LabelMultisetArray | np.ndarray:
    """Decode one varlength block to a :class:`~n5mscodecs.LabelMultisetArray`, or with
    ``labels=True`` straight to its argmax labels (uint64, N5 axis order).

    The header is checked and the payload decompressed (``varlen_payload``), then
    :func:`~n5mscodecs.payload.decode_payload` decodes it in the view ``labels`` asks for
    (see there for ``order`` and ``rule``). The voxel count comes from the header dims
    unless ``shape`` is given (dataset readers pass the cropped block shape, because some
    writers overstate the header dims of boundary blocks). Without ``shape``, ``max_ratio``
    (the :class:`~n5mscodecs.N5Varlen` codec passes ``DEFAULT_MAX_RATIO``) believes the header only as
    far as ``max_ratio`` times the block's bytes, at least 16 MiB; None (the default here):
    the header alone bounds the block.

    >>> block = n5_varlen_encode(np.array([[3, 4]], np.uint64), [{"name": "n5_label_multiset"}, "gzip"])
    >>> n5_varlen_decode(block, [{"name": "n5_label_multiset"}, "gzip"]).argmax().tolist()
    [[3, 4]]
    >>> n5_varlen_decode(block, [{"name": "n5_label_multiset"}, "gzip"], labels=True).tolist()
    [[3, 4]]
    """
    chain = _chain(codecs)
    header, payload = varlen_payload(data, chain, shape, max_ratio=max_ratio)
    return decode_payload(payload, header.shape if shape is None else shape, chain.layout, labels=labels,
                          threads=threads, order=order, rule=rule)


def n5_varlen_decode_labels(
    data: BytesLike,
    codecs: CodecsLike = DEFAULT_CODECS,
    *,
    shape: Sequence[int] | None = None,
    threads: int | None = None,
    order: Order = "K",
    rule: Rule = "spec",
) -> np.ndarray:
    """Decode one varlength block straight to its argmax labels: ``n5_varlen_decode(...,
    labels=True)``, equal to ``n5_varlen_decode(...).argmax()`` without building the lists.

    >>> block = n5_varlen_encode(np.array([[3, 4]], np.uint64), [{"name": "n5_label_multiset"}, "gzip"])
    >>> n5_varlen_decode_labels(block, [{"name": "n5_label_multiset"}, "gzip"]).tolist()
    [[3, 4]]
    """
    return n5_varlen_decode(data, codecs, shape=shape, labels=True, threads=threads, order=order, rule=rule)


class N5Varlen(Codec):
    """numcodecs codec ``n5_varlen``.

    Parameters
    ----------
    codecs : list
        Inner chain: ``n5_label_multiset`` (or ``label_multiset``) then N5
        compressors, in zarr v3 (``{"name": ..., "configuration": ...}``),
        numcodecs (``{"id": ...}``) or N5 (``{"type": ...}``) spelling.
    reserved : {"reject", "accept"}
        Encoding: negative labels and labels above MAX_ID are refused ("reject", the
        default, as every writer does), or written as two's-complement uint64 ids.
    max_ratio : float
        Decoding without ``shape=``/``out=``: the block's ``numElements`` and header dims may
        claim at most ``max(16 MiB, max_ratio x the block's bytes)`` (default
        ``DEFAULT_MAX_RATIO``; see there for what real data needs). ``reserved`` and
        ``max_ratio`` are written to the configuration only when they differ from their
        defaults.

    Examples
    --------
    >>> import numcodecs, numpy as np
    >>> codec = numcodecs.get_codec({"id": "n5_varlen", "codecs": [
    ...     {"name": "n5_label_multiset"}, {"name": "gzip", "configuration": {"level": 6}}]})
    >>> codec.decode(codec.encode(np.array([[1, 2]], np.uint64))).argmax().tolist()
    [[1, 2]]
    """

    codec_id = "n5_varlen"

    def __init__(self, codecs: Iterable[CompressorConfig] = DEFAULT_CODECS, reserved: ReservedRule = "reject",
                 max_ratio: float = DEFAULT_MAX_RATIO) -> None:
        self._chain = CodecChain(codecs)  # parsed configuration only: immutable, thread-safe
        self._reserved: ReservedRule = check_reserved(reserved, self.codec_id)
        self._max_ratio = check_max_ratio(max_ratio)

    @property
    def codecs(self) -> list[dict[str, Any]]:
        return self._chain.v3_configs()

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"id": self.codec_id, "codecs": self.codecs}
        # defaults stay out: configurations of older versions stay equal
        if self._reserved != "reject":
            config["reserved"] = self._reserved
        if self._max_ratio != DEFAULT_MAX_RATIO:
            config["max_ratio"] = self._max_ratio
        return config

    def encode(self, buf: MultisetsLike) -> bytes:
        return n5_varlen_encode(buf, self._chain, reserved=self._reserved)

    def decode(
        self, buf: BytesLike, out: np.ndarray | None = None, shape: Sequence[int] | None = None
    ) -> LabelMultisetArray | np.ndarray:
        """Decode a block; ``out`` (an object or uint64 ndarray) is filled with elements or labels."""
        if out is not None:
            check_out(out, self.codec_id)
            if shape is None:
                shape = out.shape
        decoded = n5_varlen_decode(buf, self._chain, shape=shape, labels=wants_labels(out), max_ratio=self._max_ratio)
        return decoded if out is None else fill_out(out, decoded)

    def __repr__(self) -> str:
        options = "".join(f", {k}={v!r}" for k, v in self.get_config().items() if k not in ("id", "codecs"))
        return f"N5Varlen(codecs={self.codecs!r}{options})"
