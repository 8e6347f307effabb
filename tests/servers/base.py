"""What every stand-in server of tests/servers shares: a threaded HTTP server bound to 127.0.0.1
(port 0: a free one) that runs in a background thread, as a context manager or with
start()/stop(), and a request handler with the plumbing the stand-ins' routes use (answers with a
status, headers and a body or JSON, chunked writes, a bounded request body, the path and its
query, the bearer-token check, no log lines on stderr). Standard library only: the stand-ins also
run as programs in containers that have nothing but python3.
"""

from __future__ import annotations

import ipaddress
import json
import signal
import socket
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from types import FrameType
from typing import Any, Self
from urllib.parse import parse_qs

LOCALHOST = "127.0.0.1"
POLL_S = 0.02  # how often serve_forever looks for shutdown()
# The largest request body a stand-in reads (its clients send small JSON bodies).
MAX_BODY_BYTES = 64 << 20


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on once this returns."""
    with socket.socket() as sock:
        sock.bind((LOCALHOST, 0))
        return int(sock.getsockname()[1])


class StandInServer(ThreadingHTTPServer):
    """A threaded HTTP server on `host` (127.0.0.1; a loopback address only) and `port` (0: any
    free one).

    start() serves in a daemon thread and stop() ends it; `with server:` does both. A program
    calls serve_until_interrupted() instead."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], host: str = LOCALHOST, port: int = 0
    ) -> None:
        if not ipaddress.ip_address(socket.gethostbyname(host)).is_loopback:
            raise ValueError(f"{host}: a stand-in listens on a loopback address only")
        super().__init__((host, port), handler)
        self._thread: Thread | None = None

    @property
    def address(self) -> str:
        """HOST:PORT that the server listens on."""
        host, port = self.server_address[:2]
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def start(self) -> Self:
        # stop()'s shutdown() waits for serve_forever's next poll: at the default 0.5 s that was
        # half a second per stopped server, about 0.5 s of most of the tests that start one.
        self._thread = Thread(
            target=self.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def serve_until_interrupted(self) -> None:
        """Serve in this thread until Ctrl-C, SIGINT or SIGTERM, then close the socket. SIGTERM
        is taken as vLLM's server (uvicorn) takes it: a clean stop. Without the handler a stand-in
        that is a container's PID 1 ignores `docker stop`'s SIGTERM (the kernel drops signals that
        PID 1 has no handler for), and every stop waits out Docker's timeout before SIGKILL."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _interrupt)
        try:
            self.serve_forever(poll_interval=POLL_S)
        except KeyboardInterrupt:
            pass
        finally:
            self.server_close()


class StandInHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, quiet, and the stand-ins' ways to answer.

    The names of the two headers every answer carries are class attributes, spelled as the real
    service spells them (uvicorn writes them in lower case); so are json.dumps' separators."""

    protocol_version = "HTTP/1.1"
    content_type_header = "Content-Type"
    content_length_header = "Content-Length"
    json_separators: tuple[str, str] | None = None  # None: json.dumps' default (", ", ": ")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the stand-ins record what they need; keep test output clean

    # -- requests -----------------------------------------------------------------------------

    def split_path(self) -> tuple[str, str]:
        """(path, query string) of the request line's target."""
        path, _, query = self.path.partition("?")
        return path, query

    def query_lists(self) -> dict[str, list[str]]:
        """The query's parameters, each with all its values in order."""
        return parse_qs(self.split_path()[1])

    def read_body(self) -> bytes | None:
        """The request's body (Content-Length bytes); None, after a 413 answer, where it is over
        MAX_BODY_BYTES (the connection is then closed, the body unread)."""
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self.send_body(413, b"")
            return None
        return self.rfile.read(length)

    def bears_token(self, token: str) -> bool:
        """Whether the request carries `Authorization: Bearer TOKEN`."""
        return self.headers.get("Authorization", "") == f"Bearer {token}"

    # -- answers ------------------------------------------------------------------------------

    def send_head(self, status: int, headers: Mapping[str, str], length: int) -> None:
        """Status line, `headers` in their order, then the Content-Length of `length`."""
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header(self.content_length_header, str(length))
        self.end_headers()

    def send_body(
        self,
        status: int,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        length: int | None = None,
    ) -> None:
        """An answer with `body` (none to HEAD); `length` overrides its Content-Length (HEAD)."""
        self.send_head(status, headers or {}, len(body) if length is None else length)
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def send_json(self, status: int, value: Any, headers: Mapping[str, str] | None = None) -> None:
        """`value` as JSON, Content-Type application/json first, then `headers`."""
        body = json.dumps(value, separators=self.json_separators).encode()
        self.send_body(
            status, body, {self.content_type_header: "application/json", **(headers or {})}
        )

    def write_chunk(self, data: bytes) -> None:
        """One chunk of a `Transfer-Encoding: chunked` body (b"": the last one)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
