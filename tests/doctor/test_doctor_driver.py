"""`j0 doctor` judges the host against the image it will run: the NVIDIA driver against the
image's CUDA (gpu-driver), and the GPU's memory against the article's RTX PRO 6000 Blackwell
(article-gpu).

The GPU is what `nvidia-smi` says, through the same query and parser doctor uses on a real host
(j0.doctor.gpu): the stand-in is a small executable `nvidia-smi` put on a PATH of the test's own
tmp folder (tests/doctor/doctor_env.py's Host: a wrapper running tests/doctor/bin/nvidia-smi,
which answers `--query-gpu=... --format=csv,noheader,nounits` in nvidia-smi's documented CSV
format for the GPUs the test gives). That is a fair stand-in: doctor runs the program by name
and reads only its stdout and exit code. Docker is the stand-in of tests/doctor/bin/docker; the
image's manifest comes from its `docker run ... cat /opt/j0/manifest.json`.

The drivers' minimum versions are CUDA's (CUDA Toolkit Release Notes' minimum-driver table:
13.0 needs 580.65.06 on Linux, 12.9 575.51.03; minor version compatibility: 12.x on 525.60.13 or
later), typed here, not read from the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from doctor_env import H200, Host

from j0.cli import main
from j0.pins import Pins

GIB = 1 << 30
MIB = 1 << 20
COMPOSE_IMAGE = "j0/vllm-openai:compose"
# GPUs in nvidia-smi's shape (MiB). The memory figures are of the kind nvidia-smi reports (a
# little under the nominal size), not measurements; the names are nvidia-smi's.
RTX_PRO_6000 = {
    "index": 0,
    "name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    "memory.total": 97887,
    "memory.used": 0,
    "memory.free": 97280,
    "driver_version": "580.95.05",
}
RTX_PRO_6000_SERVER = {**RTX_PRO_6000, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition"}
H100 = {**H200, "name": "NVIDIA H100 80GB HBM3", "memory.total": 81559, "memory.free": 81000}


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict[str, str]]]:
    code = main(["doctor", "--json"])
    return code, {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}


def on_host(host: Host, pins: Pins, gpu: dict[str, Any], **docker: Any) -> None:
    """Docker with everything, the route's base image here, the Hub not asked."""
    images = {pins.vllm_image_fallback: "", **docker.pop("images", {})}
    host.docker(images=images, **docker)
    host.gpus(gpu)
    host.monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.parametrize(
    ("gpu", "driver", "status", "words"),
    [
        (H200, "580.159.04", "ok", ["CUDA 13.0 needs 580.65.06 or later on Linux"]),
        (H200, "580.65.06", "ok", ["CUDA 13.0 needs 580.65.06 or later on Linux"]),
        (RTX_PRO_6000, "610.43.02", "ok", ["CUDA 13.0 needs 580.65.06 or later"]),
        (RTX_PRO_6000, "570.124.06", "fail", ["too old for it", "580.65.06 or later"]),
        (H200, "575.51.03", "fail", ["too old for it"]),
        (H100, "550.54.15", "fail", ["too old for it"]),
        (RTX_PRO_6000_SERVER, "570.124.06", "fail", ["too old for it"]),
    ],
)
def test_the_driver_against_the_images_cuda_13(
    host: Host,
    pins: Pins,
    capsys: pytest.CaptureFixture[str],
    gpu: dict[str, Any],
    driver: str,
    status: str,
    words: list[str],
) -> None:
    """The image not built yet: its CUDA is the pins' (VLLM_CUDA=13.0, vLLM 0.33.0's)."""
    assert pins.cuda == "13.0"
    on_host(host, pins, {**gpu, "driver_version": driver})
    code, checks = doctor(capsys)
    check = checks["gpu-driver"]
    assert check["status"] == status, check
    assert check["detail"].startswith(f"driver {driver}, the image's CUDA 13.0 (VLLM_CUDA in ")
    assert f"{COMPOSE_IMAGE} not built yet)" in check["detail"]
    for text in words:
        assert text in check["detail"], text
    if status == "fail":
        assert code == 1
        assert check["fix"].startswith("install NVIDIA driver 580.65.06 or later (the R580 branch")
        assert f"vLLM on the {gpu['name']} would stop at start" in check["detail"]


def test_forward_compatibility_is_named_where_the_gpu_and_the_driver_allow_it(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    """CUDA 13 on an older driver: on a data-center GPU with an R570 (or R535) driver, the fix
    names vLLM's switch for CUDA's forward-compatibility package; on an R550 one it says the
    package does not support that branch; on a workstation RTX PRO 6000 that NVIDIA supports it
    on data-center GPUs only; on the RTX card's server edition that it depends on NVIDIA's
    list."""
    switch = "VLLM_ENABLE_CUDA_COMPATIBILITY=1 in the server's environment (a compose.override"
    on_host(host, pins, {**H200, "driver_version": "570.124.06"})
    fix = doctor(capsys)[1]["gpu-driver"]["fix"]
    assert "or, without a new driver: CUDA's forward-compatibility package" in fix
    assert "which vLLM's image carries" in fix and switch in fix
    on_host(host, pins, {**H100, "driver_version": "535.247.01"})
    assert switch in doctor(capsys)[1]["gpu-driver"]["fix"]
    on_host(host, pins, {**H100, "driver_version": "550.54.15"})
    fix = doctor(capsys)[1]["gpu-driver"]["fix"]
    assert "supports R535 and R570 host drivers for CUDA 13, not R550" in fix
    assert switch not in fix
    on_host(host, pins, {**RTX_PRO_6000, "driver_version": "570.124.06"})
    fix = doctor(capsys)[1]["gpu-driver"]["fix"]
    assert "is not a way out here: NVIDIA supports it on data-center GPUs and select NGC " in fix
    assert "not the NVIDIA RTX PRO 6000 Blackwell Workstation Edition" in fix
    assert switch not in fix
    on_host(host, pins, {**RTX_PRO_6000_SERVER, "driver_version": "570.124.06"})
    fix = doctor(capsys)[1]["gpu-driver"]["fix"]
    assert "if NVIDIA lists this RTX card as NGC Server Ready" in fix and switch in fix


@pytest.mark.parametrize(
    ("driver", "status", "words"),
    [
        ("575.51.03", "ok", "CUDA 12.9 needs 575.51.03 or later on Linux"),
        ("580.95.05", "ok", "CUDA 12.9 needs 575.51.03 or later on Linux"),
        ("570.124.06", "warn", "by minor version compatibility, with a limited feature set"),
        ("520.61.05", "fail", "too old for it: CUDA 12.9 needs 575.51.03 or later"),
    ],
)
def test_the_built_images_manifest_gives_its_cuda(
    host: Host,
    pins: Pins,
    capsys: pytest.CaptureFixture[str],
    driver: str,
    status: str,
    words: str,
) -> None:
    """The image compose runs is here: its /opt/j0/manifest.json (the engine step's torch_cuda
    and wheel variant) is what is judged, not the pin: a base whose torch is CUDA 12.9."""
    manifest = {"torch_cuda": "12.9", "wheel_variant": "cu129", "engine_route": "wheel"}
    on_host(
        host,
        pins,
        {**H200, "driver_version": driver},
        images={COMPOSE_IMAGE: ""},
        manifests={COMPOSE_IMAGE: manifest},
    )
    _, checks = doctor(capsys)
    check = checks["gpu-driver"]
    assert check["status"] == status, check
    source = f"({COMPOSE_IMAGE}'s /opt/j0/manifest.json, wheel variant cu129)"
    assert check["detail"].startswith(f"driver {driver}, the image's CUDA 12.9 {source}")
    assert words in check["detail"]
    if status == "warn":
        assert check["fix"] == "a driver of 575.51.03 or later runs it in full"
    run = ["run", "--rm", "--network", "none", "--entrypoint", "cat", COMPOSE_IMAGE]
    assert [*run, "/opt/j0/manifest.json"] in host.docker_calls()


def test_an_image_without_a_cuda_in_its_manifest_falls_back_to_the_pins(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    """An image built before the manifest had torch_cuda (or not by j0): the pin, said so; a CPU
    torch's image needs no CUDA; a driver nvidia-smi cannot tell is a warning."""
    on_host(host, pins, H200, images={COMPOSE_IMAGE: ""}, manifests={COMPOSE_IMAGE: {}})
    detail = doctor(capsys)[1]["gpu-driver"]["detail"]
    assert f"(VLLM_CUDA in overlay/pins.env; {COMPOSE_IMAGE} its manifest names no" in detail
    on_host(
        host,
        pins,
        H200,
        images={COMPOSE_IMAGE: ""},
        manifests={COMPOSE_IMAGE: {"torch_cuda": None}},
    )
    check = doctor(capsys)[1]["gpu-driver"]
    assert check["status"] == "ok" and "the image's torch is a CPU build" in check["detail"]
    on_host(host, pins, {**H200, "driver_version": "[N/A]"})
    check = doctor(capsys)[1]["gpu-driver"]
    assert check["status"] == "warn" and "driver '[N/A]' unknown" in check["detail"]


def test_no_gpu_no_driver_check(host: Host, pins: Pins, capsys: pytest.CaptureFixture[str]) -> None:
    on_host(host, pins, H200)
    host.gpus()  # nvidia-smi lists no GPU
    code, checks = doctor(capsys)
    assert code == 1 and checks["gpu"]["status"] == "fail"
    assert "gpu-driver" not in checks and "article-gpu" not in checks


# --- the GPU's memory against the article's RTX PRO 6000 Blackwell (96 GB) ----------------------


def test_the_articles_gpu_and_larger_ones_are_ok(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    for gpu in (RTX_PRO_6000, H200):
        on_host(host, pins, gpu)
        check = doctor(capsys)[1]["article-gpu"]
        assert check["status"] == "ok", check
        assert (
            "has the memory of the article's GPU, one RTX PRO 6000 Blackwell (96 GB)"
            in (check["detail"])
        )


def test_a_smaller_gpu_is_told_how_much_shorter_its_context_is(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    """An H100 80 GB, the Hub not asked (so the README's estimates: 27B x 2 bytes, the drafter 3
    GB, the assumed dense layout of 64 + 5 layers, 8 KV heads of 128, BF16): the KV cache of 4
    requests holds a shorter context than on the article's 96 GiB, worked out by hand as
    gpu-memory's estimate does (0.90 of the memory, less weights, drafter and the 4 GiB
    allowance; per token the KV of 4 requests and J0's 4 x 4 bytes)."""
    on_host(host, pins, H100)
    _, checks = doctor(capsys)
    check = checks["article-gpu"]
    assert check["status"] == "warn", check  # a warning: the server runs, with a shorter context
    per_token = 2 * 8 * 128 * 2 * (64 + 5) * 4 + 4 * 4

    def longest(total: float) -> int:
        return int((total * 0.9 - 54e9 - 3e9 - 4 * GIB) // per_token)

    here, there = longest(81559 * MIB), longest(96 * GIB)
    assert here < there
    detail = check["detail"]
    assert detail.startswith("GPU 0 (NVIDIA H100 80GB HBM3, 79.6 GiB) has less memory than the ")
    assert f"holds 4 requests of about {here} tokens each, against about {there} on the" in detail
    assert "a GPU of 96 GB or more (the RTX PRO 6000 Blackwell, an H200)" in check["fix"]
