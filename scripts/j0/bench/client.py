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
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from j0.bench.stream_chunks import chunk_problem


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
    return body


def _tokens_of(chunk: dict[str, Any], seen: int) -> int:
    """Output tokens that this chunk adds (continuous usage, else token_ids, else 1 if text)."""
    usage = chunk.get("usage")
    choices = chunk.get("choices") or []
    if isinstance(usage, dict) and usage.get("completion_tokens") is not None and choices:
        return max(int(usage["completion_tokens"]) - seen, 0)
    if not choices:
        return 0
    choice = choices[0]
    if isinstance(choice.get("token_ids"), list):
        return len(choice["token_ids"])
    delta = choice.get("delta")
    if isinstance(delta, dict):
        text = (delta.get("content") or "") + (
            delta.get("reasoning") or delta.get("reasoning_content") or ""
        )
    else:
        text = choice.get("text") or ""
    return 1 if text else 0


async def stream_request(session: Any, url: str, body: dict[str, Any]) -> Outcome:
    """POST `body` to `url` and read the stream (session: an aiohttp.ClientSession)."""
    import aiohttp

    out = Outcome(started_at=time.time())
    start = time.perf_counter()
    first_token_at: float | None = None
    last_token_at: float | None = None
    seen = 0
    try:
        async with session.post(url, json=body) as response:
            out.http_status = response.status
            if response.status != 200:
                text = (await response.text())[:500]
                if response.status == 404 and '"error"' not in text:
                    raise EndpointMissing(f"{url}: HTTP 404 {text}")
                out.error = f"HTTP {response.status}: {text}"
                return out
            if response.content_type == "application/json":  # a server that does not stream
                try:
                    whole = await response.json()
                except (ValueError, RecursionError) as exc:
                    whole = f"not JSON ({type(exc).__name__})"
                problem = chunk_problem(whole) if isinstance(whole, dict) else str(whole)[:80]
                if problem is not None:
                    out.error = f"unexpected answer: {problem}"
                    return out
                now = time.perf_counter()
                first_token_at = last_token_at = now
                out.ttft_s = now - start
                _usage_and_metrics(out, whole)
                for choice in whole.get("choices") or []:
                    out.finish_reason = choice.get("finish_reason") or out.finish_reason
                    _output_of(out, choice)
                seen = out.output_tokens or 0
                out.chunk_tokens.append(seen)
            async for raw in response.content:
                now = time.perf_counter()
                line = raw.strip()
                if not line.startswith(b"data:"):
                    out.client_time_s += time.perf_counter() - now
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    out.client_time_s += time.perf_counter() - now
                    break
                try:
                    chunk = json.loads(data)
                except (ValueError, RecursionError):
                    out.error = f"not JSON in the stream: {data[:200]!r}"
                    return out
                if not isinstance(chunk, dict):
                    continue
                if (problem := chunk_problem(chunk)) is not None:
                    out.error = f"unexpected chunk in the stream: {problem}"
                    return out
                if "error" in chunk and "choices" not in chunk:
                    out.error = f"server error in stream: {json.dumps(chunk)[:300]}"
                    return out
                n = _tokens_of(chunk, seen)
                if n:
                    if first_token_at is None:
                        first_token_at = now
                        out.ttft_s = now - start
                    else:
                        assert last_token_at is not None
                        out.itl_s.append(now - last_token_at)
                    last_token_at = now
                    seen += n
                    out.chunk_tokens.append(n)
                for choice in chunk.get("choices") or []:
                    if choice.get("finish_reason"):
                        out.finish_reason = choice["finish_reason"]
                    _output_of(out, choice)
                _usage_and_metrics(out, chunk)
                out.client_time_s += time.perf_counter() - now
    except EndpointMissing:
        raise
    except (aiohttp.ClientError, ConnectionError, TimeoutError) as exc:
        out.broken = True
        out.error = f"{type(exc).__name__}: {exc}".strip()
        out.output_tokens = seen
        return out
    out.latency_s = time.perf_counter() - start
    if first_token_at is not None and last_token_at is not None:
        out.decode_s = last_token_at - first_token_at
    if out.output_tokens is None:
        out.output_tokens = seen
    if out.finish_reason is None:
        out.broken = True
        out.error = "the stream ended without a finish_reason"
        return out
    out.ok = True
    return out


def _output_of(out: Outcome, choice: dict[str, Any]) -> None:
    """Add a choice's token ids and text to the output (a chunk's delta or a whole message)."""
    ids = choice.get("token_ids")
    if isinstance(ids, list):
        out.token_ids = (out.token_ids or []) + [int(t) for t in ids]
    part = choice.get("delta") or choice.get("message")
    if isinstance(part, dict):
        out.text += (part.get("reasoning") or part.get("reasoning_content") or "") + (
            part.get("content") or ""
        )
    else:
        out.text += choice.get("text") or ""


def _usage_and_metrics(out: Outcome, chunk: dict[str, Any]) -> None:
    """Usage (the last one seen wins: continuous usage is cumulative) and the spec metrics."""
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        if usage.get("prompt_tokens") is not None:
            out.prompt_tokens = int(usage["prompt_tokens"])
        if usage.get("completion_tokens") is not None:
            out.output_tokens = int(usage["completion_tokens"])
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and details.get("cached_tokens") is not None:
            out.cached_tokens = int(details["cached_tokens"])
    metrics = chunk.get("metrics")
    if isinstance(metrics, dict) and isinstance(metrics.get("speculative_decoding"), dict):
        out.speculative_decoding = metrics["speculative_decoding"]
