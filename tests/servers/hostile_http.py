"""A hostile HTTP server on 127.0.0.1 for the clients' bounds (j0.engine.server.endpoints):
redirects to another origin, bodies larger than announced or than any cap, a body that trickles
forever, and a record of the Authorization header each request carried. It stands in for a
misbehaving or malicious server at the URL a user gave; the real client under test is urllib through
j0.engine.server.endpoints."""

from __future__ import annotations

import time
from typing import Any

from servers.base import StandInHandler, StandInServer

TRICKLED_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    + b"".join(b"X-Slow-%d: y\r\n" % i for i in range(40))
    + b"Content-Length: 2\r\n\r\n{}"
)


class HostileServer(StandInServer):
    """Routes: /redirect?to=URL (302 there), /big?bytes=N (N bytes of "x", chunked, no length),
    /trickle (one byte every 0.2 s, forever), /trickle-head (the status line and 40 headers one
    byte every 0.05 s, each well inside a client's timeout, then a valid `{}`; `head_sent`:
    the bytes of it sent when the client went or all was sent), /json (a small JSON object),
    /health (200, empty), anything else 404; each path in `trickle` trickles instead. `seen`
    holds (path, Authorization header or None) of every request."""

    def __init__(self, host: str = "127.0.0.1", trickle: frozenset[str] = frozenset()) -> None:
        super().__init__(_Handler, host)
        self.seen: list[tuple[str, str | None]] = []
        self.trickle = trickle
        self.head_sent: int | None = None
        self.headers_size = TRICKLED_HEAD.index(b"\r\n\r\n")  # the status line and headers


class _Handler(StandInHandler):
    server: HostileServer

    def do_GET(self) -> None:
        path, _ = self.split_path()
        self.server.seen.append((path, self.headers.get("Authorization")))
        query = {k: v[-1] for k, v in self.query_lists().items()}
        if path in self.server.trickle:
            self._trickle()
        elif path == "/redirect":
            self.send_body(302, b"", {"Location": query["to"]})
        elif path == "/big":
            self._chunked(int(query["bytes"]))
        elif path == "/trickle":
            self._trickle()
        elif path == "/trickle-head":
            self._trickle_head()
        elif path == "/json":
            self.send_json(200, {"data": [{"id": "m"}]})
        elif path == "/health":
            self.send_body(200, b"")
        else:
            self.send_body(404, b"not here")

    def _chunked(self, size: int) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        block = b"x" * (1 << 20)
        left = size
        try:
            while left > 0:
                self.write_chunk(block[: min(left, len(block))])
                left -= min(left, len(block))
            self.write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _trickle_head(self) -> None:
        self.close_connection = True
        sent = 0
        try:
            for byte in TRICKLED_HEAD:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                sent += 1
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.server.head_sent = sent

    def _trickle(self, **_: Any) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                self.write_chunk(b"x")
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
