"""scripts/selfcheck-setup's last line names the command that checks the article's file. The script
installs vLLM 0.33.0's own, unpatched module, so the `j0 selfcheck` it used to name (no
--speculator: the installed vLLM's file) answered "NO J0" (exit 2) right after it. The script
runs here for real with PYTHON a stand-in of ours that records each `-m pip ...` call and installs
nothing (the real install is several GB of torch); the command it names is then run as printed,
with the test environment's Python (which has what the script installs), and must PASS."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTICLE_FILE = "overlay/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
STAND_IN = """#!/bin/sh
printf '%s\\n' "$*" >> "$J0_TEST_PIP_CALLS"
"""


def run_setup(tmp_path: Path) -> tuple[list[str], str]:
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(STAND_IN)
    python.chmod(0o755)
    calls = tmp_path / "calls.txt"
    run = subprocess.run(
        [str(ROOT / "scripts" / "selfcheck-setup")], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHON": str(python), "J0_TEST_PIP_CALLS": str(calls)},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return calls.read_text().splitlines(), run.stdout.strip().splitlines()[-1]


def named_command(last_line: str) -> list[str]:
    """The command after "run: " (up to two spaces or the end)."""
    assert "run: " in last_line, last_line
    return shlex.split(last_line.split("run: ", 1)[1].split("  ")[0])


def test_the_last_line_names_the_check_of_the_articles_file(tmp_path: Path) -> None:
    calls, last = run_setup(tmp_path)
    assert calls == ["-m pip install -e .[selfcheck]", "-m pip install --no-deps vllm==0.33.0"]
    command = named_command(last)
    assert command[-3:] == ["selfcheck", "--speculator", ARTICLE_FILE], last
    assert command[:3] == [str(tmp_path / "bin" / "python"), "-m", "j0"], last


@pytest.mark.slow
def test_the_named_command_passes(tmp_path: Path, article_file: Path) -> None:
    """The command as printed (one case of the battery, `--cases 1`, to keep it short), in a
    folder whose overlay/ holds the article's file (made by GNU patch, tests/conftest.py)."""
    _, last = run_setup(tmp_path)
    command = named_command(last)
    work = tmp_path / "checkout"
    (work / ARTICLE_FILE).parent.mkdir(parents=True)
    shutil.copy(article_file, work / ARTICLE_FILE)
    # The environment test_selfcheck.py's checks run in: the same selfcheck zygote serves it
    # (j0.selfcheck.zygote, keyed by the environment), vLLM imported once for the run.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    run = subprocess.run(
        [sys.executable, *command[1:], "--cases", "1"], cwd=work, capture_output=True, text=True,
        timeout=900, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "PASS" in run.stdout, run.stdout[-3000:]
