"""`j0 doctor --plugin`: the host for compose.plugin.yaml (docs/plugin.md). Docker and nvidia-smi
are tests/doctor/doctor_env.py's stand-ins; the pins and the 0.34.0 patches are a copy of the
checkout's (J0_HOME). The plugin route's own checks: its switches (what `j0 serve` would refuse,
said before a build), the pins of a proven release with their patch files intact, and vLLM's
release image (V0340_IMAGE) present or pullable; the wheel route's checks are not made."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from doctor_env import H200, Host

from j0.cli import main
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    host = Host(tmp_path, monkeypatch)
    host.gpus(H200)
    shutil.copytree(
        ROOT / "overlay" / "vllm-0.34.0",
        host.home / "overlay" / "vllm-0.34.0",
        ignore=shutil.ignore_patterns("article", "prefix-safe", "audit"),
    )
    for name in ("compose.plugin.yaml", "compose.plugin.serve.yaml"):
        shutil.copy(ROOT / name, host.home / name)
    for knob in ("J0_ON", "J0_VARIANT", "V0340_IMAGE", "J0_PLUGIN_IMAGE"):
        monkeypatch.delenv(knob, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return host


def checks(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    main(["doctor", "--plugin", "--json"])
    found = json.loads(capsys.readouterr().out)
    return {c["name"]: c for c in found["checks"]}


def test_a_host_with_vllms_release_image(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    image = pins.values["V0340_IMAGE"]
    host.docker(images={image: f"{image.split(':')[0]}@sha256:{'1' * 64}"})
    found = checks(capsys)
    assert found["plugin-switches"]["status"] == "ok"
    assert found["plugin-pins"]["status"] == "ok"
    assert "proven: vLLM 0.34.0 (commit 62d4bc3c7" in found["plugin-pins"]["detail"]
    assert found["base-image"]["status"] == "ok"
    assert f"{image} is present locally" in found["base-image"]["detail"]
    assert "engine-route" not in found and "wheel-index" not in found


def test_what_j0_serve_would_refuse_is_said_first(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    host.docker(images={}, registry={pins.values["V0340_IMAGE"]: "found"})
    monkeypatch.setenv("J0_ON", "1")
    monkeypatch.setenv("J0_VARIANT", "prefix_safe")
    found = checks(capsys)
    switches = found["plugin-switches"]
    assert switches["status"] == "fail"
    assert "J0_ON='1'" in switches["detail"] and "expected true or false" in switches["detail"]
    assert "J0_VARIANT='prefix_safe'" in switches["detail"]
    assert found["base-image"]["status"] == "ok"  # pullable


def test_a_changed_patch_and_a_missing_image(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    host.docker(images={}, registry={pins.values["V0340_IMAGE"]: "missing"})
    patch = host.home / pins.values["V0340_PATCH_FILE"]
    patch.write_text(patch.read_text() + "\n")
    found = checks(capsys)
    assert found["plugin-pins"]["status"] == "fail"
    assert "V0340_PATCH_FILE=overlay/vllm-0.34.0/jetspec-j0.patch" in found["plugin-pins"]["detail"]
    assert found["base-image"]["status"] == "fail"
    assert "lacks it" in found["base-image"]["detail"]
