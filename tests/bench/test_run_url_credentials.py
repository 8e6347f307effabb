"""`j0 bench run --url http://user:password@host` writes no password into the result file and
prints none, and still measures the server; the matrix's log line of each run masks it too. The
server is our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py). Before, the URL went into
the manifest whole, and with a bearer key set aiohttp refused the request (a credentials URL and an
Authorization header together)."""

from __future__ import annotations

from pathlib import Path

import pytest

from j0.bench.matrix.settings import PointBench
from j0.cli import main
from servers.vllm.server import VllmStandIn


def secret_url(url: str) -> str:
    return url.replace("http://", "http://user:s3cret@", 1)


@pytest.mark.parametrize("bearer", [None, "the-key"])
def test_the_result_and_the_output_hold_no_url_credentials(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    bearer: str | None,
) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    if bearer:
        monkeypatch.setenv("OPENAI_API_KEY", bearer)
    else:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "result.json"
    with VllmStandIn(num_spec_tokens=5, seed=2, api_key=bearer) as server:
        code = main(
            [
                "bench",
                "run",
                "--url",
                secret_url(server.url),
                "--out",
                str(out),
                "--requests",
                "2",
                "--max-tokens",
                "24",
                "--no-progress",
            ]
        )
        answered = len(server.records)
    printed = capsys.readouterr()
    assert code == 0 and answered >= 2
    text = out.read_text()
    assert "s3cret" not in text and "user:" not in text
    assert "s3cret" not in printed.out + printed.err
    assert f'"url": "{server.url}"' in text  # the manifest names the server, not who logged in


def test_the_matrix_log_line_masks_the_url_credentials(tmp_path: Path) -> None:
    run = PointBench(
        url="http://user:s3cret@10.0.0.7:8000", out=tmp_path / "r.json", label="x", j0=True
    )
    line = " ".join(run.command_line())
    assert "--url http://***@10.0.0.7:8000 " in line and "s3cret" not in line
    assert run.options().url == "http://user:s3cret@10.0.0.7:8000"  # the run itself still has it
