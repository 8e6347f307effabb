"""A closed standard output (`j0 dumps check D | head -1`, the reader gone before the command
writes) never changes the exit code a verdict gives, and prints no traceback (issue 53, item 8).

Each command runs as a real process with its standard output on a real pipe whose read end was
closed before the command started (every write then fails with EPIPE, as after `head` has
gone). The exit code must be the verdict's, written here by hand. Before the fix, `dumps check`
exited 1 (rich's own reaction to a broken pipe: a FAIL without a word), and status, overlay
verify, image identity and deploy render exited 70 ("internal error: BrokenPipeError").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = str(ROOT / "tests" / "data" / "engine-h200" / "j0-on")
CLOSED = "http://127.0.0.1:9"  # nothing listens on the discard port here

# (the command line, the exit code its verdict gives: written here, not asked of j0)
CASES: list[tuple[list[str], int]] = [
    (["dumps", "check", ENGINE], 0),  # rich's console, printed as it goes
    (["dumps", "check", ENGINE, "--json"], 0),
    (["overlay", "verify", "{base}"], 3),  # the unpatched base
    (["overlay", "verify", "{base}", "--json"], 3),
    (["image", "identity"], 0),
    (["image", "identity", "--json"], 0),
    (["deploy", "render", "{tmp}/k8s"], 0),
    (["status", "--no-probe", "--url", CLOSED, "--log", "{log}"], 1),  # no start-up in the log
    (["status", "--no-probe", "--url", CLOSED, "--log", "{log}", "--json"], 1),
]


def run_j0(args: list[str], *, stderr_too: bool = False) -> tuple[int, str]:
    """Run `j0 ARGS`, its standard output on a closed pipe: its exit code and standard error
    (with `stderr_too`, standard error goes to the closed pipe too, as `2>&1 | head`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    cmd = [sys.executable, "-m", "j0", *args]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte
    try:
        done = subprocess.run(
            cmd,
            stdout=write_end,
            stderr=write_end if stderr_too else subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr or ""


@pytest.fixture
def filled(tmp_path: Path, base_file: Path) -> dict[str, str]:
    log = tmp_path / "server.log"
    log.write_text("INFO a log without a start-up\n")
    return {"base": str(base_file), "tmp": str(tmp_path), "log": str(log)}


def filled_in(args: list[str], places: dict[str, str]) -> list[str]:
    return [arg.format(**places) for arg in args]


@pytest.mark.parametrize(("args", "code"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_closed_stdout_keeps_the_verdicts_exit_code(
    args: list[str], code: int, filled: dict[str, str]
) -> None:
    rc, err = run_j0(filled_in(args, filled))
    assert rc == code, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert "Broken pipe" not in err and "BrokenPipeError" not in err, err


def test_a_closed_pipe_on_both_streams_keeps_the_exit_code(filled: dict[str, str]) -> None:
    """`j0 overlay verify BASE 2>&1 | head`: standard error on the closed pipe too."""
    rc, _ = run_j0(filled_in(["overlay", "verify", "{base}"], filled), stderr_too=True)
    assert rc == 3
