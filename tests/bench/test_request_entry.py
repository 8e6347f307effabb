"""A result's request entry as a type of its writer (j0.bench.result.request_entry.RequestEntry):
the entries `j0 bench run` writes against our vLLM stand-in
(tests/servers/vllm/server.py, on 127.0.0.1) in the type's order, every entry recorded on the
H200 (docs/results/) read back and written as it was, and an entry key of another kind refused
naming the file, the request, the key and what was expected."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bench.recorded_results import RECORDED
from j0.bench.result.request_entry import RequestEntry
from j0.bench.result.results import read_result
from j0.cli import main
from j0.errors import INPUT_LACKS, J0Error
from servers.vllm.server import VllmStandIn

# The type's keys, in its order: its fields but the two that keep what a file had.
FIELDS = [f.name for f in dataclasses.fields(RequestEntry) if f.name not in ("keys", "extra")]


def test_the_recorded_entries_read_back_and_are_written_as_they_were() -> None:
    """The file is the reference: each entry written again is its own object, key for key and
    in its order."""
    entries = 0
    for path in RECORDED:
        written = json.loads(path.read_text())["requests"]
        again = [entry.to_json() for entry in read_result(path).requests]
        assert [list(e.items()) for e in again] == [list(e.items()) for e in written], path
        entries += len(written)
    assert entries >= 50


def _keys_in_table_order(entry: dict) -> bool:
    return [key for key in FIELDS if key in entry] == list(entry)


def test_the_writer_writes_its_keys_in_the_tables_order(tmp_path: Path) -> None:
    """A run with its outputs kept (output_text, the per-step arrays) and one whose server sends
    a usage count that is none (metrics_problems, token_counts_rejected)."""
    kept, faulty = tmp_path / "kept.json", tmp_path / "faulty.json"
    args = ["--requests", "3", "--warmup", "0", "--max-tokens", "16", "--no-progress"]
    with VllmStandIn(num_spec_tokens=5, seed=2) as vllm:
        run = ["bench", "run", "--url", vllm.url, *args, "--keep-outputs"]
        assert main([*run, "--out", str(kept)]) == 0
    faults = {1: {"prompt_tokens": -12}}
    with VllmStandIn(num_spec_tokens=5, seed=2, final_usage_faults=faults) as vllm:
        assert main(["bench", "run", "--url", vllm.url, *args, "--out", str(faulty)]) == 0
    entries = [
        *json.loads(kept.read_text())["requests"],
        *json.loads(faulty.read_text())["requests"],
    ]
    assert {"output_text", "per_step_accepted", "per_step_context_length"} <= set(entries[0])
    assert {"metrics_problems", "token_counts_rejected"} <= set(entries[4])
    assert all(_keys_in_table_order(entry) for entry in entries)
    assert not set().union(*entries) - set(FIELDS)


def test_a_key_the_table_does_not_know_is_kept_in_its_place() -> None:
    value = {"index": 0, "a_later_key": [1], "ok": True}
    entry = RequestEntry.from_json(value)
    assert entry.ok is True and entry.extra == {"a_later_key": [1]}
    assert list(entry.to_json().items()) == list(value.items())
    assert entry.has("index") and not entry.has("repeat") and entry.repeat == 0


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("metrics_problems", "too many", "'metrics_problems' is \"too many\", expected list"),
        ("repeat", None, "'repeat' is null, expected int"),
        ("ok", "yes", "'ok' is \"yes\", expected bool"),
        ("chunk_tokens", [1, 2.5], "'chunk_tokens' is [1, 2.5], expected a list of whole numbers"),
        (
            "output_token_ids",
            [1, True],
            "'output_token_ids' is [1, true], expected a list of whole",
        ),
        (
            "per_step_accepted",
            [1, "2"],
            "'per_step_accepted' is [1, \"2\"], expected a list of numbers",
        ),
        ("per_step_drafted", 7, "'per_step_drafted' is 7, expected a list of numbers"),
    ],
)
def test_an_entry_key_of_another_kind_is_refused_naming_the_file(
    tmp_path: Path, key: str, value: object, said: str
) -> None:
    doc = json.loads(RECORDED[-1].read_text())
    doc["requests"][2][key] = value
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(J0Error) as raised:
        read_result(path)
    assert str(raised.value).startswith(f"{path}: requests[2]: {said}")
    assert raised.value.exit_code == INPUT_LACKS


def test_a_null_list_is_no_list(tmp_path: Path) -> None:
    """null where a list of numbers goes reads as no list (an older writer's form)."""
    doc = json.loads(RECORDED[-1].read_text())
    doc["requests"][2]["per_step_accepted"] = None
    doc["requests"][2]["chunk_tokens"] = None
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc))
    entry = read_result(path).requests[2]
    assert entry.per_step_accepted is None and entry.chunk_tokens is None


def test_a_top_level_number_of_another_kind_is_named_once(tmp_path: Path) -> None:
    """The result's own keys are named by the same words (int and float: "a number", once)."""
    doc = json.loads(RECORDED[-1].read_text())
    doc["acceptance_length"] = "x"
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(J0Error) as raised:
        read_result(path)
    assert str(raised.value) == f"{path}: key 'acceptance_length' is \"x\", expected a number"
