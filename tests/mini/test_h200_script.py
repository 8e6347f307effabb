"""scripts/mini-h200.sh, the lead's H200 commands, run here for real with smoke sizes
(`MINI_TRAIN_ARGS="--smoke --device cpu"`) and, in vLLM's place, a `vllm` package of ours first on
PYTHONPATH whose `vllm.entrypoints.cli.main serve` execs the vLLM stand-in
(tests/engine_check/bin/vllm_serve_standin.py: our server on 127.0.0.1, recorded engine dumps),
holding the article's speculator.py; `j0 mini run`'s check before it starts anything is met by an
`nvidia-smi` on PATH and a `uvicorn` package of ours beside it (nothing imports them).
The stand-in returns no token ids, so a run phase with a J0-off drafter setting ends with exit 2
(cross-check not run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Slow: trains the smoke models (half a second each) and runs three of the script's phases: 84 s
# alone on the 2-core machine (2026-12-04: train 21 s, base 9 s, run7 40 s), 169 s in a full run.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "tests" / "engine_check" / "bin" / "vllm_serve_standin.py"


def fake_vllm(site: Path, article_file: Path) -> None:
    cli = site / "vllm" / "entrypoints" / "cli"
    cli.mkdir(parents=True)
    for folder in (site / "vllm", site / "vllm" / "entrypoints", cli, site / "uvicorn"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    speculator = site / "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
    speculator.parent.mkdir(parents=True)
    shutil.copy(article_file, speculator)
    (cli / "main.py").write_text(
        "import os, sys\n"
        "assert sys.argv[1] == 'serve', sys.argv\n"
        f"os.execv(sys.executable, [sys.executable, {str(STANDIN)!r}, *sys.argv[2:]])\n"
    )


def test_train_then_base_and_run7(tmp_path: Path, article_file: Path) -> None:
    site = tmp_path / "site"
    fake_vllm(site, article_file)
    bin_dir = Path(sys.executable).parent  # this Python's python3 first (a venv keeps its own)
    assert (bin_dir / "python3").exists()
    gpu = tmp_path / "gpu-bin"
    gpu.mkdir()
    (gpu / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    (gpu / "nvidia-smi").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{gpu}:{os.environ['PATH']}",
        "PYTHONPATH": str(site),
        "MINI_WORK": str(tmp_path / "mini"),
        "MINI_BUDGET": "0.5",
        "MINI_TRAIN_ARGS": "--smoke --device cpu",
        "MINI_REQUESTS": "2",
        "MINI_CONTEXTS": "32,64",
        "MINI_SLOTS": "2",
        "MINI_MAX_TOKENS": "16",
        "MINI_RUN_ARGS": "--j0-seeds 20261031 --crosscheck-requests 1",
    }
    results = tmp_path / "results"
    script = ROOT / "scripts" / "mini-h200.sh"
    train = subprocess.run(
        ["bash", str(script), str(results), "train"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr[-2000:]
    manifest = json.loads((results / "train" / "mini.json").read_text())
    assert manifest["smoke"] is True and manifest["budget_s_per_model"] == 0.5
    assert (results / "train" / "drafter-j0" / "config.json").is_file()
    base = subprocess.run(
        ["bash", str(script), str(results), "base"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert base.returncode == 0, base.stdout[-2000:] + base.stderr[-2000:]
    run = subprocess.run(
        ["bash", str(script), str(results), "run7"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    log = (results / "run.log").read_text()
    assert "cross-check not run" in log
    assert "mask-off at 7 draft tokens" in log and "j0-on at 7 draft tokens" in log
    summary = json.loads((results / "run" / "mini-run.json").read_text())
    assert summary["max_model_len"] == 512  # 4 x 64 (smoke drafters) + 16 + 8, in 256s
    assert sorted(summary["settings"]) == [
        "baseline",
        "drafter-j0/k7-j0-off",
        "drafter-j0/k7-j0-on",
        "drafter-mask/k7-j0-off",
        "drafter-mask/k7-j0-on",
        "ngram/k15",
        "ngram/k7",
    ]
    assert set(summary["comparisons"]["by_tokens"]["7"]) == {
        "article",
        "systems",
        "control",
        "ngram",
    }
    assert (results / "run" / "drafter-mask" / "report.md").is_file()
    assert (results / "run" / "drafter-j0" / "k7-j0-on" / "dumps-sha256.txt").is_file()
    assert not list(results.rglob("dumps"))  # the dumps stay in MINI_WORK
    assert (tmp_path / "mini" / "run" / "drafter-mask" / "k7-j0-on" / "dumps").is_dir()
    bad = subprocess.run(
        ["bash", str(script), str(results), "nope"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 64 and "expected all, train, base, mask7" in bad.stderr
