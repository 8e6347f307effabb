"""`j0 selfcheck`'s command-line paths that do not reach a verdict on J0: a Python without the
packages the check imports, `--device cuda` where there is no CUDA device, and `--json`.

None of them may look like "J0 deviates" (exit 1) or "no J0" (exit 2): they exit 69, saying what
is missing. Real processes: `python -m j0 selfcheck` in a subprocess, the first in a fresh
virtual environment of the standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def selfcheck(python: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "j0", "selfcheck", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "scripts"), **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_without_torch_triton_or_vllm_it_says_what_is_missing(
    tmp_path: Path, article_file: Path
) -> None:
    """A plain `pip install -e .` has none of them: one line, exit 69, nothing checked."""
    env_dir = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    result = selfcheck(python, "--speculator", str(article_file))
    assert result.returncode == 69, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("j0: error:")]
    assert "lacks numpy, torch, triton, vllm" in line and python in line
    assert "Nothing was checked" in line
    assert "PASS" not in result.stdout


def test_the_unpatched_file_is_still_no_j0_without_those_packages(
    tmp_path: Path, base_file: Path
) -> None:
    """The static look at the file needs nothing: vLLM's own file is exit 2 anywhere."""
    env_dir = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    result = selfcheck(str(env_dir / "bin" / "python"), "--speculator", str(base_file))
    assert result.returncode == 2, result.stderr
    assert "NO J0" in result.stderr


def test_device_cuda_without_a_cuda_device(article_file: Path) -> None:
    """CUDA_VISIBLE_DEVICES="" hides every GPU from torch, on any machine."""
    result = selfcheck(
        sys.executable,
        "--speculator",
        str(article_file),
        "--device",
        "cuda",
        CUDA_VISIBLE_DEVICES="",
    )
    assert result.returncode == 69, result.stdout + result.stderr
    assert "--device cuda: torch sees no CUDA device here; nothing was checked" in result.stderr
    assert "PASS" not in result.stdout


@pytest.mark.slow
def test_json_result_and_no_vllm_noise(article_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    result = selfcheck(
        sys.executable,
        "--speculator",
        str(article_file),
        "--device",
        "cpu",
        "--cases",
        "1",
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(out.read_text())
    assert data["code"] == 0 and data["device"] == "cpu" and data["cases_run"] == 1
    assert data["file"] == str(article_file) and data["steps_run"] > 0
    assert "Failed to import from vllm._C" not in result.stdout + result.stderr
