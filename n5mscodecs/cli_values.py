"""The values the ``n5ms`` options take: argparse ``type=`` parsers, each raising
:class:`argparse.ArgumentTypeError` with the message the command line prints."""

from __future__ import annotations

import argparse
import json
import math
import re

from . import paintera
from .errors import N5msCodecsError

_NUMBER = r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?"
NUMBER_LIST = re.compile(rf"^{_NUMBER}(,{_NUMBER})*$")


#: The largest count, size or level an option takes: Java's int (N5's blockSize, maxNumEntries).
INT_MAX = 2**31 - 1


def int_at_least(minimum, maximum=INT_MAX):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def path(text):
    """A path or URL argument: not empty, no NUL character (no file system takes one)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got ''")
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"a path cannot hold a NUL character: {text!r}")
    return text


def max_num_entries(text):
    value = int_at_least(-1)(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 would keep no entry: use -1 (no cut) or a count >= 1")
    return value


def max_num_entries_per_level(text):
    """``N`` or ``N1,N2,...``: one cut for every downsampled level, or one per level from s1 on
    (the last for the levels after it, as paintera-conversion-helper's --max-num-entries)."""
    values = tuple(max_num_entries(part) for part in text.split(","))
    return values[0] if len(values) == 1 else values


def numbers(text, kind=float):
    if not NUMBER_LIST.match(text.strip()):
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers like 4,4,40, got {text!r}")
    try:
        values = tuple(kind(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 64,64,64, got {text!r}") from None
    if kind is float and not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected finite numbers, got {text!r}")
    return values


def triple(text):
    values = numbers(text)
    if len(values) != 3:
        raise argparse.ArgumentTypeError(f"expected 3 values x,y,z, got {text!r}")
    return values


def resolution(text):
    values = triple(text)
    if any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"voxel sizes must be > 0, got {text!r}")
    return values


def factors(text):
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 2 or 2,2,1, got {text!r}") from None
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"factors must be >= 1, got {text!r}")
    if any(v > INT_MAX for v in values):
        raise argparse.ArgumentTypeError(f"factors must be <= {INT_MAX}, got {text!r}")
    return values[0] if len(values) == 1 else values


def shards(text):
    values = numbers(text, int)
    if any(not 1 <= v <= INT_MAX for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers x,y,z (multiples of the block size), "
                                         f"got {text!r}")
    return values


#: The largest --block-size: a cube of at most 2**31-1 voxels, N5's (Java's) limit per block.
MAX_BLOCK_EDGE = 1290


def block_size(text):
    value = int_at_least(1)(text)
    if value > MAX_BLOCK_EDGE:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_BLOCK_EDGE} (a block of {value}^3 voxels holds more "
                                         f"than N5's {INT_MAX}), got {value}")
    return value


COMPRESSION_HELP = ("N5 compression: raw, gzip[:LEVEL -1..9], zstd[:LEVEL], lz4[:BLOCKSIZE], xz[:PRESET 0..9], "
                     "bzip2[:LEVEL 1..9], blosc[:CNAME[:CLEVEL[:SHUFFLE]]] (CNAME lz4, zstd, zlib, ...), "
                     "or an N5 compression object as JSON, e.g. '{\"type\": \"zstd\", \"level\": 19}' "
                     "(default gzip)")


def compression_config(text):
    """The N5 ``compression`` attributes a ``--compression`` value spells (``gzip:9`` ->
    ``{"type": "gzip", "level": 9}``, see :func:`n5mscodecs.paintera.parse_compression`)."""
    try:
        return paintera.parse_compression(text)
    except N5msCodecsError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def storage_option(text):
    """``KEY=VALUE`` with VALUE read as JSON where it parses (true, 3, {"a": 1}), else a string."""
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


# options whose values may start with "-" (--offset -10,0,0)
NEGATIVE_OK = {"--offset", "--resolution", "--max-num-entries", "--index"}


def join_negative_values(argv):
    """``--offset -10,0,0`` -> ``--offset=-10,0,0``: argparse reads a value starting with '-'
    as an option unless it is one plain negative number."""
    joined, argv = [], list(argv)
    i = 0
    while i < len(argv):
        if argv[i] in NEGATIVE_OK and i + 1 < len(argv) and NUMBER_LIST.match(argv[i + 1]):
            joined.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            joined.append(argv[i])
            i += 1
    return joined


def assignment_pair(text):
    try:
        return paintera.parse_pair(text)
    except N5msCodecsError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

def offset(text):
    values = numbers(text, int)
    if len(values) != 3 or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected 3 non-negative integers x,y,z, got {text!r}")
    return values

def label_id(text):
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an id (an integer), got {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"expected an id in [0, 2**64), got {text!r}")
    return value
