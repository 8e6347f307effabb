"""`j0 bench run`: send the prompts to a running server, measure, and write the result file.

Order of a run: ask the server what it serves (/v1/models, /version), make the prompts, send the
warm-up requests (not measured), read /metrics, send the measured requests (one at a time by
default), read /metrics again, write FILE.json atomically. A server that stops answering ends
the run with an error; the requests that finished are kept in FILE.json ("complete": false).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.atomic import write_text_atomic
from j0.bench import client, manifest, prompts, results
from j0.engine import prometheus_counters, spec_counts
from j0.engine.spec_counts import Counts
from j0.errors import CHECK_FAILED, USAGE, J0Error, require

DEFAULT_REQUESTS = 10
CHECKPOINT_EVERY_S = 5.0
METRICS_SETTLE_TRIES = 6  # vLLM updates its counters just after the last chunk: re-read a little


@dataclass
class RunOptions:
    url: str
    out: Path
    requests: int | None = None
    max_tokens: int = 4096
    dataset: str = "synthetic"
    dataset_files: Path | None = None
    concurrency: int = 1
    warmup: int = 0
    label: str | None = None
    model: str | None = None
    thinking: bool = True
    endpoint: str = "chat"
    temperature: float = 0.0
    ignore_eos: bool = False
    bin_size: int = 512
    status_json: Path | None = None
    j0: bool | None = None
    overlay_identity: str | None = None
    timeout_s: float = 3600.0
    progress: bool = True
    quiet: bool = False


def check_options(opts: RunOptions) -> None:
    for name, value, least in (
        ("--requests", opts.requests, 1),
        ("--max-tokens", opts.max_tokens, 1),
        ("--concurrency", opts.concurrency, 1),
        ("--warmup", opts.warmup, 0),
        ("--bin-size", opts.bin_size, 1),
    ):
        if value is not None and value < least:
            raise J0Error(f"{name} {value}: expected {least} or more", USAGE)
    if opts.endpoint not in ("chat", "completions"):
        raise J0Error(f"--endpoint {opts.endpoint}: expected chat or completions", USAGE)
    if opts.out.is_dir():
        raise J0Error(f"--out {opts.out}: is a folder; expected a file name", USAGE)


def run(opts: RunOptions) -> int:
    check_options(opts)
    require("aiohttp", "j0 bench run", extra="bench")
    require("prometheus_client", "j0 bench run", extra="bench")
    status = manifest.read_status(opts.status_json) if opts.status_json else None
    return asyncio.run(_Run(opts, status).main())


class _Run:
    def __init__(self, opts: RunOptions, status: dict[str, Any] | None) -> None:
        self.opts = opts
        self.status = status
        self.base = opts.url.rstrip("/")
        self.endpoint = opts.endpoint
        self.notes: list[str] = []
        self.entries: list[dict[str, Any] | None] = []
        self.outcomes: list[client.Outcome | None] = []
        self.dead: str | None = None
        self.last_write = 0.0
        self.doc: dict[str, Any] = {}

    def say(self, text: str) -> None:
        if not self.opts.quiet:
            print(text, file=sys.stderr, flush=True)

    async def main(self) -> int:
        import aiohttp

        headers = {}
        key = os.environ.get("OPENAI_API_KEY") or os.environ.get("VLLM_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=self.opts.timeout_s)
        connector = aiohttp.TCPConnector(limit=self.opts.concurrency + 2)
        async with aiohttp.ClientSession(
            timeout=timeout, headers=headers, connector=connector
        ) as session:
            self.session = session
            return await self._main()

    async def _get(self, path: str, timeout: float = 30.0) -> tuple[int, str]:
        import aiohttp

        async with self.session.get(
            self.base + path, timeout=aiohttp.ClientTimeout(total=timeout)
        ) as response:
            return response.status, await response.text()

    async def _alive(self) -> bool:
        try:
            status, _ = await self._get("/health", timeout=5.0)
        except Exception:
            return False
        return status == 200

    async def _snapshot(self) -> prometheus_counters.Snapshot | None:
        try:
            status, text = await self._get("/metrics")
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

    async def _main(self) -> int:
        opts = self.opts
        try:
            status, text = await self._get("/v1/models")
        except Exception as exc:
            raise J0Error(
                f"no server answers at {self.base} ({type(exc).__name__}: {exc})", CHECK_FAILED
            ) from None
        if status != 200:
            raise J0Error(f"{self.base}/v1/models: HTTP {status}: {text[:300]}", CHECK_FAILED)
        try:
            models = [m for m in json.loads(text).get("data", []) if isinstance(m, dict)]
        except (json.JSONDecodeError, AttributeError):
            models = []
        if not models:
            raise J0Error(f"{self.base}/v1/models lists no model: {text[:300]}", CHECK_FAILED)
        ids = [str(m.get("id")) for m in models]
        model = opts.model or ids[0]
        if opts.model and opts.model not in ids:
            raise J0Error(
                f"--model {opts.model}: {self.base} serves {', '.join(ids)}", CHECK_FAILED
            )
        version = None
        try:
            v_status, v_text = await self._get("/version")
            if v_status == 200:
                version = json.loads(v_text).get("version")
        except Exception:
            version = None
        card = next(m for m in models if str(m.get("id")) == model)
        max_model_len = card.get("max_model_len")
        max_words = None
        if isinstance(max_model_len, int) and max_model_len > 0:
            # about two tokens per word at most (digits are single tokens in Qwen's tokenizer)
            max_words = max((max_model_len - opts.max_tokens) // 2, 16)
        dataset = prompts.resolve(opts.dataset, data_files=opts.dataset_files, max_words=max_words)
        count = opts.requests
        if count is None:
            count = min(DEFAULT_REQUESTS, dataset.available or DEFAULT_REQUESTS)
        chosen = dataset.take(count)
        dataset_info = {
            "name": dataset.name,
            "kind": dataset.kind,
            "source": dataset.source,
            "requests": len(chosen),
            "sha256": prompts.sha256_of(chosen),
        }
        if (
            dataset.kind == "synthetic"
            and max_words is not None
            and max(prompts.synthetic_lengths(opts.dataset)) > max_words
        ):
            self.notes.append(
                f"synthetic lengths capped to fit max_model_len={max_model_len} with "
                f"max_tokens={opts.max_tokens}: {dataset.name}"
            )
        options = {
            "requests": len(chosen),
            "max_tokens": opts.max_tokens,
            "concurrency": opts.concurrency,
            "warmup": opts.warmup,
            "temperature": opts.temperature,
            "ignore_eos": opts.ignore_eos,
            "bin_size": opts.bin_size,
            "label": opts.label,
        }
        self.manifest = manifest.build(
            url=self.base,
            server_version=version,
            models=models,
            model=model,
            endpoint=self.endpoint,
            thinking=opts.thinking,
            status=self.status,
            j0_flag=opts.j0,
            overlay_identity=opts.overlay_identity,
            dataset=dataset_info,
            options=options,
        )
        self.model = model
        self.chosen = chosen

        warm = [prompts.synthetic_prompt(10_000 + i, 64) for i in range(opts.warmup)]
        warm_ok = 0
        for prompt in warm:
            outcome = await self._send(prompt, min(64, opts.max_tokens))
            warm_ok += outcome.ok
            if outcome.broken and not await self._alive():
                raise J0Error(f"the server died during warm-up: {outcome.error}", CHECK_FAILED)
        self.warmup_info = {"requests": len(warm), "ok": warm_ok}

        before = await self._snapshot()
        started = time.perf_counter()
        self.entries = [None] * len(chosen)
        self.outcomes = [None] * len(chosen)
        await self._measure(chosen)
        wall = time.perf_counter() - started

        per_request, _ = results.pooled([e for e in self.entries if e])
        delta: Counts | None = None
        engines: list[str] = []
        if self.dead is None and before is not None:
            for attempt in range(METRICS_SETTLE_TRIES):
                after = await self._snapshot()
                if after is None:
                    break
                delta, engines = after.minus(before), after.engines
                if (
                    per_request is not None
                    and results.crosscheck(per_request, delta, engines)["match"]
                ):
                    break
                if attempt + 1 < METRICS_SETTLE_TRIES:
                    await asyncio.sleep(0.25)
        note = "the server died: no /metrics after the run" if self.dead is not None else None
        self.finish_doc(per_request, delta, engines, wall, note)
        self.write()
        return self.report()

    # -- sending --------------------------------------------------------------------------------

    async def _send(self, prompt: prompts.Prompt, max_tokens: int) -> client.Outcome:
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
            )
            try:
                return await client.stream_request(self.session, self.base + path, body)
            except client.EndpointMissing as exc:
                if self.endpoint != "chat":
                    raise J0Error(
                        f"{exc}: the server has no completions endpoint", CHECK_FAILED
                    ) from None
                self.endpoint = "completions"
                self.manifest["endpoint"] = "completions"
                self.manifest["thinking"] = None
                self.notes.append(
                    "the server has no /v1/chat/completions: prompts went to /v1/completions "
                    "as plain text (no chat template, no thinking switch)"
                )

    async def _measure(self, chosen: list[prompts.Prompt]) -> None:
        tqdm = require("tqdm", "j0 bench run", extra="bench").tqdm
        bar = tqdm(
            total=len(chosen),
            desc=self.opts.label or "bench",
            unit="req",
            file=sys.stderr,
            disable=not self.opts.progress or self.opts.quiet,
            dynamic_ncols=True,
        )
        gate = asyncio.Semaphore(self.opts.concurrency)
        j0 = self.manifest["j0"]

        async def one(index: int, prompt: prompts.Prompt) -> None:
            async with gate:
                if self.dead is not None:
                    return
                outcome = await self._send(prompt, self.opts.max_tokens)
            if outcome.broken and self.dead is None and not await self._alive():
                self.dead = (
                    f"the server at {self.base} stopped answering during request {index + 1} "
                    f"of {len(chosen)} ({outcome.error})"
                )
            if self.dead is not None and not outcome.ok:
                return  # the request the server died in (or one after it): not a result
            self.outcomes[index] = outcome
            self.entries[index] = results.request_entry(index, prompt, outcome, j0)
            bar.update(1)
            pooled, _ = results.pooled([e for e in self.entries if e])
            if pooled is not None and pooled.drafts:
                bar.set_postfix(acceptance_length=f"{spec_counts.acceptance_length(pooled):.3f}")
            if time.monotonic() - self.last_write > CHECKPOINT_EVERY_S:
                self.finish_doc(pooled, None, [], None, "checkpoint: the run is not finished")
                self.write()

        tasks = [asyncio.create_task(one(i, p)) for i, p in enumerate(chosen)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            bar.close()

    # -- the result -----------------------------------------------------------------------------

    def finish_doc(
        self,
        per_request: Counts | None,
        delta: Counts | None,
        engines: list[str],
        wall: float | None,
        note: str | None,
    ) -> None:
        entries = [e for e in self.entries if e is not None]
        outcomes = [o for o in self.outcomes if o is not None]
        _, missing = results.pooled(entries)
        source = None
        counts = per_request
        if per_request is not None:
            source = "per-request metrics"
            if missing:
                self.notes.append(
                    f"{missing} finished requests had no metrics.speculative_decoding; the "
                    "figures pool the others (start vLLM with --per-request-spec-decode-metrics "
                    "detailed)"
                )
        elif delta is not None and delta.drafts:
            source = "metrics deltas"
            counts = delta
            self.notes.append(
                "no response carried metrics.speculative_decoding: the figures are /metrics "
                "deltas (start vLLM with --per-request-spec-decode-metrics detailed for "
                "per-request and per-context figures)"
            )
        figures = (
            spec_counts.figures(counts)
            if counts is not None
            else {"acceptance_length": None, "acceptance_rate": None, "per_position_acceptance": []}
        )
        with_steps = [
            (e["prompt_tokens"], e["per_step_accepted"])
            for e in entries
            if e.get("ok") and "per_step_accepted" in e and e.get("prompt_tokens") is not None
        ]
        flags = [
            {
                "request": e["index"],
                "prompt_id": e["prompt_id"],
                "cached_tokens": e["cached_tokens"],
                **f,
            }
            for e in entries
            for f in e["flags"]
        ]
        complete = self.dead is None and len(entries) == len(self.chosen)
        seen_k = sorted(
            {
                int(e["speculative_decoding"]["num_spec_tokens"])
                for e in entries
                if (e.get("speculative_decoding") or {}).get("num_spec_tokens") is not None
            }
        )
        self.manifest["num_speculative_tokens_seen"] = seen_k
        self.doc = {
            "kind": results.KIND,
            "format_version": results.FORMAT_VERSION,
            "label": self.opts.label,
            "complete": complete,
            "error": self.dead,
            **figures,
            "acceptance_source": source,
            "counts": counts.to_json() if counts is not None else None,
            "metrics_crosscheck": results.crosscheck(per_request, delta, engines, note),
            "acceptance_by_context": {
                "bin_size": self.opts.bin_size,
                "requests": len(with_steps),
                "bins": spec_counts.by_context(with_steps, self.opts.bin_size),
            },
            "summary": results.summary(entries, outcomes, wall),
            "flags": flags,
            "notes": list(dict.fromkeys(self.notes)),
            "warmup": getattr(self, "warmup_info", None),
            "manifest": self.manifest,
            "requests": entries,
        }

    def write(self) -> None:
        write_text_atomic(self.opts.out, json.dumps(self.doc, indent=1) + "\n")
        self.last_write = time.monotonic()

    def report(self) -> int:
        d = self.doc
        s = d["summary"]
        check = d["metrics_crosscheck"]

        def fmt(value: float | None, spec: str = ".3f", scale: float = 1.0) -> str:
            return "n/a" if value is None else format(value * scale, spec)

        lines = [
            f"{' j0 bench run ' + (d['label'] or ''):=^60}",
            f"{'Requests (ok/measured):':<40} {s['requests_ok']}/{len(self.chosen)}",
            f"{'Acceptance length:':<40} {fmt(d['acceptance_length'])}",
            f"{'Acceptance rate (%):':<40} {fmt(d['acceptance_rate'], '.2f', 100)}",
            "Per-position acceptance (%): "
            + " ".join(f"{p * 100:.1f}" for p in d["per_position_acceptance"]),
            f"{'/metrics cross-check:':<40} {check['status']}"
            + (f" ({len(check['engines'])} engines)" if check["engines"] else ""),
            f"{'Output tok/s per request (mean):':<40} {fmt(s['mean_output_tok_s'], '.1f')}",
            f"{'TTFT (ms, mean):':<40} {fmt(s['mean_ttft_ms'], '.1f')}",
            f"{'ITL (ms, mean, per chunk = step):':<40} {fmt(s['mean_itl_ms'], '.2f')}",
            f"wrote {self.opts.out}",
        ]
        self.say("\n".join(lines))
        for note in d["notes"]:
            self.say(f"j0 bench run: note: {note}")
        if check["status"] == "mismatch":
            self.say(
                "j0 bench run: warning: the per-request metrics and the /metrics deltas differ "
                f"({', '.join(check['differences'])}): another client may have used the server "
                "during the run"
            )
        if d["flags"]:
            self.say(
                f"j0 bench run: warning: {len(d['flags'])} requests flagged "
                f'({d["flags"][0]["flag"]}); see "flags" in {self.opts.out}'
            )
        if self.dead is not None:
            raise J0Error(
                f"{self.dead}; {s['requests_ok']} finished requests kept in {self.opts.out}",
                CHECK_FAILED,
            )
        if s["requests_failed"]:
            failed = [e for e in d["requests"] if not e["ok"]]
            raise J0Error(
                f"{len(failed)} of {len(self.chosen)} requests failed (first: request "
                f"{failed[0]['index']}: {failed[0]['error']}); results in {self.opts.out}",
                CHECK_FAILED,
            )
        return 0
