"""`j0 dumps audit FOLDER`: the verdict on the J0 audit's JSON-lines records.

The records here are written by the test in the audited speculator.py's format (the patch's
`_J0Audit.write`: one `start` line, then one `step` line per draft step); the records the real
kernels write are judged in tests/selfcheck/test_selfcheck_audit.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j0.cli import main


def _step(step: int, slots: list[int], mismatch: bool = False) -> dict[str, object]:
    n = len(slots)
    first: list[dict[str, object]] = []
    if mismatch:
        first = [
            {"what": "history", "request": 0, "slot": slots[0], "pos": 3, "history": 9, "own": 7},
            {
                "what": "draw",
                "request": 0,
                "slot": slots[0],
                "k": 2,
                "index": 3,
                "drawn": 9,
                "own": 7,
                "rows_holding_drawn": [5],
            },
        ]
    return {
        "record": "step",
        "step": step,
        "requests": n,
        "req_ids": [f"cmpl-{s}" for s in slots],
        "slots": slots,
        "rows_checked": n,
        "positions_checked": 40 * n,
        "draws_checked": 7 * n,
        "row_mismatches": int(mismatch),
        "mismatched_positions": int(mismatch),
        "draw_mismatches": int(mismatch),
        "first": first,
    }


def _write(folder: Path, records: list[dict[str, object]], name: str = "audit-101.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


START = {"record": "start", "pid": 101, "ctx_noise": True, "max_num_reqs": 4}


def test_clean_batched_records_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, [START, _step(0, [3]), _step(1, [3, 2, 1, 0]), _step(2, [2, 0])])
    out = tmp_path / "audit.json"
    assert main(["dumps", "audit", str(tmp_path), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("PASS: 3 draft steps (2 with several requests, at most 4)")
    assert "4 requests in request slots [0, 1, 2, 3], 7 history rows (280 positions)" in text
    assert "49 draws" in text
    summary = json.loads(out.read_text())
    assert summary["verdict"] == "PASS" and summary["exit"] == 0
    assert (summary["rows_checked"], summary["draws_checked"], summary["mismatches"]) == (7, 49, 0)


def test_a_mismatch_fails_and_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, [START, _step(0, [3, 1]), _step(1, [1, 3], mismatch=True), _step(2, [1])])
    assert main(["dumps", "audit", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("FAIL: 1 history rows (1 positions) and 1 draws do not hold")
    assert "in 1 of 3 steps" in err
    assert "step 1 (audit-101.jsonl), request 'cmpl-1' in slot 1: history position 3 holds 9" in err
    assert "draw k=2 at index 3 drew 9, its own token is 7" in err and "[5]" in err


def test_records_of_several_engine_starts_add_up(tmp_path: Path) -> None:
    _write(tmp_path, [START, _step(0, [0])], "audit-1.jsonl")
    _write(tmp_path, [START, _step(0, [1]), _step(1, [1], mismatch=True)], "audit-2.jsonl")
    from j0.article.audit_records import read_folder

    summary = read_folder(tmp_path)
    assert (summary.files, summary.starts, summary.steps, summary.row_mismatches) == (2, 2, 3, 1)


@pytest.mark.parametrize(
    ("records", "why"),
    [
        (None, "holds no audit-*.jsonl"),
        ([{**START, "ctx_noise": False}], "J0 was off in every start"),
        ([START], "no draft step was audited"),
    ],
)
def test_nothing_to_judge_is_never_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], records: list | None, why: str
) -> None:
    (tmp_path / "other.txt").write_text("not a record file\n")
    if records is not None:
        _write(tmp_path, records)
    assert main(["dumps", "audit", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("NOTHING TO JUDGE") and why in err and "not a pass" in err


def test_no_such_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dumps", "audit", str(tmp_path / "absent")]) == 2
    assert "absent: no such folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"record": "stop"}', "'record' is 'stop'"),
        (json.dumps({**_step(0, [1]), "rows_checked": -1}), "'rows_checked' is -1"),
        (json.dumps({**_step(0, [1]), "draws_checked": "7"}), "'draws_checked' is '7'"),
        (json.dumps({**_step(0, [1, 2]), "slots": [1]}), "expected 2 request slots"),
        (json.dumps({**_step(0, [1, 2]), "rows_checked": 1}), "rows_checked 1 for 2 requests"),
    ],
)
def test_a_line_that_is_not_a_record_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, why: str
) -> None:
    path = _write(tmp_path, [START])
    path.write_text(path.read_text() + line + "\n")
    assert main(["dumps", "audit", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: " in err and why in err and "expected a J0 audit record" in err
