"""One streamed request to a vLLM OpenAI-compatible server, timed, with what the server reports.

The request (vLLM 0.33's protocol, vllm/entrypoints/openai/*/protocol.py):

    POST /v1/chat/completions   {"messages": [{"role": "user", "content": PROMPT}],
                                 "chat_template_kwargs": {"enable_thinking": true|false}, ...}
                                (with --system-prompt a {"role": "system"} message first)
    POST /v1/completions        {"prompt": PROMPT, ...}   (--endpoint completions; a system
                                 prompt is put before PROMPT, a blank line between)
    with "stream": true, "stream_options": {"include_usage": true,
                                            "continuous_usage_stats": true}
    and "return_token_ids": true (vLLM 0.33's field: each chunk's choice carries the token ids it
    adds, which the baseline comparison reads, the first token where two settings' outputs part;
    vLLM then also sends the chunk of a step whose tokens make no text yet, where it would skip
    it otherwise, vllm/entrypoints/openai/chat_completion/serving.py)

vLLM streams one chunk per engine step (`--stream-interval 1`); with continuous usage every chunk
carries the running `completion_tokens`, which gives the tokens of each step. The final usage
chunk has `usage.prompt_tokens_details.cached_tokens` (with `--enable-prompt-tokens-details`)
and `metrics.speculative_decoding` (with `--per-request-spec-decode-metrics`).

Timing follows vllm/benchmarks/serve.py: TTFT is the time to the first chunk that carries a
token; ITL is the gap between successive token-carrying chunks (one engine step each, so with
speculative decoding one "inter-token" gap covers 1 + accepted tokens); TPOT is
(latency - TTFT) / (output tokens - 1).

Bounds (a server that misbehaves fails its request, with the reason, and never holds or ends the
run): `deadline_s` bounds the whole request (the session's sock_read timeout, `--timeout`, only
the wait for the next bytes, which keep-alive comments reset); every body and every streamed
line is capped (bounded_http, with j0.engine.server.endpoints' caps); redirects only to the same
origin; every field read is of the type vLLM gives it (chunk_fields); and a stream may not give
more tokens than the request's max_tokens, nor more text than MAX_JSON_BYTES.

A request whose connection closed before any answer came is sent once more (stream_request says
when and why); no other failure is sent again.
"""

from __future__ import annotations

import asyncio
import errno
import time
from dataclasses import dataclass, field
from typing import Any

from j0.bench.stream import bounded_http, chunk_fields
from j0.bench.stream.chunk_fields import BadAnswer
from j0.engine.server.endpoints import MAX_ERROR_BYTES, MAX_JSON_BYTES, BodyTooLarge


class EndpointMissing(Exception):
    """The server has no such route (HTTP 404 without an OpenAI error body)."""


@dataclass
class Outcome:
    """What one request gave: the client's timing and the server's figures."""

    ok: bool = False
    broken: bool = False  # the connection failed or broke: the server may have died
    error: str | None = None
    http_status: int | None = None
    started_at: float = 0.0  # time.time()
    ttft_s: float | None = None
    latency_s: float | None = None  # to the end of the stream, as vLLM's benchmark
    decode_s: float | None = None  # from the first to the last token-carrying chunk
    itl_s: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    speculative_decoding: dict[str, Any] | None = None
    token_ids: list[int] | None = None  # the output's token ids, where the server gave them
    text: str = ""  # the output's text (reasoning, then content, as streamed)
    client_time_s: float = 0.0  # spent in this module's own parsing
    # Why the request was sent a second time (stream_request: its first connection closed before
    # any answer came), None where it was sent once; every figure above is the second sending's.
    resent: str | None = None


def request_body(
    endpoint: str,
    model: str,
    prompt: str,
    max_tokens: int,
    *,
    thinking: bool,
    temperature: float,
    ignore_eos: bool,
    system_prompt: str | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model}
    if endpoint == "chat":
        system = [{"role": "system", "content": system_prompt}] if system_prompt else []
        body["messages"] = [*system, {"role": "user", "content": prompt}]
        body["chat_template_kwargs"] = {"enable_thinking": thinking}
    else:
        body["prompt"] = f"{system_prompt}\n\n{prompt}" if system_prompt else prompt
    body.update(
        max_tokens=max_tokens,
        temperature=temperature,
        stream=True,
        stream_options={"include_usage": True, "continuous_usage_stats": True},
        return_token_ids=True,
    )
    if ignore_eos:
        body["ignore_eos"] = True
    if seed is not None:
        body["seed"] = seed
    return body


@dataclass
class _Reading:
    """One answer as it is read: the outcome so far, the clock, the tokens seen."""

    out: Outcome
    start: float
    max_tokens: int | None
    first_token_at: float | None = None
    last_token_at: float | None = None
    seen: int = 0

    def chunk(self, chunk: Any, now: float) -> None:
        """One streamed event (JSON already parsed); BadAnswer where a field is off."""
        out = self.out
        if not isinstance(chunk, dict):
            raise BadAnswer(f"an event of the stream is {str(chunk)[:80]}; expected an object")
        if "error" in chunk and "choices" not in chunk:
            raise BadAnswer(f"server error in stream: {str(chunk)[:300]}")
        choices = chunk_fields.choices(chunk)
        usage = chunk_fields.usage(chunk)
        pieces = [(chunk_fields.token_ids(c), chunk_fields.choice_text(c)) for c in choices]
        n = 0  # the output tokens this chunk adds (continuous usage, else token_ids, else text)
        sent = chunk_fields.whole(usage["completion_tokens"]) if usage is not None else None
        if sent is not None and choices:
            n = max(sent - self.seen, 0)
        elif pieces:
            ids, piece = pieces[0]
            n = len(ids) if ids is not None else (1 if piece else 0)
        if n:
            if self.first_token_at is None:
                self.first_token_at = now
                out.ttft_s = now - self.start
            else:
                assert self.last_token_at is not None
                out.itl_s.append(now - self.last_token_at)
            self.last_token_at = now
            self.seen += n
            out.chunk_tokens.append(n)
        for choice, (ids, piece) in zip(choices, pieces, strict=True):
            reason = chunk_fields.finish_reason(choice)
            if reason:
                out.finish_reason = reason
            self._add(ids, piece)
        self._usage_and_metrics(chunk, usage)
        if self.max_tokens is not None and self.seen > self.max_tokens:
            raise BadAnswer(
                f"the server streamed {self.seen} tokens, more than max_tokens {self.max_tokens}"
            )

    def whole(self, doc: Any) -> None:
        """A whole JSON answer (a server that does not stream)."""
        out = self.out
        if not isinstance(doc, dict):
            raise BadAnswer(f"the answer is {str(doc)[:80]}; expected an object")
        now = time.perf_counter()
        self.first_token_at = self.last_token_at = now
        out.ttft_s = now - self.start
        choices = chunk_fields.choices(doc)
        self._usage_and_metrics(doc, chunk_fields.usage(doc))
        for choice in choices:
            out.finish_reason = chunk_fields.finish_reason(choice) or out.finish_reason
            self._add(chunk_fields.token_ids(choice), chunk_fields.choice_text(choice))
        self.seen = chunk_fields.whole(out.output_tokens) or 0
        out.chunk_tokens.append(self.seen)

    def _add(self, ids: list[int] | None, piece: str) -> None:
        """Add a choice's token ids and text to the output."""
        out = self.out
        if ids is not None:
            if out.token_ids is None:
                out.token_ids = []
            out.token_ids.extend(ids)
        if piece:
            out.text += piece
            if len(out.text) > MAX_JSON_BYTES:
                raise BadAnswer(f"the output's text is over {MAX_JSON_BYTES} characters")

    def _usage_and_metrics(
        self, chunk: dict[str, Any], usage: dict[str, int | None] | None
    ) -> None:
        """Usage (the last one seen wins: continuous usage is cumulative) and the spec metrics."""
        out = self.out
        if usage is not None:
            if usage["prompt_tokens"] is not None:
                out.prompt_tokens = usage["prompt_tokens"]
            if usage["completion_tokens"] is not None:
                out.output_tokens = usage["completion_tokens"]
            if usage["cached_tokens"] is not None:
                out.cached_tokens = usage["cached_tokens"]
        spec = chunk_fields.spec_decode(chunk)
        if spec is not None:
            out.speculative_decoding = spec


async def _exchange(session: Any, url: str, body: dict[str, Any], reading: _Reading) -> bool:
    """POST and read the answer into `reading`; False where the server answered an error."""
    out = reading.out
    response = await bounded_http.open_same_origin(session, "POST", url, json=body)
    async with response:
        out.http_status = response.status
        if response.status != 200:
            raw = await bounded_http.read_capped(response, MAX_ERROR_BYTES, url, cut=True)
            text = raw.decode("utf-8", errors="replace")[:500]
            if response.status == 404 and '"error"' not in text:
                raise EndpointMissing(f"{url}: HTTP 404 {text}")
            out.error = f"HTTP {response.status}: {text}"
            return False
        if response.content_type == "application/json":  # a server that does not stream
            raw = await bounded_http.read_capped(response, MAX_JSON_BYTES, url)
            reading.whole(chunk_fields.parse(raw, f"{url}'s answer"))
            return True
        async for raw in bounded_http.lines(response, MAX_JSON_BYTES, url):
            now = time.perf_counter()
            line = raw.strip()
            if line.startswith(b"data:"):
                data = line[5:].strip()
                if not data:  # an empty `data:`: the SSE standard dispatches no event
                    out.client_time_s += time.perf_counter() - now
                    continue
                if data == b"[DONE]":
                    out.client_time_s += time.perf_counter() - now
                    break
                reading.chunk(chunk_fields.parse(data, "an event of the stream"), now)
            out.client_time_s += time.perf_counter() - now
    return True


def _closed_unanswered(exc: BaseException, out: Outcome, seen: int) -> bool:
    """Whether `exc` closed the connection before a byte of an answer came: aiohttp's
    ServerDisconnectedError with no partial answer (aiohttp puts what it had parsed, a status
    line even, in its `message`; "Server disconnected", a str, where it had nothing), or a
    connection reset (a write to a closed socket included), and no status, no token read. A
    connection that never opened (ClientConnectorError: nothing listens) is not one."""
    import aiohttp

    if out.http_status is not None or seen or isinstance(exc, aiohttp.ClientConnectorError):
        return False
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return isinstance(exc.message, str)
    return isinstance(exc, ConnectionResetError) or getattr(exc, "errno", None) in (
        errno.ECONNRESET,
        errno.EPIPE,
    )


async def stream_request(
    session: Any, url: str, body: dict[str, Any], *, deadline_s: float | None = None
) -> Outcome:
    """POST `body` to `url` and read the stream (session: an aiohttp.ClientSession), the whole
    request within `deadline_s` seconds (None: no bound but the session's timeouts).

    A request whose connection closed before any answer came (_closed_unanswered) is sent once
    more, on a fresh start (its times, deadline and figures are the second sending's), and its
    outcome says why (`resent`). The cause this is for: the pool reuses a kept-alive connection
    just as the server closes it for being idle (uvicorn's keep-alive timeout, 5 s; on a GPU run
    1, 8 and 19 of 296 requests were lost so, the server never saw them: no POST in its log, its
    /metrics counters the client's sums). Once only: a server that closes a second connection
    unanswered is failing, not racing, and its error is the request's. A request that got a
    status or any bytes is never sent again: the server may have run it."""
    out, unanswered = await _attempt(session, url, body, deadline_s)
    if unanswered is None:
        return out
    again, _ = await _attempt(session, url, body, deadline_s)
    again.resent = f"the first connection closed before any answer ({unanswered})"
    return again


async def _attempt(
    session: Any, url: str, body: dict[str, Any], deadline_s: float | None
) -> tuple[Outcome, str | None]:
    """One sending of the request: its outcome, and its error where its connection closed before
    any answer came (_closed_unanswered), else None."""
    import aiohttp

    out = Outcome(started_at=time.time())
    max_tokens = body.get("max_tokens")
    reading = _Reading(
        out, time.perf_counter(), max_tokens if isinstance(max_tokens, int) else None
    )
    scope = asyncio.timeout(deadline_s)
    try:
        async with scope:
            if not await _exchange(session, url, body, reading):
                return out, None
    except EndpointMissing:
        raise
    except (BadAnswer, BodyTooLarge, bounded_http.RedirectRefused) as exc:
        out.error = str(exc)
        out.output_tokens = reading.seen
        return out, None
    except TimeoutError as exc:
        out.output_tokens = reading.seen
        if scope.expired():
            out.error = (
                f"no complete answer within the request deadline of {deadline_s:g} s "
                f"(--request-deadline; {reading.seen} tokens had come)"
            )
            return out, None
        idle = getattr(getattr(session, "timeout", None), "sock_read", None)
        out.broken = True
        out.error = f"{type(exc).__name__}: {exc}".strip() + (
            f" (waits for data are bounded by --timeout {idle:g} s)" if idle else ""
        )
        return out, None
    except (aiohttp.ClientError, ConnectionError) as exc:
        out.broken = True
        out.error = f"{type(exc).__name__}: {exc}".strip()
        out.output_tokens = reading.seen
        return out, out.error if _closed_unanswered(exc, out, reading.seen) else None
    out.latency_s = time.perf_counter() - reading.start
    if reading.first_token_at is not None and reading.last_token_at is not None:
        out.decode_s = reading.last_token_at - reading.first_token_at
    if out.output_tokens is None:
        out.output_tokens = reading.seen
    if out.finish_reason is None:
        out.broken = True
        out.error = "the stream ended without a finish_reason"
        return out, None
    out.ok = True
    return out, None
