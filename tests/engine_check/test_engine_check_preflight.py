"""`j0 engine-check` before anything heavy: no GPU is one line and exit 69 (in a Python without
site-packages, so nothing heavy could even be imported), and the default image is the one
`docker compose up` builds, read from compose.serve.yaml as compose does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.engine.server import local_needs
from j0.engine_check import preflight
from j0.engine_check.cli import compose_image

ROOT = Path(__file__).resolve().parents[2]
RUN_J0 = (
    "import sys; sys.path.insert(0, sys.argv[1]); from j0.cli import main; "
    "sys.exit(main(sys.argv[2:]))"
)


@pytest.mark.parametrize("where", [(), ("--here",), ("--image", "some/image:1")])
def test_no_gpu_is_one_line_and_exit_69(tmp_path: Path, where: tuple[str, ...]) -> None:
    """CUDA_VISIBLE_DEVICES= hides any GPU; `python -S`: no torch, no docker-py."""
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "", "HOME": str(tmp_path)}
    cmd = [sys.executable, "-S", "-c", RUN_J0, str(ROOT / "scripts"), "engine-check", *where]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 69, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no NVIDIA GPU here" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_gpu_present_follows_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert local_needs.gpu_present() is False


def test_the_default_image_is_composes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """compose.serve.yaml says `${J0_IMAGE:-j0/vllm-openai:compose}`; the environment wins."""
    monkeypatch.delenv("J0_IMAGE", raising=False)
    if (ROOT / ".env").is_file() and "J0_IMAGE" in (ROOT / ".env").read_text():
        pytest.skip("this checkout's .env sets J0_IMAGE")
    image, source = compose_image()
    assert image == "j0/vllm-openai:compose"
    assert "compose.serve.yaml" in source
    monkeypatch.setenv("J0_IMAGE", "mine/j0:1")
    assert compose_image() == ("mine/j0:1", "J0_IMAGE from the environment")


def test_an_absent_compose_image_says_docker_compose_build() -> None:
    text = preflight.how_to_make("j0/vllm-openai:compose", "J0_IMAGE from compose's default")
    assert "docker compose build" in text and "j0 image build --tag j0/vllm-openai:compose" in text
    other = preflight.how_to_make("my/j0:1", "--image")
    assert "docker compose build" not in other and "docker pull my/j0:1" in other


def test_here_makes_no_models_without_a_gpu_even_with_torch(tmp_path: Path) -> None:
    """With the full test environment (torch importable) the GPU check still comes first."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT / "scripts")}
    keep = tmp_path / "kept"
    cmd = [sys.executable, "-m", "j0", "engine-check", "--here", "--keep", str(keep)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 69, done.stderr
    assert not keep.exists()  # nothing made


def test_here_without_uvicorn_makes_nothing(tmp_path: Path) -> None:
    """A GPU seen (an nvidia-smi on PATH) but vLLM's server lacking uvicorn: refused before the
    tiny models are made, rather than servers that die at start (exit 1)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    hide = ROOT / "tests" / "selfcheck" / "hide_modules"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": f"{hide}:{ROOT / 'scripts'}",
        "J0_TEST_HIDE_MODULES": "uvicorn",
    }
    env.pop("CUDA_VISIBLE_DEVICES", None)
    keep = tmp_path / "kept"
    cmd = [sys.executable, "-m", "j0", "engine-check", "--here", "--keep", str(keep)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 69, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("j0: error: j0 engine-check --here: it serves this Python's vLLM")
    assert "lacks uvicorn" in line
    assert not keep.exists()
