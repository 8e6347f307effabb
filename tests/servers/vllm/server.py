"""A stand-in for vLLM 0.33's OpenAI-compatible API server (`vllm serve`) with speculative
decoding, of ours: tests run j0's real clients against it (`j0 bench run`'s streaming client and
`j0 status`'s probes, `j0 engine-check --here` and the bench matrix's servers through
tests/engine_check/bin and tests/bench/matrix_bin), and it listens on 127.0.0.1 only.

It speaks vLLM 0.33.0's wire format (field names, field order, which fields are null and which
are left out) for what `j0 bench` and `j0 status` read, as read from the wheel's code and from a
recorded real engine run (its dumps tests/data/engine-h200/, its log and /metrics
tests/status/data/):

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

With `num_spec_tokens` 0 it serves as `vllm serve` without --speculative-config: one token per
step, no `metrics.speculative_decoding` and no spec-decode counters in /metrics. With
`return_token_ids` in a request, each chunk's choice carries the token ids it adds (the whole
answer's, all of them), as vLLM's `return_token_ids` does; `lossy_from=N` changes every output
token from the N-th on (a speculator that is not lossless).

The truth, for tests: what the accepted count of each step is comes from `accept_script` (a list
of counts used in order, then repeated) or else from a seeded RNG (`seed`, `accept_prob`,
`position_decay`, `context_scale`); every request is recorded in `records` (also at
GET /_standin/record), with its per-step accepted and drafted counts and the context length at
each step, so a test compares a client's figures with what the server did.

Access: `api_key` answers every /v1 route 401 without `Authorization: Bearer KEY` (vLLM's
`--api-key`); `engine_dead` makes /health answer 503 (an engine that died under the API server).

Faults: `step_delay` seconds per engine step (prefill: `prefill_delay`), `die_after=N`: the request
after the first N generation requests stops mid-stream, its connection is cut and the server stops
listening (run as a program: the process exits 1); `spec_metrics_faults={i: {field: value}}`
sends request i's `metrics.speculative_decoding` with those fields replaced (a server whose
per-request metrics cannot be true), `final_usage_faults` the same for the `usage` of a stream's
final chunk.

Hostile: `hostile={ROUTE: BEHAVIOUR}` answers ROUTE as a broken or malicious server would (wrong
types, truncated or deeply nested JSON, bodies that are huge or never end, redirects to another
origin, connection resets): hostile_routes.py lists them. `log=PATH` (with `log_startup`, the
start-up lines) writes the server's log as vLLM does, with what a request puts into it: an unknown
model's name as sent, uvicorn's access line with the raw query (vllm/log.py); a hostile client
writes there what it could write into vLLM's log.

Its parts: vllm/records.py (records, counters), vllm/prompts.py (tokens, chat template, prefix
cache), vllm/engine.py (the steps), vllm/metrics.py (/metrics), vllm/routes.py (the routes),
vllm/generate.py and vllm/stream.py (generation answers), vllm/bodies.py (their JSON).

Standalone (standard library only):
    python3 tests/servers/vllm/server.py --port 0 [--num-spec-tokens 15] [--seed 0] ...
prints `vllm_server: serving MODEL at http://127.0.0.1:PORT ...` on its first line.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: import this folder as the package it is
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    __package__ = ".".join(Path(__file__).resolve().parts[-3:-1])

from ..base import LOCALHOST, StandInServer
from . import hostile_routes
from .engine import AcceptanceModel, SimulatedEngine
from .log import StandInLog
from .metrics import metrics_text
from .prompts import PrefixCache
from .records import DEFAULT_MODEL, VERSION, EngineCounters, RequestRecord
from .routes import VllmHandler

__all__ = ["DEFAULT_MODEL", "VERSION", "EngineCounters", "RequestRecord", "VllmStandIn", "main"]


class VllmStandIn(StandInServer):
    """The server; start() runs it in a thread, stop() ends it. See the module docstring."""

    def __init__(
        self,
        host: str = LOCALHOST,
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
        lossy_from: int | None = None,
        spec_metrics_faults: dict[int, dict[str, Any]] | None = None,
        final_usage_faults: dict[int, dict[str, Any]] | None = None,
        hostile: dict[str, str] | None = None,
        log: Path | None = None,
        log_startup: str = "",
    ) -> None:
        super().__init__(VllmHandler, host, port)
        # The server's log as vLLM writes it (vllm/log.py): `log_startup`, the server coming up,
        # then what requests put there; None: no log.
        self.log = StandInLog(log, log_startup) if log is not None else None
        # route -> a hostile behaviour instead of vLLM's answer (hostile_routes.py)
        self.hostile = dict(hostile or {})
        for behaviour in self.hostile.values():
            if behaviour not in hostile_routes.BEHAVIOURS and not behaviour.startswith("raw:"):
                known = ", ".join(hostile_routes.BEHAVIOURS)
                raise ValueError(f"hostile={behaviour!r}: expected one of {known} or raw:BYTES")
        if spec_metrics not in ("none", "summary", "detailed"):
            raise ValueError(f"spec_metrics={spec_metrics!r}: expected none, summary or detailed")
        self.model = model
        self.root = root or model
        self.max_model_len = max_model_len
        self.num_spec_tokens = num_spec_tokens
        self.die_after = die_after
        self.exit_on_death = exit_on_death
        self.prefix_caching = prefix_caching
        self.prompt_tokens_details = prompt_tokens_details
        self.spec_metrics = spec_metrics
        self.reasoning_tokens = reasoning_tokens
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
        # A server whose per-request metrics cannot be true: request index -> the fields of its
        # metrics.speculative_decoding to replace (None removes one), as sent.
        self.spec_metrics_faults = dict(spec_metrics_faults or {})
        # ... and whose final usage chunk (streaming) carries these fields instead.
        self.final_usage_faults = dict(final_usage_faults or {})
        self.fingerprint = f"vllm-{version}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"
        self.prefix_cache = PrefixCache(prefix_caching)
        acceptance = AcceptanceModel(
            accept_script, seed, accept_prob, position_decay, context_scale
        )
        self.engine = SimulatedEngine(
            acceptance,
            num_spec_tokens=num_spec_tokens,
            max_model_len=max_model_len,
            output_len=output_len,
            step_delay=step_delay,
            prefill_delay=prefill_delay,
            engines=engines,
            lossy_from=lossy_from,
        )

    # -- what it did, for tests -----------------------------------------------------------------

    @property
    def records(self) -> list[RequestRecord]:
        """Every generation request, in the order they came."""
        return self.engine.records

    @property
    def counters(self) -> list[EngineCounters]:
        return self.engine.counters

    def truth(self, first: int = 0, last: int | None = None) -> dict[str, Any]:
        """Totals over records[first:last], summed step by step from what the server did."""
        return self.engine.truth(first, last)

    def record_json(self) -> dict[str, Any]:
        return self.engine.record_json()

    def metrics_text(self) -> str:
        speculative = self.num_spec_tokens > 0
        return metrics_text(
            self.engine.counters_now(), self.model, self.prefix_caching, speculative
        )

    # -- life -----------------------------------------------------------------------------------

    @property
    def dead(self) -> bool:
        return self.engine.dead

    def stop(self) -> None:
        if not self.dead:
            self.shutdown()
        self.server_close()

    def die(self) -> None:
        """Stop answering: close the listening socket (a program exits 1)."""
        self.engine.dead = True
        if self.exit_on_death:
            sys.stdout.flush()
            os._exit(1)
        threading.Thread(target=self._shutdown_now, daemon=True).start()

    def _shutdown_now(self) -> None:
        self.shutdown()
        self.server_close()


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (0: any free one)")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="served model name")
    parser.add_argument("--max-model-len", type=int, default=40960)
    parser.add_argument(
        "--num-spec-tokens", type=int, default=15, help="0: no speculative decoding"
    )
    parser.add_argument(
        "--lossy-from",
        type=int,
        default=None,
        help="output token N on is not the lossless one (a broken speculator)",
    )
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
        lossy_from=args.lossy_from,
    )
    # The first line, "... at http://HOST:PORT ...", is what callers read.
    print(
        f"vllm_server: serving {server.model} at {server.url} "
        f"(num_spec_tokens={server.num_spec_tokens})",
        flush=True,
    )
    server.serve_until_interrupted()
    return 0


if __name__ == "__main__":
    sys.exit(main())
