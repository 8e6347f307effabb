"""`j0 mini run --here` owns the servers it starts: SIGTERM to the real command (a subprocess)
while its first server is starting stops that server and the server's own child before the
command exits 143 (j0.edge.processes). The server is a stand-in of ours in the place of `vllm
serve` (tests/test_owned_processes.py's: it starts a child, writes both pids and never becomes
healthy); the trained folder is the session's smoke miniature (tests/mini/conftest.py).

Before: SIGTERM ended the command at once and both stand-in processes kept running (with vLLM:
the port and the GPU held)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from servers.base import free_port
from test_owned_processes import STANDIN, kill_all, running, wait_for


@pytest.mark.slow  # the smoke miniature's training and a real `j0 mini run` start: a minute
def test_sigterm_stops_the_server_mini_run_started(
    smoke_out: Path, article_vllm: Path, tmp_path: Path
) -> None:
    trained = tmp_path / "mini"
    shutil.copytree(smoke_out, trained)
    standin = tmp_path / "standin.py"
    standin.write_text(STANDIN)
    pids_file = tmp_path / "pids"
    command = subprocess.Popen(
        [sys.executable, "-m", "j0", "mini", "run", str(trained), "--here", "--device", "cpu",
         "--server-command", f"{sys.executable} {standin} {pids_file}", "--port",
         str(free_port()), "--startup-timeout", "300", "--parts", "mask", "--tokens", "7",
         "--contexts", "32", "--requests", "2", "--slots", "2", "--no-crosscheck"],
        env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pids: list[int] = []
    try:
        wait_for(lambda: pids_file.exists() or command.poll() is not None, 300)
        assert command.poll() is None, command.communicate()
        pids = [int(x) for x in pids_file.read_text().split()]
        command.send_signal(signal.SIGTERM)
        _, err = command.communicate(timeout=120)
        assert command.returncode == 143, err[-3000:]
        assert [pid for pid in pids if running(pid)] == [], err[-3000:]
    finally:
        command.kill()
        kill_all(pids)
