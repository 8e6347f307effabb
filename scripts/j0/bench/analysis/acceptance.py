"""Acceptance length by both definitions in use, the acceptance histogram, and per-step data
binned by context length (a fixed bin size, or the bin edges a reader names).

    acceptance_length                 pooled: 1 + (sum of accepted drafts) / (verify steps), over
                                      all steps of all requests; vLLM's /metrics and
                                      `vllm bench serve` (j0.engine.figures.spec_counts)
    acceptance_length_request_mean    mean over requests of each request's mean per-step
                                      acceptance length (1 + accepted at that step); the DFlash
                                      paper and the `dflash` package's benchmark,
                                      statistics.mean(statistics.mean(x) for x in per_request)
    acceptance_histogram[i]           fraction of verify steps that accepted exactly i drafts,
                                      i = 0..k (k: draft tokens per step)

Every function takes request entries of a result file (request_entry.RequestEntry) and uses only
the ok ones. Standard library only.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from j0.bench.result.request_entry import RequestEntry
from j0.engine.figures import spec_counts
from j0.errors import USAGE, J0Error

Entry = RequestEntry
# A context-length bin: [start, end), end None for the last bin of named edges.
Bin = tuple[int, int | None]


def request_steps(entry: Entry) -> list[int] | None:
    """The accepted count of each verify step of one request, where the entry has them."""
    steps = entry.per_step_accepted
    return [int(a) for a in steps] if steps is not None else None


def request_histogram(entry: Entry) -> list[int] | None:
    """Steps that accepted exactly i drafts, i = 0.., from the per-step arrays, else from the
    server's `acceptance_histogram` (its `summary` level)."""
    steps = request_steps(entry)
    if steps is not None:
        counts = [0] * (max(steps, default=0) + 1)
        for a in steps:
            counts[a] += 1
        return counts
    spec = entry.speculative_decoding or {}
    histogram = spec.get("acceptance_histogram")
    if isinstance(histogram, list) and histogram:
        return [int(n) for n in histogram]
    return None


def request_length(entry: Entry) -> float | None:
    """One request's mean per-step acceptance length: statistics.mean of 1 + accepted over its
    steps (the dflash benchmark's inner mean, computed as it computes it)."""
    histogram = request_histogram(entry)
    if not histogram or not sum(histogram):
        return None
    return float(statistics.mean([1 + i for i, n in enumerate(histogram) for _ in range(n)]))


def request_mean(entries: Sequence[Entry]) -> float | None:
    """acceptance_length_request_mean over the ok entries that have steps: statistics.mean of
    the requests' means, as the dflash benchmark computes it."""
    lengths = [request_length(e) for e in entries if e.ok]
    values = [v for v in lengths if v is not None]
    return float(statistics.mean(values)) if values else None


def width_of(entries: Sequence[Entry]) -> int:
    """k: the draft tokens per step the server reported (num_spec_tokens, else the most drafted)."""
    width = 0
    for e in entries:
        spec = e.speculative_decoding or {}
        if spec.get("num_spec_tokens") is not None:
            width = max(width, int(spec["num_spec_tokens"]))
        width = max(width, max((int(d) for d in e.per_step_drafted or []), default=0))
    return width


def histogram(entries: Sequence[Entry]) -> list[float]:
    """acceptance_histogram: fraction of all verify steps (pooled) with i accepted, i = 0..k."""
    total: list[int] = [0] * (width_of(entries) + 1)
    for e in entries:
        if not e.ok:
            continue
        for i, n in enumerate(request_histogram(e) or []):
            if i >= len(total):
                total += [0] * (i + 1 - len(total))
            total[i] += n
    steps = sum(total)
    return [n / steps for n in total] if steps else []


# --- by context length -------------------------------------------------------------------------


def parse_bins(text: str) -> list[int]:
    """`--bins 1024,4096,16384` -> [1024, 4096, 16384]: increasing positive edges."""
    try:
        edges = [int(x) for x in text.split(",")]
    except ValueError:
        raise J0Error(
            f"--bins {text!r}: expected comma-separated whole numbers (context lengths in tokens)",
            USAGE,
        ) from None
    if any(e < 1 for e in edges) or any(b <= a for a, b in itertools.pairwise(edges)):
        raise J0Error(f"--bins {text!r}: expected increasing positive context lengths", USAGE)
    return edges


def fixed_bins(bin_size: int) -> Callable[[int], Bin]:
    def bin_of(context: int) -> Bin:
        start = context // bin_size * bin_size
        return start, start + bin_size

    return bin_of


def edge_bins(edges: Sequence[int]) -> Callable[[int], Bin]:
    """Bins [0, e1), [e1, e2), ..., [en, no end)."""
    bounds = [0, *edges]

    def bin_of(context: int) -> Bin:
        i = bisect.bisect_right(bounds, context) - 1
        return bounds[i], bounds[i + 1] if i + 1 < len(bounds) else None

    return bin_of


def by_context(entries: Sequence[Entry], bin_of: Callable[[int], Bin]) -> list[dict[str, Any]]:
    """Both acceptance lengths per context-length bin, from each ok entry's
    per_step_context_length (else made from prompt_tokens) and per_step_accepted: pooled over the
    bin's steps, and the mean over requests of each request's mean over its steps in the bin."""
    pooled: dict[Bin, list[int]] = {}
    per_request: dict[Bin, list[float]] = {}
    for e in entries:
        steps = request_steps(e)
        contexts = e.per_step_context_length
        if contexts is None and steps is not None and e.prompt_tokens:
            contexts = spec_counts.step_contexts(int(e.prompt_tokens), steps)
        if not e.ok or steps is None or contexts is None:
            continue
        mine: dict[Bin, list[int]] = {}
        for context, a in zip(contexts, steps, strict=True):
            mine.setdefault(bin_of(int(context)), []).append(a)
        for b, accepted in mine.items():
            total = pooled.setdefault(b, [0, 0])
            total[0] += len(accepted)
            total[1] += sum(accepted)
            per_request.setdefault(b, []).append(float(statistics.mean([1 + a for a in accepted])))
    return [
        {
            "context_start": b[0],
            "context_end": b[1],
            "num_drafts": n,
            "num_accepted_tokens": a,
            "acceptance_length": 1.0 + a / n,
            "requests": len(per_request[b]),
            "acceptance_length_request_mean": float(statistics.mean(per_request[b])),
        }
        for b, (n, a) in sorted(pooled.items())
    ]


def request_mean_by_context(entries: Sequence[Entry], bin_size: int) -> dict[str, Any]:
    """The result file's `acceptance_by_context_request_mean` block."""
    bins = by_context(entries, fixed_bins(bin_size))
    return {
        "bin_size": bin_size,
        "bins": [
            {
                "context_start": b["context_start"],
                "context_end": b["context_end"],
                "requests": b["requests"],
                "acceptance_length_request_mean": b["acceptance_length_request_mean"],
            }
            for b in bins
        ],
    }
