"""Every input bounded before it is read (issue 31, class 5): a file the user names is judged by
fstat(2) on the opened file (not a regular file, or over its limit: refused, naming the file, its
size and the limit, with nothing read); a JSON text that json.loads refuses in any way (an
integer of more than 4,300 digits raises ValueError, not JSONDecodeError; deep nesting raises
RecursionError) is "not JSON", exit 2; a config's layer count is range-checked before lists are
sized by it; a .env's interpolation has a bounded depth and length.

The commands run as real processes under a 1 GiB address-space limit where an unbounded read
would be the failure (before: `j0 status --log /dev/zero` read until memory ran out, exit 70).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from j0.compose.dotenv import MAX_NESTING, MAX_VALUE_CHARS, parse_dotenv
from j0.engine.source import causality
from j0.errors import (
    INPUT_LACKS,
    USAGE,
    J0Error,
    parse_json,
    read_input_bytes,
    read_input_text,
)

ROOT = Path(__file__).resolve().parents[1]
CLOSED = "http://127.0.0.1:9"


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def j0(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "j0", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")},
        capture_output=True, text=True, timeout=120, check=False, preexec_fn=limited, cwd=cwd,
    )  # fmt: skip


def test_dev_zero_a_fifo_and_an_oversized_file_are_refused_unread(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(J0Error, match="a FIFO, expected a regular file"):
        read_input_bytes(fifo, "--status-json")  # no writer: an open without O_NONBLOCK hangs
    with pytest.raises(J0Error) as zero:
        read_input_bytes(Path("/dev/zero"), "--log", limit=1 << 20)
    assert "--log /dev/zero: a character device, expected a regular file" in str(zero.value)
    assert zero.value.exit_code == INPUT_LACKS
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(J0Error) as over:
        read_input_text(big, "--system-prompt @", limit=1000, exit_code=USAGE)
    assert str(over.value).startswith(f"--system-prompt @{big}: 1,001 bytes, over the limit")
    assert "1,000 bytes" in str(over.value) and over.value.exit_code == USAGE
    big.write_bytes(b"x" * 1000)
    assert read_input_text(big, "--system-prompt @", limit=1000) == "x" * 1000


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--no-probe", "--url", CLOSED, "--log", "/dev/zero"],
        ["bench", "run", "--url", CLOSED, "--out", "{tmp}/r.json", "--system-prompt", "@/dev/zero"],
        ["bench", "run", "--url", CLOSED, "--out", "{tmp}/r.json", "--status-json", "/dev/zero"],
        ["bench", "run", "--url", CLOSED, "--out", "{tmp}/r.json", "--log", "/dev/zero"],
    ],
    ids=["status --log", "bench --system-prompt", "bench --status-json", "bench --log"],
)
def test_dev_zero_named_as_an_input_is_refused(argv: list[str], tmp_path: Path) -> None:
    done = j0(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert done.returncode in (INPUT_LACKS, USAGE), done.stderr[-2000:]
    assert "/dev/zero" in done.stderr and "expected a regular file" in done.stderr
    assert "Traceback" not in done.stderr


HUGE_INT = "1" + "0" * 5000


@pytest.mark.parametrize(
    "text, why",
    [
        (f'{{"n": {HUGE_INT}}}', "an integer of more than 4,300 digits"),
        ("[" * 100_000 + "]" * 100_000, "nested more than 100 levels deep"),
        ('{"a": ', "Expecting value"),
    ],
)
def test_every_way_json_loads_refuses_is_not_json(text: str, why: str) -> None:
    with pytest.raises(RecursionError if why.startswith("nested") else ValueError):
        json.loads(text)  # what Python itself raises: not always a JSONDecodeError
    with pytest.raises(J0Error) as refused:
        parse_json(text, "--status-json s.json")
    assert str(refused.value).startswith(f"--status-json s.json: not JSON ({why}")
    assert refused.value.exit_code == INPUT_LACKS


def test_a_status_file_with_a_huge_integer_is_refused_not_a_crash(tmp_path: Path) -> None:
    """Before: ValueError escaped the JSONDecodeError handler: exit 70."""
    status = tmp_path / "status.json"
    status.write_text(f'{{"j0": "on", "k": {HUGE_INT}}}')
    done = j0("bench", "run", "--url", CLOSED, "--out", str(tmp_path / "r.json"),
              "--status-json", str(status))  # fmt: skip
    assert done.returncode == INPUT_LACKS, done.stderr[-2000:]
    assert "not JSON (an integer of more than 4,300 digits)" in done.stderr


@pytest.mark.parametrize("layers", [-1, 10**12, 4097, "12", 2.5, True])
def test_num_hidden_layers_out_of_range_is_refused_before_lists_are_sized(layers: object) -> None:
    with pytest.raises(ValueError, match=r"num_hidden_layers is .*expected an integer from 0"):
        causality.resolve({"num_hidden_layers": layers, "dflash_config": {"causal": True}})
    assert len(causality.resolve({"num_hidden_layers": 4096, "is_causal": True}).causal) == 4096


def test_drafter_patch_config_with_minus_one_layers_is_bad_input(tmp_path: Path) -> None:
    """Before: `j0 drafter patch-config` let resolve()'s ValueError out: exit 70."""
    (tmp_path / "config.json").write_text(
        json.dumps({"num_hidden_layers": -1, "dflash_config": {"mask_token_id": 1}}) + "\n"
    )
    done = j0("drafter", "patch-config", str(tmp_path))
    assert done.returncode == INPUT_LACKS, done.stderr
    assert "num_hidden_layers is -1" in done.stderr and "internal error" not in done.stderr


def test_a_small_dotenv_that_doubles_is_refused_before_it_is_built() -> None:
    """476 bytes whose 29 lines each double the one above: 8 * 2^29 characters (4 GiB)."""
    text = "A0=xxxxxxxx\n" + "".join(f"A{i}=${{A{i - 1}}}${{A{i - 1}}}\n" for i in range(1, 30))
    assert len(text) < 500
    with pytest.raises(J0Error) as refused:
        parse_dotenv(text, {})
    assert f"longer than {MAX_VALUE_CHARS:,} characters once interpolated" in str(refused.value)
    assert refused.value.exit_code == INPUT_LACKS


def test_nested_defaults_are_refused_past_a_depth() -> None:
    """2,000 nested `${U:-...}`: before, RecursionError (exit 70)."""
    deep = "X=" + "${U:-" * 2000 + "d" + "}" * 2000 + "\n"
    with pytest.raises(J0Error, match=f"nested more than {MAX_NESTING} deep"):
        parse_dotenv(deep, {})
    ok = "X=" + "${U:-" * MAX_NESTING + "d" + "}" * MAX_NESTING + "\n"
    assert parse_dotenv(ok, {}) == {"X": "d"}


def test_doctor_reads_a_dotenv_that_is_dev_zero_as_bad_input(tmp_path: Path) -> None:
    from j0.compose.dotenv import read_dotenv

    (tmp_path / ".env").symlink_to("/dev/zero")
    with pytest.raises(J0Error, match="expected a regular file"):
        read_dotenv(tmp_path / ".env", {})
