"""`j0 doctor` with a wheel index mirror whose URL carries credentials
(`WHEEL_INDEX=http://user:password@mirror/{commit}/`): the index is still asked (the credentials
as a Basic header, on the URL without them) and no check's text holds the password. The index is
our PEP 503 stand-in on 127.0.0.1 (tests/servers/wheel_index_server.py), Docker and nvidia-smi the
stand-ins of tests/doctor/doctor_env.py. Before, the URL was printed whole and urllib took
`user:s3cret@127.0.0.1` for the host name ("cannot check from here")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from doctor_env import H200, Host

from j0.cli import main
from j0.pins import Pins
from servers.wheel_index_server import WheelIndexServer
from standin.wheels import make_wheel


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def index(
    pins: Pins, base_bytes: bytes, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WheelIndexServer]:
    wheel = make_wheel(tmp_path_factory.mktemp("wheels"), pins.speculator_relpath, base_bytes)
    with WheelIndexServer() as server:
        server.add(pins.vllm_commit, wheel)
        yield server


def test_a_mirror_with_credentials_is_asked_and_never_shown(
    host: Host, pins: Pins, index: WheelIndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    host.docker(images={pins.vllm_image_fallback: ""}, registry={})
    host.gpus(H200)
    host.monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    secret = index.url.replace("http://", "http://user:s3cret@", 1)
    host.monkeypatch.setenv("WHEEL_INDEX", secret + "/{commit}/")
    main(["doctor", "--json"])
    out = capsys.readouterr()
    assert "s3cret" not in out.out + out.err
    checks = {c["name"]: c for c in json.loads(out.out)["checks"]}
    masked = index.url.replace("http://", "http://***@", 1)
    wheel = checks["wheel-index"]
    assert wheel["status"] == "ok", wheel
    assert f"{masked}/{pins.vllm_commit}/vllm/ lists" in wheel["detail"]
    assert f"wheel from {masked}/{pins.vllm_commit}/" in checks["engine-route"]["detail"]
