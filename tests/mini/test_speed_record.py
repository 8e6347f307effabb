"""RUN/speed.json as a type (j0.mini.run.speed_record.SpeedRecord): the kept record of the first
GPU set reads back as it was written, byte for byte; any record `j0 mini speed`'s writer
(speed.summarize and speed.record) can build survives to_json and from_json; and a file that
lacks a key, or holds a value of other kinds, is refused naming the file, the key and what was
expected (exit 2), by the reader and by `j0 mini numbers`' speed kind."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from j0.cli import main
from j0.errors import INPUT_LACKS, OK, J0Error
from j0.mini.run import speed
from j0.mini.run.speed_record import SpeedMachine, SpeedRecord

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "docs" / "results" / "mini-gpu" / "seed0" / "run-summary" / "speed.json"
ROW = "ngram/k7"  # a row of the kept record


def test_the_kept_record_reads_back_as_it_was_written(tmp_path: Path) -> None:
    raw = json.loads(KEPT.read_text())
    record = SpeedRecord.from_json(raw, str(KEPT))
    assert record.to_json() == raw
    assert list(record.to_json()) == list(raw)  # the same keys in the same order
    assert record.table[ROW].speedup == 1.273 and record.machine.driver == "580.159.04"
    written = record.write(tmp_path / "speed.json")
    assert written.read_bytes() == KEPT.read_bytes()
    assert SpeedRecord.read(written) == record
    assert speed.markdown(record) == (KEPT.parent / "speed.md").read_text()


def totals() -> st.SearchStrategy[dict[str, float]]:
    """One round's totals as speed.totals gives them."""
    return st.fixed_dictionaries(
        {
            "tokens": st.integers(0, 10**6).map(float),
            "seconds": st.just(0.0) | st.floats(1e-3, 1e5),
            "steps": st.integers(0, 10**6).map(float),
            "failed": st.integers(0, 50),
        }
    )


@st.composite
def records(draw: st.DrawFn) -> SpeedRecord:
    """A record as `j0 mini speed` builds it: each setting's rounds through summarize (the base
    any one of them), the options, the sampling temperature and the machine through record."""
    names = draw(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4, unique=True))
    repeats = draw(st.integers(1, 4))
    rounds = {name: draw(st.lists(totals(), min_size=repeats, max_size=repeats)) for name in names}
    table = speed.summarize(rounds, draw(st.sampled_from(names)))
    options = speed.SpeedOptions(
        out=Path("out"),
        tokens=draw(st.integers(1, 32)),
        repeats=repeats,
        slots=draw(st.integers(1, 64)),
        max_tokens=draw(st.integers(1, 10**5)),
        graphs=draw(st.booleans()),
    )
    gpu = SpeedMachine(draw(st.text()), draw(st.text()))
    temperature = draw(st.floats(0, 2))
    return speed.record(options, names, draw(st.integers(1, 1000)), temperature, table, gpu)


@settings(max_examples=60, deadline=None)
@given(records())
def test_any_record_the_writer_builds_survives_to_json_and_from_json(record: SpeedRecord) -> None:
    text = json.dumps(record.to_json(), indent=1)
    back = SpeedRecord.from_json(json.loads(text), "speed.json")
    assert back == record
    assert json.dumps(back.to_json(), indent=1) == text
    assert speed.markdown(back) == speed.markdown(record)


def pop_row_rate(doc: dict[str, Any]) -> None:
    doc["table"][ROW].pop("tokens_per_s")


def seconds_as_text(doc: dict[str, Any]) -> None:
    doc["table"][ROW]["seconds"] = "36.606"


def temperature_as_text(doc: dict[str, Any]) -> None:
    doc["temperature"] = "0.8"


def rate_as_text(doc: dict[str, Any]) -> None:
    doc["table"][ROW]["round_tokens_per_s"][1] = "477.63"


REFUSALS: list[tuple[Callable[[dict[str, Any]], None], str]] = [
    (pop_row_rate, f"table.{ROW}: no 'tokens_per_s' (expected a number or null)"),
    (lambda doc: doc.pop("machine"), "no 'machine' (expected an object)"),
    (lambda doc: doc["machine"].pop("driver"), "machine: no 'driver' (expected a string)"),
    (seconds_as_text, f"""table.{ROW}: 'seconds' is "36.606", expected a number"""),
    (temperature_as_text, """'temperature' is "0.8", expected a number"""),
    (rate_as_text, f"table.{ROW}: 'round_tokens_per_s' is [527.41, \"477.63\", 508.05], expected"),
    (lambda doc: doc.update(table={}), "table is {}, expected one row per setting measured"),
]


def planted(run: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """RUN/speed.json: the kept record, changed."""
    run.mkdir(parents=True, exist_ok=True)
    doc = json.loads(KEPT.read_text())
    change(doc)
    path = run / "speed.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


@pytest.mark.parametrize(("change", "said"), REFUSALS)
def test_a_record_of_other_kinds_is_refused_naming_the_file_and_the_key(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], said: str
) -> None:
    path = planted(tmp_path, change)
    with pytest.raises(J0Error) as caught:
        SpeedRecord.read(path)
    assert str(caught.value).startswith(f"{path}: {said}"), str(caught.value)
    assert caught.value.exit_code == INPUT_LACKS


@pytest.mark.parametrize(("change", "said"), REFUSALS[:4])
def test_numbers_refuses_it_too(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[dict[str, Any]], None],
    said: str,
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("<!-- numbers: speed run -->\n<!-- /numbers -->\n")
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(KEPT, run / "speed.json")
    assert main(["mini", "numbers", str(readme), "--write"]) == OK  # the kept record is read
    path = planted(run, change)
    capsys.readouterr()
    assert main(["mini", "numbers", str(readme)]) == INPUT_LACKS
    err = capsys.readouterr().err
    assert f"{path}: {said}" in err and "internal error" not in err, err
