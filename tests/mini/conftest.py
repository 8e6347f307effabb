"""The smoke miniature, trained once per session on this CPU by `j0 mini train --smoke`'s
function (a few standard-library files, tiny sizes, seconds per model). tests/mini is a package
(its __init__.py) so that this conftest is `mini.conftest`, not a second `conftest`."""

from __future__ import annotations

from pathlib import Path

import pytest

from j0.mini.train import TrainOptions, TrainResult, run_train


@pytest.fixture(scope="session")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    out = tmp_path_factory.mktemp("mini") / "out"
    return run_train(
        TrainOptions(out=out, smoke=True, device="cpu", budget=3.0, progress=False),
        say=lambda line: None,
    )


@pytest.fixture(scope="session")
def smoke_out(smoke: TrainResult) -> Path:
    return smoke.out
