"""The smoke miniature, trained once per session on this CPU by `j0 mini train --smoke`'s
function (a few standard-library files, tiny sizes, seconds per model). tests/mini is a package
(its __init__.py) so that this conftest is `mini.conftest`, not a second `conftest`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from j0.mini.train.run import TrainOptions, run_train

ROOT = Path(__file__).resolve().parents[2]


SMOKE = {"smoke": True, "device": "cpu", "budget": 3.0, "progress": False}
# What the smoke training reads: j0's code that j0.mini.train.run imports (content_cache.j0_code),
# this file, and the stack that runs it.
SMOKE_PACKAGES = ("torch", "transformers", "tokenizers", "safetensors", "dflash", "numpy")


def _train_smoke(tmp: Path) -> Path:
    out = tmp / "out"
    run_train(TrainOptions(out=out, **SMOKE), say=lambda line: None)  # type: ignore[arg-type]
    return out


@pytest.fixture(scope="session")
def smoke_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke miniature's folder (target and drafters, mini.json): trained once and cached by
    content (tests/content_cache.py: the key takes in every file of j0's code the training
    imports, so a change to that code trains it again, and a change elsewhere in j0 does not);
    each session reads a copy of its own. About 14 s of training per pytest worker that needs
    it, before the cache."""
    import content_cache

    training = ROOT / "scripts" / "j0" / "mini" / "train" / "run.py"
    files = [*content_cache.j0_code(training), Path(__file__).resolve()]
    key = content_cache.key(files, SMOKE, SMOKE_PACKAGES)
    work = tmp_path_factory.mktemp("mini")
    return content_cache.cached_folder("mini-smoke", key, work, _train_smoke, name="out")


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
