"""The prefix-cache run's sender (j0.engine_check.prefix_requests, used by
scripts/prefix-safe-h200.sh) against our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py:
completions with `return_token_ids`, prefix caching counted by 16-token blocks, per-request
spec-decode metrics). No GPU server can be reached here."""

from __future__ import annotations

import json
from pathlib import Path

from j0.engine_check import prefix_requests
from servers.vllm.server import VllmStandIn


def test_text_prompts_in_the_given_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(" ".join(f"alpha{i}" for i in range(100)))
    b.write_text(" ".join(f"beta{i}" for i in range(100)))
    out = tmp_path / "out"
    with VllmStandIn(model="target", num_spec_tokens=7, seed=3) as vllm:
        where = ["--url", vllm.url, "--model", "target", "--out", str(out)]
        what = ["--order", "A,A,B,A", "--text-a", str(a), "--text-b", str(b), "--max-tokens", "16"]
        code = prefix_requests.main([*where, *what])
        records = list(vllm.records)
    assert code == 0
    assert [r.endpoint for r in records] == ["completions"] * 4 and not any(
        r.stream for r in records
    )
    assert [r.max_tokens for r in records] == [16] * 4
    # One at a time, in the order given: what the server cached is what each request reports.
    summary = json.loads((out / "summary.json").read_text())
    assert [row["name"] for row in summary] == ["0:A", "1:A", "2:B", "3:A"]
    # The stand-in caches whole 16-token blocks of prompts it has seen: A again is a hit, B not.
    assert summary[0]["cached_tokens"] == 0 and summary[2]["cached_tokens"] == 0
    assert summary[1]["cached_tokens"] == summary[3]["cached_tokens"] == 96
    assert [row["cached_tokens"] for row in summary] == [r.cached_tokens for r in records]
    assert [row["per_step_accepted"] for row in summary] == [r.per_step_accepted for r in records]
    assert all(row["num_draft_tokens"] for row in summary)
    responses = json.loads((out / "responses.json").read_text())
    assert len(responses) == 4 and responses[0]["response"]["choices"][0]["token_ids"]
    prompts = json.loads((out / "prompts.json").read_text())
    assert [p["name"] for p in prompts] == ["0:A", "1:A", "2:B", "3:A"]


def test_token_prompts_are_seeded_and_in_the_vocab_range() -> None:
    import argparse

    args = argparse.Namespace(text_a=None, text_b=None, vocab="4,4000", seed=24, tokens=600)
    first, again = prefix_requests.prompts(args), prefix_requests.prompts(args)
    assert first == again and first["A"] != first["B"]
    assert len(first["A"]) == 600 and all(4 <= t < 4000 for t in first["A"] + first["B"])
