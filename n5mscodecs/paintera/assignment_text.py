"""Ids and fragment-segment pairs as people write them: ``--additional-assignment k=v`` and
assignment text files (JSON or one pair per line). See :mod:`n5mscodecs.paintera.assignment`."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..n5.storage import PathLike

LONG_MIN = 1 << 63


def as_id(value: Any, name: str) -> int:
    """``value`` as a uint64 id (a negative int is read as its two's complement, as Java's long)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ConfigurationError(f"{name}: expected an integer id, got {value!r}")
    number = int(value)
    if not -LONG_MIN <= number < 1 << 64:
        raise ConfigurationError(f"{name}: {number} is outside uint64 (and int64)")
    return number % (1 << 64)


def parse_assignment_file(path: PathLike) -> dict[int, int]:
    """``{fragment: segment}`` from a text file: a JSON object ``{"1": 10, ...}``, or one pair per
    line as ``k v``, ``k=v`` or ``k,v`` (blank lines and ``#`` comments skipped)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ConfigurationError(f"assignment file {path}: {exc.strerror or exc}") from None
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise ConfigurationError(f"assignment file {path}: not valid JSON ({exc})") from None
        return {_parse_id(k, path, "key"): _parse_id(v, path, f"value of {k}") for k, v in document.items()}
    pairs: dict[int, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace("=", " ").replace(",", " ").split()
        if len(parts) != 2:
            raise ConfigurationError(f"assignment file {path}: line {number}: expected 'fragment segment', "
                                     f"got {line!r}")
        pairs[_parse_id(parts[0], path, f"line {number}")] = _parse_id(parts[1], path, f"line {number}")
    return pairs


def parse_pair(text: str) -> tuple[int, int]:
    """``"k=v"`` -> ``(k, v)`` (what ``--additional-assignment`` takes)."""
    key, separator, value = text.partition("=")
    if not separator:
        raise ConfigurationError(f"expected FRAGMENT=SEGMENT, got {text!r}")
    return _parse_id(key, None, "fragment"), _parse_id(value, None, "segment")


def _parse_id(value: Any, path: str | None, where: str) -> int:
    where = f"assignment file {path}: {where}" if path else where
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ConfigurationError(f"{where}: expected an integer id, got {value!r}") from None
    return as_id(value, where)
