"""`j0 doctor` on hosts made of stand-ins: a PATH holding only our `docker` and `nvidia-smi`
stand-ins (tests/doctor/bin, answering in the real tools' formats) and the real huggingface_hub
client against our Hub look-alike on 127.0.0.1 (tests/servers/hub/server.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from doctor_env import DOCKER_READY, H200, Host

from j0.cli import main
from j0.pins import Pins
from servers.hub.server import (
    FakeCommit,
    FakeRepo,
    HubServer,
    article_repo,
    fake_commit_id,
    safetensors_bytes,
)

TARGET = "Qwen/Qwen3.8-27B"
# A dense Qwen3-32B-like layout (typed here): 64 layers, 8 KV heads of 128, BF16, 40960 tokens.
TARGET_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 5120,
    "num_hidden_layers": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40960,
    "torch_dtype": "bfloat16",
}
TARGET_WEIGHTS = safetensors_bytes("w", 1 << 20, seed=3)
# KV bytes per token: K and V x 8 heads x 128 x 2 bytes, for the target's 64 layers and the
# drafter's 5 (tests/servers/hub/server.py's DRAFTER_CONFIG: 8 KV heads of 128, BF16).
TARGET_KV_PER_TOKEN = 2 * 8 * 128 * 2 * 64
DRAFT_KV_PER_TOKEN = 2 * 8 * 128 * 2 * 5
GIB = 1 << 30
TOKEN = "hf_doctor_test_token_0123456789"


def target_repo() -> FakeRepo:
    files = {
        "config.json": (json.dumps(TARGET_CONFIG, indent=2) + "\n").encode(),
        "model-00001-of-00001.safetensors": TARGET_WEIGHTS,
        "tokenizer.json": b"{}\n",
    }
    commit = FakeCommit(fake_commit_id("", "target"), "target", "2026-10-01T00:00:00Z", None, files)
    return FakeRepo(TARGET, {commit.id: commit}, branches={"main": commit.id})


def drafter_weight_bytes() -> int:
    files = article_repo().commits
    article = next(c for c in files.values() if c.id.startswith("3147a351"))
    return sum(len(v) for k, v in article.files.items() if k.endswith(".safetensors"))


def start_hub(gated: bool = False) -> HubServer:
    gated_token = TOKEN if gated else None
    return HubServer([target_repo(), article_repo()], gated_token=gated_token).start()


@pytest.fixture
def hub() -> Iterator[HubServer]:
    server = start_hub()
    yield server
    server.stop()


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def ready(host: Host, hub: HubServer, pins: Pins, **docker: Any) -> None:
    """A host that has everything, on the image route (the nightly tag present); the wheel
    route's own checks are in tests/doctor/test_doctor_route.py."""
    host.docker(images={pins.vllm_image: "vllm/vllm-openai@sha256:" + "ab" * 32}, **docker)
    host.gpus(H200)
    host.monkeypatch.setenv("HF_ENDPOINT", hub.url)
    host.monkeypatch.setenv("VLLM_ENGINE", "image")


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, dict[str, str]]]:
    code = main(["doctor", "--json", *args])
    report = json.loads(capsys.readouterr().out)
    return code, {c["name"]: c for c in report["checks"]}


def test_no_gpu_and_no_docker_says_exactly_that(tmp_path: Path) -> None:
    """What the hidden check runs: `j0 doctor` on a machine without a GPU (and here without
    Docker): exit non-zero, naming the GPU. A fresh process, PATH holding nothing."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {
        "PATH": str(empty),
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
        "DRAFTER_DIR": str(tmp_path / "drafter"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "j0", "doctor"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "fail  gpu " in out and "no NVIDIA GPU: nvidia-smi is not on PATH" in out
    assert "fail  docker " in out and "no Docker on this host" in out
    assert "fix: run on a host with an NVIDIA GPU" in out
    verdict = out.strip().splitlines()[-1]
    assert verdict.startswith("==> NOT READY: ") and "gpu" in verdict and "docker" in verdict
    assert "Traceback" not in result.stderr


def test_a_ready_host(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins)
    code, checks = doctor(capsys)
    assert code == 0, checks
    assert {n: c["status"] for n, c in checks.items()} == {
        "docker": "ok",
        "compose": "ok",
        "buildx": "ok",
        "gpu-runtime": "ok",
        "engine-route": "ok",
        "base-image": "ok",
        "gpu": "ok",
        "gpu-driver": "ok",
        "gpu-memory": "ok",
        "article-gpu": "ok",
        "hf-token": "ok",
        "target-repo": "ok",
        "drafter-repo": "ok",
        "disk": "ok",
    }
    assert "NVIDIA H200, 140.4 GiB" in checks["gpu"]["detail"]  # 143771 MiB
    assert "driver 580.159.04" in checks["gpu"]["detail"]
    driver = checks["gpu-driver"]["detail"]
    assert "driver 580.159.04, the image's CUDA 13.0 (VLLM_CUDA in overlay/pins.env;" in driver
    memory = checks["gpu-memory"]["detail"]
    per_token_kib = (TARGET_KV_PER_TOKEN + DRAFT_KV_PER_TOKEN) / 1024
    assert f"{per_token_kib:.0f} KiB/token" in memory  # 256 + 20
    assert "for 4 x 40960 tokens (MAX_MODEL_LEN=auto: the model's 40960" in memory
    assert "the Hub's sizes of 1 files" in memory and "the Hub's sizes of 2 files" in memory
    assert "not gated" in checks["target-repo"]["detail"]
    assert "Docker can give containers a GPU: the nvidia runtime" in checks["gpu-runtime"]["detail"]


@pytest.mark.parametrize(
    ("gib_total", "free_mib", "max_model_len", "status", "words"),
    [
        (24, None, None, "warn", "one request of 40960 tokens fits, 4 do not"),
        (8, None, None, "warn", "MAX_MODEL_LEN=auto will shorten the context to about"),
        (8, None, "32768", "fail", "it does not fit"),
        (80, 20000, None, "fail", "is free now (other processes)"),
    ],
)
def test_gpu_memory_against_what_the_target_needs(
    host: Host,
    hub: HubServer,
    pins: Pins,
    capsys: pytest.CaptureFixture[str],
    gib_total: int,
    free_mib: int | None,
    max_model_len: str | None,
    status: str,
    words: str,
) -> None:
    ready(host, hub, pins)
    total = gib_total * 1024
    host.gpus({**H200, "memory.total": total, "memory.free": free_mib or total})
    if max_model_len:
        host.monkeypatch.setenv("MAX_MODEL_LEN", max_model_len)
    code, checks = doctor(capsys)
    check = checks["gpu-memory"]
    assert check["status"] == status and words in check["detail"], check
    assert check["fix"]
    assert code == (1 if status == "fail" else 0)


def test_the_longest_context_for_four_requests_is_worked_out(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    """By hand: 0.90 of 24 GiB, less the weights (the Hub's sizes), the 4 GiB allowance; each
    token costs the KV of 4 requests plus J0's 4 x 4 bytes of history."""
    ready(host, hub, pins)
    host.gpus({**H200, "memory.total": 24 * 1024, "memory.free": 24 * 1024})
    _, checks = doctor(capsys)
    room = 24 * GIB * 0.9 - len(TARGET_WEIGHTS) - drafter_weight_bytes() - 4 * GIB
    longest = int(room // ((TARGET_KV_PER_TOKEN + DRAFT_KV_PER_TOKEN) * 4 + 16))
    assert f"4 fit up to about {longest} tokens each" in checks["gpu-memory"]["detail"]
    assert f"MAX_MODEL_LEN={longest}" in checks["gpu-memory"]["fix"]


def test_compose_too_old_and_no_buildx(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins, compose="2.17.3", buildx=None)
    code, checks = doctor(capsys)
    assert code == 1
    assert checks["compose"]["status"] == "fail"
    assert "Docker Compose 2.17.3: compose.yaml needs 2.20 or later" in checks["compose"]["detail"]
    assert "2.20 or later" in checks["compose"]["fix"]
    assert checks["buildx"]["status"] == "warn" and "buildx" in checks["buildx"]["fix"]


def test_engine_down(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins, engine="down")
    code, checks = doctor(capsys)
    assert code == 1
    assert "Cannot connect to the Docker daemon" in checks["docker"]["detail"]
    assert "systemctl start docker" in checks["docker"]["fix"]
    assert checks["gpu-runtime"]["status"] == "fail" and checks["base-image"]["status"] == "fail"


def test_a_purged_nightly_tag_is_named_with_the_choices(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins)
    host.docker(images={}, registry={pins.vllm_image_fallback: "found"})
    code, checks = doctor(capsys)
    check = checks["base-image"]
    assert code == 1 and check["status"] == "fail"
    assert "no longer has this per-commit nightly tag" in check["detail"]
    assert f"no such manifest: docker.io/{pins.vllm_image}" in check["detail"]
    fix = check["fix"]
    assert f"VLLM_IMAGE={pins.vllm_image}@sha256:<digest>" in fix
    assert (
        f"VLLM_IMAGE={pins.vllm_image_fallback} (VLLM_IMAGE_FALLBACK, present or pullable)" in fix
    )
    assert "vLLM commit 4ba787ec9, not c50aca14" in fix
    assert ["manifest", "inspect", pins.vllm_image] in host.docker_calls()


def test_a_base_image_in_the_registry_or_an_unreachable_one(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins)
    host.docker(images={}, registry={pins.vllm_image: "found"})
    _, checks = doctor(capsys)
    assert checks["base-image"]["status"] == "ok" and "pullable" in checks["base-image"]["detail"]
    host.docker(images={}, registry_reachable=False)
    _, checks = doctor(capsys)
    assert "its registry cannot be reached" in checks["base-image"]["detail"]
    assert "no such host" in checks["base-image"]["detail"]
    assert "not reachable either" in checks["base-image"]["fix"]
    # The fallback, there: ready, with a warning that says what it is and is not.
    host.docker(images={pins.vllm_image_fallback: ""})
    host.monkeypatch.setenv("VLLM_IMAGE", pins.vllm_image_fallback)
    code, checks = doctor(capsys)
    assert code == 0 and checks["base-image"]["status"] == "warn"
    assert (
        "the same speculator.py byte for byte, but vLLM commit 4ba787ec9, not c50aca14"
        in (checks["base-image"]["detail"])
    )


def test_gpu_runtime_needs_nvidia_or_cdi(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins, runtimes=["runc"])
    code, checks = doctor(capsys)
    assert code == 1 and checks["gpu-runtime"]["status"] == "fail"
    assert "NVIDIA Container Toolkit" in checks["gpu-runtime"]["fix"]
    ready(
        host, hub, pins, runtimes=["runc"], cdi_devices=["nvidia.com/gpu=0", "nvidia.com/gpu=all"]
    )
    code, checks = doctor(capsys)
    assert checks["gpu-runtime"]["status"] == "ok"
    assert "CDI devices nvidia.com/gpu=0, nvidia.com/gpu=all" in checks["gpu-runtime"]["detail"]


def test_a_driver_that_does_not_answer(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins)
    host.gpus(fail=True)
    code, checks = doctor(capsys)
    assert code == 1 and checks["gpu"]["status"] == "fail"
    assert "couldn't communicate with the NVIDIA driver" in checks["gpu"]["detail"]
    assert "the article's server needs a GPU of about" in checks["gpu"]["detail"]


def test_gated_target_needs_a_token_that_compose_passes(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gated = start_hub(gated=True)
    try:
        ready(host, gated, pins)
        code, checks = doctor(capsys)
        assert code == 1
        assert checks["hf-token"]["status"] == "fail"
        assert f"no Hugging Face token, and {TARGET}" in checks["hf-token"]["detail"]
        assert checks["target-repo"]["status"] == "fail"
        assert "gated (manual) and this token cannot download it" in checks["target-repo"]["detail"]
        assert f"https://huggingface.co/{TARGET}" in checks["target-repo"]["fix"]
        # A token in this shell only: the Hub opens, but compose would not pass it.
        host.monkeypatch.setenv("HF_TOKEN", TOKEN)
        code, checks = doctor(capsys)
        assert checks["target-repo"]["status"] == "ok"
        assert "access granted" in checks["target-repo"]["detail"]
        assert checks["hf-token"]["status"] == "warn"
        assert "compose's containers get no token" in checks["hf-token"]["detail"]
        assert "HF_TOKEN_FILE=" in checks["hf-token"]["fix"]
        # Where compose passes it: ready, and the token is never printed.
        host.monkeypatch.delenv("HF_TOKEN")
        token_file = tmp_path / "token"
        token_file.write_text(TOKEN + "\n")
        host.monkeypatch.setenv("HF_TOKEN_FILE", str(token_file))
        assert main(["doctor"]) == 0
        out = capsys.readouterr().out
        assert "ok    hf-token " in out and f"HF_TOKEN_FILE={token_file}" in out
        assert TOKEN not in out
        assert any(e.get("auth") for e in gated.requests("GET", "/resolve/"))
    finally:
        gated.stop()


def test_knobs_come_from_dotenv_and_the_environment(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    """As compose reads them: the environment beats .env, .env beats the pins and the defaults."""
    ready(host, hub, pins)
    (host.home / ".env").write_text("MAX_MODEL_LEN=8k\nVLLM_IMAGE=my/vllm:fallback\n")
    host.docker(images={"my/vllm:fallback": ""})
    _, checks = doctor(capsys)
    assert "for 4 x 8000 tokens (MAX_MODEL_LEN=8k;" in checks["gpu-memory"]["detail"]
    base = checks["base-image"]
    assert base["status"] == "warn"
    assert base["detail"].startswith("my/vllm:fallback is present locally; not the pinned ")
    host.monkeypatch.setenv("MAX_MODEL_LEN", "4096")
    _, checks = doctor(capsys)
    assert "for 4 x 4096 tokens" in checks["gpu-memory"]["detail"]


def test_offline_uses_what_is_on_disk(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """HF_HUB_OFFLINE=1: the target in the Hub cache and the fetched drafter give the sizes."""
    host.docker(images={pins.vllm_image: ""})
    host.gpus(H200)
    host.monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    host.monkeypatch.setenv("VLLM_ENGINE", "image")
    cache = tmp_path / "hf-home" / "hub" / "models--Qwen--Qwen3.8-27B"
    snapshot = cache / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (cache / "blobs").mkdir()
    (cache / "blobs" / "weights").write_bytes(TARGET_WEIGHTS)
    (snapshot / "model.safetensors").symlink_to(cache / "blobs" / "weights")
    (snapshot / "config.json").write_text(json.dumps({**TARGET_CONFIG, "num_hidden_layers": 32}))
    drafter = Path(os.environ["DRAFTER_DIR"])
    drafter.mkdir()
    (drafter / "config.json").write_text(json.dumps({**TARGET_CONFIG, "num_hidden_layers": 5}))
    (drafter / "model.safetensors").write_bytes(b"\0" * 4096)
    code, checks = doctor(capsys)
    memory = checks["gpu-memory"]["detail"]
    kib = 2 * 8 * 128 * 2 * (32 + 5) / 1024
    assert f"{kib:.0f} KiB/token" in memory
    assert "1 files in the Hub cache" in memory and f"1 files in {drafter}" in memory
    assert "HF_HUB_OFFLINE is set" in checks["target-repo"]["detail"]
    assert "already in the Hub cache" in checks["target-repo"]["detail"]
    assert "weights 0.0 MiB into" in checks["disk"]["detail"]
    assert code == 0


def test_text_output_has_one_fix_line_per_problem(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins, runtimes=["runc"])
    assert main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    index = next(i for i, x in enumerate(lines) if x.startswith("fail  gpu-runtime"))
    assert lines[index + 1].strip().startswith("fix: install the NVIDIA Container Toolkit")
    assert lines[-1] == "==> NOT READY: gpu-runtime failed"
    assert DOCKER_READY["compose"] in "\n".join(lines)


def test_disk_counts_vllms_image_and_the_readmes_sizes(
    host: Host, pins: Pins, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Nothing here yet and the Hub not asked (HF_HUB_OFFLINE=1): the need is vLLM's image
    (25 GB, the README's "tens of GB"), the target at 27B x 2 bytes (54 GB) and the drafter
    (3 GB), all on the test folder's filesystem (Docker's root there): 82 GB in all."""
    host.docker(docker_root=str(tmp_path / "docker-root"))  # VLLM_IMAGE not present
    host.gpus(H200)
    host.monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _, checks = doctor(capsys)
    detail = checks["disk"]["detail"]
    # compose's default route (wheel) builds FROM the release image, so that is the one counted
    assert f"vLLM's image {pins.vllm_image_fallback} 23.3 GiB (estimate) into {tmp_path}" in detail
    assert "Qwen/Qwen3.8-27B weights 50.3 GiB (estimate)" in detail
    assert "the drafter 2.8 GiB (estimate)" in detail
    assert "76.4 GiB = 82.0 GB in all" in detail
    # the target's config was not read: the KV estimate says it assumes and is an upper bound
    assert "upper bound" in checks["gpu-memory"]["detail"]


def test_disk_counts_nothing_for_an_image_already_here(
    host: Host, hub: HubServer, pins: Pins, capsys: pytest.CaptureFixture[str]
) -> None:
    ready(host, hub, pins)
    _, checks = doctor(capsys)
    assert f"vLLM's image {pins.vllm_image} (present) 0.0 MiB" in checks["disk"]["detail"]
