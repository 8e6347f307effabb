"""`j0 mini curves` and the plot `j0 mini train` makes: drawn from the logs with matplotlib
(real, headless), and a log it cannot read is named with its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j0.cli import main
from j0.errors import J0Error
from j0.mini.train.curves import plot_curves, read_log, series


def write_log(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_curves_are_drawn_from_the_logs(tmp_path: Path) -> None:
    logs = tmp_path / "mini" / "logs"
    logs.mkdir(parents=True)
    write_log(logs / "target.jsonl", [{"step": s, "loss": 9.0 - s / 10} for s in (1, 11, 21)])
    write_log(
        logs / "drafter-j0.jsonl",
        [
            {"step": 1, "loss": 8.0, "heldout_loss": 8.1},
            {"step": 11, "loss": 7.0},
            {"step": 101, "loss": 5.0, "heldout_loss": 5.5},
        ],
    )
    assert series(read_log(logs / "drafter-j0.jsonl"), "heldout_loss") == ([1, 101], [8.1, 5.5])
    said = tmp_path / "said.json"
    assert main(["mini", "curves", str(tmp_path / "mini"), "--json", str(said)]) == 0
    assert (logs / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(said.read_text()) == {"plot": str(logs / "curves.png")}
    assert plot_curves(logs) == logs / "curves.png"


def test_a_line_that_is_no_log_line_is_named(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "target.jsonl").write_text('{"step": 1, "loss": 2}\n{"loss": 3}\n')
    with pytest.raises(J0Error, match=r"target.jsonl:2: no whole-number 'step'"):
        plot_curves(logs)
    (logs / "target.jsonl").write_text("not json\n")
    with pytest.raises(J0Error, match=r"target.jsonl:1: not JSON"):
        plot_curves(logs)


def test_a_folder_without_logs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    assert main(["mini", "curves", str(tmp_path)]) == 2
