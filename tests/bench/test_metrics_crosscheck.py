"""A result's metrics_crosscheck block as a type of its writer (j0.bench.result.metrics_crosscheck):
every block recorded on the H200 (docs/results/) read back and
written as it was, and a key of another kind refused naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.recorded_results import RECORDED
from j0.bench.result.results import read_result
from j0.errors import INPUT_LACKS, J0Error


def test_the_recorded_blocks_read_back_and_are_written_as_they_were() -> None:
    assert len(RECORDED) >= 5
    for path in RECORDED:
        written = json.loads(path.read_text())["metrics_crosscheck"]
        again = read_result(path).metrics_crosscheck
        assert list(again.to_json().items()) == list(written.items()), path
        assert again.status == written["status"]


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("status", 5, "'status' is 5, expected a string or null"),
        ("engines", "0", "'engines' is \"0\", expected a list or null"),
    ],
)
def test_a_block_key_of_another_kind_is_refused_naming_the_file(
    tmp_path: Path, key: str, value: object, said: str
) -> None:
    doc = json.loads(RECORDED[0].read_text())
    doc["metrics_crosscheck"][key] = value
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(J0Error) as raised:
        read_result(path)
    assert str(raised.value) == f"{path}: key 'metrics_crosscheck': {said}"
    assert raised.value.exit_code == INPUT_LACKS
