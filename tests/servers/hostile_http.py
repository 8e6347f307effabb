"""A hostile HTTP server on 127.0.0.1 for the clients' bounds (j0.engine.endpoints): redirects to
another origin, bodies larger than announced or than any cap, a body that trickles forever, and a
record of the Authorization header each request carried. It stands in for a misbehaving or
malicious server at the URL a user gave; the real client under test is urllib through
j0.engine.endpoints."""

from __future__ import annotations

import time
from typing import Any

from servers.base import StandInHandler, StandInServer


class HostileServer(StandInServer):
    """Routes: /redirect?to=URL (302 there), /big?bytes=N (N bytes of "x", chunked, no length),
    /trickle (one byte every 0.2 s, forever), /json (a small JSON object), /health (200, empty),
    anything else 404; each path in `trickle` trickles instead. `seen` holds (path, Authorization
    header or None) of every request."""

    def __init__(self, host: str = "127.0.0.1", trickle: frozenset[str] = frozenset()) -> None:
        super().__init__(_Handler, host)
        self.seen: list[tuple[str, str | None]] = []
        self.trickle = trickle


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
