"""Helpers for tests that run our servers: a free port on 127.0.0.1, and the Hub-like server
(hub_server.py) in a process of its own (for clients in containers or other processes)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HUB_SERVER = Path(__file__).resolve().parent / "hub_server.py"


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on once this returns."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HubProcess:
    """tests/servers/hub_server.py as its own process on 127.0.0.1; ARGS go to its command line.
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
