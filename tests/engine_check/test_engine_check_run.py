"""`j0 engine-check --here` from start to verdict without a GPU: the real orchestration (server
processes, /health, requests, /metrics, `j0 dumps check`, `j0 status`, the report) with
`--server-command` putting bin/vllm_serve_standin.py in the place of `vllm serve`: our vLLM
stand-in server on 127.0.0.1 (tests/servers/vllm_server.py), the patch's log lines as the real
engine prints them, and real recorded engine dumps (tests/data/engine-h200/). The identity line
comes from the real `j0 image identity` over a vLLM folder holding the article's speculator.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from j0.cli import main
from servers.base import free_port

ROOT = Path(__file__).resolve().parents[2]
STANDIN = Path(__file__).resolve().parent / "bin" / "vllm_serve_standin.py"
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"


@pytest.fixture
def article_vllm(tmp_path: Path, article_file: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `vllm` folder first on PYTHONPATH with the article's speculator.py and a version file."""
    site = tmp_path / "site"
    target = site / SPECULATOR
    target.parent.mkdir(parents=True)
    shutil.copy(article_file, target)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "_version.py").write_text(
        "__version__ = version = '0.33.0'\n__commit_id__ = commit_id = 'g4ba787ec9'\n"
    )
    monkeypatch.setenv("PYTHONPATH", f"{site}:{ROOT / 'scripts'}")
    return site


def models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    (folder / "target").mkdir(parents=True)
    (folder / "draft").mkdir()
    return folder


def engine_check(tmp_path: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    code = main(
        [
            "engine-check",
            "--here",
            "--no-gpu",  # the stand-in in the place of vLLM needs none
            "--models",
            str(models(tmp_path)),
            "--server-command",
            f"{sys.executable} {STANDIN}",
            "--port",
            str(free_port()),
            "--startup-timeout",
            "60",
            "--keep",
            str(tmp_path / "kept"),
            "--json",
            str(out),
            *extra,
        ]
    )
    return code, json.loads(out.read_text())


def by_name(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def test_engine_check_passes_on_the_article_setup(tmp_path: Path, article_vllm: Path) -> None:
    code, report = engine_check(tmp_path)
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0 and report["verdict"] == "PASS", failed
    names = by_name(report)
    assert set(names) == {
        "identity (j0-on)",
        "identity (j0-off)",
        "patch log lines (j0-on)",
        "patch log lines (j0-off)",
        "greedy outputs J0 on = off",
        "j0 dumps check (j0-on)",
        "j0 dumps check (j0-off)",
        "per-request metrics = /metrics deltas (j0-on)",
        "per-request metrics = /metrics deltas (j0-off)",
        "j0 status (J0 on)",
    }
    assert "pool=(4, 2048)" in names["patch log lines (j0-on)"]["detail"]
    assert report["status"]["j0"] == "on"
    kept = tmp_path / "kept"
    for name in (
        "server-j0-on.log",
        "server-j0-off.log",
        "responses-j0-on.json",
        "engine-check.json",
    ):
        assert (kept / name).is_file(), name
    assert sorted(p.name for p in (kept / "dumps-j0-on").iterdir())[0] == "step0000.pt"


def test_the_unpatched_base_fails_the_identity_check(
    tmp_path: Path, article_vllm: Path, base_bytes: bytes
) -> None:
    (article_vllm / SPECULATOR).write_bytes(base_bytes)
    code, report = engine_check(tmp_path)
    assert code == 1
    assert not by_name(report)["identity (j0-on)"]["ok"]
    assert "identity=base" in by_name(report)["identity (j0-on)"]["detail"]


def test_a_wrong_history_shape_and_tampered_dumps_fail(
    tmp_path: Path, article_vllm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "tampered"
    shutil.copytree(ROOT / "tests" / "data" / "engine-h200" / "j0-on", tampered)
    import torch

    step = tampered / "step0005.pt"
    data = torch.load(step, weights_only=True)
    data["query_ids"][3] = (int(data["query_ids"][3]) + 1) % 4095
    torch.save(data, step)
    monkeypatch.setenv("STANDIN_DUMPS", str(tampered))
    monkeypatch.setenv("STANDIN_POOL", "(4, 1024)")
    code, report = engine_check(tmp_path)
    names = by_name(report)
    assert code == 1
    assert not names["patch log lines (j0-on)"]["ok"]
    assert not names["j0 dumps check (j0-on)"]["ok"]
    assert names["j0 dumps check (j0-off)"]["ok"]  # J0 off copies its own recorded set


def test_a_server_that_exits_at_start_is_reported_with_its_log(tmp_path: Path) -> None:
    failing = tmp_path / "fail.py"
    failing.write_text(
        "import sys\nprint('CUDA error: no kernel image is available')\nsys.exit(3)\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "j0",
            "engine-check",
            "--here",
            "--no-gpu",  # the stand-in in the place of vLLM needs none
            "--models",
            str(models(tmp_path)),
            "--server-command",
            f"{sys.executable} {failing}",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1
    assert "exited before it was healthy" in result.stderr
    assert "no kernel image is available" in result.stderr


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as refused:  # the parser's range (j0.commands.whole_number)
        main(["engine-check", "--here", "--tokens", "0"])
    assert refused.value.code == 64
    assert main(["engine-check", "--here", "--env", "NOEQUALS"]) == 64
