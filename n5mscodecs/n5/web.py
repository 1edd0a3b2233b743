"""Reads of ``http(s)`` locations that fsspec does not bound: a response body is read up to the
size its caller can need (a server may ignore ``Range`` and send gigabytes for one block), and
within :data:`~n5mscodecs.n5.storage.REQUEST_DEADLINE` seconds in all (a body dripping one byte
per read time-out would otherwise never end). Used by :class:`~n5mscodecs.n5.store.FsspecStore`,
through its retries; aiohttp is the ``remote`` extra's, imported by fsspec's HTTP file system."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..errors import StorageError
from . import storage

_CHUNK = 1 << 16


async def _body(fs: Any, url: str, max_size: int) -> bytes:
    session = await fs.set_session()
    async with session.get(fs.encode_url(url), **fs.kwargs) as response:
        if response.status == 404:
            raise FileNotFoundError(url)
        response.raise_for_status()
        declared = response.content_length
        if declared is not None and declared > max_size:
            raise StorageError(f"{storage.display(url)}: read: {declared} bytes, more than the {max_size} it can need")
        body = bytearray()
        async for chunk in response.content.iter_chunked(_CHUNK):
            body += chunk
            if len(body) > max_size:  # stop reading: the rest is never received
                raise StorageError(f"{storage.display(url)}: read: more than the {max_size} bytes it can need")
        return bytes(body)


async def _within_deadline(fs: Any, url: str, max_size: int) -> bytes:
    deadline = storage.REQUEST_DEADLINE
    started = time.monotonic()
    try:
        async with asyncio.timeout(deadline):
            return await _body(fs, url, max_size)
    except TimeoutError as error:  # also aiohttp's per-read time-outs: named as what they are
        if time.monotonic() - started < deadline:
            raise
        raise TimeoutError(f"no complete answer within the deadline of {deadline:g} s per request") from error


def bounded_get(fs: Any, url: str, max_size: int) -> bytes:
    """The body at ``url`` (an fsspec HTTP file system's), at most ``max_size`` bytes, within the
    request deadline: more is a :class:`~n5mscodecs.StorageError` (not retried), a 404 a
    FileNotFoundError, other failures as aiohttp raises them (for the caller's retries)."""
    from fsspec.asyn import sync
    from fsspec.exceptions import FSTimeoutError

    try:
        return sync(fs.loop, _within_deadline, fs, url, max_size)
    except FSTimeoutError as error:  # fsspec's name for any time-out: the one raised says which
        raise error.__cause__ if isinstance(error.__cause__, TimeoutError) else error from None
