"""The engine check's verdicts on real evidence: the server logs, responses and /metrics recorded
from vLLM 0.33.0's real engine on an H200 (tests/data/engine-h200-graphs-k15/, CUDA graphs, 15
draft tokens, J0 on and off; this project's own recorded outputs), and tampered copies of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from j0.article.identity import identify
from j0.engine.server.speculator_identity import identity_line
from j0.engine_check import checks
from j0.engine_check.requests import Exchange, parse_sse
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "engine-h200-graphs-k15"


def recorded(mode: str) -> list[Exchange]:
    """The recorded responses (a list per prompt: words, plain, stream_chunks) as Exchanges."""
    data = json.loads((RUN / f"responses-j0-{mode}.json").read_text())
    return [
        Exchange(
            words=d["n"], plain=d["resp"], stream_chunks=parse_sse("\n\n".join(d["stream_chunks"]))
        )
        for d in data
    ]


def log(mode: str) -> str:
    return (RUN / f"server-j0-{mode}.log").read_text()


def test_patch_lines_of_the_real_engine_pass_and_wrong_ones_fail() -> None:
    assert checks.patch_log_lines(log("on"), True, "on", 4, 2048).ok
    assert checks.patch_log_lines(log("off"), False, "off", 4, 2048).ok
    # J0 off's log is not J0 on's, and the other way round
    assert not checks.patch_log_lines(log("off"), True, "on", 4, 2048).ok
    assert not checks.patch_log_lines(log("on"), False, "off", 4, 2048).ok
    # a history of another shape, and a log without the KV-dtype line
    wrong_pool = log("on").replace("pool=(4, 2048)", "pool=(4, 1024)")
    assert "pool=(4, 1024)" in checks.patch_log_lines(wrong_pool, True, "on", 4, 2048).detail
    assert not checks.patch_log_lines(wrong_pool, True, "on", 4, 2048).ok
    no_dtypes = "\n".join(line for line in log("on").splitlines() if "KV_DTYPES" not in line)
    result = checks.patch_log_lines(no_dtypes, True, "on", 4, 2048)
    assert not result.ok and "DFLASH_DRAFT_KV_DTYPES" in result.detail


def test_greedy_outputs_of_the_real_engine_are_identical_and_a_changed_token_is_caught() -> None:
    on, off = recorded("on"), recorded("off")
    result = checks.outputs_identical(on, off)
    assert result.ok, result.detail
    assert on[0].output() == on[0].streamed_output() and len(on[0].output()) == 64
    off[1].plain["choices"][0]["token_ids"][17] += 1
    result = checks.outputs_identical(on, off)
    assert not result.ok and "200-word prompt, plain: token 17 differs" in result.detail


def test_a_changed_streamed_token_is_caught() -> None:
    on, off = recorded("on"), recorded("off")
    chunk = next(
        c for c in off[2].stream_chunks if c.get("choices") and c["choices"][0]["token_ids"]
    )
    chunk["choices"][0]["token_ids"][0] += 1
    assert not checks.outputs_identical(on, off).ok


def test_real_per_request_metrics_equal_the_real_counters() -> None:
    """A fresh server's counters start at 0: /metrics after the requests is the delta."""
    for mode in ("on", "off"):
        metrics = (RUN / f"metrics-j0-{mode}.txt").read_text()
        result = checks.metrics_agree(recorded(mode), "", metrics, mode)
        assert result.ok, result.detail
        # 6 responses x 63 verify steps x 15 draft tokens, nothing accepted (random weights)
        assert "378 drafts, 5670 draft tokens, 0 accepted" in result.detail


def test_counters_that_disagree_with_the_responses_fail() -> None:
    metrics = (RUN / "metrics-j0-on.txt").read_text()
    bumped = re.sub(
        r"(vllm:spec_decode_num_drafts_total\{[^}]*\}) 378\.0", r"\1 379.0", metrics, count=1
    )
    assert bumped != metrics
    result = checks.metrics_agree(recorded("on"), "", bumped, "on")
    assert not result.ok and "num_drafts" in result.detail
    # a response without its metrics is named too
    exchanges = recorded("on")
    del exchanges[0].plain["metrics"]
    result = checks.metrics_agree(exchanges, "", metrics, "on")
    assert not result.ok and "5 of 6 responses" in result.detail


@pytest.mark.parametrize(
    ("data", "kind", "ok"),
    [(b"article", "article", True), (b"base", "base", False), (b"other", "other", False)],
)
def test_identity_line_must_name_the_article_file(
    pins: Pins, base_bytes: bytes, article_file: Path, data: bytes, kind: str, ok: bool
) -> None:
    """The line as `j0 image identity --prefix j0-entrypoint` writes it, for the three files."""
    content = {b"article": article_file.read_bytes(), b"base": base_bytes, b"other": b"# other\n"}[
        data
    ]
    identity = identify(content, pins)
    assert identity.kind == kind
    line = f"j0-entrypoint: {identity_line(Path('/x/speculator.py'), identity)}"
    result = checks.identity(f"noise\n{line}\n(APIServer) INFO ...\n", pins, "on")
    assert result.ok is ok, result.detail


def test_a_log_without_an_identity_line_fails(pins: Pins) -> None:
    result = checks.identity(log("on"), pins, "on")  # run.sh's log: no entrypoint ran
    assert not result.ok and "no `j0-entrypoint" in result.detail
