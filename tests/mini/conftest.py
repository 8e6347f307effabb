"""The smoke miniature, trained once per session on this CPU by `j0 mini train --smoke`'s
function (a few standard-library files, tiny sizes, seconds per model). tests/mini is a package
(its __init__.py) so that this conftest is `mini.conftest`, not a second `conftest`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from j0.mini.train import TrainOptions, TrainResult, run_train

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.fixture
def article_vllm(tmp_path: Path, article_file: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `vllm` folder first on PYTHONPATH holding the article's speculator.py (and a version
    file): what `j0 image identity` finds for the servers `j0 mini run --here` starts, and for
    its own check before them."""
    site = tmp_path / "site"
    target = site / "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
    target.parent.mkdir(parents=True)
    shutil.copy(article_file, target)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "_version.py").write_text(
        "__version__ = version = '0.33.0'\n__commit_id__ = commit_id = 'g4ba787ec9'\n"
    )
    monkeypatch.setenv("PYTHONPATH", f"{site}:{ROOT / 'scripts'}")
    return site
