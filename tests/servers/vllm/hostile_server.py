"""The vLLM stand-in (vllm/server.py) turned hostile, for `j0 bench run`'s bounds: its
generation answers misbehave as `mode` says, for the generation requests numbered in `bad`
(from 0, over every generation request the server gets; None: all of them), and the others are
the stand-in's own. On 127.0.0.1 only, like every stand-in here.

Modes (each is what a broken or malicious server could send; none is what vLLM sends):

    endless          a stream that never ends: a chunk without a token every `interval` s
    comments         a stream of SSE comments (": keep-alive") only, every `interval` s
    string-count     usage.completion_tokens "7" (a string)
    infinity         usage.completion_tokens Infinity (Python's json writes it; JSON has none)
    nan              usage.completion_tokens NaN
    choices-string   "choices": "abc"
    choices-missing  a chunk without "choices"
    usage-string     "usage": "lots"
    non-utf8         a chunk whose content holds the bytes FF FE (not UTF-8)
    error-non-utf8   HTTP 500 whose body is not UTF-8 (announced as UTF-8)
    spec-string      metrics.speculative_decoding.per_step_accepted ["a"]
    huge-width       metrics.speculative_decoding.per_step_drafted [10**12] (a width no list
                     of that length fits in memory)
    huge-error       HTTP 500 with an endless body (chunked, 1 MiB a chunk)
    huge-line        a stream whose first event is one line of endless bytes
    empty-data       a stream with an event whose `data:` is empty (`data:` and `data: `), which
                     the SSE standard dispatches as no event; the stream is otherwise good
    redirect         every route (GET and POST) answers 307 to `redirect_to` + the path
    post-redirect    the generation routes (POST) only answer 307 to `redirect_to` + the path
    same-redirect    every route answers 307 to the same server's /_hostile/PATH, which serves
                     the stand-in's own answer (a redirect that may be followed)
    close-unanswered the request read, the connection closed (FIN) without a byte of answer:
                     what the client sees where uvicorn closes a kept-alive connection for
                     being idle just as the client's pool reuses it
    reset-unanswered the same, closed with a reset (RST: SO_LINGER 0)
    status-then-close  the status line (`HTTP/1.1 200 OK`) alone, then the connection closed
    head-then-close  the head of a stream (status line and headers), then the connection closed

Streams that never end stop when the client goes, or after 120 s.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from . import hostile_routes
from .routes import VllmHandler
from .server import VllmStandIn

GENERATION = ("/v1/completions", "/v1/chat/completions")
REDIRECT_MODES = ("redirect", "post-redirect", "same-redirect")
ENDLESS_FOR_S = 120.0


class HostileVllm(VllmStandIn):
    """VllmStandIn whose answers misbehave (see the module docstring); `hostile_served` counts
    the answers that did."""

    def __init__(
        self,
        mode: str,
        *,
        bad: set[int] | None = None,
        redirect_to: str | None = None,
        interval: float = 0.05,
        **kwargs: Any,
    ) -> None:
        if mode not in BEHAVIOURS and mode not in REDIRECT_MODES:
            raise ValueError(f"mode {mode!r}: expected one of {sorted(BEHAVIOURS)}")
        super().__init__(**kwargs)
        self.RequestHandlerClass = HostileHandler
        self.mode = mode
        self.bad = bad
        self.redirect_to = redirect_to
        self.interval = interval
        self.generation_requests = 0
        self.hostile_served = 0
        self.closed_at: list[float] = []  # time.time() as each *-close* mode closed a connection
        self._lock = threading.Lock()

    def next_is_bad(self) -> bool:
        with self._lock:
            number = self.generation_requests
            self.generation_requests += 1
            bad = self.bad is None or number in self.bad
            self.hostile_served += bad
            return bad


class HostileHandler(VllmHandler):
    server: HostileVllm

    def do_GET(self) -> None:
        if self._redirected():
            return
        super().do_GET()

    def do_POST(self) -> None:
        path = self.split_path()[0]
        if self.server.mode in REDIRECT_MODES or path not in GENERATION:
            if not self._redirected():
                super().do_POST()
            return
        if not self.server.next_is_bad():
            super().do_POST()
            return
        raw = self.read_body()
        body = json.loads(raw or b"{}")
        BEHAVIOURS[self.server.mode](self, body)

    def _redirected(self) -> bool:
        mode = self.server.mode
        if mode == "same-redirect" and self.path.startswith("/_hostile"):
            self.path = self.path.removeprefix("/_hostile")
            return False
        if mode not in REDIRECT_MODES or (mode == "post-redirect" and self.command != "POST"):
            return False
        if self.command == "POST":
            self.read_body()
        target = (
            f"{self.server.redirect_to}{self.path}"
            if mode != "same-redirect"
            else f"/_hostile{self.path}"
        )
        self.send_body(307, b"", {"location": target})
        return True

    # -- the answers --------------------------------------------------------------------------

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def event(self, data: bytes) -> None:
        self.write_chunk(b"data: " + data + b"\n\n")

    def first_chunk(self, body: dict[str, Any]) -> None:
        """A valid chunk with one token, as the stand-in's first step would give."""
        chat = "messages" in body
        choice: dict[str, Any] = {"index": 0, "finish_reason": None, "token_ids": [11]}
        if chat:
            choice["delta"] = {"content": "a"}
        else:
            choice["text"] = "a"
        chunk = {
            "id": "cmpl-hostile",
            "object": "chat.completion.chunk" if chat else "text_completion",
            "model": self.server.model,
            "choices": [choice],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
        self.event(json.dumps(chunk).encode())

    def bad_stream(self, body: dict[str, Any], bad_event: bytes) -> None:
        """A first good chunk, then `bad_event`, then a last chunk and [DONE]."""
        self.start_stream()
        try:
            self.first_chunk(body)
            self.event(bad_event)
            last = {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
            self.event(json.dumps(last).encode())
            self.event(b"[DONE]")
            self.write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def forever(self, body: dict[str, Any], piece: bytes, first: bool = True) -> None:
        self.start_stream()
        ends = time.monotonic() + ENDLESS_FOR_S
        try:
            if first:
                self.first_chunk(body)
            while time.monotonic() < ends:
                self.write_chunk(piece)
                time.sleep(self.server.interval)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def _usage_chunk(completion_tokens: str) -> bytes:
    return (
        b'{"choices":[{"index":0,"text":"b","finish_reason":null}],'
        b'"usage":{"prompt_tokens":3,"completion_tokens":' + completion_tokens.encode() + b"}}"
    )


def _spec_chunk(spec: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
            "metrics": {"speculative_decoding": {"num_spec_tokens": 7, **spec}},
        }
    ).encode()


def _error_non_utf8(handler: HostileHandler, body: dict[str, Any]) -> None:
    handler.send_body(
        500, b'{"error": "\xff\xfe broken"}', {"content-type": "application/json; charset=utf-8"}
    )


def _huge_error(handler: HostileHandler, body: dict[str, Any]) -> None:
    handler.send_response(500)
    handler.send_header("content-type", "text/plain; charset=utf-8")
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    ends = time.monotonic() + ENDLESS_FOR_S
    try:
        while time.monotonic() < ends:
            handler.write_chunk(b"e" * (1 << 20))
    except (BrokenPipeError, ConnectionResetError):
        pass
    handler.close_connection = True


def _huge_line(handler: HostileHandler, body: dict[str, Any]) -> None:
    handler.start_stream()
    ends = time.monotonic() + ENDLESS_FOR_S
    try:
        handler.write_chunk(b'data: {"choices": "')
        while time.monotonic() < ends:
            handler.write_chunk(b"x" * (1 << 20))
    except (BrokenPipeError, ConnectionResetError):
        pass
    handler.close_connection = True


def _close(handler: HostileHandler, head: bytes = b"", reset: bool = False) -> None:
    """Send `head` (no more), note the time, close the connection (with a reset: RST)."""
    handler.wfile.write(head)
    handler.wfile.flush()
    handler.server.closed_at.append(time.time())
    handler.close_connection = True
    if reset:
        hostile_routes.reset(handler)


STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)

EMPTY_CHUNK = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":null}]}\n\n'

BEHAVIOURS: dict[str, Callable[[HostileHandler, dict[str, Any]], None]] = {
    "endless": lambda h, b: h.forever(b, EMPTY_CHUNK),
    "comments": lambda h, b: h.forever(b, b": keep-alive\n\n", first=False),
    "empty-data": lambda h, b: h.bad_stream(b, b""),
    "string-count": lambda h, b: h.bad_stream(b, _usage_chunk('"7"')),
    "infinity": lambda h, b: h.bad_stream(b, _usage_chunk("Infinity")),
    "nan": lambda h, b: h.bad_stream(b, _usage_chunk("NaN")),
    "choices-string": lambda h, b: h.bad_stream(b, b'{"choices":"abc"}'),
    "choices-missing": lambda h, b: h.bad_stream(b, b'{"id":"x","object":"text_completion"}'),
    "usage-string": lambda h, b: h.bad_stream(
        b, b'{"choices":[{"index":0,"text":"b"}],"usage":"lots"}'
    ),
    "non-utf8": lambda h, b: h.bad_stream(
        b, b'{"choices":[{"index":0,"text":"\xff\xfe","finish_reason":null}]}'
    ),
    "error-non-utf8": _error_non_utf8,
    "spec-string": lambda h, b: h.bad_stream(
        b, _spec_chunk({"per_step_accepted": ["a"], "per_step_drafted": [7]})
    ),
    "huge-width": lambda h, b: h.bad_stream(
        b, _spec_chunk({"per_step_accepted": [1], "per_step_drafted": [10**12]})
    ),
    "huge-error": _huge_error,
    "huge-line": _huge_line,
    "close-unanswered": lambda h, b: _close(h),
    "reset-unanswered": lambda h, b: _close(h, reset=True),
    "status-then-close": lambda h, b: _close(h, b"HTTP/1.1 200 OK\r\n"),
    "head-then-close": lambda h, b: _close(h, STREAM_HEAD),
}
