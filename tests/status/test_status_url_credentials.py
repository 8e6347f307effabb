"""`j0 status --url http://user:password@host` never prints the password, in text or `--json`,
and still asks the server (the credentials as a Basic header, to that server only). The server is
our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py) and a stand-in log as `j0 serve`
writes it; before, the URL was printed whole and urllib took `user:s3cret@127.0.0.1` for the
host, so no server answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doctor.doctor_env import Host
from j0.cli import main
from servers.base import free_port
from servers.vllm.server import VllmStandIn
from status.status_logs import article_log


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def secret_url(url: str) -> str:
    return url.replace("http://", "http://user:s3cret@", 1)


def test_status_json_and_text_mask_the_url_credentials(
    host: Host, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(article_log())
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        code = main(["status", "--url", secret_url(vllm.url), "--log", str(log), "--json"])
        shown = capsys.readouterr()
        value = json.loads(shown.out)
        assert value["url"] == vllm.url.replace("http://", "http://***@")
        assert value["healthy"] is True and value["model"] == "Qwen/Qwen3.8-27B"
        assert code == 0, value["reasons"]
        assert main(["status", "--url", secret_url(vllm.url), "--log", str(log)]) == 0
        text = capsys.readouterr()
    for out in (shown, text):
        assert "s3cret" not in out.out + out.err and "user:" not in out.out + out.err
    assert text.out.startswith(f"==> j0 status of {vllm.url.replace('http://', 'http://***@')} ")


def test_no_server_at_a_url_with_credentials(
    host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["status", "--url", secret_url(f"http://127.0.0.1:{free_port()}"), "--json"])
    out = capsys.readouterr()
    assert "s3cret" not in out.out + out.err
    assert json.loads(out.out)["url"].startswith("http://***@127.0.0.1:")
