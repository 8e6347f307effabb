"""j0.mini.run.compare's gate and speed figures on hand-made per-prompt data (what `load` makes from
the result files), each expected value worked out by hand from the inputs."""

from __future__ import annotations

from typing import Any

import pytest

from j0.bench.result.request_entry import RequestEntry
from j0.mini.run import compare


def test_a_request_rate_counts_its_whole_latency() -> None:
    """Seen on the H200: a sampled request that stopped after 4 tokens had a decode time of
    milliseconds and a decode-only rate of 10^5 tok/s, which made the mean speedup 61x."""

    def rate(entry: dict[str, Any]) -> float | None:
        return compare.request_rate(RequestEntry.from_json(entry))

    early = {"output_tokens": 4, "latency_s": 0.08, "decode_s": 0.00003, "output_tok_s": 1e5}
    assert rate(early) == pytest.approx(50.0)  # 4 tokens / 0.08 s
    assert rate({"output_tokens": 256, "latency_s": 2.56}) == pytest.approx(100.0)
    for broken in ({"output_tokens": 0, "latency_s": 1.0}, {"output_tokens": 3}, {}):
        assert rate(broken) is None
    assert rate({"output_tokens": 3, "latency_s": 0.0}) is None


def _setting(loops_by_context: dict[int, tuple[int, int]]) -> dict[str, Any]:
    """Per context (outputs, loops): prompts c-0, c-1, ... of which the first `loops` loop."""
    repetition: dict[str, Any] = {}
    context: dict[str, int] = {}
    for c, (outputs, loops) in loops_by_context.items():
        for i in range(outputs):
            pid = f"{c}-{i}"
            context[pid] = c
            repetition[pid] = {
                "loop": i < loops,
                "distinct_1": 0.5,
                "distinct_2": 0.6,
                "distinct_3": 0.7,
                "repeating_suffix": 10,
            }
    return {"repetition": repetition, "context": context}


def test_the_gate_judges_the_target_and_shows_the_others_in_brackets() -> None:
    data = {
        "baseline": _setting({512: (20, 1), 2048: (20, 2)}),  # 95 %, 90 %: pass, pass
        "drafter-j0/k7-j0-on": _setting({512: (20, 3), 2048: (20, 0)}),  # 85 %: below
    }
    gate = compare.gate(data, [512, 2048])
    assert gate["target_outputs"] == "baseline" and gate["passed"] is True
    assert compare.gate_problem(gate) is None
    rows = compare.gate_table(gate)[2:]
    assert [r.split(" | ")[5] for r in rows] == ["pass", "pass", "(below)", "(pass)"]
    assert rows[2].startswith("| drafter-j0/k7-j0-on | 512 | 20 | 3 | 85.0% |")


def test_a_target_below_the_gate_is_the_run_s_problem() -> None:
    data = {
        "baseline": _setting({512: (20, 1), 2048: (20, 3)}),  # 95 %, 85 %
        "ngram/k7": _setting({512: (20, 0), 2048: (20, 0)}),
    }
    gate = compare.gate(data, [512, 2048])
    assert gate["passed"] is False
    assert compare.gate_problem(gate) == "baseline: the repetition gate failed at context 2048"
    assert "**fail**" in compare.gate_table(gate)[3]


def test_a_share_just_below_the_gate_is_not_shown_as_the_gate_s_own() -> None:
    """5 loops in 48 outputs is 89.6 %: a whole-percent table showed "90%" beside **fail** (the
    H100 run of 2026-12-08, context 512); the share keeps one decimal."""
    data = {"baseline": _setting({512: (48, 5)})}
    gate = compare.gate(data, [512])
    assert gate["passed"] is False
    row = compare.gate_table(gate)[2]
    assert row.split(" | ")[4:6] == ["89.6%", "**fail**"]
