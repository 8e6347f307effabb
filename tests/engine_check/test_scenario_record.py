"""scenarios.json as a type (j0.engine_check.scenarios.record): the H200's recorded runs read
and write back byte for byte, and a file of other kinds is refused
naming the file, the part, the key and the value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j0.engine_check.scenarios import record, table
from j0.errors import J0Error

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted((ROOT / "docs" / "results" / "engine-scenarios-h200").glob("*/scenarios.json"))


@pytest.mark.parametrize("path", RECORDED, ids=[p.parent.name for p in RECORDED])
def test_the_recorded_runs_read_and_write_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    run = record.ScenariosRun.read(path)
    assert run.label == path.parent.name and len(run.scenarios) == 5
    written = run.write(tmp_path)
    assert written.read_bytes() == path.read_bytes()


def _minimal() -> dict:
    request = {"name": "0:A", "prompt_tokens": 3, "cached_tokens": None, "output_token_ids": [1]}
    scenario = {
        "name": "prefix",
        "forces": "f",
        "single_stream": True,
        "requests": [request],
        "preemptions": 0.0,
        "audit_lines": {"audit-1.jsonl": [0, 2]},
    }
    return {"label": "x", "file": "article", "caching": "on", "j0": "on", "mode": "eager",
            "scenarios": [scenario]}  # fmt: skip


def test_a_run_written_by_hand_without_the_senders_options_reads() -> None:
    run = record.ScenariosRun.from_json(_minimal(), "x.json")
    assert (run.audit, run.max_tokens, run.seed) == (None, None, None)
    assert run.scenarios[0].audit_lines == {"audit-1.jsonl": (0, 2)}
    assert run.scenarios[0].cached_tokens == 0  # a request that did not say counts none


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d.update(j0="yes"), 'x.json: \'j0\' is "yes", expected one of "on", "off"'),
        (lambda d: d.update(mode="cuda"), '\'mode\' is "cuda", expected one of "eager"'),
        (lambda d: d.pop("label"), "x.json: no 'label' (expected a string)"),
        (lambda d: d.update(scenarios={}), "'scenarios' is {}, expected a list"),
        (
            lambda d: d["scenarios"][0].update(single_stream="no"),
            "x.json: scenarios[0]: 'single_stream' is \"no\", expected true or false",
        ),
        (
            lambda d: d["scenarios"][0].update(audit_lines={"a.jsonl": [3]}),
            "scenarios[0]: audit_lines['a.jsonl'] is [3], expected [first line, line after",
        ),
        (
            lambda d: d["scenarios"][0]["requests"][0].update(prompt_tokens="3"),
            "scenarios[0]: requests[0]: 'prompt_tokens' is \"3\", expected a whole number",
        ),
        (
            lambda d: d["scenarios"][0]["requests"][0].update(output_token_ids=["a"]),
            "requests[0]: 'output_token_ids' is [\"a\"], expected a list of token ids",
        ),
        (lambda d: d["scenarios"].append(7), "x.json: scenarios[1]: 7, expected an object"),
    ],
)
def test_a_run_of_other_kinds_is_refused_naming_where(edit, said: str) -> None:
    value = _minimal()
    edit(value)
    with pytest.raises(J0Error) as caught:
        record.ScenariosRun.from_json(value, "x.json")
    assert said in str(caught.value) and caught.value.exit_code == 2


def test_the_table_names_the_file_and_key_of_a_bad_run(tmp_path: Path, capsys) -> None:
    value = _minimal()
    value["scenarios"][0]["preemptions"] = "none"
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "scenarios.json").write_text(json.dumps(value))
    assert table.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "r/scenarios.json: scenarios[0]: 'preemptions' is \"none\", expected a number" in err
