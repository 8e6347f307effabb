"""Per-request metrics that cannot be true are flagged, named with the reason, and kept out of the
pooled figures: by `j0 bench run` as the server sends them, and by `j0 bench report` in the files
it reads.

The server is tests/servers/vllm/server.py (a vLLM stand-in of ours on 127.0.0.1, no GPU server
being here) with `spec_metrics_faults`: the listed requests' `metrics.speculative_decoding` carry
the given fields instead of the true ones. The expected figures come from the server's own record
of the other requests. The report's inputs are a real run's result file, with entries edited as a
broken or hand-made file would hold them.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from j0.cli import main
from servers.vllm.server import VllmStandIn

FAULTS: dict[int, dict[str, Any]] = {
    1: {"num_accepted_draft_tokens": -3},
    2: {"draft_acceptance_rate": 1.2},
    3: {"num_spec_steps": 2.5},
    4: {"mean_acceptance_length": 9.0},  # k = 5: at most 6
    5: {"acceptance_histogram": [1, 2, 3, 4, 5, 6, 7, 8]},  # k = 5: at most 6 entries
}
REASONS = {
    1: "num_accepted_draft_tokens=-3: a negative count",
    2: "draft_acceptance_rate=1.2: outside its possible range",
    3: "num_spec_steps=2.5: expected a whole number",
    4: "mean_acceptance_length=9.0: outside its possible range",
    5: "acceptance_histogram has 8 entries: at most num_spec_tokens+1=6",
}


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    out = tmp_path_factory.mktemp("run") / "k5-j0-on" / "result.json"
    out.parent.mkdir()
    with VllmStandIn(num_spec_tokens=5, seed=5, accept_prob=0.7, spec_metrics_faults=FAULTS) as s:
        args = ["--requests", "8", "--warmup", "0", "--max-tokens", "64", "--j0", "on"]
        code = main(["bench", "run", "--url", s.url, "--out", str(out), "--no-progress", *args])
        records = s.records
    assert code == 0
    return out, records


def test_bench_run_flags_them_and_pools_the_others(faulty_run: tuple[Path, list[Any]]) -> None:
    out, records = faulty_run
    doc = _strict(out.read_text())  # NaN from the server is not written as NaN
    good = [r for r in records if r.index not in FAULTS]
    steps = [a for r in good for a in r.per_step_accepted]
    assert len(good) == 3
    assert doc["acceptance_length"] == pytest.approx(1 + sum(steps) / len(steps), abs=1e-12)
    drafted = sum(d for r in good for d in r.per_step_drafted)
    assert doc["acceptance_rate"] == pytest.approx(sum(steps) / drafted, abs=1e-12)
    assert doc["summary"]["requests_ok"] == 8
    assert doc["summary"]["requests_out_of_range"] == 5
    for entry in doc["requests"]:
        flags = [f for f in entry["flags"] if f["flag"] == "metrics_out_of_range"]
        if entry["index"] not in FAULTS:
            assert not flags and entry["acceptance_length"] is not None
            continue
        assert REASONS[entry["index"]] in flags[0]["note"]
        assert entry["acceptance_length"] is None and entry["speculative_decoding"] is None
        assert "per_step_accepted" not in entry
    assert any("5 requests' metrics are outside their possible ranges" in n for n in doc["notes"])
    assert doc["acceptance_histogram"] == pytest.approx(
        [steps.count(i) / len(steps) for i in range(6)]
    )


def test_bench_report_names_them_and_pools_the_others(
    faulty_run: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    out, records = faulty_run
    folder = tmp_path / "results"
    shutil.copytree(out.parent, folder / "k5-j0-on")
    assert main(["bench", "report", str(folder)]) == 0
    setting = json.loads((folder / "report.json").read_text())["settings"]["k5-j0-on"]
    good = [r for r in records if r.index not in FAULTS]
    steps = [a for r in good for a in r.per_step_accepted]
    assert setting["acceptance_length"] == pytest.approx(1 + sum(steps) / len(steps), abs=1e-12)
    assert setting["requests_excluded"] == 5 and setting["requests_ok"] == 3
    text = (folder / "report.md").read_text()
    assert "## Requests kept out of the figures (5)" in text
    for index, reason in REASONS.items():
        line = next(x for x in text.splitlines() if f"result.json request {index} (" in x)
        assert reason in line


# Entry edits as a broken or hand-made file holds them; k = 5 in the run below.
def _accepted_over_drafted(e: dict[str, Any]) -> str:
    e["per_step_accepted"][0] = e["per_step_drafted"][0] + 1
    return f"per_step_accepted[0]={e['per_step_accepted'][0]} > per_step_drafted[0]="


def _fractional_step(e: dict[str, Any]) -> str:
    e["per_step_accepted"][1] = 2.5
    return "per_step_accepted[1]=2.5: expected a whole number"


def _fractional_tokens(e: dict[str, Any]) -> str:
    # A string here is a file of another type: refused whole (exit 2, tests/test_bad_inputs.py).
    e["output_tokens"] = 12.5
    return "output_tokens=12.5: expected a whole number"


def _negative_tokens(e: dict[str, Any]) -> str:
    e["prompt_tokens"] = -4
    return "prompt_tokens=-4: a negative count"


def _rate(e: dict[str, Any]) -> str:
    e["acceptance_rate"] = 1.2
    return "acceptance_rate=1.2: outside its possible range (at least 0, at most 1)"


def _long(e: dict[str, Any]) -> str:
    e["acceptance_length"] = 6.5
    return "acceptance_length=6.5: outside its possible range (at least 1, at most 6)"


def _short(e: dict[str, Any]) -> str:
    e["acceptance_length"] = 0.5
    return "acceptance_length=0.5: outside its possible range"


def _infinite_ttft(e: dict[str, Any]) -> str:
    e["ttft_ms"] = math.inf
    return "ttft_ms=inf: not a finite number"


def _wide_step(e: dict[str, Any]) -> str:
    e["per_step_drafted"][0] = 9
    return "per_step_drafted[0]=9 > num_spec_tokens=5"


EDITS = [
    _accepted_over_drafted,
    _fractional_step,
    _fractional_tokens,
    _negative_tokens,
    _rate,
    _long,
    _short,
    _infinite_ttft,
    _wide_step,
]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "result.json"
    with VllmStandIn(num_spec_tokens=5, seed=9, accept_prob=0.6) as server:
        args = ["--requests", "12", "--max-tokens", "48", "--no-progress"]
        code = main(["bench", "run", "--url", server.url, "--out", str(out), *args])
    assert code == 0
    return out


def test_bench_report_refuses_to_pool_impossible_entries(clean_run: Path, tmp_path: Path) -> None:
    doc = json.loads(clean_run.read_text())
    reasons = {}
    for entry, edit in zip(doc["requests"], EDITS, strict=False):
        reasons[entry["index"]] = edit(entry)
    kept = doc["requests"][len(EDITS) :]
    steps = [a for e in kept for a in e["per_step_accepted"]]
    setting = tmp_path / "results" / "k5-j0-off"
    setting.mkdir(parents=True)
    (setting / "result.json").write_text(json.dumps(doc))  # Infinity, as json writes it
    assert main(["bench", "report", str(setting.parent)]) == 0
    fig = json.loads((setting.parent / "report.json").read_text())["settings"]["k5-j0-off"]
    assert fig["requests_excluded"] == len(EDITS) and fig["requests_ok"] == len(kept)
    assert fig["acceptance_length"] == pytest.approx(1 + sum(steps) / len(steps), abs=1e-12)
    assert fig["acceptance_histogram"] == pytest.approx(
        [steps.count(i) / len(steps) for i in range(6)]
    )
    excluded = {e["request"]: e["reasons"] for e in fig["excluded"]}
    text = (setting.parent / "report.md").read_text()
    for index, reason in reasons.items():
        assert any(reason in r for r in excluded[index]), (reason, excluded[index])
        line = next(x for x in text.splitlines() if f"result.json request {index} (" in x)
        assert reason in line
    row = next(x for x in text.splitlines() if x.startswith("| k5-j0-off |"))
    assert row.endswith(f"| {len(EDITS)} |")


def test_impossible_metrics_deltas_are_a_note_of_the_report(
    clean_run: Path, tmp_path: Path
) -> None:
    """A /metrics whose per-position counts rise (as a result file records the deltas)."""
    doc = json.loads(clean_run.read_text())
    doc["metrics_crosscheck"]["status"] = "out of range"
    doc["metrics_crosscheck"]["delta_problems"] = ["num_accepted_tokens_per_pos rises at 2"]
    setting = tmp_path / "results" / "k5-j0-off"
    setting.mkdir(parents=True)
    (setting / "result.json").write_text(json.dumps(doc))
    assert main(["bench", "report", str(setting.parent)]) == 0
    text = (setting.parent / "report.md").read_text()
    assert (
        "- k5-j0-off: result.json: the /metrics deltas are outside their possible ranges "
        "(num_accepted_tokens_per_pos rises at 2)" in text
    )


USAGE_FAULTS: dict[int, dict[str, Any]] = {
    1: {"prompt_tokens": -12},
    2: {"completion_tokens": 12.5},
    3: {"prompt_tokens_details": {"cached_tokens": -1}},
}
USAGE_REASONS = {
    1: "prompt_tokens=-12: a negative count",
    2: "output_tokens=12.5: expected a whole number",
    3: "cached_tokens=-1: a negative count",
}


def test_token_counts_that_are_not_counts_are_flagged(tmp_path: Path) -> None:
    """The stream's final usage chunk with a string, a fraction or a negative count."""
    out = tmp_path / "result.json"
    faults = USAGE_FAULTS
    with VllmStandIn(num_spec_tokens=5, seed=4, accept_prob=0.6, final_usage_faults=faults) as s:
        args = ["--requests", "5", "--warmup", "0", "--max-tokens", "32", "--no-progress"]
        assert main(["bench", "run", "--url", s.url, "--out", str(out), *args]) == 0
        records = s.records
    doc = _strict(out.read_text())
    good = [r for r in records if r.index not in faults]
    steps = [a for r in good for a in r.per_step_accepted]
    assert doc["acceptance_length"] == pytest.approx(1 + sum(steps) / len(steps), abs=1e-12)
    assert doc["summary"]["requests_out_of_range"] == 3
    assert doc["summary"]["total_output_tokens"] == sum(r.output_tokens for r in good)
    for entry in doc["requests"]:
        notes = " ".join(f["note"] for f in entry["flags"] if f["flag"] == "metrics_out_of_range")
        if entry["index"] in faults:
            assert USAGE_REASONS[entry["index"]] in notes
        else:
            assert notes == ""
    rejected = doc["requests"][1]
    assert rejected["prompt_tokens"] is None and rejected["token_counts_rejected"] == {
        "prompt_tokens": -12
    }
