"""The requests of `j0 bench run` and their streams: one aiohttp session to the server (GETs,
/health, /metrics snapshots), the request of a prompt (falling back from /v1/chat/completions
to /v1/completions once, where the server has no chat route), the warm-up, and the measured
requests, `concurrency` at a time, each kept as an entry of the result as soon as it ends.

A server that stops answering ends the measured requests: `Measurement.dead` says why, and the
request it died in is not a result. aiohttp and tqdm are imported where they are used.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from j0.bench.dataset import prompts
from j0.bench.result import results
from j0.bench.result.manifest import SetupManifest
from j0.bench.result.request_entry import RequestEntry
from j0.bench.run.options import RunOptions
from j0.bench.stream import bounded_http, client
from j0.edge import urls
from j0.engine.figures import prometheus_counters, spec_counts
from j0.engine.figures.spec_counts import Counts
from j0.engine.server.endpoints import MAX_ERROR_BYTES, MAX_JSON_BYTES, MAX_METRICS_BYTES
from j0.engine.server.j0_state import UNKNOWN
from j0.errors import CHECK_FAILED, J0Error, require
from j0.measure import pairing

WARMUP_WORDS = 64
WARMUP_MAX_TOKENS = 64
WARMUP_SEED = 10_000  # warm-up prompts share nothing with the measured ones
KEEPALIVE_S = 2.0  # how long an idle connection is kept for reuse (open_server says why)


@dataclass
class ServerSession:
    """The server at `base`, through one aiohttp session; `notes` collects what the result
    should say about it (a /metrics that could not be read, ...)."""

    session: Any  # aiohttp.ClientSession
    base: str
    notes: list[str]

    async def get(
        self, path: str, timeout: float = 30.0, limit: int = MAX_JSON_BYTES
    ) -> tuple[int, str]:
        """(status, body as text) of GET base+path within `timeout` seconds: redirects only to
        the same origin, the body at most `limit` bytes (an error body is cut to
        MAX_ERROR_BYTES); UTF-8, undecodable bytes replaced."""
        import aiohttp

        url = self.base + path
        response = await bounded_http.open_same_origin(
            self.session, "GET", url, timeout=aiohttp.ClientTimeout(total=timeout)
        )
        async with response:
            if response.status != 200:
                raw = await bounded_http.read_capped(response, MAX_ERROR_BYTES, url, cut=True)
            else:
                raw = await bounded_http.read_capped(response, limit, url)
            return response.status, raw.decode("utf-8", errors="replace")

    async def alive(self) -> bool:
        try:
            status, _ = await self.get("/health", timeout=5.0)
        except Exception:
            return False
        return status == 200

    async def snapshot(self) -> prometheus_counters.Snapshot | None:
        try:
            status, text = await self.get("/metrics", limit=MAX_METRICS_BYTES)
        except Exception as exc:
            self.notes.append(f"/metrics could not be read: {type(exc).__name__}: {exc}")
            return None
        if status != 200:
            self.notes.append(f"/metrics answered HTTP {status}")
            return None
        try:
            snap = prometheus_counters.parse(text)
        except (ValueError, TypeError) as exc:
            self.notes.append(f"/metrics could not be parsed: {exc}")
            return None
        if snap is None:
            self.notes.append("/metrics has no vllm:spec_decode_* counters")
        return snap


@asynccontextmanager
async def open_server(opts: RunOptions, notes: list[str]) -> AsyncIterator[ServerSession]:
    """A session to --url, with the bearer key of OPENAI_API_KEY or VLLM_API_KEY where set, else
    the URL's own credentials as a Basic header (the URL itself without them: j0.edge.urls)."""
    import aiohttp

    headers = {}
    base, basic = urls.split(opts.url)
    key = os.environ.get("OPENAI_API_KEY") or os.environ.get("VLLM_API_KEY")
    if key or basic:
        headers["Authorization"] = f"Bearer {key}" if key else str(basic)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=opts.timeout_s)
    # Idle connections kept 2 s, well below uvicorn's keep-alive timeout (5 s; vLLM serves
    # through uvicorn), so the pool never reuses one the server is closing at that moment.
    # aiohttp's default, 15 s, did: on a GPU run (4 requests in flight, a few seconds each at
    # 4096-token prompts) 1, 8 and 19 of 296 requests of three servers failed with
    # ServerDisconnectedError, never seen by the server. client.stream_request sends a request
    # whose connection closed unanswered once more, for a server with a shorter keep-alive.
    connector = aiohttp.TCPConnector(limit=opts.concurrency + 2, keepalive_timeout=KEEPALIVE_S)
    async with aiohttp.ClientSession(
        timeout=timeout, headers=headers, connector=connector
    ) as session:
        yield ServerSession(session, base.rstrip("/"), notes)


@dataclass
class Sender:
    """Sends one prompt to `model` on the endpoint in use; the first chat request to a server
    without /v1/chat/completions switches the run (and its manifest) to /v1/completions."""

    server: ServerSession
    opts: RunOptions
    model: str
    manifest: SetupManifest
    endpoint: str = "chat"

    async def send(self, prompt: prompts.Prompt, max_tokens: int) -> client.Outcome:
        while True:
            path = "/v1/chat/completions" if self.endpoint == "chat" else "/v1/completions"
            body = client.request_body(
                self.endpoint,
                self.model,
                prompt.text,
                max_tokens,
                thinking=self.opts.thinking,
                temperature=self.opts.temperature,
                ignore_eos=self.opts.ignore_eos,
                system_prompt=self.opts.system_prompt,
                seed=pairing.request_seed(self.opts.seed, prompt.id),
            )
            try:
                return await client.stream_request(
                    self.server.session,
                    self.server.base + path,
                    body,
                    deadline_s=self.opts.deadline_for(max_tokens),
                )
            except client.EndpointMissing as exc:
                if self.endpoint != "chat":
                    raise J0Error(
                        f"{exc}: the server has no completions endpoint", CHECK_FAILED
                    ) from None
                self.endpoint = "completions"
                self.manifest.set("endpoint", "completions")
                self.manifest.set("thinking", None)
                self.server.notes.append(
                    "the server has no /v1/chat/completions: prompts went to /v1/completions "
                    "as plain text (no chat template, no thinking switch)"
                )


async def warm_up(sender: Sender, count: int) -> dict[str, int]:
    """`count` short requests, not measured; the server dying in one ends the run."""
    warm = [prompts.synthetic_prompt(WARMUP_SEED + i, WARMUP_WORDS) for i in range(count)]
    ok = 0
    for prompt in warm:
        outcome = await sender.send(prompt, min(WARMUP_MAX_TOKENS, sender.opts.max_tokens))
        ok += outcome.ok
        if outcome.broken and not await sender.server.alive():
            raise J0Error(f"the server died during warm-up: {outcome.error}", CHECK_FAILED)
    return {"requests": len(warm), "ok": ok}


@dataclass
class Measurement:
    """The measured requests as they end: entry i (and its outcome) once request i has ended,
    None before; `dead` is why the server stopped answering, if it did. `chosen` is every
    request in the order sent: the prompts `repeats` times over, in the same order each time."""

    chosen: list[prompts.Prompt]
    repeats: int = 1
    entries: list[RequestEntry | None] = field(default_factory=list)
    outcomes: list[client.Outcome | None] = field(default_factory=list)
    dead: str | None = None

    def __post_init__(self) -> None:
        self.entries = [None] * len(self.chosen)
        self.outcomes = [None] * len(self.chosen)

    @classmethod
    def repeated(cls, prompts_once: list[prompts.Prompt], repeats: int) -> Measurement:
        return cls(list(prompts_once) * repeats, repeats)

    def repeat_of(self, index: int) -> int:
        """Which pass over the prompts request `index` belongs to (from 0)."""
        return index * self.repeats // len(self.chosen) if self.chosen else 0

    def finished_entries(self) -> list[RequestEntry]:
        return [e for e in self.entries if e is not None]

    def finished_outcomes(self) -> list[client.Outcome]:
        return [o for o in self.outcomes if o is not None]


async def measure(
    sender: Sender,
    measurement: Measurement,
    on_result: Callable[[Counts | None], None],
) -> None:
    """Send the measured requests, `concurrency` at a time, with a progress bar; after each
    result `on_result(pooled counts so far)` (the run's checkpoint)."""
    opts = sender.opts
    chosen = measurement.chosen
    tqdm = require("tqdm", "j0 bench run", extra="bench").tqdm
    bar = tqdm(
        total=len(chosen),
        desc=opts.label or "bench",
        unit="req",
        file=sys.stderr,
        disable=not opts.progress or opts.quiet,
        dynamic_ncols=True,
    )
    gate = asyncio.Semaphore(opts.concurrency)
    j0 = sender.manifest.j0 or UNKNOWN  # the writer always says: on, off or unknown

    async def one(index: int, prompt: prompts.Prompt) -> None:
        async with gate:
            if measurement.dead is not None:
                return
            outcome = await sender.send(prompt, opts.max_tokens)
        if outcome.broken and measurement.dead is None and not await sender.server.alive():
            measurement.dead = (
                f"the server at {sender.server.base} stopped answering during request "
                f"{index + 1} of {len(chosen)} ({outcome.error})"
            )
        if measurement.dead is not None and not outcome.ok:
            return  # the request the server died in (or one after it): not a result
        measurement.outcomes[index] = outcome
        measurement.entries[index] = results.request_entry(
            index, prompt, outcome, j0, measurement.repeat_of(index), opts.keep_outputs
        )
        bar.update(1)
        pooled, _ = results.pooled(measurement.finished_entries())
        if pooled is not None and pooled.drafts:
            bar.set_postfix(acceptance_length=f"{spec_counts.acceptance_length(pooled):.3f}")
        on_result(pooled)

    tasks = [asyncio.create_task(one(i, p)) for i, p in enumerate(chosen)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        bar.close()
