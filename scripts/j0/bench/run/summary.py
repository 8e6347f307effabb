"""The figures of `j0 bench run` and what it says: the result document (results.BenchResult)
made from the finished requests and the /metrics deltas, the lines printed at the end, and the
error a run ends with (the server died, or requests failed).

Standard library only.
"""

from __future__ import annotations

from pathlib import Path

from j0.bench.analysis import acceptance
from j0.bench.result import results
from j0.bench.result.manifest import SetupManifest, j0_said
from j0.bench.result.metrics_crosscheck import crosscheck
from j0.bench.result.results import BenchResult
from j0.bench.run.sending import Measurement
from j0.engine.figures import spec_counts, spec_ranges
from j0.engine.figures.spec_counts import Counts
from j0.errors import CHECK_FAILED, J0Error
from j0.terminal import sink


def build_result(
    *,
    label: str | None,
    bin_size: int,
    measurement: Measurement,
    manifest: SetupManifest,
    notes: list[str],
    warmup: dict[str, int] | None,
    per_request: Counts | None,
    delta: Counts | None,
    engines: list[str],
    wall: float | None,
    note: str | None,
    repeats: int = 1,
) -> BenchResult:
    """The result as it stands: figures from the per-request metrics, else from the /metrics
    deltas. Adds to `notes` (and to the manifest: the draft-token counts the responses carry)."""
    entries = measurement.finished_entries()
    outcomes = measurement.finished_outcomes()
    _, missing = results.pooled(entries)
    if out_of_range := sum(1 for e in entries if e.metrics_problems):
        notes.append(
            f"{out_of_range} requests' metrics are outside their possible ranges (flag "
            f"{results.OUT_OF_RANGE}): kept in the file, out of the figures"
        )
    source = None
    counts = per_request
    if per_request is not None:
        source = "per-request metrics"
        if missing:
            notes.append(
                f"{missing} finished requests had no metrics.speculative_decoding; the "
                "figures pool the others (start vLLM with --per-request-spec-decode-metrics "
                "detailed)"
            )
    elif delta is not None and delta.drafts and not spec_ranges.counts_problems(delta):
        source = "metrics deltas"
        counts = delta
        notes.append(
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
        (e.prompt_tokens, e.per_step_accepted)
        for e in entries
        if e.ok and e.per_step_accepted is not None and e.prompt_tokens is not None
    ]
    flags = [
        {
            "request": e.index,
            "prompt_id": e.prompt_id,
            "cached_tokens": e.cached_tokens,
            **f,
        }
        for e in entries
        for f in e.flags or []
    ]
    complete = measurement.dead is None and len(entries) == len(measurement.chosen)
    manifest.set(
        "num_speculative_tokens_seen",
        sorted(
            {
                int(e.speculative_decoding["num_spec_tokens"])
                for e in entries
                if e.speculative_decoding is not None
                and e.speculative_decoding.get("num_spec_tokens") is not None
            }
        ),
    )
    return BenchResult(
        label=label,
        complete=complete,
        error=measurement.dead,
        acceptance_length=figures["acceptance_length"],
        acceptance_rate=figures["acceptance_rate"],
        per_position_acceptance=figures["per_position_acceptance"],
        acceptance_length_request_mean=acceptance.request_mean(entries),
        acceptance_histogram=acceptance.histogram(entries),
        acceptance_by_context_request_mean=acceptance.request_mean_by_context(entries, bin_size),
        repeats=repeats,
        acceptance_source=source,
        counts=counts.to_json() if counts is not None else None,
        metrics_crosscheck=crosscheck(per_request, delta, engines, note),
        acceptance_by_context={
            "bin_size": bin_size,
            "requests": len(with_steps),
            "bins": spec_counts.by_context(with_steps, bin_size),
        },
        summary=results.summary(entries, outcomes, wall),
        flags=flags,
        notes=list(dict.fromkeys(notes)),
        warmup=warmup,
        manifest=manifest,
        requests=entries,
    )


def _fmt(value: float | None, spec: str = ".3f", scale: float = 1.0) -> str:
    return "n/a" if value is None else format(value * scale, spec)


def summary_lines(result: BenchResult, measured: int, out: Path) -> list[str]:
    """The table printed at the end of a run."""
    s = result.summary
    check = result.metrics_crosscheck
    return [
        f"{' j0 bench run ' + (result.label or ''):=^60}",
        f"{'Requests (ok/measured):':<40} {s['requests_ok']}/{measured}",
        f"{'J0:':<40} {j0_said(result.manifest)}",
        f"{'Acceptance length (pooled, vLLM):':<40} {_fmt(result.acceptance_length)}",
        f"{'Acceptance length (req. mean, DFlash):':<40} "
        f"{_fmt(result.acceptance_length_request_mean)}",
        f"{'Acceptance rate (%):':<40} {_fmt(result.acceptance_rate, '.2f', 100)}",
        "Per-position acceptance (%): "
        + " ".join(f"{p * 100:.1f}" for p in result.per_position_acceptance),
        "Acceptance histogram (% of steps, 0..k accepted): "
        + " ".join(f"{p * 100:.1f}" for p in result.acceptance_histogram),
        f"{'/metrics cross-check:':<40} {check.status}"
        + (f" ({len(check.engines)} engines)" if check.engines else ""),
        f"{'Output tok/s per request (mean):':<40} {_fmt(s['mean_output_tok_s'], '.1f')}",
        f"{'TTFT (ms, mean):':<40} {_fmt(s['mean_ttft_ms'], '.1f')}",
        f"{'ITL (ms, mean, per chunk = step):':<40} {_fmt(s['mean_itl_ms'], '.2f')}",
        f"wrote {out}",
    ]


def say_summary(result: BenchResult, measured: int, out: Path, quiet: bool) -> None:
    """The table, the notes and the warnings, on stderr (nothing when `quiet`)."""

    def say(text: str) -> None:
        if not quiet:
            sink.warn(text, flush=True)

    say("\n".join(summary_lines(result, measured, out)))
    for note in result.notes:
        say(f"j0 bench run: note: {note}")
    check = result.metrics_crosscheck
    if check.status == "mismatch":
        say(
            "j0 bench run: warning: the per-request metrics and the /metrics deltas differ "
            f"({', '.join(check.differences or {})}): another client may have used the server "
            "during the run"
        )
    if result.flags:
        say(
            f"j0 bench run: warning: {len(result.flags)} requests flagged "
            f'({result.flags[0]["flag"]}); see "flags" in {out}'
        )


def failure(result: BenchResult, measured: int, out: Path) -> J0Error | None:
    """The error the run ends with: the server died, or some requests failed; else None."""
    s = result.summary
    if result.error is not None:
        return J0Error(
            f"{result.error}; {s['requests_ok']} finished requests kept in {out}", CHECK_FAILED
        )
    if s["requests_failed"]:
        failed = [e for e in result.requests if not e.ok]
        return J0Error(
            f"{len(failed)} of {measured} requests failed (first: request "
            f"{failed[0].index}: {failed[0].error}); results in {out}",
            CHECK_FAILED,
        )
    return None
