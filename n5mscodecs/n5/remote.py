"""Requests to fsspec's asynchronous file systems (``s3://``, ``gs://``, ``http(s)://``) within the
package's bounds, for :class:`~n5mscodecs.n5.store.FsspecStore` (inside its retries):

- every read, listing and look-up has a total deadline, ``n5.storage.REQUEST_DEADLINE``
  seconds, its body included: a body dripping one byte per read time-out would otherwise
  never end (the clients' own time-outs are per read);
- an ``http(s)`` body is read up to the size its caller can need: a server may ignore
  ``Range`` and send gigabytes for one block.

A file system that is not asynchronous (``memory://``, local) is called as it is.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..errors import StorageError
from . import storage

_CHUNK = 1 << 16


async def _http_body(fs: Any, url: str, max_size: int) -> bytes:
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


async def _within_deadline(request: Any) -> Any:
    deadline = storage.REQUEST_DEADLINE
    started = time.monotonic()
    try:
        async with asyncio.timeout(deadline):
            return await request()
    except TimeoutError as error:  # also the clients' per-read time-outs: named as what they are
        if time.monotonic() - started < deadline:
            raise
        raise TimeoutError(f"no complete answer within the deadline of {deadline:g} s per request") from error


def _call(fs: Any, request: Any) -> Any:
    from fsspec.asyn import sync
    from fsspec.exceptions import FSTimeoutError

    try:
        return sync(fs.loop, _within_deadline, request)
    except FSTimeoutError as error:  # fsspec's name for any time-out: the one raised says which
        raise error.__cause__ if isinstance(error.__cause__, TimeoutError) else error from None


def read(fs: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``fs.<method>(*args, **kwargs)`` (``cat_file``, ``ls``, ``exists``, ``isdir``, ...) within
    the request deadline: the asynchronous ``_<method>`` on the file system's loop, cancelled at
    the deadline (a TimeoutError naming it, for the caller's retries)."""
    if not getattr(fs, "async_impl", False):
        return getattr(fs, method)(*args, **kwargs)
    return _call(fs, lambda: getattr(fs, "_" + method)(*args, **kwargs))


def bounded_http_get(fs: Any, url: str, max_size: int) -> bytes:
    """The body at ``url`` (an fsspec HTTP file system's), at most ``max_size`` bytes, within the
    request deadline: more is a :class:`~n5mscodecs.StorageError` (not retried), a 404 a
    FileNotFoundError, other failures as aiohttp raises them (for the caller's retries)."""
    return _call(fs, lambda: _http_body(fs, url, max_size))
