"""`j0 doctor`'s base-image check on the default (wheel) route, where the base is the release image
(VLLM_IMAGE_FALLBACK) and the build replaces its vllm by the pinned commit's wheel: its advice
names that knob, never VLLM_IMAGE (the image route's), and never calls the release image the
article's exact engine while saying in the same breath that it is not. Docker is the stand-in of
tests/doctor/doctor_env.py (its registry answers "no such manifest", or cannot be reached).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from doctor_env import H200, Host

from j0.cli import main
from j0.pins import Pins


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    host = Host(tmp_path, monkeypatch)
    host.gpus(H200)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # The index cannot be asked from here: its check warns; the base image is what is looked at.
    monkeypatch.setenv("WHEEL_INDEX", "http://127.0.0.1:9/{commit}/")
    return host


def base_check(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    main(["doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    return checks["base-image"]


@pytest.mark.parametrize("registry", ["missing", "unreachable"])
def test_the_wheel_routes_missing_base_is_advised_by_its_own_knob(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str], registry: str
) -> None:
    host.docker(images={}, registry={}, registry_reachable=registry == "missing")
    check = base_check(capsys)
    release, nightly, commit = pins.vllm_image_fallback, pins.vllm_image, pins.vllm_commit[:8]
    text = check["detail"] + " | " + check["fix"]
    assert check["status"] == "fail", check
    assert f"{release} (the wheel route's base, from VLLM_IMAGE_FALLBACK" in check["detail"]
    # The route's own knob, with a digest or another copy of the release: the engine stays the
    # pinned commit's, since the build replaces the base's vllm.
    assert f"VLLM_IMAGE_FALLBACK={release}@sha256:<digest>" in check["fix"]
    assert f"vLLM commit {commit}'s wheel replaces its vllm" in check["fix"]
    # The image route, named as such, for the nightly tag as it is.
    assert f"VLLM_ENGINE=image with VLLM_IMAGE={nightly}" in check["fix"]
    # Never VLLM_IMAGE for the release, never the release as the article's exact engine.
    assert not re.search(rf"VLLM_IMAGE={re.escape(release)}\b", text), text
    assert not re.search(rf"{re.escape(release)}\S* ?,? the article's exact", text), text
    assert "the rest of the engine is not the article's" not in text, text
    if registry == "unreachable":
        assert "cannot be reached" in check["detail"]
        assert check["fix"].startswith("connect this host to the registry")
