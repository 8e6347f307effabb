"""The one --json form of the commands that print their result (doctor, status, image identity,
overlay verify, dumps show and check among them; j0.commands.add_json_option): `--json` alone
prints one JSON object on stdout in place of the text; `--json OUT` writes that same object into
OUT and prints the text as usual; a --json OUT that cannot be a file is refused (exit 64) before
any work (tests/test_path_arguments.py).
Run as a shell runs them: `python -m j0 ...` in a subprocess; status asks a closed port on
127.0.0.1, so nothing outside this machine is reached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLOSED = "http://127.0.0.1:9"
COMMANDS = {
    "image identity": ["image", "identity"],
    "status": ["status", "--no-probe", "--url", CLOSED],
    # a file that is none of the pinned ones: exit 4, the pieces and no diff reference
    "overlay verify": ["overlay", "verify", str(ROOT / "pyproject.toml")],
    # the patch's dumps from vLLM's real engine on the H200 (tests/data/README.md)
    "dumps show": ["dumps", "show", str(ROOT / "tests" / "data" / "engine-h200" / "j0-on")],
    "dumps check": ["dumps", "check", str(ROOT / "tests" / "data" / "engine-h200" / "j0-on")],
}


def j0(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    return subprocess.run(
        [sys.executable, "-m", "j0", *args],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


# The dumps commands import torch in each of their four runs: 7 s alone each, slow.
SLOW = {"dumps show", "dumps check"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(COMMANDS)],
)
def test_json_alone_prints_it_and_json_out_writes_the_same_beside_the_text(
    name: str, tmp_path: Path
) -> None:
    text = j0(*COMMANDS[name])
    alone = j0(*COMMANDS[name], "--json")
    dash = j0(*COMMANDS[name], "--json", "-")
    out = tmp_path / "result.json"
    written = j0(*COMMANDS[name], "--json", str(out))
    assert text.returncode == alone.returncode == dash.returncode == written.returncode
    printed = json.loads(alone.stdout)
    assert json.loads(dash.stdout) == printed
    assert isinstance(printed, dict) and printed
    on_file = json.loads(out.read_text())
    assert on_file.keys() == printed.keys()
    assert written.stdout == text.stdout
    assert not text.stdout.lstrip().startswith("{")


def test_every_command_has_the_one_json_option() -> None:
    """Each leaf command of the parser takes --json [OUT] as j0.commands.add_json_option makes
    it: an optional value, stdout where it is absent or "-"."""
    import argparse

    from j0.cli import build_parser
    from j0.commands import JSON_ON_STDOUT

    def leaves(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, Any]]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [(name, parser)]
        found = []
        for sub_name, sub in subs[0].choices.items():
            found += leaves(sub, f"{name} {sub_name}".strip())
        return found

    commands = leaves(build_parser(), "")
    assert len(commands) >= 26
    for name, parser in commands:
        (json_option,) = [a for a in parser._actions if "--json" in a.option_strings] or [None]
        assert json_option is not None, f"j0 {name} has no --json"
        assert (json_option.nargs, json_option.const) == ("?", JSON_ON_STDOUT), name
