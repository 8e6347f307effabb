"""The identity line and record of this Python's speculator.py
(j0.engine.server.speculator_identity), which the local launcher and local_needs run as a module in
the server's environment: the same words as `j0 image identity`, whose module it is. The reference
is the real command, run on this Python's vLLM (the unpatched wheel of the test environment)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(ROOT / "scripts"), "PATH": "/usr/bin:/bin"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=False, env=ENV, timeout=120
    )


@pytest.mark.parametrize("how", [["--prefix", "j0-entrypoint"], ["--json"]])
def test_the_module_says_what_the_command_says(how: list[str]) -> None:
    module = run("-m", "j0.engine.server.speculator_identity", *how)
    command = run("-m", "j0", "image", "identity", *how)
    assert module.returncode == command.returncode == 0, module.stderr + command.stderr
    assert module.stdout == command.stdout
    if how[0] == "--prefix":
        assert module.stdout.startswith("j0-entrypoint: vLLM ")
        assert "speculator.py sha256=" in module.stdout and "identity=base" in module.stdout


@pytest.mark.parametrize("args", [[], ["--prefix"], ["--json", "--prefix", "x"], ["identity"]])
def test_other_arguments_are_a_usage_error(args: list[str]) -> None:
    done = run("-m", "j0.engine.server.speculator_identity", *args)
    assert done.returncode == 64 and done.stdout == ""
    assert "usage: python -m j0.engine.server.speculator_identity" in done.stderr
