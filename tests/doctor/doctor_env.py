"""A host made of stand-ins for `j0 doctor` and `j0 status` tests.

- tools: a folder that is the whole PATH, holding only the tools a test gives the host: small
  wrappers that run tests/doctor/bin/docker and tests/doctor/bin/nvidia-smi (stand-ins of ours
  that answer in the real tools' formats) with this Python, driven by scenario JSON files;
- a j0 project copy (J0_HOME): overlay/pins.env and the compose files, so that no .env of the
  checkout leaks in;
- every compose knob and Hugging Face variable unset, HF_HOME in the test's folder.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(__file__).resolve().parent / "bin"
KNOBS = (
    "VLLM_IMAGE",
    "VLLM_IMAGE_FALLBACK",
    "VLLM_ENGINE",
    "WHEEL_INDEX",
    "TARGET_MODEL",
    "DRAFTER_REPO",
    "DRAFTER_REVISION",
    "DRAFTER_DIR",
    "MAX_MODEL_LEN",
    "KV_CACHE_DTYPE",
    "GPU_MEMORY_UTILIZATION",
    "NUM_SPEC_TOKENS",
    "PORT",
    "API_KEY_FILE",
    "HF_TOKEN_FILE",
    "HF_TOKEN",
    "HF_TOKEN_PATH",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_ENDPOINT",
    "HF_HUB_OFFLINE",
    "J0_HOME",
    "J0_STANDIN_DOCKER",
    "J0_STANDIN_NVIDIA_SMI",
    "J0_STANDIN_CALLS",
)

# A GPU as nvidia-smi reports an H200 (MiB), with the driver of the H200 doctor ran on
# (docs/doctor.md: `0, NVIDIA H200, 143771, 0, 143156, 580.159.04`), which runs CUDA 13.0.
H200 = {
    "index": 0,
    "name": "NVIDIA H200",
    "memory.total": 143771,
    "memory.used": 0,
    "memory.free": 143180,
    "driver_version": "580.159.04",
}
# A Docker host that has everything.
DOCKER_READY: dict[str, Any] = {
    "engine": "up",
    "engine_version": "27.3.1",
    "compose": "2.26.1",
    "buildx": "v0.13.1",
    "runtimes": ["io.containerd.runc.v2", "nvidia", "runc"],
    "images": {},
    "registry": {},
}


class Host:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp = tmp_path
        self.monkeypatch = monkeypatch
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.home = tmp_path / "j0-home"
        (self.home / "overlay").mkdir(parents=True)
        shutil.copy(ROOT / "overlay" / "pins.env", self.home / "overlay" / "pins.env")
        for name in ("compose.yaml", "compose.serve.yaml"):
            shutil.copy(ROOT / name, self.home / name)
        for key in KNOBS:
            monkeypatch.delenv(key, raising=False)
        monkeypatch.setenv("PATH", str(self.bin))
        monkeypatch.setenv("J0_HOME", str(self.home))
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setenv("DRAFTER_DIR", str(tmp_path / "drafter"))
        self.calls = tmp_path / "calls.jsonl"
        monkeypatch.setenv("J0_STANDIN_CALLS", str(self.calls))

    def _wrapper(self, name: str) -> None:
        # -S: the stand-ins use the standard library only, and the environment's site (its .pth
        # files) was about 40 % of each call's CPU (20 -> 12 ms; about 500 calls a fast run).
        wrapper = self.bin / name
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "{BIN / name}" "$@"\n')
        wrapper.chmod(0o755)

    def docker(self, scenario: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
        value = {**json.loads(json.dumps(scenario or DOCKER_READY)), **changes}
        path = self.tmp / "docker.json"
        path.write_text(json.dumps(value))
        self.monkeypatch.setenv("J0_STANDIN_DOCKER", str(path))
        self._wrapper("docker")
        return value

    def gpus(self, *gpus: dict[str, Any], fail: bool = False) -> None:
        path = self.tmp / "nvidia-smi.json"
        path.write_text(json.dumps({"gpus": list(gpus), "fail": fail}))
        self.monkeypatch.setenv("J0_STANDIN_NVIDIA_SMI", str(path))
        self._wrapper("nvidia-smi")

    def docker_calls(self) -> list[list[str]]:
        if not self.calls.exists():
            return []
        return [json.loads(line) for line in self.calls.read_text().splitlines()]
