"""`j0 bench run --status-json FILE` with FILE what `j0 status --json` really printed against our
vLLM stand-in (tests/servers/vllm/server.py): J0 on/off, the overlay identity and the speculative
config read from it, and into the run's manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from doctor.doctor_env import Host
from j0.bench import manifest
from j0.cli import main
from j0.errors import INPUT_LACKS, J0Error
from servers.vllm.server import VllmStandIn
from status.status_logs import SPEC_15, article_log, status_json


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def status_file(tmp_path: Path, url: str, name: str, log: str | None) -> Path:
    args: list[str] = []
    if log is not None:
        (tmp_path / f"{name}.log").write_text(log)
        args = ["--log", str(tmp_path / f"{name}.log")]
    path = tmp_path / f"{name}.json"
    path.write_text(status_json(url, *args)[1])
    return path


def test_read_status_takes_its_fields_from_a_real_status_file(host: Host, tmp_path: Path) -> None:
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15) as vllm:
        on = status_file(tmp_path, vllm.url, "on", article_log())
        off = status_file(tmp_path, vllm.url, "off", article_log(noise=0, pool="(1, 1)"))
        none = status_file(tmp_path, vllm.url, "none", None)
    found = manifest.read_status(on)
    assert found["file"] == str(on) and found["status"] == json.loads(on.read_text())
    assert found["j0_on"] is True and found["overlay_identity"] == "article"
    assert found["speculative_config"] == json.loads(SPEC_15)
    assert manifest.read_status(off)["j0_on"] is False
    # no log: j0 status knows none of the three, and neither does the run
    assert set(manifest.read_status(none)) == {"file", "status"}


def test_the_run_records_a_real_status_file(host: Host, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        status = status_file(tmp_path, vllm.url, "status", article_log(noise=0, pool="(1, 1)"))
        argv = ["bench", "run", "--url", vllm.url, "--out", str(out), "--no-progress"]
        argv += ["--requests", "1", "--max-tokens", "10", "--status-json", str(status)]
        assert main(argv) == 0
    m = json.loads(out.read_text())["manifest"]
    assert (m["j0"], m["j0_source"], m["overlay_identity"]) == ("off", "--status-json", "article")
    assert m["speculative_config"] == json.loads(SPEC_15)
    assert m["status_json"] == str(status)


def test_a_status_file_of_another_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text(json.dumps({"j0": {"on": True}, "speculator": {"identity": "article"}}))
    with pytest.raises(J0Error) as raised:
        manifest.read_status(path)
    assert str(raised.value).startswith(f"--status-json {path}: 'j0' should be")
    assert raised.value.exit_code == INPUT_LACKS
