"""The figures of `j0 bench report` per setting: acceptance by both definitions, the histogram,
both by context-length bin (re-binned here from the stored per-step data), speed, the spread over
repeats, and J0 on minus off paired by prompt.

    acceptance_length               pooled: 1 + accepted / verify steps over all requests
                                    (vLLM's /metrics, `vllm bench serve`)
    acceptance_length_request_mean  mean over requests of each request's mean per-step
                                    acceptance length (DFlash paper, dflash's benchmark)
    acceptance_histogram[i]         fraction of verify steps with i accepted drafts
    output_tok_s                    mean over requests of (output tokens - 1) / decode time
    ttft_ms                         mean over requests
    itl_ms                          mean gap between streamed chunks (one engine step each)
    repetition_by_context           per context bin of the prompts: the outputs that loop and
                                    the gate (j0.measure.repetition)

Per prompt (for pairing), a figure is the mean over the prompt's repeats. J0 on minus off: a
Student's t interval over prompts (`ci95`, as before) and j0.measure.stats' comparison (`stats`:
the sign-flip test, the bootstrap interval clustered by source where prompts share one, the
verdict, the prompts needed). Standard library only.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from j0.bench.analysis import acceptance
from j0.bench.report.results_folder import PointResults, prompt_key
from j0.bench.result import results
from j0.bench.result.request_entry import RequestEntry
from j0.engine.figures import spec_counts
from j0.measure import pairing, repetition, stats

SPEED_KEYS = ("output_tok_s", "ttft_ms", "itl_ms")
REPEAT_KEYS = ("acceptance_length", "acceptance_length_request_mean", *SPEED_KEYS)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def speed(entries: Sequence[RequestEntry]) -> dict[str, float | None]:
    """tok/s, TTFT and ITL of the ok entries (ITL weighted by each request's gaps)."""
    ok = [r for r in entries if r.ok]
    itl_weighted = [
        (r.itl_ms_mean, max((2 if r.num_chunks is None else r.num_chunks) - 1, 1))
        for r in ok
        if r.itl_ms_mean is not None
    ]
    weight = sum(w for _, w in itl_weighted)
    return {
        "output_tok_s": _mean([r.output_tok_s for r in ok if r.output_tok_s]),
        "ttft_ms": _mean([r.ttft_ms for r in ok if r.ttft_ms is not None]),
        "itl_ms": sum(v * w for v, w in itl_weighted) / weight if weight else None,
    }


def pooled_figures(entries: Sequence[RequestEntry]) -> dict[str, Any]:
    ok = [r for r in entries if r.ok]
    counts, _ = results.pooled(ok)
    fig = (
        spec_counts.figures(counts)
        if counts
        else {"acceptance_length": None, "acceptance_rate": None, "per_position_acceptance": []}
    )
    return {
        **fig,
        "acceptance_length_request_mean": acceptance.request_mean(ok),
        "acceptance_histogram": acceptance.histogram(ok),
    }


def over_repeats(setting: PointResults) -> dict[str, Any]:
    """Each repeat's figures, and their mean, sample standard deviation, min and max."""
    per_repeat = []
    for repeat in setting.repeats:
        mine = [r for r in setting.requests if r.repeat == repeat]
        fig = pooled_figures(mine)
        per_repeat.append(
            {
                "repeat": repeat,
                "requests_ok": sum(1 for r in mine if r.ok),
                "acceptance_length": fig["acceptance_length"],
                "acceptance_length_request_mean": fig["acceptance_length_request_mean"],
                **speed(mine),
            }
        )
    spread: dict[str, Any] = {}
    for key in REPEAT_KEYS:
        values = [float(r[key]) for r in per_repeat if r[key] is not None]
        spread[key] = {
            "n": len(values),
            "mean": _mean(values),
            "stdev": statistics.stdev(values) if len(values) >= 2 else None,
            "min": min(values) if values else None,
            "max": max(values) if values else None,
        }
    return {"count": len(per_repeat), "per_repeat": per_repeat, "spread": spread}


def figures(setting: PointResults, bin_of: Callable[[int], acceptance.Bin]) -> dict[str, Any]:
    ok = setting.ok
    return {
        **pooled_figures(ok),
        "requests": len(setting.requests) + len(setting.excluded),
        "requests_ok": len(ok),
        "requests_excluded": len(setting.excluded),
        "excluded": setting.excluded,
        **speed(ok),
        "flags": sum(len(r.flags or []) for r in setting.requests),
        "by_context": acceptance.by_context(ok, bin_of),
        "repetition_by_context": repetition.gate(ok, bin_of),
        "repeats": over_repeats(setting),
    }


def per_prompt(setting: PointResults, key: str) -> dict[str, float]:
    """One value per prompt: the mean over its repeats of `key` (acceptance_length: the
    request's own, from its counts where the entry lacks it)."""
    values: dict[str, list[float]] = {}
    for r in setting.ok:
        value = getattr(r, key)
        if value is None and key == "acceptance_length":
            counts = results.entry_counts(r)
            value = spec_counts.acceptance_length(counts) if counts else None
        if value is not None:
            values.setdefault(prompt_key(r), []).append(float(value))
    return {k: statistics.fmean(v) for k, v in values.items()}


def sources(settings: Sequence[PointResults]) -> dict[str, str]:
    """prompt key -> the prompt's source (`prompt_source`), over every setting's requests."""
    found: dict[str, str] = {}
    for s in settings:
        for r in s.requests:
            if r.prompt_source:
                found.setdefault(prompt_key(r), str(r.prompt_source))
    return found


def pairs(settings: list[PointResults]) -> list[dict[str, Any]]:
    """J0 on minus off for every draft-token count that has one J0-off setting: each J0-on
    setting of that count against it (several J0-on settings: J0 with other seeds)."""
    out = []
    known = sources(settings)
    for k in sorted({s.k for s in settings if s.k and not s.baseline}):
        on = [s for s in settings if s.k == k and s.j0 == "on" and not s.baseline]
        off = [s for s in settings if s.k == k and s.j0 == "off" and not s.baseline]
        if not on or len(off) != 1:
            continue
        for one in on:
            out.append(pair(k, one, off[0], known))
    return out


def pair(k: int, on: PointResults, off: PointResults, known: dict[str, str]) -> dict[str, Any]:
    result: dict[str, Any] = {"k": k, "on": on.name, "off": off.name}
    for key in ("acceptance_length", "output_tok_s"):
        a, b = per_prompt(on, key), per_prompt(off, key)
        result[key] = {
            **pairing.paired_difference(a, b),
            "stats": stats.compare(
                a,
                b,
                sources=known,
                names=(on.name, off.name),
                delta=stats.DELTA if key == "acceptance_length" else None,
            ),
        }
    return result
