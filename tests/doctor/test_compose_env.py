"""`.env` read with Docker Compose's rules (j0.compose.dotenv on python-dotenv's parser): the
cases of tests/doctor/dotenv_cases.py (typed by hand from compose's documentation; the same table
is checked against the real `docker compose config` in tests/compose/test_compose_dotenv.py), the
lines compose and python-dotenv read differently (refused, naming the line), and the knobs as
`j0 doctor` / `j0 status` resolve them from such a file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from doctor.dotenv_cases import CASES, ENVIRONMENT
from j0.compose import dotenv as compose_env
from j0.compose import switches as settings
from j0.errors import J0Error
from j0.pins import Pins


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[next(iter(c[1])) for c in CASES])
def test_a_dotenv_line_reads_as_compose_reads_it(text: str, expected: dict[str, str]) -> None:
    assert compose_env.parse_dotenv(text, ENVIRONMENT) == expected


def test_before_the_hand_parser_read_these_otherwise() -> None:
    """What the regex parser this replaces got wrong (each now as compose has it)."""
    text = 'SQ=\'${OTHER}\'\nUQ=$OTHER/x\nDQ="a\\tb" # c\nMULTI="one\ntwo"\nD=${UNSET_KNOB:-x}\n'
    assert compose_env.parse_dotenv(text, ENVIRONMENT) == {
        "SQ": "${OTHER}",
        "UQ": "from-env/x",
        "DQ": "a\tb",
        "MULTI": "one\ntwo",
        "D": "x",
    }


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("not a line\n", ".env:1: 'not a line' is not a KEY=VALUE statement"),
        ("A=1\nB='unterminated\n", '.env:2: "B=\'unterminated" is not a KEY=VALUE statement'),
        ("KEY: value\n", ".env:1: 'KEY: value' is not a KEY=VALUE statement"),
        ("my.key=1\n", "the key 'my.key': use letters, digits and _ only"),
        ("SQ='a\\\\b'\n", "inside single quotes: compose keeps both backslashes"),
        ('DQ="it\\\'s"\n', "inside double quotes"),
        ('DQ="\\0101"\n', "inside double quotes"),
        ("UQ=a\t# c\n", "a # after a tab"),
        ("UQ= # c\n", 'after "= "'),
        ("REQ=${UNSET_KNOB:?set it in .env}\n", "UNSET_KNOB is unset: set it in .env"),
    ],
)
def test_what_compose_refuses_or_reads_otherwise_is_refused(text: str, said: str) -> None:
    with pytest.raises(J0Error) as info:
        compose_env.parse_dotenv(text, ENVIRONMENT)
    assert said in str(info.value) and info.value.exit_code == 2


def test_compose_interpolation_operators() -> None:
    values = {"A": "1", "EMPTY": ""}
    got = settings.interpolate(
        "${A}-${B:-x}-${EMPTY:-y}-${EMPTY-z}-${A:+p}-${EMPTY+q}-${EMPTY:+r}-$A-$$A-$-${A/x}", values
    )
    assert got == "1-x-y--p-q--1-$A-$-${A/x}"
    with pytest.raises(J0Error, match=r"\$\{B\?\.\.\.\}: B is unset: required"):
        compose_env.substitute("${B?}", values.get, "here")


def test_knobs_from_a_dotenv_with_interpolation(pins: Pins, tmp_path: Path) -> None:
    root = tmp_path / "j0"
    (root / "overlay").mkdir(parents=True)
    shutil.copy(pins.pins_path, root / "overlay" / "pins.env")
    shutil.copy(pins.root / "compose.serve.yaml", root / "compose.serve.yaml")
    (root / ".env").write_text(
        "export PORT=9000 # the host port\nMODELS=/data/models\n"
        "HF_HUB_CACHE=${MODELS}/hub\nAPI_KEY_FILE='$HOME/key'\nTARGET_MODEL=\"$ME/model\"\n"
    )
    local = Pins(**{**pins.__dict__, "root": root})
    found = settings.resolve(local, {"ME": "org"})
    assert (found.get("PORT"), found.source("PORT")) == ("9000", ".env")
    assert found.hub_cache() == Path("/data/models/hub")
    assert found.get("API_KEY_FILE") == "$HOME/key"  # single quotes: literal, as in compose
    assert found.get("TARGET_MODEL") == "org/model"
    (root / ".env").write_bytes(b"PORT=\xff\n")
    with pytest.raises(J0Error, match=r"\.env: not UTF-8 text"):
        settings.resolve(local, {})
