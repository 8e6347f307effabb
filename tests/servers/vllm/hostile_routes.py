"""Hostile answers of the vLLM stand-in (tests/servers/vllm/server.py), route by route: what a
broken or malicious server at the URL a user gave could send instead of vLLM's answer. A test
picks them with `VllmStandIn(hostile={"/v1/models": "bad-types", ...})`; the other routes stay
vLLM's.

    bad-types   valid JSON of the wrong shape for the route: /version a list, /v1/models a
                `data` that is a string, /v1/completions a list, /metrics counters with a
                position label that is no number and a negative count
    truncated   JSON (or Prometheus text) cut in the middle
    nested      JSON nested 100 000 levels deep (Python's json raises RecursionError on it)
    not-utf8    bytes that are not UTF-8
    huge        a body far over every client cap (64 MiB, chunked, no length announced)
    endless     a chunked body that never ends (a byte every 0.2 s)
    redirect    302 to the same path on another origin (127.0.0.2, where nothing listens)
    reset       the connection reset (RST) before any answer
    raw:BYTES   exactly these bytes (latin-1), 200, as the route's content type; on a generation
                route, bytes that start with "data:" go as an event stream (for property tests)

Standard library only; part of our vLLM stand-in on 127.0.0.1.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .routes import VllmHandler

BEHAVIOURS = (
    "bad-types",
    "truncated",
    "nested",
    "not-utf8",
    "huge",
    "endless",
    "redirect",
    "reset",
)
HUGE_BYTES = 64 << 20

_BAD_TYPES = {
    "/version": b'["0.33.0"]',
    "/v1/models": b'{"object":"list","data":"Qwen/Qwen3.8-27B"}',
    "/v1/completions": b'[{"usage":{"completion_tokens":"many"}}]',
    "/v1/chat/completions": b'{"choices":"none","usage":[]}',
    "/metrics": (
        b"# TYPE vllm:spec_decode_num_drafts counter\n"
        b'vllm:spec_decode_num_drafts_total{engine="0"} -5.0\n'
        b"# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n"
        b'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="x"} 1.0\n'
    ),
}


def content_type(path: str, body: bytes = b"") -> str:
    """The route's content type; a generation route's raw body that starts as an event stream
    ("data:") is sent as one."""
    if path == "/metrics":
        return "text/plain; version=0.0.4; charset=utf-8"
    if path.startswith("/v1/") and path.endswith("completions") and body.startswith(b"data:"):
        return "text/event-stream"
    return "application/json"


def answer(handler: VllmHandler, path: str, behaviour: str) -> None:
    """Answer the request for `path` with `behaviour` (see the module's docstring)."""
    kind = content_type(path)
    if behaviour.startswith("raw:"):
        body = behaviour[4:].encode("latin-1")
        handler.send_text(200, body, content_type(path, body))
    elif behaviour == "bad-types":
        handler.send_text(200, _BAD_TYPES.get(path, b"[]"), kind)
    elif behaviour == "truncated":
        metrics_cut = b'vllm:spec_decode_num_drafts_total{engine="0'
        cut = metrics_cut if path == "/metrics" else b'{"data":[{"'
        handler.send_text(200, cut, kind)
    elif behaviour == "nested":
        handler.send_text(200, b"[" * 100_000 + b"]" * 100_000, kind)
    elif behaviour == "not-utf8":
        handler.send_text(200, b'{"version": "\xff\xfe"}', kind)
    elif behaviour == "huge":
        _chunked(handler, kind, HUGE_BYTES)
    elif behaviour == "endless":
        _chunked(handler, kind, None)
    elif behaviour == "redirect":
        port = handler.server.server_address[1]
        target = f"http://127.0.0.2:{port}{handler.path}"
        handler.send_body(302, b"", {"location": target})
    elif behaviour == "reset":
        reset(handler)
    else:
        raise ValueError(f"hostile behaviour {behaviour!r}: expected one of {BEHAVIOURS}")


def _chunked(handler: VllmHandler, kind: str, size: int | None) -> None:
    """`size` bytes of "1" in 1 MiB chunks, or (None) one byte every 0.2 s until the client goes."""
    handler.send_response(200)
    handler.send_header("content-type", kind)
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    block = b"1" * (1 << 20)
    try:
        if size is None:
            while True:
                handler.write_chunk(b"1")
                time.sleep(0.2)
        left = size
        while left > 0:
            handler.write_chunk(block[: min(left, len(block))])
            left -= len(block)
        handler.write_chunk(b"")
    except (BrokenPipeError, ConnectionResetError):
        pass
    handler.close_connection = True


def reset(handler: VllmHandler) -> None:
    """Close with SO_LINGER 0: the client's read gets a connection reset, no answer."""
    sock = handler.connection
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.close_connection = True
    sock.close()
