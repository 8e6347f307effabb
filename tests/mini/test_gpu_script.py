"""scripts/mini-gpu.sh, the lead's commands for one model set on one lent GPU, run here for real
in its stages: `train` (smoke sizes on this CPU, in the background with setsid), `wait`, `run` (in
the background: `j0 mini run` and `j0 mini speed` against the vLLM stand-in, tests/engine_check/
bin/vllm_serve_standin.py, in the place of `vllm serve`, through a `vllm` package of ours first
on PYTHONPATH, as in test_h200_script.py, then the packing) and `wait-run`, which copies the
results out. The stand-in returns no token ids, so the run's cross-check is not run and the run
ends with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from mini.test_h200_script import fake_vllm

pytestmark = pytest.mark.slow  # trains the smoke models and serves 5 + 3 stand-in settings

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mini-gpu.sh"


def script(*args: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_train_wait_run_pack(tmp_path: Path, article_file: Path) -> None:
    site = tmp_path / "site"
    fake_vllm(site, article_file)
    gpu = tmp_path / "gpu-bin"
    gpu.mkdir()
    (gpu / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    (gpu / "nvidia-smi").chmod(0o755)
    env = {
        **{k: v for k, v in os.environ.items() if k != "OUT"},
        "PATH": f"{Path(sys.executable).parent}:{gpu}:{os.environ['PATH']}",
        "PYTHONPATH": "",
    }
    work = tmp_path / "work"
    common = ["--work", str(work), "--site", str(site), "--seed", "3"]
    train = script(
        "train",
        *common,
        "--train-args",
        "--smoke --device cpu",
        "--target-budget",
        "0.5",
        "--gen-budget",
        "0.3",
        "--budget",
        "0.4",
        "--rows",
        "16",
        env=env,
        timeout=60,
    )
    assert train.returncode == 0, train.stdout + train.stderr
    assert "in the background" in train.stdout and (work / "train.pid").is_file()
    waited = script("wait", *common, "--timeout", "600", env=env)
    assert waited.returncode == 0, waited.stdout[-3000:] + waited.stderr[-2000:]
    assert (work / "train.rc").read_text().strip() == "0"
    manifest = json.loads((work / "models" / "mini.json").read_text())
    assert manifest["seed"] == 3 and manifest["budgets"] == {  # each flag to its own budget
        "target": 0.5,
        "generate": 0.3,
        "drafter": 0.4,
    }
    again = script("train", *common, env=env, timeout=60)
    assert again.returncode == 64 and "already holds a training" in again.stderr

    out = tmp_path / "results"
    options = (
        *common,
        "--out",
        str(out),
        "--contexts",
        "32,64",
        "--requests",
        "2",
        "--long-requests",
        "3",
        "--servers",
        "2",
        "--speed-prompts",
        "2",
        "--speed-repeats",
        "2",
        "--run-args",
        "--crosscheck-requests 1 --max-tokens 16 --slots 2",
        "--speed-args",
        "--max-tokens 16 --eager",
    )
    started = script("run", *options, env=env, timeout=60)
    assert started.returncode == 0 and "in the background" in started.stdout, started.stderr
    run = script("wait-run", *options, "--timeout", "900", env=env)
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-2000:]
    assert "cross-check not run" in (work / "run.log").read_text()
    again = script("run", *options, env=env, timeout=60)
    assert again.returncode == 64 and "already holds a run" in again.stderr
    summary = json.loads((work / "run" / "mini-run.json").read_text())
    assert sorted(summary["settings"]) == [
        "baseline",
        "drafter-j0/k7-j0-off",
        "drafter-j0/k7-j0-on",
        "drafter-mask/k7-j0-off",
        "ngram/k7",
    ]
    assert summary["requests_by_context"] == {"32": 2, "64": 3}
    speed = json.loads((work / "run" / "speed.json").read_text())
    assert speed["settings"][:2] == ["baseline", "ngram/k7"]
    assert speed["settings"][2].startswith("drafter-") and speed["repeats"] == 2
    assert speed["table"]["baseline"]["speedup"] == 1.0
    assert all(row["rounds"] == 2 and row["tokens"] > 0 for row in speed["table"].values())
    names = sorted(p.name for p in out.iterdir())
    assert len(names) <= 8
    assert "mini-gpu-seed3.tar.xz" in names and "mini-gpu-seed3-speed.md" in names
    with tarfile.open(out / "mini-gpu-seed3.tar.xz") as packed:
        members = packed.getnames()
    assert "./models/mini.json" in members and "./run/mini-run.json" in members
    assert not [m for m in members if m.endswith(".safetensors") or "/dumps/" in m]
