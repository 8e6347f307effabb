"""The whole engine check with the vLLM installed for this Python, where a CUDA GPU and vLLM's
compiled extensions exist (an H200 ran it: docs/results/engine-check-h200/). Skipped elsewhere."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest


def vllm_can_serve() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return (
        bool(torch.cuda.is_available())
        and importlib.util.find_spec("vllm._C_stable_libtorch") is not None
    )


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not vllm_can_serve(), reason="needs a CUDA GPU and vLLM's compiled extensions")
def test_engine_check_here_passes_on_a_gpu(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "j0",
            "engine-check",
            "--here",
            "--keep",
            str(tmp_path / "kept"),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    assert report["verdict"] == "PASS" and all(c["ok"] for c in report["checks"])
