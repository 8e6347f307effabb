"""Every numeric option of every command, given NaN, infinities, negative, huge and non-numbers:
a usage error (exit 64) naming the value and the range, never a value let through (`mini train
--gamma nan` trained on a NaN loss and saved all-NaN drafters with exit 0; `selfcheck --seed -1`
ended in a traceback with exit 1, which selfcheck defines as "J0 deviates").

The sweep walks the real parsers (j0.cli.build_parser), as tests/test_path_arguments.py does for
paths: an option typed as a plain int or float, without a range, fails
`test_every_numeric_option_has_a_range`; every ranged type (j0.commands.NumberType) is given
hypothesis's values in and out of its range.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from j0.cli import build_parser, main
from j0.commands import NumberType, WholeNumbers
from j0.errors import USAGE


def options(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from options(sub, f"{prefix} {name}".strip())
        elif action.type is not None:
            yield (
                f"{prefix} {action.option_strings[0] if action.option_strings else action.dest}",
                action,
            )


ALL = list(options(build_parser()))
NUMERIC = [(name, a) for name, a in ALL if isinstance(a.type, NumberType | WholeNumbers)]


def test_every_numeric_option_has_a_range() -> None:
    plain = [name for name, a in ALL if a.type in (int, float)]
    assert plain == [], f"typed int/float without a range (use j0.commands.whole_number): {plain}"
    names = {name for name, _ in NUMERIC}
    # The sweep sees the options of the issue (and so every command's parser).
    assert {"mini train --gamma", "selfcheck --seed", "bench run --requests"} <= names
    assert len(NUMERIC) >= 40


def ranged(action: argparse.Action) -> NumberType:
    kind = action.type
    return kind.item if isinstance(kind, WholeNumbers) else kind  # type: ignore[return-value]


def refused(action: argparse.Action, text: str) -> str:
    with pytest.raises(argparse.ArgumentTypeError) as error:
        action.type(text)  # type: ignore[misc]
    return str(error.value)


BAD_ALWAYS = ["nan", "NaN", "inf", "-inf", "1e999", "", "seven", "1" * 5000, "9" * 30]


@pytest.mark.parametrize(("name", "action"), NUMERIC, ids=[n for n, _ in NUMERIC])
def test_nan_inf_huge_and_text_are_refused(name: str, action: argparse.Action) -> None:
    kind = ranged(action)
    for text in BAD_ALWAYS:
        message = refused(action, text)
        assert "expected" in message and len(message) < 200, (name, text, message)
    if kind.minimum >= 0:
        refused(action, "-1")
    assert kind.maximum < 2**64, name


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NUMERIC), st.floats(allow_nan=True, allow_infinity=True))
def test_a_number_is_taken_exactly_when_it_is_in_range(
    named: tuple[str, argparse.Action], value: float
) -> None:
    _, action = named
    kind = ranged(action)
    inside = (
        math.isfinite(value)
        and kind.minimum <= value <= kind.maximum
        and not (kind.above and value == kind.minimum)
        and (not kind.whole or value == int(value))
    )
    text = str(int(value)) if kind.whole and inside else repr(value)
    if inside:
        got = action.type(text)  # type: ignore[misc]
        assert (got[0] if isinstance(got, list) else got) == value
    else:
        refused(action, text)


@pytest.mark.parametrize(
    "argv",
    [
        ["mini", "train", "{tmp}/out", "--smoke", "--gamma", "nan"],
        ["mini", "train", "{tmp}/out", "--smoke", "--gamma", "-1"],
        ["mini", "train", "{tmp}/out", "--smoke", "--draft-lr", "inf"],
        ["selfcheck", "--seed", "-1"],
        ["selfcheck", "--cases", "0"],
        ["mini", "run", "{tmp}/out", "--port", "70000"],
        ["status", "--no-probe", "--deadline", "nan"],
        ["dumps", "check", "{tmp}", "--skip-requests", "-3"],
    ],
)
def test_the_command_exits_64_naming_the_value(
    argv: list[str], tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as ended:
        main(args)
    assert ended.value.code == USAGE
    err = capsys.readouterr().err
    assert f"'{args[-1]}'" in err and "expected" in err
