"""A command that starts a process owns it: SIGTERM (or SIGINT) to `j0 engine-check --here`, `j0
mini run --here` (the same LocalServer) or `j0 selfcheck` stops what it started, its whole
process group, before it exits (j0.edge.processes). Real processes: the real command in a
subprocess, with a stand-in of ours in the place of `vllm serve` (a script that starts a child of
its own, as vLLM's API server starts its engine core, writes both pids and never becomes healthy)
and the real selfcheck worker on the CPU.

Before: SIGTERM ended Python at once, before any `finally`: the stand-in server and its child
kept running (holding the port; on a GPU host, the GPU), and so did selfcheck's worker.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from servers.base import free_port

ROOT = Path(__file__).resolve().parents[1]
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
STANDIN = """\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1] + ".tmp", "w") as out:
    out.write(f"{os.getpid()} {child.pid}\\n")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)  # never healthy: the command waits for /health until it is stopped
"""


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, dead but not yet reaped, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            found.append(int(stat.parent.name))
    return found


def wait_for(condition: object, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def article_site(tmp_path: Path, article_file: Path) -> Path:
    """A `vllm` folder with the article's speculator.py, first on the command's PYTHONPATH."""
    site = tmp_path / "site"
    (site / SPECULATOR).parent.mkdir(parents=True)
    shutil.copy(article_file, site / SPECULATOR)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "_version.py").write_text(
        "__version__ = version = '0.33.0'\n__commit_id__ = commit_id = 'g4ba787ec9'\n"
    )
    return site


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_engine_check_here_stops_its_server_on_a_signal(
    tmp_path: Path, article_site: Path, sig: signal.Signals
) -> None:
    standin = tmp_path / "standin.py"
    standin.write_text(STANDIN)
    pids_file = tmp_path / "pids"
    models = tmp_path / "models"
    (models / "target").mkdir(parents=True)
    (models / "draft").mkdir()
    env = {**os.environ, "PYTHONPATH": f"{article_site}:{ROOT / 'scripts'}"}
    command = subprocess.Popen(
        [sys.executable, "-m", "j0", "engine-check", "--here", "--no-gpu", "--models",
         str(models), "--server-command", f"{sys.executable} {standin} {pids_file}",
         "--port", str(free_port()), "--startup-timeout", "300", "--keep", str(tmp_path / "kept")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pids: list[int] = []
    try:
        wait_for(lambda: pids_file.exists() or command.poll() is not None)
        assert command.poll() is None, command.communicate()
        pids = [int(x) for x in pids_file.read_text().split()]
        assert all(running(pid) for pid in pids)
        command.send_signal(sig)
        _, err = command.communicate(timeout=120)
        assert command.returncode == 128 + sig, err
        left = [pid for pid in pids if running(pid)]
        assert left == [], f"still running after {sig.name}: {left}\n{err}"
    finally:
        command.kill()
        kill_all(pids)


def test_selfcheck_stops_its_worker_on_sigterm(tmp_path: Path, article_file: Path) -> None:
    """A worker of its own (no J0_SELFCHECK_ZYGOTES); tests/selfcheck/test_zygote.py stops a
    forked one."""
    env = {k: v for k, v in os.environ.items() if k != "J0_SELFCHECK_ZYGOTES"}
    command = subprocess.Popen(
        [sys.executable, "-m", "j0", "selfcheck", "--speculator", str(article_file),
         "--device", "cpu", "--cases", "60"],
        env={**env, "PYTHONPATH": str(ROOT / "scripts")},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    workers: list[int] = []
    try:
        wait_for(lambda: children_of(command.pid) or command.poll() is not None)
        assert command.poll() is None, command.communicate()
        workers = children_of(command.pid)
        time.sleep(1.0)  # the worker is importing and checking: mid-run
        command.send_signal(signal.SIGTERM)
        _, err = command.communicate(timeout=120)
        assert command.returncode == 143, err
        assert [pid for pid in workers if running(pid)] == [], err
    finally:
        command.kill()
        kill_all(workers)
