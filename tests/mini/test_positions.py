"""OUT/logs/target-positions.json, the target's held-out loss by position that `j0 mini train`
writes and `j0 mini curves` plots: one type (j0.mini.train.positions) writes it and reads it back
as it was, and a file that is not such a document is refused naming the file, the key and the
value (exit 2), never a traceback in the plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j0.errors import INPUT_LACKS, J0Error
from j0.mini.train.positions import POSITIONS, PositionBucket, read_positions, write_positions

BUCKETS = [PositionBucket(0, 512, 1536, 5.25), PositionBucket(512, 600, 264, 6.5)]


def test_what_the_writer_wrote_is_read_back(tmp_path: Path) -> None:
    path = write_positions(tmp_path, BUCKETS)
    assert path == tmp_path / POSITIONS == tmp_path / "target-positions.json"
    # the form `j0 mini train` has written since issue 54: {"buckets": [{from, to, tokens, loss}]}
    assert path.read_text() == (
        '{\n "buckets": [\n  {\n   "from": 0,\n   "to": 512,\n   "tokens": 1536,\n'
        '   "loss": 5.25\n  },\n  {\n   "from": 512,\n   "to": 600,\n   "tokens": 264,\n'
        '   "loss": 6.5\n  }\n ]\n}\n'
    )
    assert read_positions(path) == BUCKETS
    assert read_positions(tmp_path / "none.json") == []  # a folder trained before issue 54


@pytest.mark.parametrize(
    ("buckets", "said"),
    [
        ([{"from": 0, "to": 1, "tokens": 2, "loss": 1}, {"from": "x"}], "buckets[1]: 'from' is"),
        ([{"to": 1, "tokens": 2, "loss": 1.0}], "buckets[0]: no 'from' (expected a whole number"),
        ([{"from": 0, "to": 1, "tokens": 2, "loss": None}], "buckets[0]: 'loss' is null"),
        ({"from": 0}, "'buckets' is {\"from\": 0}, expected a list"),
    ],
)
def test_a_bad_file_is_named_with_the_key_and_the_value(
    tmp_path: Path, buckets: object, said: str
) -> None:
    path = tmp_path / POSITIONS
    path.write_text(json.dumps({"buckets": buckets}))
    with pytest.raises(J0Error) as caught:
        read_positions(path)
    assert str(caught.value).startswith(f"{path}: {said}"), str(caught.value)
    assert caught.value.exit_code == INPUT_LACKS
