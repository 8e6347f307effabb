"""`j0 mini run --here` checks before it makes or starts anything, as `j0 engine-check` does: no
GPU, vLLM's server without one of its packages, or a speculator.py that is not the one asked is
one line and exit 69, in seconds, and nothing is left behind (a re-run is not blocked). Real
processes: `python -m j0 mini run` on a folder shaped like `j0 mini train`'s output (the checks
come before any model is read). `tests/selfcheck/hide_modules/` hides a package on request."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HIDE = ROOT / "tests" / "selfcheck" / "hide_modules"
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"


@pytest.fixture
def trained(tmp_path: Path) -> Path:
    out = tmp_path / "mini"
    for name in ("target", "drafter-mask", "drafter-j0"):
        (out / name).mkdir(parents=True)
        (out / name / "config.json").write_text("{}")
    # a target window that covers the default contexts (8 x 64) and the output (256): the run's
    # window check passes, the checks of what it needs come next
    (out / "mini.json").write_text(json.dumps({"sizes": {"draft_seq": 64, "target_seq": 768}}))
    return out


def vllm_with(tmp_path: Path, speculator: Path) -> Path:
    """A `vllm` folder holding `speculator` where vLLM keeps it (for PYTHONPATH)."""
    site = tmp_path / "site"
    (site / SPECULATOR).parent.mkdir(parents=True)
    shutil.copy(speculator, site / SPECULATOR)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "_version.py").write_text("__version__ = version = '0.33.0'\n")
    return site


def mini_run(
    out: Path, *args: str, path: list[str] | None = None, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "scripts"), **env}
    if path:
        environ["PATH"] = os.pathsep.join([*path, environ.get("PATH", "")])
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "j0", "mini", "run", str(out), "--here", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, time.monotonic() - started


def refused(done: subprocess.CompletedProcess[str], out: Path) -> str:
    """The one line of a refusal with exit 69 that made nothing."""
    assert done.returncode == 69, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("j0: error: j0 mini run --here: "), lines
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert sorted(p.name for p in out.iterdir()) == [
        "drafter-j0",
        "drafter-mask",
        "mini.json",
        "target",
    ]  # no run/ to block a re-run
    return lines[0]


def test_no_gpu_is_refused_at_once(trained: Path) -> None:
    done, took = mini_run(trained, CUDA_VISIBLE_DEVICES="")
    line = refused(done, trained)
    assert "no NVIDIA GPU here" in line and "nothing was made or started" in line
    assert took < 30  # the interpreter's start and j0's import: no server, no model
    again, _ = mini_run(trained, CUDA_VISIBLE_DEVICES="")  # the same refusal, not exit 64
    assert again.returncode == 69


def test_a_server_package_missing_is_refused(trained: Path, tmp_path: Path) -> None:
    """A GPU seen (an nvidia-smi on PATH), but no uvicorn: vLLM's server would die at start."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    done, _ = mini_run(
        trained,
        path=[str(bin_dir)],
        PYTHONPATH=f"{HIDE}:{ROOT / 'scripts'}",
        J0_TEST_HIDE_MODULES="uvicorn",
    )
    line = refused(done, trained)
    assert "lacks uvicorn" in line and "vllm.entrypoints.cli.main serve" in line


def test_the_unpatched_file_is_refused(trained: Path, tmp_path: Path, base_file: Path) -> None:
    """With a stand-in server the GPU and its packages are not asked, the file always is."""
    site = vllm_with(tmp_path, base_file)
    done, _ = mini_run(trained, "--server-command", "true", PYTHONPATH=f"{site}:{ROOT / 'scripts'}")
    line = refused(done, trained)
    assert f"{site / SPECULATOR}" in line and "identity=base" in line
    assert "not the article's J0 file: its J0-on settings would run without that J0" in line


def test_the_article_file_is_not_the_prefix_safe_variant(
    trained: Path, tmp_path: Path, article_file: Path
) -> None:
    site = vllm_with(tmp_path, article_file)
    done, _ = mini_run(
        trained,
        "--variant",
        "prefix-safe",
        "--server-command",
        "true",
        PYTHONPATH=f"{site}:{ROOT / 'scripts'}",
    )
    line = refused(done, trained)
    assert "identity=article" in line and "not the prefix-safe variant of it" in line
    assert "j0 overlay build --variant prefix-safe -o" in line
