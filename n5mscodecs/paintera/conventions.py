"""Paintera's conventions, one definition each: where a level sits in the world, which
downsampling factors a pyramid gets by default, and how a compression is spelled in a word.

Everything is in N5 axis order (x, y, z for 3-d data).

- :func:`~n5mscodecs.paintera.level_placement`: a level's voxel size and offset from the source's ``resolution``
  and ``offset`` and the level's cumulative ``downsamplingFactors`` (see
  ``n5mscodecs.paintera.multiscale`` for why a downsampled voxel sits at the centre of
  the voxels it summarises).
- :func:`~n5mscodecs.paintera.default_factors`: the levels added when no factors are given.
- :func:`~n5mscodecs.paintera.parse_compression`: ``gzip:9``, ``xz:6``, ``blosc:zstd:5:1`` or a JSON object to the
  N5 ``compression`` attribute (what ``n5ms convert --compression`` takes).
- ``source_store`` and ``target_store``: where a public entry point turns what it was
  given (a location and its ``storage_options``, a store, an N5 group or dataset) into the
  store everything below it works with, once.

>>> level_placement((4.0, 4.0, 40.0), (0.0, 0.0, 100.0), (2.0, 2.0, 2.0))
((8.0, 8.0, 80.0), (2.0, 2.0, 120.0))
>>> default_factors((512, 512, 64), (64, 64, 64), (4, 4, 40))
[(2, 2, 1), (2, 2, 1), (2, 2, 1)]
>>> parse_compression("xz:6")
{'type': 'xz', 'preset': 6}
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..errors import ConfigurationError, StorageError
from ..n5.compression import writing_compressor
from ..n5.store import Store
from ..n5.stores import open_store, open_target

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from ..n5.storage import PathLike, StorageOptions

#: The group attribute of an ``n5ms convert`` target recording its parameters and whether it finished.
CONVERSION_KEY = "n5mscodecs:conversion"
FINISH_HINT = "rerun n5ms convert with --resume (same arguments) to finish it, or --overwrite to start again"


def _held(where: Any) -> Any:
    """The store of an N5 group or dataset object; anything else as it is."""
    held = getattr(where, "store", None)
    return held if isinstance(held, Store) else where


def source_store(where: Any, storage_options: StorageOptions = None) -> Store:
    """The store of what a reader was given: a :class:`~n5mscodecs.n5.store.Store` as it is, an N5
    group or dataset object its store, a location (local path or URL, with fsspec's
    ``storage_options``) opened here."""
    return open_store(_held(where), storage_options)


def target_store(where: Any, storage_options: StorageOptions = None,
                 container: PathLike | Store | None = None) -> Store:
    """:func:`source_store` for a writer: a location is confined to its container root
    (``container`` when given; see :func:`~n5mscodecs.n5.stores.open_target`)."""
    return open_target(_held(where), storage_options, container)


def attributes_above(store: Store) -> dict[str, Any]:
    """The attributes of the group holding ``store`` ({} when nothing lies above it: a bucket,
    or the root of the container the store is confined to)."""
    try:
        parent = store.parent()
    except StorageError:  # raised before any request: there is no parent to read
        return {}
    return parent.get_attributes()


def is_label_source(attributes: Mapping[str, Any]) -> bool:
    """Whether group ``attributes`` are a Paintera label source's (``painteraData`` of type label)."""
    paintera = attributes.get("painteraData")
    return isinstance(paintera, dict) and paintera.get("type") == "label"


def level_placement(
    resolution: Sequence[float], offset: Sequence[float], factors: Sequence[float]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Voxel size and offset of a level whose cumulative downsampling factors are ``factors``.

    Parameters
    ----------
    resolution, offset : sequence of float
        The source's (s0's) voxel size and the world position of the centre of its voxel
        ``(0, 0, 0)``, as Paintera reads them from the ``data`` group.
    factors : sequence of float
        The level's ``downsamplingFactors`` relative to s0 (ones for s0 itself).

    Returns
    -------
    voxel_size, offset : tuple of float
        ``resolution * factors`` and ``offset + resolution * (factors - 1) / 2``: a
        downsampled voxel's centre is the centre of the s0 voxels it summarises.
    """
    voxel_size = tuple(float(r) * float(f) for r, f in zip(resolution, factors))
    centre = tuple(float(o) + float(r) * (float(f) - 1) / 2 for o, r, f in zip(offset, resolution, factors))
    return voxel_size, centre


def default_factors(
    shape: Sequence[int], block_size: Sequence[int], resolution: Sequence[float] | None = None
) -> list[tuple[int, ...]]:
    """The downsampling factors of each level added until the volume fits one block.

    Per level, the axes whose voxel size is at most half the coarsest are halved (4,4,40
    gives 2,2,1 until x and y reach 32, then 2,2,2); when every voxel size is within a
    factor 2 of the coarsest, every axis is halved. An axis of extent 1 is never halved.

    Parameters
    ----------
    shape, block_size : sequence of int
        The source's shape and the pyramid's block size.
    resolution : sequence of float, optional
        Voxel size; default isotropic, which halves every axis at every level.

    Returns
    -------
    list of tuple of int
        Factors of each level relative to the one below (level 0 not included).
    """
    shape = tuple(int(n) for n in shape)
    voxel_size = [1.0] * len(shape) if resolution is None else [float(r) for r in resolution]
    factors = []
    while any(n > b for n, b in zip(shape, block_size)):
        open_axes = [a for a, n in enumerate(shape) if n > 1]
        coarsest = max(voxel_size[a] for a in open_axes)
        finer = [a for a in open_axes if 2 * voxel_size[a] <= coarsest]
        halved = finer or open_axes
        step = tuple(2 if a in halved else 1 for a in range(len(shape)))
        factors.append(step)
        shape = tuple(-(-n // f) for n, f in zip(shape, step))
        voxel_size = [r * f for r, f in zip(voxel_size, step)]
    return factors


#: NAME:LEVEL -> the N5 attribute that LEVEL sets, per compressor with one number to choose
COMPRESSION_LEVEL_KEYS = {"gzip": "level", "zstd": "level", "xz": "preset", "bzip2": "blockSize",
                          "lz4": "blockSize"}
_BLOSC_KEYS = ("cname", "clevel", "shuffle")


def parse_compression(text: str) -> dict[str, Any]:
    """The N5 ``compression`` attributes that ``text`` spells, checked by the compressor.

    Parameters
    ----------
    text : str
        ``NAME`` (``raw``, ``gzip``, ``zstd``, ``lz4``, ``xz``, ``bzip2``, ``blosc``),
        ``NAME:LEVEL`` (the number ``COMPRESSION_LEVEL_KEYS`` names),
        ``blosc[:CNAME[:CLEVEL[:SHUFFLE]]]``, or an N5 compression object as JSON.

    Returns
    -------
    dict
        For example ``{"type": "gzip", "level": 9}`` for ``gzip:9``.

    Raises
    ------
    ConfigurationError
        A spelling, name or level the compressor refuses.
    """
    text = text.strip()
    if text.startswith("{"):
        try:
            config = json.loads(text)
        except ValueError as exc:
            raise ConfigurationError(f"not valid JSON: {exc}") from None
    else:
        config = _parse_words(text)
    writing_compressor(config)  # refuses unknown names, levels out of range, stray keys, what cannot compress
    return config


def _parse_words(text):
    name, *values = text.split(":")
    config: dict[str, Any] = {"type": name}
    if name == "blosc":
        if len(values) > len(_BLOSC_KEYS) or any(not v for v in values):
            raise ConfigurationError(f"expected blosc[:CNAME[:CLEVEL[:SHUFFLE]]], got {text!r}")
        for key, value in zip(_BLOSC_KEYS, values):
            config[key] = value if key == "cname" else _non_negative(key, value)
    elif values:
        numbers = [int(v) for v in values if v.lstrip("-").isdigit()]
        if name not in COMPRESSION_LEVEL_KEYS or len(values) != 1 or len(numbers) != 1:
            raise ConfigurationError(
                f"expected NAME or NAME:LEVEL with NAME one of raw, gzip, zstd, lz4, xz, bzip2, blosc; got {text!r}")
        config[COMPRESSION_LEVEL_KEYS[name]] = numbers[0]
    return config


def _non_negative(key, text):
    try:
        value = int(text)
    except ValueError:
        raise ConfigurationError(f"blosc {key}: expected an integer, got {text!r}") from None
    if value < 0:
        raise ConfigurationError(f"blosc {key}: must be >= 0, got {value}")
    return value


__all__ = ["COMPRESSION_LEVEL_KEYS", "default_factors", "is_label_source", "level_placement", "parse_compression"]
