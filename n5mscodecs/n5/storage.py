"""The one place N5 datasets and Paintera sources touch storage.

Everything above this module names things by path and calls these functions;
nothing else opens, writes, lists or removes files. Object storage plugs in
here. Writes are atomic (a temporary file renamed over the target), so a
reader never sees a half-written block or ``attributes.json``.
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, TypeAlias

ATTRIBUTES = "attributes.json"

#: A file system path: a string or an :class:`os.PathLike` of one.
PathLike: TypeAlias = str | os.PathLike[str]


def join(path: PathLike, *names: str | int) -> str:
    return os.path.join(os.fspath(path), *(str(n) for n in names))


def read_bytes(path: PathLike) -> bytes | None:
    """The bytes at ``path``, or None when there is nothing."""
    try:
        with builtins.open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def write_bytes(path: PathLike, data: bytes | bytearray | memoryview) -> None:
    """Write ``data`` at ``path`` atomically (creating parent directories)."""
    directory = os.path.dirname(os.fspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read_json(path: PathLike) -> Any:
    """The parsed JSON document at ``path``, or None when there is none."""
    data = read_bytes(path)
    return None if data is None else json.loads(data)


def write_json(path: PathLike, document: Any) -> None:
    write_bytes(path, json.dumps(document, indent=2).encode())


def read_attributes(path: PathLike) -> dict[str, Any]:
    """The parsed ``attributes.json`` of the group or dataset ``path`` ({} when there is none)."""
    return read_json(join(path, ATTRIBUTES)) or {}


def write_attributes(path: PathLike, document: dict[str, Any]) -> None:
    """Write the ``attributes.json`` of ``path`` (atomically)."""
    write_json(join(path, ATTRIBUTES), document)


def exists(path: PathLike) -> bool:
    return os.path.exists(path)


def is_nonempty_directory(path: PathLike) -> bool:
    return os.path.isdir(path) and bool(os.listdir(path))


def list_names(path: PathLike) -> list[str]:
    """The names directly below ``path`` (sorted; empty when it does not exist)."""
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def remove(path: PathLike) -> None:
    """Remove the object at ``path`` if there is one."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def remove_tree(path: PathLike) -> None:
    """Remove ``path`` and everything below it."""
    shutil.rmtree(path)


def make_directory(path: PathLike) -> None:
    os.makedirs(path, exist_ok=True)


def walk(path: PathLike) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(directory, subdirectories, files)`` below ``path``, top-down and sorted, as
    :func:`os.walk`; pruning ``subdirectories`` in place skips them."""
    for directory, subdirectories, files in os.walk(path):
        subdirectories.sort()
        yield directory, subdirectories, sorted(files)


def total_size(path: PathLike) -> int:
    """Bytes stored below ``path``."""
    return sum(os.path.getsize(os.path.join(directory, name)) for directory, _, files in walk(path)
               for name in files)
