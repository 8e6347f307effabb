"""One `--out`, one writer: `j0 bench run` claims its result file (j0.edge.atomic.claimed_output, an
flock on a lock file beside it) before it asks the server anything, and judges whether the file
exists under that claim. Two real `j0 bench run` processes started together on the same --out
against our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py, slowed by step_delay so that
both are running at once): one writes it, the other is refused with exit 64.

Before the claim both passed the "exists?" check (it ran before either had written anything) and
both exited 0, the later one's result replacing the earlier's.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.edge.atomic import claim_name, claimed_output
from j0.errors import USAGE, J0Error
from servers.vllm.server import VllmStandIn


def bench_process(url: str, out: Path, label: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "j0", "bench", "run", "--url", url, "--out", str(out),
         "--no-progress", "--requests", "2", "--max-tokens", "24", "--label", label],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def test_two_runs_started_together_cannot_both_write_one_out(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with VllmStandIn(num_spec_tokens=7, seed=3, step_delay=0.05) as server:
        procs = {label: bench_process(server.url, out, label) for label in ("first", "second")}
        done = {label: (p.wait(timeout=300), p.stderr.read()) for label, p in procs.items()}  # type: ignore[union-attr]
    codes = sorted(code for code, _ in done.values())
    assert codes == [0, USAGE], done
    (winner,) = [label for label, (code, _) in done.items() if code == 0]
    (loser_err,) = [err for code, err in done.values() if code == USAGE]
    assert f"--out {out}:" in loser_err
    assert "another j0 command is writing it now" in loser_err or "exists" in loser_err
    doc = json.loads(out.read_text())
    assert doc["label"] == winner and doc["complete"] is True
    assert not claim_name(out).exists()  # the claim goes with its holder


def test_a_held_claim_refuses_a_second_writer(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with claimed_output(out, "--out", replace=False):
        with pytest.raises(J0Error) as refused:
            with claimed_output(out, "--out", replace=True):
                pass
        assert refused.value.exit_code == USAGE
        assert "another j0 command is writing it now" in str(refused.value)
    with claimed_output(out, "--out", replace=False):  # released: claimable again
        out.write_text("x")
    with pytest.raises(J0Error, match="exists; give --force"):
        with claimed_output(out, "--out", replace=False):
            pass
    assert out.read_text() == "x"


def test_a_lock_file_left_by_a_killed_writer_is_taken_over(tmp_path: Path) -> None:
    """kill -9 leaves the lock file but not the flock (the kernel drops it with its holder)."""
    out = tmp_path / "r.json"
    claim_name(out).write_text("")
    with claimed_output(out, "--out", replace=False):
        fd = os.open(claim_name(out), os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
