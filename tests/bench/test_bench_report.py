"""`j0 bench report DIR` on results that `j0 bench run` measured from tests/servers/vllm/server.py
(a vLLM stand-in of ours on 127.0.0.1), one setting of them sharded; expected values from the
server's own record."""

from __future__ import annotations

import csv
import json
import math
import shutil
import statistics
from pathlib import Path

import pytest

from j0.bench.analysis import roofline
from j0.cli import main
from j0.errors import J0Error
from j0.measure import pairing
from servers.vllm.server import VllmStandIn

# results_dir (two settings run against stand-in servers, then `j0 bench report`: 1.7 s) is made
# once: the module's tests share one pytest-xdist worker, not one copy per worker they reach.
pytestmark = pytest.mark.xdist_group("bench-report")

PROMPTS = [" ".join(f"p{i}w{j}" for j in range(60 + 40 * i)) for i in range(4)]


def run_setting(folder: Path, files: dict[str, list[int]], accept_prob: float) -> list[dict]:
    """Run the prompts (by index) into folder/<file>; return the server's records, in order."""
    folder.mkdir(parents=True)
    records = []
    for name, indices in files.items():
        data = folder / f"{name}.jsonl"
        data.write_text(
            "".join(json.dumps({"id": f"q{i}", "prompt": PROMPTS[i]}) + "\n" for i in indices)
        )
        with VllmStandIn(num_spec_tokens=5, seed=len(name), accept_prob=accept_prob) as server:
            code = main(
                [
                    "bench",
                    "run",
                    "--url",
                    server.url,
                    "--out",
                    str(folder / name),
                    "--dataset",
                    str(data),
                    "--max-tokens",
                    "80",
                    "--no-progress",
                ]
            )
            assert code == 0
            records += [
                {"prompt": indices[n], "accepted": r.per_step_accepted}
                for n, r in enumerate(server.records)
            ]
        data.unlink()
    return records


def per_prompt_length(records: list[dict]) -> dict[int, float]:
    return {r["prompt"]: 1 + sum(r["accepted"]) / len(r["accepted"]) for r in records}


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[dict]]]:
    root = tmp_path_factory.mktemp("matrix")
    truth = {
        "k5-j0-off": run_setting(root / "k5-j0-off", {"result.json": [0, 1, 2, 3]}, 0.5),
        # sharded: prompts 0 and 2 in shard 00, 1 and 3 in shard 01
        "k5-j0-on": run_setting(
            root / "k5-j0-on", {"result-shard-00.json": [0, 2], "result-shard-01.json": [1, 3]}, 0.8
        ),
    }
    index = root / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 4_000_000_000}, "weight_map": {}}))
    assert main(["bench", "report", str(root), "--gpu", "H200", "--weights-index", str(index)]) == 0
    return root, truth


def test_table_holds_each_settings_pooled_figures(results_dir) -> None:
    root, truth = results_dir
    summary = json.loads((root / "report.json").read_text())["settings"]
    for name, records in truth.items():
        steps = [a for r in records for a in r["accepted"]]
        assert summary[name]["requests_ok"] == 4
        assert summary[name]["acceptance_length"] == pytest.approx(1 + sum(steps) / len(steps))
        assert summary[name]["acceptance_rate"] == pytest.approx(sum(steps) / (5 * len(steps)))
        # Both definitions and the histogram, over the merged shards, by their formulas.
        assert summary[name]["acceptance_length_request_mean"] == statistics.mean(
            statistics.mean([1 + a for a in r["accepted"]]) for r in records
        )
        assert summary[name]["acceptance_histogram"] == [
            steps.count(i) / len(steps) for i in range(6)
        ]
    assert summary["k5-j0-on"]["files"] == ["result-shard-00.json", "result-shard-01.json"]
    assert summary["k5-j0-on"]["j0"] == "on" and summary["k5-j0-on"]["k"] == 5
    text = (root / "report.md").read_text()
    line = next(x for x in text.splitlines() if x.startswith("| k5-j0-on |"))
    assert f"| {summary['k5-j0-on']['acceptance_length']:.3f} |" in line


def test_j0_on_minus_off_is_paired_by_prompt(results_dir) -> None:
    root, truth = results_dir
    on, off = per_prompt_length(truth["k5-j0-on"]), per_prompt_length(truth["k5-j0-off"])
    diffs = [on[i] - off[i] for i in range(4)]
    mean = statistics.fmean(diffs)
    half = 3.182 * statistics.stdev(diffs) / math.sqrt(4)  # t(0.975, 3 df)
    paired = json.loads((root / "report.json").read_text())["j0_on_minus_off"]
    assert len(paired) == 1 and paired[0]["k"] == 5
    got = paired[0]["acceptance_length"]
    assert got["n"] == 4
    assert got["mean"] == pytest.approx(mean)
    assert got["ci95"] == pytest.approx([mean - half, mean + half])


def test_plots_and_their_csv(results_dir) -> None:
    root, truth = results_dir
    for stem in ("acceptance_vs_context", "per_position", "throughput"):
        assert (root / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader((root / "per_position.csv").open()))
    assert len(rows) == 2 * 5
    rows = list(csv.DictReader((root / "throughput.csv").open()))
    for row in rows:
        length = float(row["acceptance_length"])
        assert float(row["roofline_tok_s"]) == pytest.approx(length * 4.8e12 / 4e9)
    rows = list(csv.DictReader((root / "acceptance_vs_context.csv").open()))
    drafts = sum(int(r["num_drafts"]) for r in rows if r["setting"] == "k5-j0-off")
    assert drafts == sum(len(r["accepted"]) for r in truth["k5-j0-off"])


def test_t_quantiles() -> None:
    assert pairing.t975(1) == 12.706 and pairing.t975(30) == 2.042
    assert pairing.t975(60) == pytest.approx(2.000298, abs=2e-4)
    assert pairing.t975(1000) == pytest.approx(1.962339, abs=1e-4)


def test_report_errors(tmp_path: Path) -> None:
    assert main(["bench", "report", str(tmp_path)]) == 2
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "result.json").write_text("{}")
    assert main(["bench", "report", str(tmp_path)]) == 2
    with pytest.raises(J0Error, match="no bandwidth known"):
        roofline.bandwidth_tbs("Z80")
    assert roofline.bandwidth_tbs("nvidia h100-sxm") == 3.35


def test_report_as_a_function_for_other_commands(results_dir, tmp_path: Path) -> None:
    """`main(folder, bin_size=...)` (what other commands call) writes the same report."""
    from j0.bench.report import main as report_main

    root, _ = results_dir
    out = tmp_path / "again"
    out.mkdir()
    assert report_main(root, out=out, bin_size=64) == 0
    again = json.loads((out / "report.json").read_text())
    assert again["context_bins"] == {"bin_size": 64}
    first = json.loads((root / "report.json").read_text())
    for name, figs in first["settings"].items():
        assert again["settings"][name]["acceptance_length"] == figs["acceptance_length"]
        assert sum(b["num_drafts"] for b in again["settings"][name]["by_context"]) == sum(
            b["num_drafts"] for b in figs["by_context"]
        )


def test_json_prints_report_json_in_place_of_the_text(
    results_dir, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json alone: the report.json just written, on stdout and nothing else; --json OUT: the
    text as usual, and that same document in OUT."""
    root, truth = results_dir
    out = tmp_path / "again"
    assert main(["bench", "report", str(root), "--out", str(out), "--json"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == json.loads((out / "report.json").read_text())
    assert set(json.loads(printed)["settings"]) == set(truth)
    record = tmp_path / "copy.json"
    assert main(["bench", "report", str(root), "--out", str(out), "--json", str(record)]) == 0
    text = capsys.readouterr().out
    assert text.startswith((out / "report.md").read_text()) and "wrote " in text
    assert record.read_bytes() == (out / "report.json").read_bytes()


def test_the_statistics_and_the_repetition_in_the_report(results_dir) -> None:
    root, _ = results_dir
    summary = json.loads((root / "report.json").read_text())
    (pair,) = summary["j0_on_minus_off"]
    c = pair["acceptance_length"]["stats"]
    assert c["prompts"] == 4 and not c["clustered_by_source"]
    assert c["permutation"]["method"] == "exact" and c["bootstrap"]["resamples"] == 10_000
    assert c["effect"] == pytest.approx(pair["acceptance_length"]["mean"])
    assert c["verdict"] == "not resolved"  # 4 prompts: the exact p is at least 2 / 16
    text = (root / "report.md").read_text()
    assert "| 5 | k5-j0-on | k5-j0-off | 4 |" in text and "sign-flip" in text
    assert "## Repetition of the outputs" in text
    bins = summary["settings"]["k5-j0-off"]["repetition_by_context"]
    assert sum(b["outputs"] for b in bins) == 4


def test_prompts_of_one_source_are_one_unit(results_dir, tmp_path: Path) -> None:
    root, _ = results_dir
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("report*", "*.png", "*.csv"))
    for path in copy.rglob("result*.json"):
        doc = json.loads(path.read_text())
        for r in doc["requests"]:
            r["prompt_source"] = "file-a" if r["prompt_id"] in ("q0", "q1") else "file-b"
        path.write_text(json.dumps(doc))
    assert main(["bench", "report", str(copy)]) == 0
    (pair,) = json.loads((copy / "report.json").read_text())["j0_on_minus_off"]
    c = pair["acceptance_length"]["stats"]
    assert c["clustered_by_source"] and c["units"] == 2 and c["prompts"] == 4
    assert c["bootstrap"]["unit"] == "source" and c["verdict"] == "not resolved"
