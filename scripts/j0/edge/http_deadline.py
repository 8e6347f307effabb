"""A deadline over a whole HTTP exchange with urllib, status line and headers included.

urllib's `timeout` bounds each wait on the socket, not the exchange: a server that sends its
status line and headers a byte at a time, each byte just inside the timeout, holds http.client
in its header loop for as long as it likes (up to 100 headers of 64 KiB each), before any body
read that j0.engine.server.endpoints.read_bounded could bound. Here every read on the connection's
socket waits at most until the exchange's deadline (set with `exchange_deadline`), whatever
http.client is reading: the wait is min(the timeout, what is left), and a read once the deadline
has passed raises DeadlineExceeded (an OSError, like no answer).

Standard library only.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import io
import socket
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "j0_http_deadline", default=None
)


class DeadlineExceeded(OSError):
    """The whole exchange took longer than its deadline (an OSError, like no answer)."""


@contextlib.contextmanager
def exchange_deadline(deadline: float) -> Iterator[None]:
    """Connections opened in the block read only until time.monotonic() reaches `deadline`."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class _DeadlineReader(io.RawIOBase):
    """The socket's own unbuffered reader (socket.SocketIO, which keeps the socket open while it
    is in use), each read waiting at most until the deadline."""

    def __init__(self, sock: socket.socket, deadline: float, idle: float | None) -> None:
        super().__init__()
        self._raw = sock.makefile("rb", buffering=0)
        self._sock, self._deadline, self._idle = sock, deadline, idle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded("no complete answer before the exchange's deadline")
        self._sock.settimeout(left if self._idle is None else min(self._idle, left))
        try:
            return int(self._raw.readinto(buffer) or 0)
        except TimeoutError:
            if time.monotonic() >= self._deadline:
                raise DeadlineExceeded(
                    "no complete answer before the exchange's deadline"
                ) from None
            raise

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """A connected socket whose reader (makefile) keeps to the deadline; all else delegated."""

    def __init__(self, sock: socket.socket, deadline: float, idle: float | None) -> None:
        self._sock, self._deadline, self._idle = sock, deadline, idle

    def makefile(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline, self._idle))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _with_deadline(connection: http.client.HTTPConnection) -> None:
    deadline = _DEADLINE.get()
    if deadline is not None and connection.sock is not None:
        idle = connection.timeout if isinstance(connection.timeout, int | float) else None
        connection.sock = _DeadlineSocket(connection.sock, deadline, idle)  # type: ignore[assignment]


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _with_deadline(self)


class _HTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()  # TCP, then TLS
        _with_deadline(self)


class HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPConnection, req)


class HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPSConnection, req, context=getattr(self, "_context", None))
