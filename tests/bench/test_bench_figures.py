"""The acceptance arithmetic and /metrics parsing: hand-worked numbers and a real exposition."""

from __future__ import annotations

from pathlib import Path

import pytest

from j0.engine.figures import prometheus_counters, spec_counts
from j0.engine.figures.spec_counts import Counts

DATA = Path(__file__).parent / "data"


def test_figures_of_hand_worked_steps() -> None:
    # Steps accepting 0, 3 and 1 of 4 drafts: 3 drafts, 12 draft tokens, 4 accepted.
    # Position 0: steps with more than 0 accepted = 2; position 1: 1; position 2: 1; 3: 0.
    counts = spec_counts.from_steps([0, 3, 1], [4, 4, 4], width=4)
    assert counts == Counts(3, 12, 4, [2, 1, 1, 0])
    figures = spec_counts.figures(counts)
    assert figures["acceptance_length"] == pytest.approx(1 + 4 / 3)
    assert figures["acceptance_rate"] == pytest.approx(4 / 12)
    assert figures["per_position_acceptance"] == pytest.approx([2 / 3, 1 / 3, 1 / 3, 0.0])


def test_histogram_gives_the_same_counts_as_the_steps() -> None:
    # acceptance_histogram[j] = steps that accepted exactly j: [1, 1, 0, 1, 0] for 0, 1, 3.
    assert spec_counts.from_histogram([1, 1, 0, 1, 0], 12) == Counts(3, 12, 4, [2, 1, 1, 0])


def test_request_counts_flags_inconsistent_server_fields() -> None:
    spec = {
        "num_spec_tokens": 4,
        "num_spec_steps": 3,
        "num_accepted_draft_tokens": 5,  # the steps say 4
        "num_draft_tokens": 12,
        "per_step_accepted": [0, 3, 1],
        "per_step_drafted": [4, 4, 4],
    }
    counts, problems = spec_counts.request_counts(spec)
    assert counts is not None and counts.accepted == 4
    assert problems == ["num_accepted_draft_tokens=5 but the steps give 4"]


def test_step_contexts_and_bins() -> None:
    # 100 prompt tokens; the prefill gives token 1, so the first verify step sees 101 tokens;
    # then each step adds 1 + accepted: 101, 103 (after 1 accepted), 107 (after 3).
    assert spec_counts.step_contexts(100, [1, 3, 0]) == [101, 103, 107]
    bins = spec_counts.by_context([(100, [1, 3, 0]), (250, [2])], bin_size=104)
    assert bins == [
        {
            "context_start": 0,
            "context_end": 104,
            "num_drafts": 2,
            "num_accepted_tokens": 4,
            "acceptance_length": 3.0,
        },
        {
            "context_start": 104,
            "context_end": 208,
            "num_drafts": 1,
            "num_accepted_tokens": 0,
            "acceptance_length": 1.0,
        },
        {
            "context_start": 208,
            "context_end": 312,
            "num_drafts": 1,
            "num_accepted_tokens": 2,
            "acceptance_length": 3.0,
        },
    ]


def test_parse_a_real_vllm_exposition() -> None:
    """The counters of a real vLLM 0.33.0 /metrics (tests/bench/data), `_created` ignored."""
    snap = prometheus_counters.parse((DATA / "metrics-vllm-0.33.0-h200.txt").read_text())
    assert snap is not None
    assert snap.counts == Counts(378, 2646, 0, [0] * 7)
    assert snap.engines == ["0"]


def test_parse_sums_engines_and_deltas_subtract() -> None:
    def exposition(drafts: tuple[int, int], pos0: tuple[int, int]) -> str:
        lines = []
        for name, values in (
            ("drafts", drafts),
            ("draft_tokens", (drafts[0] * 2, drafts[1] * 2)),
            ("accepted_tokens", pos0),
        ):
            lines += [f"# TYPE vllm:spec_decode_num_{name}_total counter"]
            lines += [
                f'vllm:spec_decode_num_{name}_total{{engine="{e}",model_name="m"}} {v}.0'
                for e, v in enumerate(values)
            ]
            lines += [f"# TYPE vllm:spec_decode_num_{name}_created gauge"]
            lines += [
                f'vllm:spec_decode_num_{name}_created{{engine="{e}",model_name="m"}} 1.7e+09'
                for e in range(2)
            ]
        lines += ["# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter"]
        lines += [
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{e}",model_name="m",'
            f'position="{p}"}} {v if p == 0 else 0}.0'
            for e, v in enumerate(pos0)
            for p in range(2)
        ]
        return "\n".join(lines) + "\n"

    before = prometheus_counters.parse(exposition((10, 20), (4, 5)))
    after = prometheus_counters.parse(exposition((13, 21), (6, 5)))
    assert before is not None and after is not None
    assert before.counts == Counts(30, 60, 9, [9, 0])
    assert after.engines == ["0", "1"]
    assert after.minus(before) == Counts(4, 8, 2, [2, 0])


def test_no_spec_counters_is_none() -> None:
    text = "# TYPE process_open_fds gauge\nprocess_open_fds 4.0\n"
    assert prometheus_counters.parse(text) is None
