"""Property: the texts j0 reads from users and servers are answered or refused, never crash:

* /metrics (prometheus_counters.parse): a Snapshot, None (no spec-decode counters), or a
  MetricsFormatError (a ValueError with a message); a huge position label never sizes a list;
* the speculative config (serving.parse_speculative_config): a ServeSpec or a J0Error (64);
* the pins file (pins.parse_pins, and load_pins on a file of any bytes): the values or a J0Error;
* `.env` (j0.compose.dotenv.parse_dotenv, compose's rules on python-dotenv's parser):
  a dict of str to str.
Bounded memory throughout. Inputs: text built from the formats' own pieces (metric names,
labels, numbers, JSON keys, KEY=VALUE lines) mixed with arbitrary text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import outcome
from j0.article import serving, spec_config
from j0.compose.dotenv import parse_dotenv
from j0.engine.figures import prometheus_counters
from j0.errors import J0Error
from j0.pins import load_pins, parse_pins

ROOT = Path(__file__).resolve().parents[2]
NAMES = [*prometheus_counters.FAMILIES, "vllm:other", "x"]
numbers = st.one_of(
    st.sampled_from(["1", "0", "-5", "NaN", "+Inf", "1e309", "12.5", "x", ""]),
    st.integers(0, 10**30).map(str),
)
labels = st.dictionaries(
    st.sampled_from(["engine", "position", "model_name", "le"]),
    st.one_of(numbers, st.text(max_size=4)),
    max_size=3,
)


@st.composite
def expositions(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        name = draw(st.sampled_from(NAMES))
        if draw(st.booleans()):
            lines.append(f"# TYPE {name} {draw(st.sampled_from(['counter', 'gauge', 'x']))}")
        body = ",".join(f'{k}="{v}"' for k, v in draw(labels).items())
        suffix = draw(st.sampled_from(["_total", "_created", ""]))
        lines.append(f"{name}{suffix}{{{body}}} {draw(numbers)}")
        if draw(st.booleans()):
            lines.append(draw(st.text(max_size=20)))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n# EOF\n"]))


@given(expositions())
def test_metrics_text_is_counters_none_or_a_refusal(text: str) -> None:
    refusal = prometheus_counters.MetricsFormatError
    result = outcome(lambda: prometheus_counters.parse(text), refusal)
    if isinstance(result, prometheus_counters.Snapshot):
        counts = result.counts
        assert min(counts.drafts, counts.draft_tokens, counts.accepted) >= 0
        assert len(counts.accepted_per_pos) <= prometheus_counters.MAX_SPEC_TOKENS
    else:
        assert result is None or isinstance(result, prometheus_counters.MetricsFormatError)


spec_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**20),
    st.floats(allow_nan=True),
    st.sampled_from(["dflash", "auto", "/drafter", "fp8", ""]),
    st.lists(st.integers(), max_size=2),
)
spec_objects = st.dictionaries(
    st.sampled_from([*spec_config.KNOWN_KEYS[:4], "other"]), spec_values, max_size=6
).map(json.dumps)


@given(st.one_of(spec_objects, st.text(max_size=40)), st.sampled_from([None, "auto", "fp8"]))
def test_a_speculative_config_is_parsed_or_refused(raw: str, kv: str | None) -> None:
    result = outcome(lambda: serving.parse_speculative_config(raw, kv), J0Error)
    if isinstance(result, J0Error):
        assert result.exit_code == 64
    else:
        assert result.config.method == "dflash" and result.config.tokens >= 1


pin_lines = st.one_of(
    st.tuples(st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True), st.text(max_size=8)).map(
        lambda kv: f"{kv[0]}={kv[1]}"
    ),
    st.sampled_from(["# comment", "", "J0_SEED=abc", "J0_SEED=-1", "=x", "export A=1"]),
    st.text(max_size=12),
)


@given(st.lists(pin_lines, max_size=8).map("\n".join))
def test_pins_text_is_values_or_a_refusal(text: str) -> None:
    result = outcome(lambda: parse_pins(text, "pins.env"), J0Error)
    if not isinstance(result, J0Error):
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in result.items())


@given(st.binary(max_size=64), st.booleans())
def test_a_pins_file_of_any_bytes_loads_or_is_refused(
    tmp_path_factory: Any, tail: bytes, keep: bool
) -> None:
    """The real pins file with bytes appended (or only those bytes): Pins or a J0Error."""
    home = tmp_path_factory.mktemp("home")
    (home / "overlay").mkdir()
    real = (ROOT / "overlay" / "pins.env").read_bytes() if keep else b""
    (home / "overlay" / "pins.env").write_bytes(real + tail)
    result = outcome(lambda: load_pins(home), J0Error)
    assert isinstance(result, J0Error) or result.j0_seed >= 0


dotenv_lines = st.one_of(
    st.tuples(
        st.sampled_from(["A", "PORT", "export B", " C ", "1X"]),
        st.sampled_from(["=", " = ", ":"]),
        st.text(max_size=10),
    ).map("".join),
    st.text(max_size=15),
)


@given(st.lists(dotenv_lines, max_size=8).map("\n".join))
def test_dotenv_text_is_a_dict_of_strings(text: str) -> None:
    values = outcome(lambda: parse_dotenv(text, {}), J0Error)
    if isinstance(values, J0Error):  # a line compose would read otherwise, named
        assert ".env" in str(values)
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in values.items())
