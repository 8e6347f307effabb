"""The ceiling beside the measurement (issue 54, item 2): what acceptance length a PERFECT greedy
drafter would reach on the engine's own outputs at the run's temperature.

vLLM 0.33's DFlash drafts greedily and its rejection sampler keeps a draft token x with the
target's probability p_T(x) at the temperature T. The best a greedy drafter can draft is the
target's argmax, kept with q = p_T(argmax): below 1 at T > 0 however good the drafter is. So per
output token the cross-check records log q and the entropy of p_T (in nats), from the one target
forward it already makes, and this module turns the q's of a response into the acceptance length
such a drafter would reach with K draft tokens, along the committed output:

    a step anchored at output index a keeps draft j (at index a + j) with q[a + j], stopping at
    the first rejection, all K at most; it commits the kept drafts and one more token. S(a), the
    expected verify steps from anchor a to the end, is 0 where a >= N - 1 and else
    1 + sum_j P_a(j) S(a + j + 1), P_a(j) = q[a+1]...q[a+j] (1 - q[a+j+1]) (j < K), and
    q[a+1]...q[a+K] for j = K. The oracle's acceptance length is (N - 1) / S(0), as the engine's is
    1 + accepted / steps = committed tokens after the first / steps.

It is an estimate: the q's are those of the committed output, whose tokens after a rejection are
samples, not the argmax the oracle's chain would have committed. At T = 0 every q is 1 and the
ceiling is K + 1. Standard library only (the q's come from the cross-check's forward).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any


def oracle_acceptance(q: Sequence[float], k: int) -> float | None:
    """The expected acceptance length of a perfect greedy drafter with k draft tokens over an
    output whose token i is kept with probability q[i] (q[0]: the prefill's token, unused)."""
    n = len(q)
    if n < 2 or k < 1:
        return None
    steps = [0.0] * (n + k + 2)
    for a in range(n - 2, -1, -1):
        expected, kept = 1.0, 1.0
        for j in range(k + 1):
            if j == k:
                chance = kept
            else:
                index = a + j + 1
                stay = q[index] if index < n else 1.0
                chance = kept * (1.0 - stay)
            after = a + j + 1
            expected += chance * (steps[after] if after < n - 1 else 0.0)
            if j < k:
                index = a + j + 1
                kept *= q[index] if index < n else 1.0
        steps[a] = expected
    return (n - 1) / steps[0] if steps[0] > 0 else None


def measured_acceptance(per_step_accepted: Sequence[int]) -> float | None:
    """The engine's acceptance length of one request: 1 + accepted / verify steps."""
    if not per_step_accepted:
        return None
    return 1.0 + sum(per_step_accepted) / len(per_step_accepted)


def context_of(prompt_id: str | None) -> str:
    """The context bin of a run's prompt id (ctx4096-07 -> 4096); "?" where it has none."""
    text = str(prompt_id or "")
    head = text.split("-")[0]
    return head.removeprefix("ctx") if head.startswith("ctx") else "?"


def by_context(requests: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per context bin: the requests, the mean oracle and measured acceptance lengths, the mean
    log p_T(argmax) and entropy over their output tokens."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for request in requests:
        groups.setdefault(context_of(request.get("prompt_id")), []).append(request)

    def mean(values: list[float]) -> float | None:
        return round(statistics.fmean(values), 4) if values else None

    out = {}
    for context in sorted(groups, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0)):
        chosen = groups[context]
        out[context] = {
            "requests": len(chosen),
            "oracle": mean([r["oracle"] for r in chosen if r.get("oracle") is not None]),
            "measured": mean([r["measured"] for r in chosen if r.get("measured") is not None]),
            "logp_argmax": mean([x for r in chosen for x in r.get("logp_argmax", [])]),
            "entropy": mean([x for r in chosen for x in r.get("entropy", [])]),
        }
    return out


def words(table: Mapping[str, Mapping[str, Any]]) -> str:
    """One line: per context, the ceiling beside the measured acceptance length."""
    parts = [
        f"{context}: {row['oracle']:.2f} vs {row['measured']:.2f}"
        for context, row in table.items()
        if row.get("oracle") is not None and row.get("measured") is not None
    ]
    return "ceiling (a perfect greedy drafter) vs measured, by context: " + (
        ", ".join(parts) if parts else "none"
    )


def token_stats(logits: Any, temperature: float) -> tuple[list[float], list[float]]:
    """Per row of `logits` ([N, V], torch): log p_T(argmax) and the entropy of p_T in nats; at
    temperature 0 (greedy) p is one-hot: 0 and 0."""
    import torch

    if temperature <= 0:
        return [0.0] * logits.shape[0], [0.0] * logits.shape[0]
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    top = logp.max(dim=-1).values
    entropy = -(logp.exp() * logp).sum(dim=-1)
    return [round(float(x), 5) for x in top], [round(float(x), 5) for x in entropy]
