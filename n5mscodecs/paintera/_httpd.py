"""The HTTP side of :mod:`n5mscodecs.paintera.serve`: a read-only ``ThreadingHTTPServer`` whose
handler turns each request into a key (path parts, checked) for an application callable and its
:class:`Response` into bytes on the wire, with what every browser and zarr client expects: CORS
(also the preflight ``OPTIONS``), ``HEAD``, single ``Range`` requests (206/416), ``ETag`` and
``If-None-Match`` (304), ``Cache-Control: no-cache``. Errors are one line of plain text (never a
traceback page): 4xx for what the client asked wrongly, 5xx for what the server could not read.

Nothing here touches a file: the application maps keys to computed documents and chunks, so a
request path never becomes a file system path. Dot segments (``..``, ``.``, also percent-encoded),
encoded separators, empty segments and control characters are refused before the application
sees the key.
"""

from __future__ import annotations

import http.server
import socket
import sys
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from collections.abc import Callable

#: Methods served; anything else is 405.
METHODS = "GET, HEAD, OPTIONS"
#: Headers a browser script may read from a response (zarr clients read the ranges and validators).
_EXPOSED = "Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified, Content-Encoding"
#: The longest request path taken (deeper keys do not exist here).
MAX_PATH = 2048


class HttpError(Exception):
    """An answer other than 200: ``status`` and a one-line ``message`` for the client."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, dict(headers or {})


@dataclass
class Response:
    """What the application answers for a key."""

    body: bytes
    content_type: str = "application/octet-stream"
    etag: str | None = None              # quoted, as sent
    last_modified: float | None = None   # seconds since the epoch
    headers: dict[str, str] = field(default_factory=dict)


def request_key(target: str) -> tuple[str, ...]:
    """The path parts of a request target (query and fragment dropped, percent-decoded), or
    HttpError 400 for a path that is not a plain key: dot segments, empty segments, encoded
    separators, control characters.

    >>> request_key("/labels/s0/0/1/2?x=1")
    ('labels', 's0', '0', '1', '2')
    >>> request_key("/labels/%2e%2e/etc")
    Traceback (most recent call last):
    ...
    n5mscodecs.paintera._httpd.HttpError: '..' and '.' are not allowed in a path
    """
    if len(target) > MAX_PATH:
        raise HttpError(414, f"request path longer than {MAX_PATH} characters")
    path = urlsplit(target).path
    if not path.startswith("/"):
        raise HttpError(400, "the request path must start with '/'")
    lowered = path.lower()
    if "%2f" in lowered or "%5c" in lowered or "\\" in path:
        raise HttpError(400, "encoded path separators are not allowed")
    try:
        parts = unquote(path, errors="strict")[1:].split("/") if path != "/" else []
    except UnicodeDecodeError:
        raise HttpError(400, "the request path is not UTF-8") from None
    if parts and parts[-1] == "":
        parts.pop()  # a trailing slash names the same key (a group)
    for part in parts:
        if part in (".", ".."):
            raise HttpError(400, "'..' and '.' are not allowed in a path")
        if part == "":
            raise HttpError(400, "empty path segments are not allowed")
        if any(ord(c) < 32 or ord(c) == 127 for c in part):
            raise HttpError(400, "control characters are not allowed in a path")
    return tuple(parts)


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``(start, stop)`` of a single ``Range: bytes=...`` header for a body of ``size`` bytes;
    None to send the whole body (no header, a malformed one or several ranges, which RFC 9110
    lets a server ignore); HttpError 416 when the range lies outside the body.

    >>> byte_range("bytes=0-9", 100), byte_range("bytes=90-", 100), byte_range("bytes=-5", 100)
    ((0, 10), (90, 100), (95, 100))
    >>> byte_range("bytes=0-1,5-6", 100) is None
    True
    """
    if header is None:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash or not (first.isdigit() or first == "") or not (last.isdigit() or last == "") or first == last == "":
        return None
    if first == "":  # the last N bytes
        length = int(last)
        if length == 0:
            raise HttpError(416, "empty suffix range", {"Content-Range": f"bytes */{size}"})
        return max(size - length, 0), size
    start = int(first)
    stop = size if last == "" else min(int(last) + 1, size)
    if last != "" and int(last) < start:
        return None  # invalid: ignored
    if start >= size:
        raise HttpError(416, f"range starts at {start}, the body has {size} bytes",
                        {"Content-Range": f"bytes */{size}"})
    return start, stop


class Handler(http.server.BaseHTTPRequestHandler):
    """Answers with ``server.respond(key)``; see the module notes."""

    server: ReadOnlyServer
    protocol_version = "HTTP/1.1"   # keep-alive: neuroglancer and fsspec reuse connections
    timeout = 120                   # seconds a connection may stay silent before its thread lets it go
    server_version = "n5ms-serve"
    sys_version = ""

    def do_OPTIONS(self) -> None:  # noqa: N802 (http.server's naming)
        headers = {"Access-Control-Allow-Methods": METHODS, "Access-Control-Max-Age": "86400", "Allow": METHODS,
                   "Access-Control-Allow-Headers": self.headers.get("Access-Control-Request-Headers") or
                   "Range, If-None-Match, If-Modified-Since, Cache-Control"}
        if self.headers.get("Access-Control-Request-Private-Network"):
            # Chrome asks before a public page (a hosted neuroglancer) reads from 127.0.0.1
            headers["Access-Control-Allow-Private-Network"] = "true"
        self._send(204, b"", "text/plain", headers, content=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(body=False)

    def _not_allowed(self) -> None:
        self.close_connection = True   # a body it may carry is not read: the connection ends here
        self._send(405, b"method not allowed: the server is read-only\n", "text/plain; charset=utf-8",
                   {"Allow": METHODS})

    do_POST = do_PUT = do_DELETE = do_PATCH = _not_allowed  # noqa: N815

    def _answer(self, body: bool) -> None:
        started = time.perf_counter()
        try:
            try:
                status = self._deliver(self.server.respond(request_key(self.path)), body)
            except HttpError as exc:
                status = exc.status
                self._send(status, (exc.message + "\n").encode(), "text/plain; charset=utf-8", exc.headers, body)
            except (ConnectionError, TimeoutError):
                raise
            except Exception as exc:  # never a traceback to the client: one line, and the log names it
                status = 500
                self._send(status, f"internal error: {type(exc).__name__}: {exc}\n".encode(),
                           "text/plain; charset=utf-8", None, body)
        except (ConnectionError, TimeoutError):  # the client went away
            self.close_connection = True
            return
        self.server.record(self.command, self.path, status, time.perf_counter() - started)

    def _deliver(self, response: Response, body: bool) -> int:
        """Send ``response`` (304, 206 or 200); returns the status."""
        headers = dict(response.headers)
        if response.etag is not None:
            headers["ETag"] = response.etag
            if response.etag in [tag.strip() for tag in (self.headers.get("If-None-Match") or "").split(",")]:
                self._send(304, b"", response.content_type, headers, content=False)
                return 304
        if response.last_modified is not None:
            headers["Last-Modified"] = formatdate(response.last_modified, usegmt=True)
        data = response.body
        status = 200
        span = byte_range(self.headers.get("Range"), len(data))
        if span is not None:
            start, stop = span
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{len(data)}"
            data, status = data[start:stop], 206
        self._send(status, data, response.content_type, headers, body)
        return status

    def _send(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None,
              body: bool = True, content: bool = True) -> None:
        """One response: ``data`` with its length (sent unless ``body`` is false: HEAD); without
        ``content`` no type and length either (204, 304)."""
        self.send_response(status)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Expose-Headers", _EXPOSED)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if content:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body and data:
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line, headers too long) as one line of
        text, without its HTML page."""
        text = f"{message or self.responses.get(code, ('error',))[0]}\n".encode()
        try:
            self.send_response(code)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(text)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(text)
        finally:
            self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass  # requests are counted by the server (``record``); errors are its log's


class ReadOnlyServer(http.server.ThreadingHTTPServer):
    """A threaded server (one thread per connection) answering ``respond(key)``; ``log`` gets a
    line per 5xx answer."""

    daemon_threads = True
    # the listen backlog: http.server's 5 drops the connections of a burst of clients (1 s SYN retries)
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], respond: Callable[[tuple[str, ...]], Response],
                 log: Callable[[str], None] | None = None) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.respond = respond
        self.log = log
        self.requests = 0
        self.errors = 0
        super().__init__(address, Handler)

    def record(self, method: str, path: str, status: int, seconds: float) -> None:
        self.requests += 1   # counters for a report, not for decisions: races only blur them
        if status >= 500:
            self.errors += 1
            if self.log is not None:
                self.log(f"{method} {path}: {status} ({seconds * 1000:.0f} ms)")

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that went away mid-answer is no error; anything else gets one line, no traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)) or exc is None:
            return
        if self.log is not None:
            self.log(f"{client_address}: {type(exc).__name__}: {exc}")


__all__ = ["Handler", "HttpError", "ReadOnlyServer", "Response", "byte_range", "request_key"]
