"""`j0 bench run --status-json FILE` with FILE what `j0 status --json` really printed against our
vLLM stand-in (tests/servers/vllm/server.py): J0 on/off, the overlay identity and the speculative
config read from it, and into the run's manifest."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bench.recorded_results import RECORDED
from doctor.doctor_env import Host
from j0.bench.result import manifest
from j0.cli import main
from j0.errors import INPUT_LACKS, J0Error
from servers.vllm.server import VllmStandIn
from status.status_logs import SPEC_15, article_log, status_json

ROOT = Path(__file__).resolve().parents[2]


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
    assert found.file == str(on) and found.status is not None
    assert found.status.to_json() == json.loads(on.read_text())
    assert found.j0_on is True and found.overlay_identity == "article"
    assert found.speculative_config == json.loads(SPEC_15)
    assert manifest.read_status(off).j0_on is False
    # no log: j0 status knows none of the three, and neither does the run
    nothing = manifest.read_status(none)
    assert (nothing.ran, nothing.overlay_identity, nothing.speculative_config) == (None, None, None)


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
    assert str(raised.value).startswith(f"--status-json {path}: 'j0' is {{\"on\": true}}, expected")
    assert raised.value.exit_code == INPUT_LACKS


def test_the_recorded_manifests_read_back_and_are_written_as_they_were() -> None:
    """Every result recorded on the H200 (docs/results/): its manifest read through the type
    (SetupManifest.from_json, via read_result) and written again is the file's own object, key
    for key and in its order; the file itself is the reference."""
    from j0.bench.result.results import read_result

    assert len(RECORDED) >= 5
    for path in RECORDED:
        written = json.loads(path.read_text())["manifest"]
        again = read_result(path).manifest.to_json()
        assert list(again.items()) == list(written.items()), path


def test_the_writer_writes_every_key_of_the_type(host: Host, tmp_path: Path) -> None:
    """A real run against the stand-in: the manifest holds SetupManifest's keys, in its order."""
    out = tmp_path / "r.json"
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        argv = ["bench", "run", "--url", vllm.url, "--out", str(out), "--no-progress"]
        assert main([*argv, "--requests", "1", "--max-tokens", "10"]) == 0
    declared = [f.name for f in dataclasses.fields(manifest.SetupManifest)]
    assert list(json.loads(out.read_text())["manifest"]) == declared[:-2]  # not present, extra


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("server", ["http://x"], "'server' is [\"http://x\"], expected an object or null"),
        ("max_model_len", "40960", "'max_model_len' is \"40960\", expected a whole number or null"),
        ("thinking", 1, "'thinking' is 1, expected true or false or null"),
    ],
)
def test_a_manifest_key_of_another_kind_is_refused_naming_the_file(
    tmp_path: Path, key: str, value: object, said: str
) -> None:
    from j0.bench.result.results import read_result

    doc = json.loads(RECORDED[0].read_text())
    doc["manifest"][key] = value
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(J0Error) as raised:
        read_result(path)
    assert str(raised.value) == f"{path}: key 'manifest': {said}"
    assert raised.value.exit_code == INPUT_LACKS
