"""`j0 status` against our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py: /health,
/v1/models, /metrics as vLLM 0.33.0 writes them, completions) and server logs: the real engine's
recorded logs (tests/status/data) and logs written as our entrypoint and `j0 serve` write them.
/metrics is parsed by the real prometheus_client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from doctor.doctor_env import Host
from j0.article.identity import Identity
from j0.cli import main
from j0.engine.server import server_log
from j0.engine.server.speculator_identity import identity_line
from j0.engine.source.vllm_version import VllmVersion
from j0.pins import Pins
from j0.status import server_facts
from servers.base import free_port
from servers.vllm.server import VllmStandIn
from status.status_logs import ARTICLE_SHA, BASE_SHA, INSTALLED, SPEC_15, article_log

DATA = Path(__file__).resolve().parent / "data"


def status(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["status", "--url", url, "--json", *args])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def test_the_articles_setup(host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log())
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        code, value = status(capsys, vllm.url, "--log", str(log))
        probes = list(vllm.records)
    assert code == 0, value["reasons"]
    assert value["article_setup"] is True and value["reasons"] == []
    assert value["healthy"] is True
    assert (value["model"], value["max_model_len"]) == ("Qwen/Qwen3.8-27B", 40960)
    assert value["j0"] == "on" and value["pool_shape"] == [4, 40960]
    assert value["draft_kv_dtypes"] == ["auto"] and value["spec_kv_cache_dtype"] == "auto"
    assert value["identity"] == "article" and value["speculator_sha256"] == ARTICLE_SHA
    assert value["vllm_commit"] == "c50aca144"
    assert value["num_speculative_tokens"] == 15
    assert value["speculative_config"] == json.loads(SPEC_15)
    # The probe: one short request; the counters moved by what the server did for it.
    assert len(probes) == 1 and probes[0].endpoint == "completions"
    assert value["spec_decode_counters"] is True
    assert value["spec_decode_drafts_delta"] == len(probes[0].per_step_drafted)
    assert value["spec_decode_draft_tokens_delta"] == sum(probes[0].per_step_drafted)
    assert value["spec_decode_accepted_delta"] == sum(probes[0].per_step_accepted)
    flat = {k: v for k, v in value.items() if isinstance(v, dict | list)}
    assert set(flat) == {
        "pool_shape",
        "draft_kv_dtypes",
        "speculative_config",
        "reasons",
        "j0_state",
    }
    assert value["j0_state"] == {
        "asked": "unknown",
        "ran": "on",
        "why": "identity=article, DFLASH_CTX_NOISE=1",
        "identity": "article",
        "seen": True,
    }


def test_text_ends_with_the_verdict(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log(noise=0, pool="(1, 1)"))
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        assert main(["status", "--url", vllm.url, "--log", str(log)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"==> j0 status of {vllm.url} (log: {log})"
    assert any(x.startswith("ok    j0 ") and "off: history pool=(1, 1)" in x for x in lines)
    assert lines[-1] == "==> the article's setup, J0 off (the baseline)"


def test_the_fallback_engine_is_not_the_articles(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log(commit="4ba787ec9 (not the pinned c50aca14)"))
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        code, value = status(capsys, vllm.url, "--log", str(log))
        assert main(["status", "--url", vllm.url, "--log", str(log), "--no-probe"]) == 1
    assert code == 1 and value["article_setup"] is False
    assert value["vllm_commit"] == "4ba787ec9"
    assert value["reasons"] == [
        "vLLM commit 4ba787ec9 (the 0.33.0 release, VLLM_IMAGE_FALLBACK) is not the pinned "
        "c50aca14: the engine differs from the article's"
    ]
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("==> NOT the article's setup (J0 on): vLLM commit 4ba787ec9")


def test_the_real_engines_log(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM 0.33.0's own log with the patch (no j0 image there: no identity line)."""
    with VllmStandIn(max_model_len=2048, num_spec_tokens=7) as vllm:
        code, on = status(capsys, vllm.url, "--log", str(DATA / "server-j0-on.log"))
        _, off = status(capsys, vllm.url, "--log", str(DATA / "server-j0-off.log"))
    assert code == 1
    assert on["j0"] == "on" and on["pool_shape"] == [4, 2048]
    assert off["j0"] == "off" and off["pool_shape"] == [1, 1]
    assert on["draft_kv_dtypes"] == ["auto"] and on["spec_kv_cache_dtype"] == "auto"
    assert on["max_num_seqs"] == 4 and on["vllm_version"] == "0.33.0"
    assert on["speculative_config"] == {
        "method": "dflash",
        "model": "/models/draft",
        "num_speculative_tokens": 7,
        "kv_cache_dtype": "auto",
    }
    assert on["identity"] is None and on["vllm_commit"] is None
    assert on["reasons"] == ["which speculator.py runs is not known", "the vLLM commit is unknown"]


def test_what_is_not_the_articles_is_named(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    spec = SPEC_15.replace("15", "9").replace('"auto"', '"fp8"')
    log.write_text(
        article_log(
            sha=BASE_SHA, kind="base (the unpatched vLLM base)", pool="(8, 40960)", spec=spec
        ).replace(
            "DFLASH_DRAFT_KV_DTYPES=['auto'] spec_kv_cache_dtype=auto",
            "DFLASH_DRAFT_KV_DTYPES=['fp8_e4m3'] spec_kv_cache_dtype=fp8",
        )
    )
    with VllmStandIn(max_model_len=40960, num_spec_tokens=9, model="other/model") as vllm:
        code, value = status(capsys, vllm.url, "--log", str(log))
    assert code == 1
    assert value["reasons"] == [
        "serves other/model, not the article's target Qwen/Qwen3.8-27B",
        "speculator.py is identity=base, not the article's file",
        "J0's history is (8, 40960), not (4, 40960)",
        "the draft KV cache is DFLASH_DRAFT_KV_DTYPES=['fp8_e4m3'] spec_kv_cache_dtype=fp8, "
        'not "auto"',
        "num_speculative_tokens=9: the article ran 15 and 7",
        "--max-num-seqs 8, the article ran 4",
    ]


def test_counters_that_do_not_move(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A probe that ends at its first token drafts nothing: the counters stay where they were."""
    log = tmp_path / "server.log"
    log.write_text(article_log())
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, output_len=1) as vllm:
        code, value = status(capsys, vllm.url, "--log", str(log))
    assert code == 1 and value["spec_decode_drafts_delta"] == 0
    assert value["reasons"] == ["the probe request drafted nothing"]


def test_no_server_and_no_log(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    code, value = status(capsys, f"http://127.0.0.1:{port}")
    assert code == 1 and value["healthy"] is False
    assert value["reasons"][0].startswith(f"no server answers at http://127.0.0.1:{port}")
    assert "which speculator.py and vLLM run is not known (no log)" in value["reasons"]
    assert value["j0"] is None and value["article_setup"] is False


def test_compose_reads_docker_compose_logs(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log())
    host.docker(compose_logs=str(log))
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        code, value = status(capsys, vllm.url, "--compose")
    assert code == 0 and value["log_source"] == "docker compose logs server"
    assert ["compose", "-f", str(host.home / "compose.yaml"), "logs", "--no-color", "server"] in (
        host.docker_calls()
    )


def test_the_port_comes_from_the_compose_knob(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with VllmStandIn(max_model_len=40960) as vllm:
        port = vllm.url.rsplit(":", 1)[1]
        (host.home / ".env").write_text(f"PORT={port}\n")
        assert main(["status", "--json", "--no-probe"]) == 1
    value = json.loads(capsys.readouterr().out)
    assert value["url"] == f"http://127.0.0.1:{port}" and value["healthy"] is True


def test_the_entrypoints_line_is_what_status_reads(pins: Pins) -> None:
    """The line `j0 image identity --prefix j0-entrypoint` writes, read back."""
    engine = VllmVersion("/x/vllm/_version.py", "0.33.0", "4ba787ec9")
    path = Path(INSTALLED) / "speculator.py"
    line = "j0-entrypoint: " + identity_line(path, Identity("article", ARTICLE_SHA), engine, pins)
    facts = server_log.parse("server-1  | " + line + "\n", "test")
    assert (facts.identity, facts.speculator_sha256) == ("article", ARTICLE_SHA)
    assert (facts.vllm_version, facts.vllm_commit) == ("0.33.0", "4ba787ec9")
    assert facts.speculator_path == str(path)


def test_metrics_of_the_real_engine() -> None:
    """prometheus_client's parser on the real engine's /metrics (typed from the file: 378 drafts
    of 7 tokens, none accepted by the random tiny models)."""
    text = (DATA / "metrics-j0-on.txt").read_text()
    assert server_facts.parse_counters(text) == {
        "drafts": 378.0,
        "draft_tokens": 2646.0,
        "accepted": 0.0,
    }
    assert server_facts.parse_counters("# nothing here\n") == {}


def test_an_api_key_server_needs_the_key_file(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server started with vLLM's --api-key (the stand-in answers /v1 routes 401 without the
    bearer token, as vLLM's middleware does): with --api-key-file the probe goes through."""
    log = tmp_path / "server.log"
    log.write_text(article_log())
    key = tmp_path / "api_key"
    key.write_text("sk-test-123\n")
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, api_key="sk-test-123") as vllm:
        code, value = status(capsys, vllm.url, "--log", str(log), "--api-key-file", str(key))
        probed = len(vllm.records)
        refused, without = status(capsys, vllm.url, "--log", str(log))
        after = len(vllm.records)
    assert code == 0, value["reasons"]
    assert value["model"] == "Qwen/Qwen3.8-27B" and probed == 1
    assert "sk-test-123" not in json.dumps(value)  # the key is never printed
    # Without the key: /v1/models and the probe are refused; nothing was generated.
    assert refused == 1 and without["article_setup"] is False and after == 1
    assert without["model"] is None
    assert any("401, the server wants an API key (--api-key-file)" in r for r in without["reasons"])


def test_a_dead_engine_under_a_running_server_is_not_healthy(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM's /health answers 503 once its engine died (EngineDeadError): no probe is sent."""
    log = tmp_path / "server.log"
    log.write_text(article_log())
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, engine_dead=True) as vllm:
        code, value = status(capsys, vllm.url, "--log", str(log))
        probed = len(vllm.records)
    assert code == 1 and value["healthy"] is False and probed == 0
    assert any("/health 503" in reason for reason in value["reasons"]), value["reasons"]


def test_no_server_leaves_no_empty_fragments(
    host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens on the port: each reason is whole words, none empty, none ending in a
    separator (it once read `no model in /v1/models; ; no /metrics: ;`)."""
    import re

    port = free_port()
    main(["status", "--url", f"http://127.0.0.1:{port}"])
    out = capsys.readouterr().out
    verdict = out.strip().splitlines()[-1]
    assert verdict.startswith("==> NOT the article's setup")
    assert not re.search(r";\s*;|:\s*;|[;:]\s*$", verdict), verdict
    for line in out.splitlines():
        assert not re.search(r"[;:]\s*$", line), line
    assert "no model in /v1/models: not asked, no server answers" in out
    assert "no /metrics: not asked, no server answers" in out
