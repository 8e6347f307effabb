"""The Hub stand-in (hub/server.py) in a process of its own on 127.0.0.1, for clients in
containers or other processes. (A free port on 127.0.0.1 is base.py's free_port.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HUB_SERVER = Path(__file__).resolve().parent / "hub" / "server.py"


class HubProcess:
    """tests/servers/hub/server.py as its own process on 127.0.0.1; ARGS go to its command line.
    Its first output line names its URL; a server that does not start fails the test."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HUB_SERVER), "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        found = re.search(r" at (http://127\.0\.0\.1:\d+) ", first)
        if found is None:
            self.stop()
            pytest.fail(f"hub_server did not start: {first!r}")
        self.url = found.group(1)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
