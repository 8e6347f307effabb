"""`j0 mini speed`'s default DFlash setting (j0.mini.run.speed.best_dflash), read from a run's
mini-run.json through its type (RunSummary): the setting at the asked draft tokens with the
highest pooled acceptance length, seeded J0 runs left out. The expected names are read off the
recorded H200 summary by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from j0.errors import INPUT_LACKS, J0Error
from j0.mini.run.run_summary import RunSummary
from j0.mini.run.speed import best_dflash

RECORDED = Path(__file__).resolve().parents[2] / "docs/results/mini-h200/run-summary/mini-run.json"


@pytest.mark.parametrize(
    ("tokens", "best"), [(7, "drafter-mask/k7-j0-off"), (15, "drafter-mask/k15-j0-off")]
)
def test_the_best_dflash_setting_of_the_recorded_run(tokens: int, best: str) -> None:
    assert best_dflash(RunSummary.read(RECORDED), tokens) == best


def test_no_dflash_setting_at_those_tokens_is_named() -> None:
    with pytest.raises(J0Error, match="no DFlash setting at 3 draft tokens") as caught:
        best_dflash(RunSummary.read(RECORDED), 3)
    assert caught.value.exit_code == INPUT_LACKS
