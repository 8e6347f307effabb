"""The result file of `j0 bench run`, owned here: `BenchResult` is the document (to_json() is
what FILE.json holds, from_json() what `j0 bench report` reads back), with the per-request
entries and the run's figures it is made of.

Top-level keys (format_version 1), in the order they are written:

    kind, format_version    "j0-bench-run", 1
    label                   --label
    complete, error         whether every request ran; what stopped the run
    acceptance_length, acceptance_rate, per_position_acceptance
                            pooled over the measured requests, from the server's per-request
                            `metrics.speculative_decoding` (see spec_counts.py); from the /metrics
                            deltas only where no response carried per-request metrics
    acceptance_length_request_mean
                            the mean over requests of each request's mean per-step acceptance
                            length (the DFlash paper's definition; acceptance.py)
    acceptance_histogram    fraction of verify steps that accepted exactly i drafts, i = 0..k
    acceptance_by_context_request_mean
                            acceptance_length_request_mean per context-length bin (the same bins
                            as acceptance_by_context)
    acceptance_source       "per-request metrics" | "metrics deltas" | null
    counts                  the pooled counts behind them
    metrics_crosscheck      (metrics_crosscheck.py) the same figures from /metrics deltas around
                            the measured requests
                            (warm-up excluded, summed over engines), and whether they match
    acceptance_by_context   acceptance length per context-length bin
    summary                 requests, tokens, throughput, TTFT, ITL, TPOT, the client's own time
    repeats                 how many times the prompts were sent (requests carry `repeat`)
    flags                   requests to look at (cached prompt tokens while J0 is on, ...)
    notes                   what the reader should know about the figures' source
    warmup                  the warm-up requests sent and how many answered
    manifest                the setup (manifest.py)
    requests                one entry per measured request, in order (request_entry.py: the
                            RequestEntry type and its keys); each with `repetition`, how much its
                            output repeats itself (j0.measure.repetition), and with
                            --keep-outputs the output's text (`output_text`)

Standard library only.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.article.spec_config import LoggedSpec
from j0.bench.dataset.prompts import Prompt
from j0.bench.result.manifest import SetupManifest
from j0.bench.result.metrics_crosscheck import MetricsCrosscheck
from j0.bench.result.request_entry import ENTRY_TIMES, RequestEntry
from j0.bench.result.result_schema import document_problem
from j0.bench.stream.client import Outcome
from j0.edge.atomic import write_text_atomic
from j0.edge.document import Document, table_of
from j0.edge.fields import NULL
from j0.engine.figures import spec_counts, spec_ranges
from j0.engine.figures.spec_counts import Counts
from j0.errors import INPUT_LACKS, J0Error, parse_json, read_input_text
from j0.measure import repetition

KIND = "j0-bench-run"
FORMAT_VERSION = 1
STEP_KEYS = ("per_step_accepted", "per_step_drafted")
OUT_OF_RANGE = "metrics_out_of_range"
TOKEN_COUNTS = ("prompt_tokens", "cached_tokens", "output_tokens")
# An entry's whole-number fields and its times (>= 0, finite); the metrics: spec_ranges.
ENTRY_COUNTS = ("index", "repeat", "prompt_tokens", "cached_tokens", "output_tokens", "num_chunks")
CACHED_WITH_J0 = (
    "cached prompt tokens while J0 is on: J0 draws the tokens of cached prompt positions from "
    "whatever its request slot's history row still holds (the history is written only from "
    "scheduled tokens), so this request's acceptance is not J0's on its own prompt; run with "
    "prefix caching off (ENABLE_PREFIX_CACHING=0) for J0 figures"
)
# The start of an entry's warning where its request was sent twice (client.stream_request: the
# first connection closed before any answer, the server never saw it); then why.
RESENT = "sent twice, the times and figures are the second sending's"
CACHED_J0_UNKNOWN = (
    "cached prompt tokens, and J0's state is not known (give --status-json or --j0): with J0 "
    "on, cached positions are drawn from another request's history"
)


@dataclass(kw_only=True)
class BenchResult(Document):
    """One `j0 bench run` result document (see the module's docstring for the keys), its keys in
    the order they are written; what each may be is what its readers take (result_schema: null
    allowed where a writer or an older file may leave a key so)."""

    kind: str = KIND
    format_version: int = FORMAT_VERSION
    label: str | None
    complete: bool
    error: str | None
    acceptance_length: float | None
    acceptance_rate: float | None
    per_position_acceptance: list[Any]  # numbers, by position
    acceptance_length_request_mean: float | None = None
    acceptance_histogram: list[Any] = field(default_factory=list)  # numbers
    acceptance_by_context_request_mean: dict[str, Any] = field(default_factory=dict)
    acceptance_source: str | None
    counts: dict[str, Any] | None
    metrics_crosscheck: MetricsCrosscheck
    acceptance_by_context: dict[str, Any]
    summary: dict[str, Any]
    repeats: int = 1
    flags: list[Any] = field(default_factory=list)  # objects: CACHED_WITH_J0, ...
    notes: list[Any] = field(default_factory=list)  # in words
    warmup: dict[str, Any] | None = None
    manifest: SetupManifest = field(default_factory=SetupManifest)
    requests: list[RequestEntry] = field(default_factory=list)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> BenchResult:
        """A document read back; keys an older or partial file lacks get what a reader assumes
        of them (complete: true, no requests, empty blocks)."""
        return cls(
            kind=str(value.get("kind", KIND)),
            format_version=int(value.get("format_version", FORMAT_VERSION)),
            label=value.get("label"),
            complete=bool(value.get("complete", True)),
            error=value.get("error"),
            acceptance_length=value.get("acceptance_length"),
            acceptance_rate=value.get("acceptance_rate"),
            per_position_acceptance=list(value.get("per_position_acceptance") or []),
            acceptance_length_request_mean=value.get("acceptance_length_request_mean"),
            acceptance_histogram=list(value.get("acceptance_histogram") or []),
            acceptance_by_context_request_mean=dict(
                value.get("acceptance_by_context_request_mean") or {}
            ),
            repeats=int(value.get("repeats", 1)),
            acceptance_source=value.get("acceptance_source"),
            counts=value.get("counts"),
            metrics_crosscheck=MetricsCrosscheck.from_json(value.get("metrics_crosscheck") or {}),
            acceptance_by_context=dict(value.get("acceptance_by_context") or {}),
            summary=dict(value.get("summary") or {}),
            flags=list(value.get("flags") or []),
            notes=list(value.get("notes") or []),
            warmup=value.get("warmup"),
            manifest=SetupManifest.from_json(value.get("manifest") or None, "key 'manifest'"),
            requests=[RequestEntry.from_json(e) for e in value.get("requests") or []],
        )

    def setup(self) -> dict[str, Any]:
        """The measured setup, field by field, as the manifest records it: what
        two runs must share for their figures to be compared. None where the manifest does not
        know (an older file, no --status-json: "unknown"). A JSONL dataset's file name is not a
        field (shards and copies of one file differ in it): the prompts themselves are compared,
        by their sha256 in the request entries (`prompt_sha256`)."""
        m = self.manifest
        server, options, dataset = m.block("server"), m.block("options"), m.block("dataset")
        said, drafter = LoggedSpec.of(m.block("speculative_config")), m.block("drafter")
        found = {
            "model": m.model,
            "vllm_version": server.get("vllm_version"),
            "vllm_commit": server.get("vllm_commit"),
            "endpoint": m.endpoint,
            "thinking": m.thinking,
            "temperature": options.get("temperature"),
            "seed": options.get("seed"),
            "max_tokens": options.get("max_tokens"),
            "ignore_eos": options.get("ignore_eos"),
            "system_prompt_sha256": options.get("system_prompt_sha256"),
            "dataset_kind": dataset.get("kind"),
            "dataset_name": None if dataset.get("kind") == "jsonl" else dataset.get("name"),
            "speculative_method": said.method,
            "speculative_drafter": said.drafter,
            "num_speculative_tokens": said.tokens,
            "num_speculative_tokens_seen": m.num_speculative_tokens_seen or None,
            "drafter_repo": drafter.get("repo"),
            "drafter_revision": drafter.get("revision"),
        }
        return {key: (None if value == "unknown" else value) for key, value in found.items()}

    def to_text(self) -> str:
        """FILE.json's text."""
        return json.dumps(self.to_json(), indent=1) + "\n"

    def write(self, path: Path) -> None:
        write_text_atomic(path, self.to_text())


@functools.cache
def top_types() -> dict[str, tuple[type, ...]]:
    """The kinds of a result's top-level keys, null aside, from BenchResult's annotations (`kind`
    is judged before them, by read_result)."""
    return {
        key: tuple(kind for kind in kinds if kind is not NULL)
        for key, (kinds, _) in table_of(BenchResult).items()
        if key != "kind" and isinstance(kinds, tuple)
    }


def read_result(path: Path) -> BenchResult:
    """A result file, checked to be one: readable UTF-8 JSON, kind j0-bench-run, each key of the
    type the readers take (exit 2 otherwise, naming the file and the key)."""
    doc = parse_json(read_input_text(path, "result file"), str(path))
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise J0Error(f"{path}: not a `j0 bench run` result (kind {KIND})", INPUT_LACKS)
    problem = document_problem(doc, top_types())
    if problem is not None:
        raise J0Error(f"{path}: {problem}", INPUT_LACKS)
    return BenchResult.from_json(doc)


def entry_problems(entry: RequestEntry) -> list[str]:
    """Why a request entry's figures cannot be true (empty: they can): counts that are not whole
    numbers >= 0, NaN/Inf or negative times, cached > prompt tokens, and its server metrics and
    acceptance figures outside their possible ranges (j0.engine.figures.spec_ranges). The problems
    found when the run wrote the entry (`metrics_problems`) come first. Such an entry is kept in the
    file, flagged, and out of every pooled figure."""
    if entry.metrics_problems:
        return [str(p) for p in entry.metrics_problems]
    problems = [
        p for key in ENTRY_COUNTS if (p := spec_ranges.count_problem(key, getattr(entry, key)))
    ]
    problems += [
        p
        for key in ENTRY_TIMES
        if (p := spec_ranges.number_problem(key, getattr(entry, key), 0, None))
    ]
    prompt, cached = entry.prompt_tokens, entry.cached_tokens
    if spec_ranges.is_count(prompt) and spec_ranges.is_count(cached) and cached > prompt:
        problems.append(f"cached_tokens={cached} > prompt_tokens={prompt}")
    steps = {key: getattr(entry, key) for key in STEP_KEYS if entry.has(key)}
    merged = {**(entry.speculative_decoding or {}), **steps}
    problems += spec_ranges.spec_problems(merged or None)
    k = merged.get("num_spec_tokens")
    k = k if spec_ranges.is_count(k) and k >= 1 else None
    for key, low, high in (("acceptance_rate", 0.0, 1.0), ("acceptance_length", 1.0, k and k + 1)):
        if (p := spec_ranges.number_problem(key, getattr(entry, key), low, high)) is not None:
            problems.append(p)
    contexts, accepted = entry.per_step_context_length, entry.per_step_accepted
    if contexts is not None:
        if not all(map(spec_ranges.is_count, contexts)):
            problems.append("per_step_context_length: expected a list of token counts")
        elif accepted is not None and len(contexts) != len(accepted):
            problems.append(
                f"per_step_context_length has {len(contexts)} entries, per_step_accepted "
                f"{len(accepted)}"
            )
    return problems


def _json_safe(value: Any) -> Any:
    """`value` with NaN and Infinity written as strings: the file stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def request_entry(
    index: int, prompt: Prompt, out: Outcome, j0: str, repeat: int = 0, keep_output: bool = False
) -> RequestEntry:
    """One measured request as the result file holds it (`repeat`: which pass over the prompts
    sent it, from 0; `keep_output`: with the output's text). `repetition`: how much the output
    repeats itself (j0.measure.repetition), on its token ids, else its characters."""
    spec = out.speculative_decoding
    rejected = spec_ranges.spec_problems(spec)
    bad_tokens = {
        key: getattr(out, key)
        for key in TOKEN_COUNTS
        if spec_ranges.count_problem(key, getattr(out, key)) is not None
    }
    if bad_tokens:  # the entry holds None for them (the server's values under *_rejected)
        rejected += [str(spec_ranges.count_problem(k, v)) for k, v in bad_tokens.items()]
        out = dataclasses.replace(out, **dict.fromkeys(bad_tokens))
    counts, problems = (None, []) if rejected else spec_counts.request_counts(spec)
    entry: dict[str, Any] = {
        "index": index,
        "prompt_id": prompt.id,
        "prompt_sha256": hashlib.sha256(prompt.text.encode("utf-8")).hexdigest(),
        "prompt_source": prompt.source,
        "ok": out.ok,
        "error": out.error,
        "started_at": out.started_at,
        "prompt_tokens": out.prompt_tokens,
        "cached_tokens": out.cached_tokens,
        "output_tokens": out.output_tokens,
        "finish_reason": out.finish_reason,
        "ttft_ms": _ms(out.ttft_s),
        "itl_ms_mean": _ms(statistics.fmean(out.itl_s)) if out.itl_s else None,
        "itl_ms_median": _ms(statistics.median(out.itl_s)) if out.itl_s else None,
        "tpot_ms": (
            _ms((out.latency_s - out.ttft_s) / (out.output_tokens - 1))
            if out.ok and out.ttft_s is not None and out.latency_s and (out.output_tokens or 0) > 1
            else None
        ),
        "latency_s": out.latency_s,
        "decode_s": out.decode_s,
        "output_tok_s": (
            (out.output_tokens - 1) / out.decode_s
            if out.decode_s and out.output_tokens and out.output_tokens > 1
            else None
        ),
        "num_chunks": len(out.chunk_tokens),
        "chunk_tokens": out.chunk_tokens,
        "client_time_s": out.client_time_s,
        "acceptance_length": spec_counts.acceptance_length(counts) if counts else None,
        "acceptance_rate": spec_counts.acceptance_rate(counts) if counts else None,
        "speculative_decoding": (
            {k: v for k, v in spec.items() if k not in STEP_KEYS} if spec and not rejected else None
        ),
        "flags": [],
        "warnings": problems + ([f"{RESENT}: {out.resent}"] if out.resent else []),
        "repeat": repeat,
        "output_token_ids": out.token_ids,
        "output_sha256": hashlib.sha256(out.text.encode("utf-8")).hexdigest(),
        "repetition": repetition.of_output(out.token_ids, out.text) if out.ok else None,
    }
    if keep_output:
        entry["output_text"] = out.text
    if rejected:
        # out of every pooled figure; the server's metrics kept as they came, to look at
        entry["metrics_problems"] = rejected
        entry["speculative_decoding_rejected"] = _json_safe(spec)
        if bad_tokens:
            entry["token_counts_rejected"] = _json_safe(bad_tokens)
        entry["flags"].append({"flag": OUT_OF_RANGE, "note": "; ".join(rejected)})
    elif spec and isinstance(spec.get("per_step_accepted"), list):
        steps = [int(a) for a in spec["per_step_accepted"]]
        entry["per_step_accepted"] = steps
        entry["per_step_drafted"] = [int(d) for d in spec.get("per_step_drafted") or []]
        if out.prompt_tokens is not None:
            entry["per_step_context_length"] = spec_counts.step_contexts(out.prompt_tokens, steps)
    if out.cached_tokens:
        if j0 == "on":
            entry["flags"].append(
                {"flag": "cached_prompt_tokens_with_j0_on", "note": CACHED_WITH_J0}
            )
        elif j0 == "unknown":
            entry["flags"].append(
                {"flag": "cached_prompt_tokens_j0_unknown", "note": CACHED_J0_UNKNOWN}
            )
    return RequestEntry.made(**entry)  # the type: a key it does not declare is a TypeError


def entry_counts(entry: RequestEntry) -> Counts | None:
    """The counts of a request entry (from its per-step arrays or its server summary)."""
    spec = dict(entry.speculative_decoding or {})
    if not spec:
        return None
    for key in STEP_KEYS:
        if entry.has(key):
            spec[key] = getattr(entry, key)
    counts, _ = spec_counts.request_counts(spec)
    return counts


def pooled(entries: Sequence[RequestEntry]) -> tuple[Counts | None, int]:
    """Counts summed over the ok entries that have server metrics, and how many have none;
    entries whose metrics were found out of range when written (`metrics_problems`) are left out
    (the report checks what it reads with entry_problems before it pools)."""
    total: Counts | None = None
    missing = 0
    for entry in entries:
        if not entry.ok or entry.metrics_problems:
            continue
        counts = entry_counts(entry)
        if counts is None:
            missing += 1
            continue
        if total is None:
            total = Counts()
        total.add(counts)
    return total, missing


def summary(
    entries: Sequence[RequestEntry], outcomes: Sequence[Outcome], wall_s: float | None
) -> dict[str, Any]:
    answered = [e for e in entries if e.ok]
    ok = [e for e in answered if not e.metrics_problems]  # the figures' requests
    ok_out = [o for o in outcomes if o.ok]

    def mean(values: list[float]) -> float | None:
        return statistics.fmean(values) if values else None

    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    ttft = [e.ttft_ms for e in ok if e.ttft_ms is not None]
    itl = [gap * 1000.0 for o in ok_out for gap in o.itl_s]
    tpot = [e.tpot_ms for e in ok if e.tpot_ms is not None]
    tok_s = [e.output_tok_s for e in ok if e.output_tok_s is not None]
    lengths = [e.acceptance_length for e in ok if e.acceptance_length is not None]
    output = sum(e.output_tokens or 0 for e in ok)
    client = sum(o.client_time_s for o in outcomes)
    busy = sum(o.latency_s or 0.0 for o in outcomes)
    return {
        "requests": len(entries),
        "requests_ok": len(answered),
        "requests_failed": len(entries) - len(answered),
        "requests_out_of_range": len(answered) - len(ok),
        "duration_s": wall_s,
        "total_prompt_tokens": sum(e.prompt_tokens or 0 for e in ok),
        "total_cached_tokens": sum(e.cached_tokens or 0 for e in ok),
        "total_output_tokens": output,
        "output_throughput_tok_s": output / wall_s if wall_s else None,
        "mean_output_tok_s": mean(tok_s),
        "median_output_tok_s": median(tok_s),
        "mean_ttft_ms": mean(ttft),
        "median_ttft_ms": median(ttft),
        "mean_itl_ms": mean(itl),
        "median_itl_ms": median(itl),
        "mean_tpot_ms": mean(tpot),
        "mean_acceptance_length_over_requests": mean(lengths),
        "client_time_s": client,
        "client_time_fraction": client / busy if busy else None,
    }
