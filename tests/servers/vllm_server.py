"""A stand-in for a vLLM 0.33 OpenAI-compatible server with speculative decoding, on 127.0.0.1.

It speaks vLLM 0.33.0's wire format (field names, field order, which fields are null and which
are left out) for what `j0 bench` and `j0 status` read, as read from the wheel's code and from a
recorded real engine run (/work/shared/data/engine-h200/):

    GET  /health                  200, empty body (vllm/entrypoints/serve/instrumentator/health.py)
    GET  /version                 {"version": "0.33.0"} (.../instrumentator/basic.py)
    GET  /v1/models               ModelList with max_model_len, root, permission (vllm/entrypoints/
                                  serve/engine/protocol.py, openai/models/serving.py)
    GET  /metrics                 Prometheus text as prometheus_client writes it for vLLM: counters
                                  `vllm:spec_decode_num_drafts_total`, `..._num_draft_tokens_total`,
                                  `..._num_accepted_tokens_total`,
                                  `..._num_accepted_tokens_per_pos_total{position}` per engine, each
                                  with its `_created` gauge (vllm/v1/spec_decode/metrics.py), plus
                                  prompt/generation/request counters and `vllm:cache_config_info`
    POST /v1/completions          streaming and not (vllm/entrypoints/openai/completion/serving.py)
    POST /v1/chat/completions     streaming and not (.../chat_completion/serving.py); a Qwen3-like
                                  chat template, `chat_template_kwargs.enable_thinking` (default on)
                                  and a reasoning parser: thinking tokens go to `reasoning`

The engine is simulated one step at a time, as vLLM's scheduler does it
(vllm/v1/core/sched/scheduler.py, vllm/v1/metrics/stats.py RequestSpecDecodeMetrics):

- the prefill step gives the first output token; every later step is a verify step that drafted
  `num_spec_tokens` tokens (fewer only near max_model_len) and accepted `a` of them, giving 1 + a
  tokens; the step's accepted count goes into the counters and into `per_step_accepted` even where
  max_tokens (or the scripted end of the output) cuts the step's tokens;
- streaming sends one chunk per step (`--stream-interval 1`), and with
  `stream_options.include_usage` a final usage chunk with `prompt_tokens_details.cached_tokens`
  and `metrics.speculative_decoding` (`per_step_accepted`/`per_step_drafted` at the `detailed`
  level); `continuous_usage_stats` adds usage to every chunk;
- requests go to engines "0" and "1" in turn, and every counter starts from an earlier value, as
  on a server that has run before;
- prompts are "tokenised" as whitespace-separated words; with prefix caching on, full 16-token
  blocks seen before count as cached (at most prompt_tokens - 1, as vLLM computes the last token).

The truth, for tests: what the accepted count of each step is comes from `accept_script` (a list
of counts used in order, then repeated) or else from a seeded RNG (`seed`, `accept_prob`,
`position_decay`, `context_scale`); every request is recorded in `records` (also at
GET /_standin/record), with its per-step accepted and drafted counts and the context length at
each step, so a test compares a client's figures with what the server did.

Access: `api_key` answers every /v1 route 401 without `Authorization: Bearer KEY` (vLLM's
`--api-key`); `engine_dead` makes /health answer 503 (an engine that died under the API server).

Faults: `step_delay` seconds per engine step (prefill: `prefill_delay`), `die_after=N`: the request
after the first N generation requests stops mid-stream, its connection is cut and the server stops
listening (run as a program: the process exits 1).

Standalone (standard library only):
    python3 tests/servers/vllm_server.py --port 0 [--num-spec-tokens 15] [--seed 0] ...
prints `vllm_server: serving MODEL at http://127.0.0.1:PORT ...` on its first line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MODEL = "Qwen/Qwen3.8-27B"
VERSION = "0.33.0"
BLOCK_SIZE = 16
# A fixed past for the counters: (drafts, accepted per position) per engine; draft tokens and
# accepted totals follow from them. Nonzero, so a client must take deltas.
EARLIER_DRAFTS = (1234, 777)


def go_float(value: float) -> str:
    """A sample value as prometheus_client writes it (1.79e+09 rather than 1790000000.0)."""
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


@dataclass
class RequestRecord:
    """What the server did for one generation request."""

    index: int
    request_id: str
    endpoint: str
    model: str
    stream: bool
    engine: int
    prompt_tokens: int
    cached_tokens: int
    max_tokens: int
    enable_thinking: bool | None
    per_step_accepted: list[int] = field(default_factory=list)
    per_step_drafted: list[int] = field(default_factory=list)
    step_context_lengths: list[int] = field(default_factory=list)
    output_tokens: int = 0
    finish_reason: str | None = None
    died: bool = False
    # time.monotonic() when the first and the last output token were written
    first_token_time: float | None = None
    last_token_time: float | None = None


@dataclass
class EngineCounters:
    """One engine's Prometheus counters (values and creation times)."""

    num_spec_tokens: int
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    prompt_tokens: int = 0
    prompt_tokens_cached: int = 0
    generation_tokens: int = 0
    prefix_cache_queries: int = 0
    prefix_cache_hits: int = 0
    success: dict[str, int] = field(default_factory=dict)
    created: float = 0.0

    @classmethod
    def with_past(cls, num_spec_tokens: int, drafts: int, created: float) -> EngineCounters:
        per_pos = [
            max(0, drafts * (num_spec_tokens - i) // (2 * num_spec_tokens))
            for i in range(num_spec_tokens)
        ]
        return cls(
            num_spec_tokens=num_spec_tokens,
            drafts=drafts,
            draft_tokens=drafts * num_spec_tokens,
            accepted=sum(per_pos),
            accepted_per_pos=per_pos,
            prompt_tokens=drafts * 9,
            generation_tokens=drafts * 3,
            success={
                "stop": drafts // 100,
                "length": drafts // 50,
                "abort": 0,
                "error": 0,
                "repetition": 0,
            },
            created=created,
        )


class VllmStandIn(ThreadingHTTPServer):
    """The server; start() runs it in a thread, stop() ends it. See the module docstring."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        model: str = DEFAULT_MODEL,
        root: str | None = None,
        max_model_len: int = 40960,
        num_spec_tokens: int = 15,
        seed: int = 0,
        accept_script: list[int] | None = None,
        accept_prob: float = 0.8,
        position_decay: float = 0.97,
        context_scale: float | None = None,
        step_delay: float = 0.0,
        prefill_delay: float = 0.0,
        die_after: int | None = None,
        exit_on_death: bool = False,
        prefix_caching: bool = True,
        prompt_tokens_details: bool = True,
        spec_metrics: str = "detailed",
        reasoning_tokens: int = 48,
        output_len: int | None = None,
        engines: int = 2,
        version: str = VERSION,
        chat: bool = True,
        ignore_stream: bool = False,
        api_key: str | None = None,
        engine_dead: bool = False,
    ) -> None:
        super().__init__((host, port), _Handler)
        if spec_metrics not in ("none", "summary", "detailed"):
            raise ValueError(f"spec_metrics={spec_metrics!r}: expected none, summary or detailed")
        self.model = model
        self.root = root or model
        self.max_model_len = max_model_len
        self.num_spec_tokens = num_spec_tokens
        self.accept_script = list(accept_script) if accept_script else None
        self.accept_prob = accept_prob
        self.position_decay = position_decay
        self.context_scale = context_scale
        self.step_delay = step_delay
        self.prefill_delay = prefill_delay
        self.die_after = die_after
        self.exit_on_death = exit_on_death
        self.prefix_caching = prefix_caching
        self.prompt_tokens_details = prompt_tokens_details
        self.spec_metrics = spec_metrics
        self.reasoning_tokens = reasoning_tokens
        self.output_len = output_len
        self.version = version
        self.chat = chat  # False: no /v1/chat/completions route (404 Not Found)
        self.ignore_stream = ignore_stream  # True: answer "stream": true with one JSON body
        # vLLM's --api-key: every /v1 route wants "Authorization: Bearer KEY", else 401
        # {"error": "Unauthorized"} (vllm/entrypoints/serve/middleware/authenticate.py); /health,
        # /version and /metrics stay open.
        self.api_key = api_key
        # An engine that died under a running API server: /health answers 503
        # (vllm/entrypoints/serve/instrumentator/health.py, EngineDeadError).
        self.engine_dead = engine_dead
        self.fingerprint = f"vllm-{version}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"
        self.records: list[RequestRecord] = []
        self.dead = False
        started = time.time() - 3600.0
        self.counters = [
            EngineCounters.with_past(num_spec_tokens, EARLIER_DRAFTS[i % 2] + 100 * i, started + i)
            for i in range(engines)
        ]
        self._rng = random.Random(seed)
        self._script_pos = 0
        self._cached_blocks: set[bytes] = set()
        self._lock = threading.Lock()
        self._engine_lock = threading.Lock()  # one engine step at a time, like one GPU
        self._thread: threading.Thread | None = None

    # -- life -----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> VllmStandIn:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if not self.dead:
            self.shutdown()
        self.server_close()

    def __enter__(self) -> VllmStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def die(self) -> None:
        """Stop answering: close the listening socket (a program exits 1)."""
        self.dead = True
        if self.exit_on_death:
            sys.stdout.flush()
            os._exit(1)
        threading.Thread(target=self._shutdown_now, daemon=True).start()

    def _shutdown_now(self) -> None:
        self.shutdown()
        self.server_close()

    # -- the truth, for tests -------------------------------------------------------------------

    def truth(self, first: int = 0, last: int | None = None) -> dict[str, Any]:
        """Totals over records[first:last], summed step by step from what the server did."""
        with self._lock:
            records = self.records[first:last]
        k = self.num_spec_tokens
        drafts = draft_tokens = accepted = 0
        per_pos = [0] * k
        for record in records:
            for a, d in zip(record.per_step_accepted, record.per_step_drafted, strict=True):
                drafts += 1
                draft_tokens += d
                accepted += a
                for i in range(a):
                    per_pos[i] += 1
        return {
            "requests": len(records),
            "drafts": drafts,
            "draft_tokens": draft_tokens,
            "accepted": accepted,
            "accepted_per_pos": per_pos,
        }

    def record_json(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": [asdict(r) for r in self.records]}

    # -- the engine -----------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def chat_tokens(self, messages: list[dict[str, Any]], enable_thinking: bool) -> list[str]:
        """A Qwen3-like chat template over whitespace tokens."""
        tokens: list[str] = []
        for message in messages:
            content = message.get("content") or ""
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            tokens += ["<|im_start|>", str(message.get("role", "user")), "\\n"]
            tokens += self.tokenize(str(content))
            tokens += ["<|im_end|>", "\\n"]
        tokens += ["<|im_start|>", "assistant", "\\n"]
        if not enable_thinking:
            tokens += ["<think>", "\\n\\n", "</think>", "\\n\\n"]
        return tokens

    def cached_tokens_for(self, tokens: list[str]) -> int:
        """Full blocks already seen (at most len - 1 tokens), then remember this prompt's."""
        if not self.prefix_caching:
            return 0
        hashes = []
        digest = b""
        for start in range(0, len(tokens) - BLOCK_SIZE + 1, BLOCK_SIZE):
            block = "\x00".join(tokens[start : start + BLOCK_SIZE]).encode()
            digest = hashlib.sha256(digest + block).digest()
            hashes.append(digest)
        with self._lock:
            hits = 0
            for h in hashes:
                if h not in self._cached_blocks:
                    break
                hits += 1
            self._cached_blocks.update(hashes)
        cached = hits * BLOCK_SIZE
        limit = ((len(tokens) - 1) // BLOCK_SIZE) * BLOCK_SIZE
        return min(cached, limit)

    def accepted_for_step(self, drafted: int, context: int) -> int:
        with self._lock:
            if self.accept_script is not None:
                value = self.accept_script[self._script_pos % len(self.accept_script)]
                self._script_pos += 1
                return max(0, min(int(value), drafted))
            scale = 1.0
            if self.context_scale:
                scale = 1.0 / (1.0 + context / self.context_scale)
            accepted = 0
            for i in range(drafted):
                if self._rng.random() >= self.accept_prob * (self.position_decay**i) * scale:
                    break
                accepted += 1
            return accepted

    def new_record(self, **kwargs: Any) -> RequestRecord | None:
        """Register a generation request; None where the server is dead."""
        with self._lock:
            if self.dead:
                return None
            index = len(self.records)
            record = RequestRecord(index=index, engine=index % len(self.counters), **kwargs)
            self.records.append(record)
            return record

    def observe_step(
        self, record: RequestRecord, drafted: int, accepted: int, context: int
    ) -> None:
        with self._lock:
            record.per_step_accepted.append(accepted)
            record.per_step_drafted.append(drafted)
            record.step_context_lengths.append(context)
            c = self.counters[record.engine]
            c.drafts += 1
            c.draft_tokens += drafted
            c.accepted += accepted
            for i in range(accepted):
                c.accepted_per_pos[i] += 1

    def finish(self, record: RequestRecord, reason: str) -> None:
        with self._lock:
            record.finish_reason = reason
            c = self.counters[record.engine]
            c.prompt_tokens += record.prompt_tokens
            c.prompt_tokens_cached += record.cached_tokens
            c.prefix_cache_queries += record.prompt_tokens
            c.prefix_cache_hits += record.cached_tokens
            c.generation_tokens += record.output_tokens
            c.success[reason] = c.success.get(reason, 0) + 1

    def generate(
        self, record: RequestRecord, seed_text: str
    ) -> Iterator[tuple[list[int], str | None]]:
        """Yield (token ids of this step, finish reason or None), one engine step at a time.

        The tokens depend on the prompt only (speculative decoding is lossless); how many come
        per step depends on the accepted counts."""
        out_rng = random.Random(hashlib.sha256(seed_text.encode()).digest())
        budget = record.max_tokens
        natural = self.output_len
        context = record.prompt_tokens
        produced = 0

        def end_reason() -> str | None:
            if natural is not None and produced >= natural:
                return "stop"
            if produced >= budget or context >= self.max_model_len:
                return "length"
            return None

        with self._engine_lock:
            time.sleep(self.prefill_delay)
        produced, context = 1, context + 1
        yield [out_rng.randrange(4, 4000)], end_reason()
        while end_reason() is None:
            drafted = max(0, min(self.num_spec_tokens, self.max_model_len - context - 1))
            with self._engine_lock:
                time.sleep(self.step_delay)
            accepted = self.accepted_for_step(drafted, context) if drafted else 0
            if drafted:
                self.observe_step(record, drafted, accepted, context)
            room = budget - produced
            if natural is not None:
                room = min(room, natural - produced)
            room = min(room, self.max_model_len - context)
            n = min(1 + accepted, room)
            produced += n
            context += n
            yield [out_rng.randrange(4, 4000) for _ in range(n)], end_reason()

    def spec_metrics_payload(self, record: RequestRecord) -> dict[str, Any] | None:
        """`metrics.speculative_decoding` as RequestSpecDecodeMetrics.to_dict writes it."""
        if self.spec_metrics == "none":
            return None
        k = self.num_spec_tokens
        histogram = [0] * (k + 1)
        for a in record.per_step_accepted:
            histogram[a] += 1
        steps = sum(histogram)
        accepted = sum(j * n for j, n in enumerate(histogram))
        draft_tokens = sum(record.per_step_drafted)
        payload: dict[str, Any] = {
            "mean_acceptance_length": 1.0 + accepted / steps if steps else 1.0,
            "draft_acceptance_rate": accepted / draft_tokens if draft_tokens else 0.0,
            "acceptance_histogram": histogram,
            "num_spec_steps": steps,
            "num_accepted_draft_tokens": accepted,
            "num_draft_tokens": draft_tokens,
            "num_spec_tokens": k,
        }
        if self.spec_metrics == "detailed" and record.per_step_accepted:
            payload["per_step_accepted"] = list(record.per_step_accepted)
            payload["per_step_drafted"] = list(record.per_step_drafted)
        return payload

    # -- /metrics -------------------------------------------------------------------------------

    def metrics_text(self) -> str:
        lines: list[str] = [
            "# HELP python_info Python platform information",
            "# TYPE python_info gauge",
            'python_info{implementation="CPython",major="3",minor="12",patchlevel="3",'
            'version="3.12.3"} 1.0',
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
            "# TYPE process_cpu_seconds_total counter",
            f"process_cpu_seconds_total {time.process_time():.2f}",
        ]
        with self._lock:
            engines = [
                (i, c, dict(c.success), list(c.accepted_per_pos))
                for i, c in enumerate(self.counters)
            ]
            engines = [(i, EngineCounters(**asdict(c)), s, p) for i, c, s, p in engines]
        m = self.model

        def labels(i: int, extra: str = "") -> str:
            return f'{{engine="{i}"{extra},model_name="{m}"}}'

        def counter(name: str, doc: str, values: list[tuple[str, float, float]]) -> None:
            lines.append(f"# HELP {name}_total {doc}")
            lines.append(f"# TYPE {name}_total counter")
            lines.extend(f"{name}_total{lab} {go_float(v)}" for lab, v, _ in values)
            lines.append(f"# HELP {name}_created {doc}")
            lines.append(f"# TYPE {name}_created gauge")
            lines.extend(f"{name}_created{lab} {go_float(created)}" for lab, _, created in values)

        lines += [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
        ]
        lines += [f"vllm:num_requests_running{labels(i)} 0.0" for i, *_ in engines]
        counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            [(labels(i), c.prefix_cache_queries, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            [(labels(i), c.prefix_cache_hits, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:prompt_tokens",
            "Number of prefill tokens processed.",
            [(labels(i), c.prompt_tokens, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:generation_tokens",
            "Number of generation tokens processed.",
            [(labels(i), c.generation_tokens, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [
                (f'{{engine="{i}",finished_reason="{r}",model_name="{m}"}}', n, c.created)
                for i, c, s, _ in engines
                for r, n in s.items()
            ],
        )
        counter(
            "vllm:spec_decode_num_drafts",
            "Number of spec decoding drafts.",
            [(labels(i), c.drafts, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:spec_decode_num_draft_tokens",
            "Number of draft tokens.",
            [(labels(i), c.draft_tokens, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:spec_decode_num_accepted_tokens",
            "Number of accepted tokens.",
            [(labels(i), c.accepted, c.created) for i, c, *_ in engines],
        )
        counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            [
                (f'{{engine="{i}",model_name="{m}",position="{pos}"}}', n, c.created + pos)
                for i, c, _, per_pos in engines
                for pos, n in enumerate(per_pos)
            ],
        )
        lines += [
            "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
            "# TYPE vllm:cache_config_info gauge",
        ]
        lines += [
            f'vllm:cache_config_info{{block_size="{BLOCK_SIZE}",cache_dtype="auto",'
            f'enable_prefix_caching="{self.prefix_caching}",engine="{i}",'
            f'gpu_memory_utilization="0.9"}} 1.0'
            for i, *_ in engines
        ]
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# HTTP


class _Handler(BaseHTTPRequestHandler):
    server: VllmStandIn
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        # As uvicorn does: without it, Nagle's algorithm holds small chunks back (40 ms stalls).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- plumbing -------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, separators=(",", ":")).encode())

    def _error(self, status: int, message: str, kind: str) -> None:
        self._json(
            status, {"error": {"message": message, "type": kind, "param": None, "code": status}}
        )

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _event(self, obj: Any) -> None:
        self._chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")

    # -- routes ---------------------------------------------------------------------------------

    def _unauthorized(self, path: str) -> bool:
        """vLLM's API-key middleware: a /v1 route without the right bearer token gets 401."""
        key = self.server.api_key
        if key is None or not path.startswith("/v1"):
            return False
        if self.headers.get("Authorization", "") == f"Bearer {key}":
            return False
        self._json(401, {"error": "Unauthorized"})
        return True

    def do_GET(self) -> None:
        s = self.server
        path = self.path.split("?", 1)[0]
        if self._unauthorized(path):
            return
        if path == "/health":
            self._send(503 if s.engine_dead else 200, b"")
        elif path == "/version":
            self._json(200, {"version": s.version})
        elif path == "/v1/models":
            now = int(time.time())
            self._json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": s.model,
                            "object": "model",
                            "created": now,
                            "owned_by": "vllm",
                            "root": s.root,
                            "parent": None,
                            "max_model_len": s.max_model_len,
                            "permission": [
                                {
                                    "id": f"modelperm-{uuid.uuid4().hex}",
                                    "object": "model_permission",
                                    "created": now,
                                    "allow_create_engine": False,
                                    "allow_sampling": True,
                                    "allow_logprobs": True,
                                    "allow_search_indices": False,
                                    "allow_view": True,
                                    "allow_fine_tuning": False,
                                    "organization": "*",
                                    "group": None,
                                    "is_blocking": False,
                                }
                            ],
                        }
                    ],
                },
            )
        elif path == "/metrics":
            self._send(200, s.metrics_text().encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif path == "/_standin/record":
            self._json(200, s.record_json())
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("content-length") or 0)
        if self._unauthorized(path):
            self.rfile.read(length)
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as exc:
            self._error(400, f"invalid JSON body: {exc}", "BadRequestError")
            return
        if path == "/v1/completions":
            self._generate(body, chat=False)
        elif path == "/v1/chat/completions" and self.server.chat:
            self._generate(body, chat=True)
        else:
            self._json(404, {"detail": "Not Found"})

    # -- generation -----------------------------------------------------------------------------

    def _generate(self, body: dict[str, Any], chat: bool) -> None:
        s = self.server
        model = body.get("model") or s.model
        if model != s.model:
            self._error(404, f"The model `{model}` does not exist.", "NotFoundError")
            return
        enable_thinking: bool | None = None
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                self._error(400, "messages: a non-empty list is required", "BadRequestError")
                return
            kwargs = body.get("chat_template_kwargs") or {}
            enable_thinking = bool(kwargs.get("enable_thinking", True))
            tokens = s.chat_tokens(messages, enable_thinking)
        else:
            prompt = body.get("prompt")
            if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
                tokens = [str(t) for t in prompt]
            elif isinstance(prompt, str):
                tokens = s.tokenize(prompt)
            else:
                self._error(
                    400, "prompt: a string or a list of token ids is required", "BadRequestError"
                )
                return
        if len(tokens) >= s.max_model_len:
            self._error(
                400,
                f"This model's maximum context length is {s.max_model_len} "
                f"tokens. However, your request has {len(tokens)} input tokens.",
                "BadRequestError",
            )
            return
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        if max_tokens is None:
            max_tokens = s.max_model_len - len(tokens)
        stream = bool(body.get("stream")) and not s.ignore_stream
        options = body.get("stream_options") or {}
        include_usage = bool(options.get("include_usage"))
        continuous = include_usage and bool(options.get("continuous_usage_stats"))
        cached = s.cached_tokens_for(tokens)
        record = s.new_record(
            request_id=f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:16]}",
            endpoint="chat" if chat else "completions",
            model=model,
            stream=stream,
            prompt_tokens=len(tokens),
            cached_tokens=cached,
            max_tokens=int(max_tokens),
            enable_thinking=enable_thinking,
        )
        if record is None:
            self.close_connection = True
            return
        dies = s.die_after is not None and record.index >= s.die_after
        steps = s.generate(record, " ".join(tokens))
        if stream:
            self._stream(record, steps, chat, include_usage, continuous, dies)
        else:
            self._whole(record, steps, chat, dies)

    def _split(self, record: RequestRecord, token_ids: list[int], before: int) -> tuple[str, str]:
        """(reasoning text, content text) of the tokens that follow `before` output tokens."""
        s = self.server
        words = [f" t{t}" for t in token_ids]
        if record.endpoint != "chat" or not record.enable_thinking:
            return "", "".join(words)
        cut = max(0, min(len(words), s.reasoning_tokens - before))
        return "".join(words[:cut]), "".join(words[cut:])

    def _usage(self, record: RequestRecord, final: bool) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": record.prompt_tokens,
            "total_tokens": record.prompt_tokens + record.output_tokens,
            "completion_tokens": record.output_tokens,
        }
        if final and self.server.prompt_tokens_details:
            usage["prompt_tokens_details"] = {"cached_tokens": record.cached_tokens}
        elif not final and record.endpoint == "chat":
            usage["completion_tokens_details"] = None
        return usage

    def _stream(
        self,
        record: RequestRecord,
        steps: Iterator[tuple[list[int], str | None]],
        chat: bool,
        include_usage: bool,
        continuous: bool,
        dies: bool,
    ) -> None:
        s = self.server
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        created = int(time.time())
        head = {
            "id": record.request_id,
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": created,
            "model": record.model,
        }
        try:
            if chat:
                first: dict[str, Any] = {
                    **head,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": ""},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ],
                }
                if continuous:
                    first["usage"] = {
                        "prompt_tokens": record.prompt_tokens,
                        "total_tokens": record.prompt_tokens,
                        "completion_tokens": 0,
                        "completion_tokens_details": None,
                    }
                first["prompt_token_ids"] = None
                first["prompt_text"] = None
                self._event(first)
            for n_step, (token_ids, reason) in enumerate(steps):
                if dies and n_step >= 3:
                    record.died = True
                    self.wfile.flush()
                    # A program exits at once, its every connection cut with it (a client's
                    # pooled keep-alive connection must not answer a /health asked after the cut).
                    s.socket.close()  # no new connection from here on
                    if s.exit_on_death:
                        s.die()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    s.die()
                    return
                before = record.output_tokens
                record.output_tokens += len(token_ids)
                now = time.monotonic()
                if record.first_token_time is None:
                    record.first_token_time = now
                record.last_token_time = now
                reasoning, content = self._split(record, token_ids, before)
                if chat:
                    delta: dict[str, Any] = {}
                    if content:
                        delta["content"] = content
                    if reasoning:
                        delta["reasoning"] = reasoning
                    choice: dict[str, Any] = {
                        "index": 0,
                        "delta": delta,
                        "logprobs": None,
                        "finish_reason": reason,
                    }
                    if reason is not None:
                        choice["stop_reason"] = None
                    choice["token_ids"] = None
                    chunk: dict[str, Any] = {**head, "choices": [choice]}
                else:
                    chunk = {
                        **head,
                        "choices": [
                            {
                                "index": 0,
                                "text": reasoning + content,
                                "logprobs": None,
                                "finish_reason": reason,
                                "stop_reason": None,
                                "prompt_token_ids": None,
                                "token_ids": None,
                                "weight_versions": None,
                            }
                        ],
                    }
                if continuous:
                    chunk["usage"] = self._usage(record, final=False)
                if reason is not None and not include_usage:
                    chunk["system_fingerprint"] = s.fingerprint
                chunk["kv_transfer_params"] = None
                self._event(chunk)
                if reason is not None:
                    s.finish(record, reason)
            if include_usage:
                final: dict[str, Any] = {
                    **head,
                    "choices": [],
                    "usage": self._usage(record, final=True),
                    "system_fingerprint": s.fingerprint,
                }
                spec = s.spec_metrics_payload(record)
                if spec is not None:
                    final["metrics"] = {"speculative_decoding": spec}
                self._event(final)
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            if record.finish_reason is None:
                s.finish(record, "abort")

    def _whole(
        self,
        record: RequestRecord,
        steps: Iterator[tuple[list[int], str | None]],
        chat: bool,
        dies: bool,
    ) -> None:
        s = self.server
        reasoning = content = ""
        reason = None
        for n_step, (token_ids, step_reason) in enumerate(steps):
            if dies and n_step >= 3:
                record.died = True
                self.close_connection = True
                s.die()
                return
            before = record.output_tokens
            record.output_tokens += len(token_ids)
            now = time.monotonic()
            if record.first_token_time is None:
                record.first_token_time = now
            record.last_token_time = now
            r, c = self._split(record, token_ids, before)
            reasoning += r
            content += c
            reason = step_reason
        assert reason is not None
        s.finish(record, reason)
        usage = self._usage(record, final=True)
        if "prompt_tokens_details" in usage:
            usage["prompt_tokens_details"].update(created_cache_tokens=None, multimodal_tokens=None)
        usage["completion_tokens_details"] = None
        metrics = {
            "time_to_first_token_ms": None,
            "generation_time_ms": None,
            "queue_time_ms": None,
            "mean_itl_ms": None,
            "tokens_per_second": None,
            "speculative_decoding": s.spec_metrics_payload(record),
        }
        if chat:
            message = {
                "role": "assistant",
                "content": content,
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "reasoning": reasoning or None,
            }
            response: dict[str, Any] = {
                "id": record.request_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": record.model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": reason,
                        "stop_reason": None,
                        "token_ids": None,
                        "routed_experts": None,
                        "weight_versions": None,
                    }
                ],
                "service_tier": None,
                "system_fingerprint": s.fingerprint,
                "usage": usage,
                "prompt_logprobs": None,
                "prompt_token_ids": None,
                "prompt_text": None,
                "kv_transfer_params": None,
                "ec_transfer_params": None,
                "metrics": metrics,
            }
        else:
            response = {
                "id": record.request_id,
                "object": "text_completion",
                "created": int(time.time()),
                "model": record.model,
                "choices": [
                    {
                        "index": 0,
                        "text": reasoning + content,
                        "logprobs": None,
                        "finish_reason": reason,
                        "stop_reason": None,
                        "token_ids": None,
                        "prompt_logprobs": None,
                        "prompt_token_ids": None,
                        "routed_experts": None,
                        "weight_versions": None,
                    }
                ],
                "service_tier": None,
                "system_fingerprint": s.fingerprint,
                "usage": usage,
                "kv_transfer_params": None,
                "ec_transfer_params": None,
                "metrics": metrics,
            }
        self._json(200, response)


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (0: any free one)")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="served model name")
    parser.add_argument("--max-model-len", type=int, default=40960)
    parser.add_argument("--num-spec-tokens", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0, help="seed of the acceptance RNG")
    parser.add_argument(
        "--accept-script",
        help="accepted counts per step, comma-separated, "
        "used in order and repeated (instead of the RNG)",
    )
    parser.add_argument(
        "--accept-prob",
        type=float,
        default=0.8,
        help="probability that draft position 0 is accepted",
    )
    parser.add_argument(
        "--position-decay",
        type=float,
        default=0.97,
        help="factor on that probability per later position",
    )
    parser.add_argument(
        "--context-scale",
        type=float,
        default=None,
        help="acceptance falls as 1/(1 + context/SCALE) (default: flat)",
    )
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds per engine step")
    parser.add_argument("--prefill-delay", type=float, default=0.0, help="seconds per prefill")
    parser.add_argument(
        "--die-after",
        type=int,
        default=None,
        help="die (exit 1) in the middle of the request after the first N",
    )
    parser.add_argument("--no-prefix-caching", action="store_true")
    parser.add_argument(
        "--spec-metrics",
        choices=("none", "summary", "detailed"),
        default="detailed",
        help="--per-request-spec-decode-metrics level",
    )
    parser.add_argument(
        "--reasoning-tokens",
        type=int,
        default=48,
        help="chat with thinking on: this many output tokens are reasoning",
    )
    parser.add_argument(
        "--output-len",
        type=int,
        default=None,
        help="every output ends ('stop') after this many tokens",
    )
    args = parser.parse_args(argv)
    script = [int(x) for x in args.accept_script.split(",")] if args.accept_script else None
    server = VllmStandIn(
        args.host,
        args.port,
        model=args.model,
        max_model_len=args.max_model_len,
        num_spec_tokens=args.num_spec_tokens,
        seed=args.seed,
        accept_script=script,
        accept_prob=args.accept_prob,
        position_decay=args.position_decay,
        context_scale=args.context_scale,
        step_delay=args.step_delay,
        prefill_delay=args.prefill_delay,
        die_after=args.die_after,
        exit_on_death=True,
        prefix_caching=not args.no_prefix_caching,
        spec_metrics=args.spec_metrics,
        reasoning_tokens=args.reasoning_tokens,
        output_len=args.output_len,
    )
    # The first line, "... at http://HOST:PORT ...", is what callers read.
    print(
        f"vllm_server: serving {server.model} at {server.url} "
        f"(num_spec_tokens={server.num_spec_tokens})",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
