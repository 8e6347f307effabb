"""The pins file's own checks: a duplicate key, a line that is not KEY=VALUE, a missing key, and
set_pin's one-line edit. Each refusal names the file, the line and what was expected (exit 2).

Real files in a temporary J0_HOME; the checkout's overlay/pins.env is only read.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.errors import J0Error
from j0.pins import load_pins, parse_pins, set_pin

ROOT = Path(__file__).resolve().parents[1]
PINS_TEXT = (ROOT / "overlay" / "pins.env").read_text(encoding="utf-8")


def home_with(tmp_path: Path, text: str) -> Path:
    (tmp_path / "overlay").mkdir(parents=True, exist_ok=True)
    (tmp_path / "overlay" / "pins.env").write_text(text, encoding="utf-8")
    return tmp_path


def refusal(text: str) -> J0Error:
    with pytest.raises(J0Error) as info:
        parse_pins(text, "some/pins.env")
    return info.value


def test_the_checkouts_pins_parse() -> None:
    values = parse_pins(PINS_TEXT, "overlay/pins.env")
    assert values["VLLM_RELEASE"] == "0.33.0" and values["J0_SEED"] == "20261031"


def test_a_key_set_twice_is_refused_naming_the_line() -> None:
    error = refusal("# comment\nA=1\n\nB=2\nA=3\n")
    assert str(error) == "some/pins.env:5: A is set twice"
    assert error.exit_code == 2
    # Even with the same value: one place per pin.
    assert "A is set twice" in str(refusal("A=1\nA=1\n"))


@pytest.mark.parametrize(
    "line",
    ["not a pin", "lower=1", "A = 1", "A=two words", "A='quoted value'x y", "=1", "export A=1"],
)
def test_a_line_that_is_not_key_value_is_refused(line: str) -> None:
    error = refusal(f"A=1\n{line}\nB=2\n")
    assert str(error) == f"some/pins.env:2: {line!r} is not a KEY=VALUE line"
    assert error.exit_code == 2


def test_blank_lines_comments_and_empty_values_are_fine() -> None:
    assert parse_pins("\n# c\n  # indented comment\nA=\nB=x\n", "p") == {"A": "", "B": "x"}


@pytest.mark.parametrize("key", ["BASE_SHA256", "PATCHED_SHA256", "J0_SEED", "DRAFTER_COMMIT"])
def test_a_missing_key_is_refused(tmp_path: Path, key: str) -> None:
    text = "".join(x for x in PINS_TEXT.splitlines(keepends=True) if not x.startswith(key + "="))
    home = home_with(tmp_path, text)
    with pytest.raises(J0Error) as info:
        load_pins(home)
    assert str(info.value) == f"{home / 'overlay' / 'pins.env'}: missing {key}"
    assert info.value.exit_code == 2


def test_load_pins_reads_the_file_as_written(tmp_path: Path) -> None:
    home = home_with(tmp_path, PINS_TEXT.replace("J0_SEED=20261031", "J0_SEED=7"))
    pins = load_pins(home)
    assert pins.j0_seed == 7
    assert pins.patch_file == home / "overlay" / "jetspec-j0.patch"


def test_every_command_refuses_a_broken_pins_file(tmp_path: Path) -> None:
    """End to end: `j0 overlay verify` with J0_HOME holding a duplicate key exits 2, naming it."""
    home = home_with(tmp_path, PINS_TEXT + "VLLM_RELEASE=0.34.0\n")
    line = len(PINS_TEXT.splitlines()) + 1
    env = {**os.environ, "J0_HOME": str(home), "PYTHONPATH": str(ROOT / "scripts")}
    result = subprocess.run(
        [sys.executable, "-m", "j0", "overlay", "verify", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert f"pins.env:{line}: VLLM_RELEASE is set twice" in result.stderr


def test_j0_home_without_pins_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("J0_HOME", str(tmp_path))
    with pytest.raises(J0Error) as info:
        load_pins()
    assert f"J0_HOME={tmp_path}: no overlay/pins.env there" == str(info.value)
    assert info.value.exit_code == 2


def test_set_pin_changes_one_line_and_keeps_every_other_byte(tmp_path: Path) -> None:
    home = home_with(tmp_path, PINS_TEXT)
    sha = "3147a351" + "0" * 32
    assert set_pin("DRAFTER_COMMIT", sha, home) is True
    after = (home / "overlay" / "pins.env").read_text(encoding="utf-8")
    assert after == PINS_TEXT.replace("DRAFTER_COMMIT=\n", f"DRAFTER_COMMIT={sha}\n")
    assert set_pin("DRAFTER_COMMIT", sha, home) is False


def test_set_pin_refuses_a_broken_file_and_an_absent_key(tmp_path: Path) -> None:
    home = home_with(tmp_path, PINS_TEXT + "DRAFTER_COMMIT=x\n")
    with pytest.raises(J0Error, match="DRAFTER_COMMIT is set twice"):
        set_pin("DRAFTER_COMMIT", "y", home)
    assert (home / "overlay" / "pins.env").read_text() == PINS_TEXT + "DRAFTER_COMMIT=x\n"
    home = home_with(tmp_path / "other", "A=1\n")
    with pytest.raises(J0Error, match="no DRAFTER_COMMIT= line to update") as info:
        set_pin("DRAFTER_COMMIT", "y", home)
    assert info.value.exit_code == 2
