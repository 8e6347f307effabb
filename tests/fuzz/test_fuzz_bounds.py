"""Property (issue 31, classes 5 and 6): what enters is bounded and checked, or refused with a
message; never a crash, never unbounded memory:

* JSON texts with huge integers, deep nesting and arbitrary text (errors.parse_json): a value
  or a J0Error (exit 2), never ValueError/RecursionError escaping;
* `.env` texts whose lines reference, double and nest earlier variables
  (compose_env.parse_dotenv): a dict whose values are at most MAX_VALUE_CHARS long, or a J0Error;
* drafter configs with any num_hidden_layers / layer_types (causality.resolve): a resolution of
  at most MAX_LAYERS layers, or a ValueError with a message;
* files of any kind and size named as inputs (errors.read_input_bytes with a small limit): the
  bytes when a regular file within the limit, else a J0Error naming the file;
* numeric option values (every NumberType of every command's parser): the number when in range,
  else argparse.ArgumentTypeError.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import outcome
from j0.cli import build_parser
from j0.commands import NumberType
from j0.compose.dotenv import MAX_VALUE_CHARS, parse_dotenv
from j0.engine.source import causality
from j0.errors import INPUT_LACKS, J0Error, parse_json, read_input_bytes

big_ints = st.integers(4000, 6000).map(lambda n: "9" * n)
json_pieces = st.one_of(
    big_ints,
    st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.sampled_from(["1e999", "-0", "NaN", "Infinity", '"\\ud800"', "null", "{", "]"]),
    st.text(max_size=20),
)


@given(st.lists(json_pieces, min_size=1, max_size=4))
def test_parse_json_answers_or_refuses(pieces: list[str]) -> None:
    text = "[" + ",".join(pieces) + "]"
    got = outcome(lambda: parse_json(text, "f.json"), J0Error)
    if isinstance(got, J0Error):
        assert got.exit_code == INPUT_LACKS and str(got).startswith("f.json: not JSON (")


names = st.sampled_from(["A", "B", "C", "D"])
references = st.one_of(
    names.map(lambda n: f"${{{n}}}"),
    names.map(lambda n: f"${n}${n}"),
    st.tuples(names, st.integers(1, 40)).map(lambda t: "${U:-" * t[1] + t[0] + "}" * t[1]),
    st.text(alphabet="xyz", min_size=1, max_size=8),
)


@given(st.lists(st.tuples(names, st.lists(references, min_size=1, max_size=4)), max_size=24))
def test_dotenv_interpolation_is_bounded(lines: list[tuple[str, list[str]]]) -> None:
    text = "".join(f"{key}={''.join(parts)}\n" for key, parts in lines)
    got = outcome(lambda: parse_dotenv(text, {}), J0Error)
    if not isinstance(got, J0Error):
        assert all(len(v) <= MAX_VALUE_CHARS for v in got.values())


layer_counts = st.one_of(
    st.integers(-(10**15), 10**15), st.floats(), st.text(max_size=3), st.booleans(), st.none()
)


@given(
    layer_counts,
    st.one_of(st.none(), st.lists(st.sampled_from(["full_attention", "sliding_attention"]),
                                  max_size=50), st.integers(), st.text(max_size=5)),
    st.sampled_from([{}, {"is_causal": True}, {"dflash_config": {"causal": False}}]),
)  # fmt: skip
def test_layer_counts_are_range_checked(layers: object, types: object, extra: dict) -> None:
    config = {"num_hidden_layers": layers, "layer_types": types, **extra}
    got = outcome(lambda: causality.resolve(config), ValueError)
    if not isinstance(got, ValueError):
        assert len(got.causal) <= causality.MAX_LAYERS


@given(st.sampled_from(["regular", "dir", "fifo", "dev", "link"]), st.integers(0, 300))
def test_input_files_are_judged_before_read(kind: str, size: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input"
        if kind == "regular":
            path.write_bytes(b"x" * size)
        elif kind == "dir":
            path.mkdir()
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "link":
            path.symlink_to("/dev/zero")
        else:
            path = Path("/dev/null")
        got = outcome(lambda: read_input_bytes(path, "--log", limit=200), J0Error)
        if kind == "regular" and size <= 200:
            assert got == b"x" * size
        else:
            assert isinstance(got, J0Error) and f"--log {path}:" in str(got)


def number_types(parser: argparse.ArgumentParser) -> list[NumberType]:
    found: list[NumberType] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += number_types(sub)
        elif isinstance(action.type, NumberType):
            found.append(action.type)
    return found


TYPES = number_types(build_parser())


@given(
    st.sampled_from(TYPES),
    st.one_of(
        st.floats().map(repr),
        st.integers(-(2**70), 2**70).map(str),
        st.text(max_size=12),
        st.sampled_from(["nan", "-inf", "+inf", "1e400", "0x10", "1_000", " 7 "]),
    ),
)
def test_numeric_options_take_only_numbers_in_range(kind: NumberType, text: str) -> None:
    try:
        value = kind(text)
    except argparse.ArgumentTypeError as refused:
        assert "expected" in str(refused)
        return
    assert math.isfinite(value) and kind.minimum <= value <= kind.maximum
    assert not (kind.above and value == kind.minimum)
    assert isinstance(value, int) if kind.whole else isinstance(value, float)
    json.dumps(value)
