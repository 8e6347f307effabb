"""`j0 image identity --json` as a type (j0.engine.server.identity_record): the real command's line
reads and writes back as it was, and what `here_identity` gets from a child that printed
something else is refused naming the key and the value."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from j0.engine.server.identity_record import IdentityRecord
from j0.errors import J0Error

ROOT = Path(__file__).resolve().parents[2]


def test_the_commands_line_reads_and_writes_back_as_it_was() -> None:
    """The real `j0 image identity --json` on this Python's vLLM (the unpatched wheel)."""
    done = subprocess.run(
        [sys.executable, "-m", "j0", "image", "identity", "--json"],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "scripts"), "PATH": "/usr/bin:/bin"},
    )
    line = done.stdout.strip()
    record = IdentityRecord.read(json.loads(line), "identity")
    assert record.identity == "base" and record.vllm_commit_is_pinned is False
    assert record.text() == line


def test_without_an_engine_only_the_files_keys_are_written() -> None:
    value = {"path": "/x/speculator.py", "sha256": "ab" * 32, "identity": "article"}
    record = IdentityRecord.read(value, "identity")
    assert record.to_json() == value and record.vllm_version is None


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ([], "where: [], expected an object"),
        ({"path": "/x", "sha256": "ab"}, "where: no 'identity' (expected a string)"),
        (
            {"path": "/x", "sha256": "ab", "identity": "article", "vllm_commit_is_pinned": "no"},
            "where: 'vllm_commit_is_pinned' is \"no\", expected true or false",
        ),
        ({"path": 7, "sha256": "ab", "identity": "base"}, "'path' is 7, expected a string"),
    ],
)
def test_a_record_of_other_kinds_is_refused_naming_the_key(value: object, said: str) -> None:
    with pytest.raises(J0Error) as caught:
        IdentityRecord.read(value, "where")
    assert said in str(caught.value) and caught.value.exit_code == 2
