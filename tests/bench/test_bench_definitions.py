"""Both acceptance definitions, the histogram, re-binning, repeats and the system prompt.

Hand-worked numbers first; then `j0 bench run` against tests/servers/vllm/server.py (a vLLM 0.33
stand-in of ours on 127.0.0.1), every new figure computed here from the server's own records,
by the references' formulas (the dflash benchmark's
`statistics.mean(statistics.mean(x) for x in per_request)`), never by j0's code.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from j0.bench.analysis import acceptance
from j0.bench.result.request_entry import RequestEntry
from j0.cli import main
from j0.errors import J0Error
from servers.vllm.server import VllmStandIn


def entry(steps: list[int], prompt_tokens: int = 100, drafted: int = 4) -> RequestEntry:
    from j0.engine.figures import spec_counts

    return RequestEntry.from_json(
        {
            "ok": True,
            "prompt_tokens": prompt_tokens,
            "per_step_accepted": steps,
            "per_step_drafted": [drafted] * len(steps),
            "per_step_context_length": spec_counts.step_contexts(prompt_tokens, steps),
            "speculative_decoding": {"num_spec_tokens": drafted},
        }
    )


def test_the_two_definitions_part_where_requests_differ_in_length() -> None:
    # Request A: 4 steps accepting 4 each (length 5); request B: 1 step accepting 0 (length 1).
    # Pooled: 1 + 16/5 = 4.2. Request mean: (5 + 1) / 2 = 3.0.
    entries = [entry([4, 4, 4, 4]), entry([0])]
    assert acceptance.request_mean(entries) == 3.0
    assert acceptance.histogram(entries) == [1 / 5, 0.0, 0.0, 0.0, 4 / 5]
    failed = RequestEntry.from_json({**entries[0].to_json(), "ok": False})
    assert acceptance.request_mean([failed, entries[1]]) == 1.0


def test_summary_level_histograms_give_the_same_request_mean() -> None:
    # Without per-step arrays, the server's acceptance_histogram (steps with exactly j accepted).
    summary = RequestEntry.from_json(
        {"ok": True, "speculative_decoding": {"acceptance_histogram": [1, 0, 2]}}
    )
    assert acceptance.request_length(summary) == statistics.mean([1, 3, 3])


def test_bins_by_named_edges() -> None:
    # 100 prompt tokens: steps at contexts 101, 103 (after 1 accepted), 107 (after 3).
    bins = acceptance.by_context([entry([1, 3, 0]), entry([2], prompt_tokens=250)],
                                 acceptance.edge_bins([103, 200]))  # fmt: skip
    assert [(b["context_start"], b["context_end"]) for b in bins] == [
        (0, 103), (103, 200), (200, None)
    ]  # fmt: skip
    assert [b["num_drafts"] for b in bins] == [1, 2, 1]
    assert [b["acceptance_length"] for b in bins] == [2.0, 1 + 3 / 2, 3.0]
    assert [b["acceptance_length_request_mean"] for b in bins] == [2.0, 2.5, 3.0]
    with pytest.raises(J0Error, match="increasing"):
        acceptance.parse_bins("100,50")
    with pytest.raises(J0Error, match="whole numbers"):
        acceptance.parse_bins("1k")


def by_hand(records: list) -> dict:
    """The figures by their definitions, from the server's records."""
    steps = [a for r in records for a in r.per_step_accepted]
    width = max(max(r.per_step_drafted) for r in records)
    counts = [sum(1 for a in steps if a == i) for i in range(width + 1)]
    return {
        "pooled": 1 + sum(steps) / len(steps),
        "request_mean": statistics.mean(
            statistics.mean([1 + a for a in r.per_step_accepted]) for r in records
        ),
        "histogram": [n / len(steps) for n in counts],
    }


def test_run_with_repeats_and_a_system_prompt(tmp_path: Path) -> None:
    system = tmp_path / "system.txt"
    system.write_text("You are a careful solver. Think step by step.")
    data = tmp_path / "p.jsonl"
    prompts = [" ".join(f"w{i}x{j}" for j in range(30 + 50 * i)) for i in range(3)]
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": p}) + "\n"
                            for i, p in enumerate(prompts)))  # fmt: skip
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=6, seed=3, accept_prob=0.7, prefix_caching=False) as server:
        code = main(
            ["bench", "run", "--url", server.url, "--out", str(out), "--dataset", str(data),
             "--max-tokens", "60", "--repeats", "2", "--system-prompt", f"@{system}",
             "--no-progress", "--bin-size", "64"]
        )  # fmt: skip
        records = server.records
    assert code == 0
    doc = json.loads(out.read_text())
    # The prompts twice, in the same order; each request says which pass sent it.
    assert [r["prompt_id"] for r in doc["requests"]] == ["q0", "q1", "q2"] * 2
    assert [r["repeat"] for r in doc["requests"]] == [0, 0, 0, 1, 1, 1]
    assert doc["repeats"] == 2 and len(records) == 6
    # The system message reached the server: 9 words + 5 template tokens more per prompt.
    for record, prompt in zip(records, prompts * 2, strict=True):
        assert record.prompt_tokens == len(prompt.split()) + 5 + 9 + 5 + 3
    options = doc["manifest"]["options"]
    assert options["system_prompt"] == system.read_text()
    assert options["system_prompt_file"] == str(system) and options["repeats"] == 2
    truth = by_hand(records)
    assert doc["acceptance_length"] == truth["pooled"]
    assert doc["acceptance_length_request_mean"] == truth["request_mean"]
    assert doc["acceptance_histogram"] == truth["histogram"]
    assert doc["acceptance_length"] != doc["acceptance_length_request_mean"]
    # Per context bin, the request mean: each request's mean over its steps in the bin.
    bins: dict[int, list[float]] = {}
    for r in records:
        mine: dict[int, list[int]] = {}
        for context, a in zip(r.step_context_lengths, r.per_step_accepted, strict=True):
            mine.setdefault(context // 64, []).append(a)
        for b, accepted in mine.items():
            bins.setdefault(b, []).append(statistics.mean([1 + a for a in accepted]))
    got = doc["acceptance_by_context_request_mean"]
    assert got["bin_size"] == 64
    assert [(b["context_start"], b["requests"], b["acceptance_length_request_mean"])
            for b in got["bins"]] == [
        (b * 64, len(v), statistics.mean(v)) for b, v in sorted(bins.items())
    ]  # fmt: skip
    # The output token ids the server sent, kept per request.
    for kept, record in zip(doc["requests"], records, strict=True):
        assert kept["output_token_ids"] == record.output_token_ids


def test_bad_system_prompt_and_repeats_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    args = ["bench", "run", "--url", "http://127.0.0.1:9", "--out", str(out)]
    assert main([*args, "--system-prompt", f"@{tmp_path / 'none.txt'}"]) == 64
    assert "none.txt: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main([*args, "--repeats", "0"])
    assert exited.value.code == 64
    assert not out.exists()
