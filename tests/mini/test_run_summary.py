"""mini-run.json as a type (j0.mini.run.run_summary): both
recorded H200 summaries (the first run's, which wrote fewer keys, and the present recipe's) read
and write back byte for byte, and a summary of other kinds is refused naming the file, the key
and the value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from j0.errors import J0Error
from j0.mini.run.run_summary import RunSummary

ROOT = Path(__file__).resolve().parents[2]
RECORDED = [
    ROOT / "docs/results/mini-h200/run-summary/mini-run.json",
    ROOT / "docs/results/mini-h200/2026-12-01-loops/engine-k7/run-k7/mini-run.json",
]


@pytest.mark.parametrize("path", RECORDED, ids=["present", "first"])
def test_a_recorded_summary_reads_and_writes_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    summary = RunSummary.read(path)
    summary.write(tmp_path)
    assert (tmp_path / "mini-run.json").read_bytes() == path.read_bytes()
    raw = json.loads(path.read_text())
    assert summary.records().keys() == raw["settings"].keys()
    assert summary.passed == (not raw["problems"] and not raw["missing"])


def test_the_first_runs_summary_lacks_what_it_did_not_write() -> None:
    first = RunSummary.read(RECORDED[1])
    assert first.gate is None and first.j0_seeds is None and not first.has("slots")
    assert not any(r.has("kind") for r in first.records().values())  # it wrote no kind
    # nor did any run before 2026-12-08 record its prompts' sha256 (`j0 mini sets` reads it)
    assert first.prompts_sha256 is None and not first.has("prompts_sha256")
    assert RunSummary.read(RECORDED[0]).prompts_sha256 is None


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d.pop("settings"), "no 'settings' (expected an object)"),
        (lambda d: d.update(max_tokens="256"), "'max_tokens' is \"256\", expected a whole number"),
        (lambda d: d["settings"].update(x=[]), "settings['x'] is [], expected an object"),
        (lambda d: d.update(problems=None), "'problems' is null, expected a list"),
        (lambda d: d.update(prompts_sha256="a30d11ec"), "'prompts_sha256' is \"a30d11ec\""),
        (lambda d: d.update(prompts_sha256=None), "'prompts_sha256' is null"),
    ],
)
def test_a_summary_of_other_kinds_is_refused_naming_the_key(
    edit, said: str, tmp_path: Path
) -> None:
    value = json.loads(RECORDED[0].read_text())
    edit(value)
    (tmp_path / "mini-run.json").write_text(json.dumps(value))
    with pytest.raises(J0Error) as caught:
        RunSummary.read(tmp_path / "mini-run.json")
    assert said in str(caught.value) and "mini-run.json" in str(caught.value)
