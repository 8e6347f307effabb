"""vLLM 0.34.0's Python package for the tests, apart from the test environment's 0.33.0:
scripts/test installs the vllm==0.34.0 wheel with --no-deps into $J0_VENV/vllm-0.34.0; a process
that puts that folder first on PYTHONPATH imports 0.34.0's vllm (and the rest of what its
speculator module imports from the test environment)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
V0340 = "0.34.0"


def vllm_site(release: str = V0340) -> Path:
    """The folder holding vllm==`release` (scripts/test makes it); the test fails, naming the
    folder, where it is missing."""
    # The test environment's own folder (scripts/test: $J0_VENV, default .venv-test), the one
    # this Python runs in.
    folder = Path(sys.prefix) / f"vllm-{release}"
    version = folder / f"vllm-{release}.dist-info"
    if not (folder / "vllm" / "__init__.py").is_file() or not version.is_dir():
        pytest.fail(f"{folder}: no vllm=={release} there; scripts/test --set-up-only installs it")
    return folder


def env_with_vllm(release: str = V0340, env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with vllm==`release` and j0 first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    paths = [str(vllm_site(release)), str(ROOT / "scripts"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env
