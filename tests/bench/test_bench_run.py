"""`j0 bench run` against tests/servers/vllm/server.py, a vLLM 0.33 stand-in of ours on 127.0.0.1.

No mocks: the real client (aiohttp, prometheus_client's parser) talks HTTP to a server that decides
every step's accepted count from a seed or a script and records what it did; the expected figures
come from that record (VllmStandIn.truth), not from j0's code.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from j0.cli import main
from servers.vllm.server import VllmStandIn

ROOT = Path(__file__).resolve().parents[2]


def bench(url: str, out: Path, *extra: str) -> int:
    return main(["bench", "run", "--url", url, "--out", str(out), "--no-progress", *extra])


def expected(truth: dict[str, Any]) -> tuple[float, float, list[float]]:
    """The three figures, by their definitions, from the server's own totals."""
    drafts = truth["drafts"]
    return (
        1 + truth["accepted"] / drafts,
        truth["accepted"] / truth["draft_tokens"],
        [n / drafts for n in truth["accepted_per_pos"]],
    )


def test_figures_are_what_the_server_did(tmp_path: Path) -> None:
    """The hidden check's command line: 4 requests, 200 tokens, seeded acceptance, 2 engines."""
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=15, seed=7, accept_prob=0.85) as server:
        assert bench(server.url, out, "--requests", "4", "--max-tokens", "200") == 0
        truth = server.truth()
    doc = json.loads(out.read_text())
    assert truth["requests"] == 4 and truth["drafts"] > 40
    length, rate, per_pos = expected(truth)
    assert doc["acceptance_length"] == pytest.approx(length, abs=1e-12)
    assert doc["acceptance_rate"] == pytest.approx(rate, abs=1e-12)
    assert doc["per_position_acceptance"] == pytest.approx(per_pos, abs=1e-12)
    assert len(doc["per_position_acceptance"]) == 15
    check = doc["metrics_crosscheck"]
    assert check["status"] == "match" and check["engines"] == ["0", "1"]
    assert doc["complete"] is True and doc["error"] is None
    assert [r["output_tokens"] for r in doc["requests"]] == [200] * 4
    records = server.records
    for entry, record in zip(doc["requests"], records, strict=True):
        assert entry["per_step_accepted"] == record.per_step_accepted
        assert entry["per_step_context_length"] == record.step_context_lengths
        assert entry["prompt_tokens"] == record.prompt_tokens
        assert record.enable_thinking is True  # chat, thinking on by default
        assert record.model == server.model  # the first of /v1/models
        # one chunk per engine step: the prefill's token, then 1 + accepted per step (cut at
        # max_tokens on the last one)
        steps = [1] + [1 + a for a in record.per_step_accepted]
        steps[-1] -= sum(steps) - 200
        assert entry["chunk_tokens"] == steps


def test_max_tokens_cut_still_counts_the_step(tmp_path: Path) -> None:
    """Every step accepts all 7 drafts; max_tokens 20 cuts the third step to 3 tokens.

    vLLM counts the step's 7 accepted drafts anyway: acceptance length 8, not the 19 streamed
    tokens after the first / 3 steps = 6.33 that counting the stream would give."""
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=7, accept_script=[7]) as server:
        assert bench(server.url, out, "--requests", "1", "--max-tokens", "20") == 0
    doc = json.loads(out.read_text())
    assert doc["acceptance_length"] == 8.0
    assert doc["acceptance_rate"] == 1.0
    assert doc["per_position_acceptance"] == [1.0] * 7
    assert doc["requests"][0]["chunk_tokens"] == [1, 8, 8, 3]
    assert doc["metrics_crosscheck"]["status"] == "match"


def test_warmup_is_excluded_and_concurrency_still_matches(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=7, seed=3) as server:
        code = bench(
            server.url,
            out,
            "--requests",
            "5",
            "--max-tokens",
            "120",
            "--warmup",
            "2",
            "--concurrency",
            "2",
            "--dataset",
            "synthetic:200,400",
        )
        assert code == 0
        measured = server.truth(first=2)
        assert server.truth(last=2)["drafts"] > 0  # the warm-up did draft
    doc = json.loads(out.read_text())
    length, _, per_pos = expected(measured)
    assert doc["acceptance_length"] == pytest.approx(length)
    assert doc["per_position_acceptance"] == pytest.approx(per_pos)
    assert doc["metrics_crosscheck"]["status"] == "match"
    assert doc["warmup"] == {"requests": 2, "ok": 2}


def test_summary_level_uses_the_histogram_and_none_falls_back_to_metrics(tmp_path: Path) -> None:
    for level, source in (("summary", "per-request metrics"), ("none", "metrics deltas")):
        out = tmp_path / f"{level}.json"
        with VllmStandIn(num_spec_tokens=5, seed=11, spec_metrics=level) as server:
            assert bench(server.url, out, "--requests", "3", "--max-tokens", "80") == 0
            truth = server.truth()
        doc = json.loads(out.read_text())
        length, rate, per_pos = expected(truth)
        assert doc["acceptance_source"] == source
        assert doc["acceptance_length"] == pytest.approx(length)
        assert doc["acceptance_rate"] == pytest.approx(rate)
        assert doc["per_position_acceptance"] == pytest.approx(per_pos)
        assert doc["acceptance_by_context"]["bins"] == []  # no per-step arrays
        assert "per_step_accepted" not in doc["requests"][0]


def test_a_server_that_does_not_stream(tmp_path: Path) -> None:
    """One JSON body instead of a stream: the figures come from its metrics all the same."""
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=6, seed=9, ignore_stream=True) as server:
        assert bench(server.url, out, "--requests", "2", "--max-tokens", "90") == 0
        truth = server.truth()
    doc = json.loads(out.read_text())
    length, rate, per_pos = expected(truth)
    assert doc["acceptance_length"] == pytest.approx(length)
    assert doc["acceptance_rate"] == pytest.approx(rate)
    assert doc["per_position_acceptance"] == pytest.approx(per_pos)
    assert [r["output_tokens"] for r in doc["requests"]] == [90, 90]


def test_other_traffic_during_the_run_is_reported_as_a_mismatch(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=4, seed=2, step_delay=0.002) as server:
        result: list[int] = []
        thread = threading.Thread(
            target=lambda: result.append(
                bench(server.url, out, "--requests", "3", "--max-tokens", "150")
            )
        )
        thread.start()
        deadline = time.monotonic() + 20
        while not server.records and time.monotonic() < deadline:
            time.sleep(0.005)
        # another client, between the bench's two /metrics reads
        requests.post(
            server.url + "/v1/completions", json={"prompt": "x y z", "max_tokens": 12}, timeout=30
        ).raise_for_status()
        thread.join(60)
        truth_all = server.truth()
    assert result == [0]
    doc = json.loads(out.read_text())
    check = doc["metrics_crosscheck"]
    assert check["status"] == "mismatch" and check["match"] is False
    assert check["metrics_delta"]["num_drafts"] == truth_all["drafts"]
    assert check["per_request"]["num_drafts"] < truth_all["drafts"]
    assert "num_drafts" in check["differences"]


def test_cached_prompt_tokens_with_j0_on_are_flagged(tmp_path: Path) -> None:
    shared = " ".join(f"w{i}" for i in range(40))
    data = tmp_path / "p.jsonl"
    data.write_text(
        json.dumps({"prompt": shared + " one"})
        + "\n"
        + json.dumps({"prompt": shared + " two"})
        + "\n"
    )
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=4, seed=1, prefix_caching=True) as server:
        assert (
            bench(server.url, out, "--dataset", str(data), "--max-tokens", "30", "--j0", "on") == 0
        )
        cached = [r.cached_tokens for r in server.records]
    doc = json.loads(out.read_text())
    assert cached[0] == 0 and cached[1] > 0
    assert [r["cached_tokens"] for r in doc["requests"]] == cached
    assert doc["requests"][0]["flags"] == []
    assert doc["requests"][1]["flags"][0]["flag"] == "cached_prompt_tokens_with_j0_on"
    assert [f["request"] for f in doc["flags"]] == [1]
    assert doc["manifest"]["j0"] == "on" and doc["manifest"]["j0_source"] == "--j0"


def test_a_server_that_dies_mid_run(tmp_path: Path) -> None:
    """The standalone server exits in the middle of the third request: exit 1, a clear error,
    and the two finished requests in the file."""
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "servers" / "vllm" / "server.py"),
            "--port",
            "0",
            "--num-spec-tokens",
            "7",
            "--die-after",
            "2",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline() if server.stdout else ""
        url = line.split(" at ")[1].split()[0]
        out = tmp_path / "r.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "j0",
                "bench",
                "run",
                "--url",
                url,
                "--out",
                str(out),
                "--requests",
                "4",
                "--max-tokens",
                "100",
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert server.wait(timeout=10) == 1
    finally:
        server.kill()
    assert done.returncode == 1, done.stderr
    assert "stopped answering during request 3 of 4" in done.stderr
    assert "2 finished requests kept in" in done.stderr
    doc = json.loads(out.read_text())
    assert doc["complete"] is False and "request 3 of 4" in doc["error"]
    assert [r["index"] for r in doc["requests"]] == [0, 1]
    assert doc["acceptance_length"] is not None
    assert doc["metrics_crosscheck"]["status"] == "unavailable"


def test_model_thinking_and_endpoint_choices(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with VllmStandIn(model="org/served-name", seed=1, chat=False) as server:
        # no chat route: the run falls back to /v1/completions and says so
        assert bench(server.url, out, "--requests", "1", "--max-tokens", "10") == 0
        assert server.records[0].endpoint == "completions"
        assert server.records[0].model == "org/served-name"
        other = tmp_path / "other.json"
        assert bench(server.url, other, "--requests", "1", "--model", "other") == 1
    doc = json.loads(out.read_text())
    assert doc["manifest"]["endpoint"] == "completions"
    assert any("/v1/completions" in n for n in doc["notes"])
    with VllmStandIn(seed=1) as server:
        assert bench(server.url, out, "--requests", "1", "--max-tokens", "10", "--no-thinking",
                     "--force") == 0  # fmt: skip
        assert server.records[0].enable_thinking is False


def test_manifest_reads_status_json(tmp_path: Path) -> None:
    status = tmp_path / "status.json"
    out = tmp_path / "r.json"
    with VllmStandIn(seed=1) as server:
        # the status of this server (its URL and model: bench run checks them)
        status.write_text(
            json.dumps(
                {
                    "url": server.url,
                    "model": server.model,
                    "j0": "on",
                    "identity": "article",
                    "speculative_config": {"method": "dflash", "num_speculative_tokens": 15},
                }
            )
        )
        assert (
            bench(
                server.url,
                out,
                "--requests",
                "1",
                "--max-tokens",
                "10",
                "--status-json",
                str(status),
            )
            == 0
        )
    m = json.loads(out.read_text())["manifest"]
    assert m["j0"] == "on" and m["overlay_identity"] == "article"
    assert m["speculative_config"]["num_speculative_tokens"] == 15
    assert m["server"]["vllm_version"] == "0.33.0"
    assert m["max_model_len"] == 40960
    assert len(m["dataset"]["sha256"]) == 64
    assert m["drafter"]["revision"]


def test_the_client_counts_the_tokens_the_server_wrote(tmp_path: Path) -> None:
    """The decode figures' inputs: the client counts exactly the tokens the server wrote, one
    chunk per engine step, and records its own parsing time. How close its tok/s is to the
    server's (and how small that parsing time is) is a timing, measured by
    scripts/bench_overheads.py and quoted in docs/bench.md, not asserted here."""
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=7, seed=5, step_delay=0.001) as server:
        assert bench(server.url, out, "--requests", "2", "--max-tokens", "400") == 0
        records = list(server.records)
    doc = json.loads(out.read_text())
    assert [e["output_tokens"] for e in doc["requests"]] == [r.output_tokens for r in records]
    assert [e["num_chunks"] for e in doc["requests"]] == [
        1 + len(r.per_step_accepted) for r in records
    ]
    assert all(e["decode_s"] > 0 and e["client_time_s"] > 0 for e in doc["requests"])
    assert 0 < doc["summary"]["client_time_fraction"] < 1


def test_the_result_document_reads_back_as_written(tmp_path: Path) -> None:
    """results.BenchResult owns FILE.json: what a run wrote reads back (from_json) and writes
    out (to_json) to the same bytes, and `j0 bench report` reads it through the same type."""
    from j0.bench.result.results import BenchResult, read_result

    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=7, seed=3, accept_prob=0.7) as server:
        assert bench(server.url, out, "--requests", "2", "--max-tokens", "40", "--warmup", "1") == 0
    text = out.read_text()
    result = read_result(out)
    assert result.to_text() == text
    assert BenchResult.from_json(json.loads(text)).to_json() == json.loads(text)
    assert list(result.to_json()) == list(json.loads(text))
    assert (
        result.complete is True
        and len(result.requests) == 2
        and result.warmup
        == {
            "requests": 1,
            "ok": 1,
        }
    )


def test_seed_gives_each_prompt_its_own_sampling_seed(tmp_path: Path) -> None:
    """--temperature 0.7 --seed 5: every request is sent with the temperature and a seed made
    from 5 and its prompt's id, the same prompt the same seed in a second run, and the seed is in
    the result's options. Seen failing before: bench run had no --seed, so a sampled run could
    not be paired prompt by prompt with the same randomness."""
    from j0.measure.pairing import request_seed

    sent: list[list[tuple[Any, Any]]] = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.json"
        with VllmStandIn(num_spec_tokens=7, seed=1) as server:
            args = ("--requests", "3", "--max-tokens", "8", "--temperature", "0.7", "--seed", "5")
            assert bench(server.url, out, *args) == 0
            sent.append([(r.temperature, r.seed) for r in server.records])
        doc = json.loads(out.read_text())
        assert doc["manifest"]["options"]["seed"] == 5
    ids = [e["prompt_id"] for e in json.loads((tmp_path / "a.json").read_text())["requests"]]
    seeds = {request_seed(5, i) for i in ids}
    assert len(seeds) == 3 and all(0 <= s < 2**31 for s in seeds)
    assert {seed for _, seed in sent[0]} == seeds
    assert sorted(sent[0], key=str) == sorted(sent[1], key=str)
    assert {t for t, _ in sent[0]} == {0.7}
