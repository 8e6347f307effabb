"""The possible ranges of speculative-decoding figures (j0.engine.figures.spec_ranges), on values
written here by hand: vLLM's per-request `metrics.speculative_decoding` as the wheel's
SpeculativeDecodingMetrics writes it, and pooled counts as /metrics deltas give them."""

from __future__ import annotations

import math
from typing import Any

import pytest

from j0.bench.result.metrics_crosscheck import crosscheck
from j0.engine.figures.spec_counts import Counts
from j0.engine.figures.spec_ranges import counts_problems, spec_problems

# k = 4: three verify steps that drafted 4, 3 and 4 tokens and accepted 2, 0 and 4 of them
TRUE: dict[str, Any] = {
    "mean_acceptance_length": 1 + 6 / 3,
    "draft_acceptance_rate": 6 / 11,
    "acceptance_histogram": [1, 0, 1, 0, 1],
    "num_spec_steps": 3,
    "num_accepted_draft_tokens": 6,
    "num_draft_tokens": 11,
    "num_spec_tokens": 4,
    "per_step_accepted": [2, 0, 4],
    "per_step_drafted": [4, 3, 4],
}


def test_true_metrics_have_no_problem() -> None:
    assert spec_problems(TRUE) == []
    assert spec_problems(None) == []


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"num_draft_tokens": -1}, "num_draft_tokens=-1: a negative count"),
        ({"num_accepted_draft_tokens": 12}, "num_accepted_draft_tokens=12 > num_draft_tokens=11"),
        ({"num_draft_tokens": 13, "num_accepted_draft_tokens": 6}, "num_draft_tokens=13 > "),
        ({"num_spec_steps": True}, "num_spec_steps=True: expected a whole number"),
        ({"num_spec_steps": "3"}, "num_spec_steps='3': expected a whole number"),
        ({"num_spec_tokens": 0}, "num_spec_tokens=0: at least 1"),
        ({"num_spec_steps": math.inf}, "num_spec_steps=inf: not a finite number"),
        ({"draft_acceptance_rate": -0.1}, "draft_acceptance_rate=-0.1: outside"),
        ({"draft_acceptance_rate": math.nan}, "draft_acceptance_rate=nan: not a finite number"),
        ({"mean_acceptance_length": 5.5}, "mean_acceptance_length=5.5: outside"),
        ({"mean_acceptance_length": 0.9}, "mean_acceptance_length=0.9: outside"),
        ({"per_step_accepted": [2, 4, 4]}, "per_step_accepted[1]=4 > per_step_drafted[1]=3"),
        ({"per_step_drafted": [4, 3, 5]}, "per_step_drafted[2]=5 > num_spec_tokens=4"),
        ({"per_step_accepted": [2, -1, 4]}, "per_step_accepted[1]=-1: a negative count"),
        ({"per_step_accepted": [2, 0]}, "per_step_accepted has 2 entries, per_step_drafted 3"),
        ({"per_step_drafted": "4,3,4"}, "per_step_drafted='4,3,4': expected a list"),
        ({"acceptance_histogram": [1, 0, 1, 0, 1, 0]}, "acceptance_histogram has 6 entries"),
    ],
)
def test_impossible_metrics_are_named(change: dict[str, Any], reason: str) -> None:
    problems = spec_problems({**TRUE, **change})
    assert any(reason in p for p in problems), problems


def test_a_spec_block_that_is_not_an_object() -> None:
    assert spec_problems([1, 2]) == ["speculative_decoding=[1, 2]: expected a JSON object"]


def test_pooled_counts() -> None:
    # drafts 3; per position: 2 drafts accepted past 0, 2 past 1, 1 past 2, 1 past 3; sum 6
    assert counts_problems(Counts(3, 11, 6, [2, 2, 1, 1]), 4) == []
    rising = counts_problems(Counts(3, 11, 6, [2, 1, 2, 1]), 4)
    assert any("rises at position 2 (1 then 2)" in p for p in rising)
    assert any("> num_drafts=3" in p for p in counts_problems(Counts(3, 11, 8, [4, 2, 1, 1])))
    assert any("sums to 5" in p for p in counts_problems(Counts(3, 11, 6, [2, 2, 1])))
    assert any("> num_draft_tokens" in p for p in counts_problems(Counts(3, 5, 6, [2, 2, 1, 1])))
    assert counts_problems(Counts(-1, 0, 0, [])) == ["num_drafts=-1: a negative count"]


def test_impossible_metrics_deltas_are_no_crosscheck() -> None:
    """A /metrics whose per-position counts rise is not compared with the per-request counts."""
    good = Counts(3, 11, 6, [2, 2, 1, 1])
    block = crosscheck(good, Counts(3, 11, 6, [1, 2, 2, 1]), ["0"])
    assert block.status == "out of range" and block.match is None
    assert any("rises at position 1" in p for p in block.delta_problems or [])
    assert crosscheck(good, good, ["0"]).status == "match"
