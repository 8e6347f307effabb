"""`j0 bench run --status-json FILE`: the status file is checked against the server the bench
talks to, not believed. A status of another server (another URL, model, context length, J0 state
or speculative config than --log shows, or another draft length than the responses report) is
refused, exit 2, naming both values; the status of this server is taken. Real processes: `j0
status --json` and `j0 bench run` in this process against our vLLM stand-ins on 127.0.0.1
(tests/servers/vllm/server.py), one per setup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.test_bench_manifest import status_file
from doctor.doctor_env import Host
from j0.cli import main
from servers.vllm.server import VllmStandIn
from status.status_logs import article_log


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def bench(url: str, out: Path, *extra: str) -> int:
    argv = ["bench", "run", "--url", url, "--out", str(out), "--no-progress", "--requests", "2"]
    return main([*argv, "--max-tokens", "40", "--warmup", "0", *extra])


def test_the_status_of_another_k_is_refused(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: the file says k=15 J0 on (a status of the article's server at this
    very URL), the server the bench measures drafts 7 per step. Before: the manifest said
    k=15, J0 on, exit 0."""
    out = tmp_path / "r.json"
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as first:
        status = status_file(tmp_path, first.url, "k15", article_log())
        port = first.server_address[1]
    with VllmStandIn(port=port, max_model_len=40960, num_spec_tokens=7, seed=1) as seven:
        code = bench(seven.url, out, "--status-json", str(status))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "num_speculative_tokens 15 in the file, the server's responses report 7" in err


@pytest.mark.parametrize("what", ["url", "model", "max_model_len"])
def test_the_status_of_another_server_is_refused_before_any_request(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    """Before: any status file was taken and its setup written into the manifest."""
    out = tmp_path / "r.json"
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as article:
        status = status_file(tmp_path, article.url, "status", article_log())
        theirs = json.loads(status.read_text())
        if what != "url":  # the same URL, another server behind it
            port = article.server_address[1]
    kwargs = {"model": "other/model"} if what == "model" else {}
    if what == "max_model_len":
        kwargs = {"max_model_len": 2048}
    if what == "url":
        with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as other:
            code = bench(other.url, out, "--status-json", str(status))
            ours = other.url
    else:
        with VllmStandIn(port=port, num_spec_tokens=15, seed=1, **kwargs) as other:
            code = bench(other.url, out, "--status-json", str(status))
            ours = other.url
    err = capsys.readouterr().err
    assert code == 2, err
    assert "not the status of the server this bench talks to" in err
    if what == "url":
        assert f"URL {theirs['url']!r} in the file, the bench's {ours!r}" in err
    elif what == "model":
        assert "model 'Qwen/Qwen3.8-27B' in the file, the server serves 'other/model'" in err
    else:
        assert "max_model_len 40960 in the file, the server's 2048" in err
    assert not out.exists()


def test_a_status_whose_j0_state_the_log_contradicts_is_refused(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log(noise=0, pool="(1, 1)"))
    out = tmp_path / "r.json"
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        status = status_file(tmp_path, vllm.url, "on", article_log())
        code = bench(vllm.url, out, "--status-json", str(status), "--log", str(log))
    err = capsys.readouterr().err
    assert code == 2 and f"J0 on in the file, off in --log {log}" in err, err


def test_the_status_of_this_server_is_taken(host: Host, tmp_path: Path) -> None:
    """The control: the same server's status file, exit 0, its setup in the manifest."""
    out = tmp_path / "r.json"
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        status = status_file(tmp_path, vllm.url, "status", article_log())
        assert bench(vllm.url, out, "--status-json", str(status)) == 0
    m = json.loads(out.read_text())["manifest"]
    assert (m["j0"], m["j0_source"]) == ("on", "--status-json")
