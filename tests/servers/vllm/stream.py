"""The vLLM stand-in's streamed answers: server-sent events over chunked transfer, one chunk per
engine step (`--stream-interval 1`), with `stream_options.include_usage` a final usage chunk (with
`metrics.speculative_decoding`), `continuous_usage_stats` usage in every chunk, then
`data: [DONE]`. A dying request (die_after) has its connection cut and the server stop listening
mid-stream. Part of vllm/server.py, our vLLM 0.33 stand-in on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import bodies
from .engine import Step
from .records import RequestRecord

if TYPE_CHECKING:
    from .routes import VllmHandler

# The step at which a dying request stops (after three steps' tokens).
DYING_STEP = 3


@dataclass(frozen=True)
class StreamOptions:
    chat: bool
    include_usage: bool  # stream_options.include_usage: a final usage chunk
    continuous: bool  # stream_options.continuous_usage_stats: usage in every chunk
    dies: bool  # die_after: this request stops mid-stream and the server with it
    token_ids: bool = False  # the request's return_token_ids: each chunk's token ids


def send_event(handler: VllmHandler, value: Any) -> None:
    data = json.dumps(value, separators=(",", ":")).encode()
    handler.write_chunk(b"data: " + data + b"\n\n")


def cut_and_die(handler: VllmHandler, record: RequestRecord) -> None:
    """Stop listening, cut this connection and stop the server, as a process that died would."""
    server = handler.server
    record.died = True
    handler.wfile.flush()
    # A program exits at once, its every connection cut with it (a client's pooled keep-alive
    # connection must not answer a /health asked after the cut).
    server.socket.close()  # no new connection from here on
    if server.exit_on_death:
        server.die()
    handler.connection.shutdown(socket.SHUT_RDWR)
    handler.close_connection = True
    server.die()


def send_stream(
    handler: VllmHandler, record: RequestRecord, steps: Iterator[Step], options: StreamOptions
) -> None:
    server = handler.server
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream; charset=utf-8")
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    head = bodies.chunk_head(record, options.chat, int(time.time()))
    try:
        if options.chat:
            send_event(handler, bodies.first_chat_chunk(head, record, options.continuous))
        for n_step, (token_ids, reason) in enumerate(steps):
            if options.dies and n_step >= DYING_STEP:
                cut_and_die(handler, record)
                return
            before = record.add_output(token_ids)
            reasoning, content = bodies.split_output(
                record, token_ids, before, server.reasoning_tokens
            )
            chunk = bodies.step_chunk(head, options.chat, reasoning, content, reason)
            if options.token_ids:
                chunk["choices"][0]["token_ids"] = list(token_ids)
            if options.continuous:
                chunk["usage"] = bodies.usage(record, False, server.prompt_tokens_details)
            if reason is not None and not options.include_usage:
                chunk["system_fingerprint"] = server.fingerprint
            chunk["kv_transfer_params"] = None
            send_event(handler, chunk)
            if reason is not None:
                server.engine.finish(record, reason)
        if options.include_usage:
            final: dict[str, Any] = {
                **head,
                "choices": [],
                "usage": bodies.with_faults(
                    bodies.usage(record, True, server.prompt_tokens_details),
                    server.final_usage_faults.get(record.index),
                ),
                "system_fingerprint": server.fingerprint,
            }
            spec = bodies.with_faults(
                bodies.spec_decode_metrics(record, server.num_spec_tokens, server.spec_metrics),
                server.spec_metrics_faults.get(record.index),
            )
            if spec is not None:
                final["metrics"] = {"speculative_decoding": spec}
            send_event(handler, final)
        handler.write_chunk(b"data: [DONE]\n\n")
        handler.write_chunk(b"")
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True
        if record.finish_reason is None:
            server.engine.finish(record, "abort")
