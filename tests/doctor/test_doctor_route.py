"""`j0 doctor` on the engine route: which route compose takes (VLLM_ENGINE), what engine it gives,
whether the per-commit wheel index answers for the pinned commit, whether the nightly tag still
exists. The index is our PEP 503 stand-in on 127.0.0.1 (tests/servers/wheel_index_server.py;
wheels.vllm.ai cannot be reached from the test machines), Docker and nvidia-smi the stand-ins of
tests/doctor/doctor_env.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from doctor_env import H200, Host

from j0.cli import main
from j0.pins import Pins
from servers.base import free_port
from servers.wheel_index_server import WheelIndexServer
from standin.wheels import make_wheel


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def index(
    pins: Pins, base_bytes: bytes, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WheelIndexServer]:
    """The commit's wheel in the cu130/ folder (VLLM_CUDA=13.0's), as vLLM's index has it; under
    `cu129-only`, a commit whose index has the cu129/ folder alone; under `root-only`, the wheel
    at the root (vLLM's default variant) with its cu129/ alias and no cu130/; under
    `root-cu129`, the root's wheel named for CUDA 12.9 (`.cu129`)."""
    folder = tmp_path_factory.mktemp("wheels")
    wheel = make_wheel(folder, pins.speculator_relpath, base_bytes)
    labelled = make_wheel(folder, pins.speculator_relpath, base_bytes, version=CU129)
    with WheelIndexServer() as server:
        server.add(pins.vllm_commit, wheel, variant="cu130")
        server.add("cu129-only", wheel, variant="cu129")
        for prefix, root in (("root-only", wheel), ("root-cu129", labelled)):
            server.add(prefix, root)
            server.add(prefix, root, variant="cu129")
        yield server


CU129 = ("0.33.1.dev3+gc50aca144.cu129", "gc50aca144")


def doctor(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    main(["doctor", "--json"])
    return {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}


def on_the_wheel_route(host: Host, pins: Pins, wheel_index: str) -> None:
    """The release image here, the nightly tag gone from the registry, HF offline."""
    host.docker(images={pins.vllm_image_fallback: ""}, registry={})
    host.gpus(H200)
    host.monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    host.monkeypatch.setenv("WHEEL_INDEX", wheel_index)


def test_the_default_route_is_the_wheel_and_the_index_has_the_commit(
    host: Host, pins: Pins, index: WheelIndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    on_the_wheel_route(host, pins, index.url + "/{commit}/")
    checks = doctor(capsys)
    route = checks["engine-route"]
    assert route["status"] == "ok"
    assert f"compose takes route wheel: FROM {pins.vllm_image_fallback}" in route["detail"]
    assert "the article's engine" in route["detail"] and "overlay/pins.env" in route["detail"]
    wheel = checks["wheel-index"]
    assert wheel["status"] == "ok"
    name = index.files[pins.vllm_commit][0].name
    assert f"{index.url}/{pins.vllm_commit}/cu130/vllm/ lists {name}" in wheel["detail"]
    assert "(the folder of the base's torch CUDA, cu130/ for VLLM_CUDA=13.0)" in route["detail"]
    assert checks["base-image"]["status"] == "ok"
    assert "the wheel route's base" in checks["base-image"]["detail"]
    nightly = checks["nightly-tag"]
    assert nightly["status"] == "warn" and "gone from its registry" in nightly["detail"]
    assert pins.vllm_image in nightly["detail"]


def test_an_index_without_the_commit_or_the_cuda_fails_and_an_unreachable_one_warns(
    host: Host, pins: Pins, index: WheelIndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    on_the_wheel_route(host, pins, index.index_url("another-commit"))
    check = doctor(capsys)["wheel-index"]
    assert check["status"] == "fail" and "HTTP 404" in check["detail"]
    assert "VLLM_ENGINE=image" in check["fix"]
    # The commit there, but not for the base's CUDA: no cu130/ folder, the folders named.
    host.monkeypatch.setenv("WHEEL_INDEX", index.index_url("cu129-only"))
    check = doctor(capsys)["wheel-index"]
    assert check["status"] == "fail", check
    assert (
        f"{index.index_url('cu129-only')}: no cu130/ folder, which the base's torch"
        in (check["detail"])
    )
    assert "the index has cu129/" in check["detail"] and "VLLM_ENGINE=image" in check["fix"]
    host.monkeypatch.setenv("WHEEL_INDEX", f"http://127.0.0.1:{free_port()}/{{commit}}/")
    check = doctor(capsys)["wheel-index"]
    assert check["status"] == "warn" and "cannot check from here" in check["detail"]


def test_a_root_without_a_cu130_folder_is_the_builds_to_judge_unless_its_name_says_another_cuda(
    host: Host, pins: Pins, index: WheelIndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """No cu130/ folder, the root's wheel with a cu129/ alias (vLLM's layout while its default
    is CUDA 13.0): ok, naming the root and what the build reads; a root wheel whose file name
    says CUDA 12.9: fails, naming both CUDAs."""
    on_the_wheel_route(host, pins, index.index_url("root-only"))
    check = doctor(capsys)["wheel-index"]
    assert check["status"] == "ok", check
    name = index.files["root-only"][0].name
    assert f"{index.index_url('root-only')}vllm/ lists {name}" in check["detail"]
    assert "the index has no cu130/ folder (it has cu129/), so the root's wheel" in check["detail"]
    assert "the build reads the wheel's CUDA from its METADATA" in check["detail"]
    host.monkeypatch.setenv("WHEEL_INDEX", index.index_url("root-cu129"))
    check = doctor(capsys)["wheel-index"]
    assert check["status"] == "fail", check
    assert (
        "+gc50aca144.cu129-py3-none-any.whl is CUDA 12.9 (its local version label"
        in (check["detail"])
    )
    assert "not CUDA 13.0 (VLLM_CUDA)" in check["detail"] and "VLLM_ENGINE=image" in check["fix"]


def test_the_image_route_says_what_engine_its_base_gives(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    host.docker(images={pins.vllm_image_fallback: ""})
    host.gpus(H200)
    host.monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    host.monkeypatch.setenv("VLLM_ENGINE", "image")
    host.monkeypatch.setenv("VLLM_IMAGE", pins.vllm_image_fallback)
    checks = doctor(capsys)
    detail = checks["engine-route"]["detail"]
    assert f"compose takes route image: FROM {pins.vllm_image_fallback}" in detail
    assert "the release's own engine, commit 4ba787ec9, not the article's c50aca14" in detail
    assert "wheel-index" not in checks and "nightly-tag" not in checks
    host.monkeypatch.setenv("VLLM_ENGINE", "nightly")
    check = doctor(capsys)["engine-route"]
    assert check["status"] == "fail" and "compose knows wheel and image only" in check["detail"]


def test_a_mirror_with_credentials_is_asked_and_never_shown(
    host: Host, pins: Pins, index: WheelIndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`j0 doctor` with a wheel index mirror whose URL carries credentials
    (`WHEEL_INDEX=http://user:password@mirror/{commit}/`): the index is still asked (the
    credentials as a Basic header, on the URL without them) and no check's text holds the
    password. Before, the URL was printed whole and urllib took `user:s3cret@127.0.0.1` for the
    host name ("cannot check from here")."""
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
    assert f"{masked}/{pins.vllm_commit}/cu130/vllm/ lists" in wheel["detail"]
    assert f"wheel from {masked}/{pins.vllm_commit}/" in checks["engine-route"]["detail"]
