"""The possible ranges of speculative-decoding figures, owned here: what a server's per-request
`metrics.speculative_decoding` (vLLM's SpeculativeDecodingMetrics) and pooled counts (/metrics
deltas) can hold, and what they cannot.

With k = num_spec_tokens (the draft tokens per verify step):

    every count                 a whole number (a JSON integer, not 3.5, "3" or true), >= 0
    num_spec_tokens             >= 1
    per_step_drafted[i]         <= k
    per_step_accepted[i]        <= per_step_drafted[i] (same length as per_step_drafted)
    num_accepted_draft_tokens   <= num_draft_tokens <= num_spec_steps * k
    acceptance_histogram        k + 1 entries at most (index j: steps that accepted exactly j)
    acceptance rate             accepted / draft tokens, in [0, 1]
    acceptance length           1 + accepted / steps, in [1, k + 1]
    per-position counts         drafts that accepted more than i tokens: none above the number
                                of drafts, non-increasing in i, summing to the accepted tokens
    any number                  finite (no NaN, no Infinity)

Each function returns the problems found, one sentence each naming the field and its value; an
empty list means the figures are possible. Standard library only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from j0.engine.figures import spec_counts
from j0.engine.figures.spec_counts import Counts

SCALAR_COUNTS = (
    "num_spec_tokens",
    "num_spec_steps",
    "num_draft_tokens",
    "num_accepted_draft_tokens",
)
ARRAYS = ("per_step_accepted", "per_step_drafted", "acceptance_histogram")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_count(value: Any) -> bool:
    """A whole number >= 0 as JSON gives one (bool is not a number here)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def count_problem(name: str, value: Any) -> str | None:
    """Why `value` cannot be a count of `name`, or None when it can (None: not given)."""
    if value is None or is_count(value):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name}={_show(value)}: not a finite number"
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return f"{name}={_show(value)}: a negative count"
    return f"{name}={_show(value)}: expected a whole number of tokens or steps"


def number_problem(name: str, value: Any, low: float, high: float | None) -> str | None:
    """Why `value` cannot be the figure `name` in [low, high] (None: not given, or fine)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{name}={_show(value)}: expected a number"
    if not math.isfinite(value):
        return f"{name}={_show(value)}: not a finite number"
    if value < low or (high is not None and value > high):
        upper = "" if high is None else f", at most {high:g}"
        return f"{name}={_show(value)}: outside its possible range (at least {low:g}{upper})"
    return None


def _array_problems(name: str, values: Any) -> list[str]:
    if values is None:
        return []
    if not isinstance(values, list):
        return [f"{name}={_show(values)}: expected a list of counts"]
    if spec_counts.all_counts(values):
        return []
    return [p for i, v in enumerate(values) if (p := count_problem(f"{name}[{i}]", v))][:3]


def spec_problems(spec: Any) -> list[str]:
    """What in one response's `metrics.speculative_decoding` is outside its possible range."""
    if spec is None:
        return []
    if not isinstance(spec, Mapping):
        return [f"speculative_decoding={_show(spec)}: expected a JSON object"]
    problems = [p for key in SCALAR_COUNTS if (p := count_problem(key, spec.get(key)))]
    problems += [p for key in ARRAYS for p in _array_problems(key, spec.get(key))]
    if problems:
        return problems  # the relations below need whole numbers
    k = spec.get("num_spec_tokens")
    steps, drafted, accepted = (
        spec.get("num_spec_steps"),
        spec.get("num_draft_tokens"),
        spec.get("num_accepted_draft_tokens"),
    )
    if k is not None and k < 1:
        problems.append(f"num_spec_tokens={k}: at least 1 draft token per step")
    if accepted is not None and drafted is not None and accepted > drafted:
        problems.append(f"num_accepted_draft_tokens={accepted} > num_draft_tokens={drafted}")
    if k and steps is not None and drafted is not None and drafted > steps * k:
        problems.append(
            f"num_draft_tokens={drafted} > num_spec_steps={steps} x num_spec_tokens={k}"
        )
    histogram = spec.get("acceptance_histogram")
    if k and isinstance(histogram, list) and len(histogram) > k + 1:
        problems.append(
            f"acceptance_histogram has {len(histogram)} entries: at most num_spec_tokens+1={k + 1}"
        )
    problems += _step_problems(spec.get("per_step_accepted"), spec.get("per_step_drafted"), k)
    for key, low, high in (
        ("acceptance_rate", 0.0, 1.0),
        ("draft_acceptance_rate", 0.0, 1.0),
        ("acceptance_length", 1.0, None if not k else k + 1.0),
        ("mean_acceptance_length", 1.0, None if not k else k + 1.0),
    ):
        if (p := number_problem(key, spec.get(key), low, high)) is not None:
            problems.append(p)
    return problems


def _step_problems(accepted: Any, drafted: Any, k: int | None) -> list[str]:
    if not isinstance(accepted, list) or not isinstance(drafted, list):
        return []
    problems = []
    if len(accepted) != len(drafted):
        problems.append(
            f"per_step_accepted has {len(accepted)} entries, per_step_drafted {len(drafted)}"
        )
    over = next((i for i, (a, d) in enumerate(zip(accepted, drafted)) if a > d), None)  # noqa: B905
    if over is not None:
        problems.append(
            f"per_step_accepted[{over}]={accepted[over]} > per_step_drafted[{over}]={drafted[over]}"
        )
    if k:
        wide = next((i for i, d in enumerate(drafted) if d > k), None)
        if wide is not None:
            problems.append(f"per_step_drafted[{wide}]={drafted[wide]} > num_spec_tokens={k}")
    return problems


def counts_problems(counts: Counts, k: int | None = None) -> list[str]:
    """What in pooled counts (per-request metrics summed, or /metrics deltas) is impossible."""
    named = {
        "num_drafts": counts.drafts,
        "num_draft_tokens": counts.draft_tokens,
        "num_accepted_tokens": counts.accepted,
    }
    problems = [p for key, v in named.items() if (p := count_problem(key, v))]
    problems += _array_problems("num_accepted_tokens_per_pos", list(counts.accepted_per_pos))
    if problems:
        return problems
    if counts.accepted > counts.draft_tokens:
        problems.append(
            f"num_accepted_tokens={counts.accepted} > num_draft_tokens={counts.draft_tokens}"
        )
    per_pos: Sequence[int] = counts.accepted_per_pos
    if per_pos:
        if per_pos[0] > counts.drafts:
            problems.append(
                f"num_accepted_tokens_per_pos[0]={per_pos[0]} > num_drafts={counts.drafts}"
            )
        rise = next((i for i, (a, b) in enumerate(itertools.pairwise(per_pos)) if b > a), None)
        if rise is not None:
            problems.append(
                f"num_accepted_tokens_per_pos rises at position {rise + 1} "
                f"({per_pos[rise]} then {per_pos[rise + 1]}): a draft accepted past position "
                "i was accepted past every earlier one"
            )
        if sum(per_pos) != counts.accepted:
            problems.append(
                f"num_accepted_tokens_per_pos sums to {sum(per_pos)}, not "
                f"num_accepted_tokens={counts.accepted}"
            )
        if k and len(per_pos) > k and any(per_pos[k:]):
            problems.append(f"accepted past position {k}: more than num_spec_tokens={k}")
    return problems
