"""The tiny models engine-check serves, made for real on the CPU: a seeded Qwen3 target, the
`dflash` package's draft model, a word-level tokenizer, and the draft made causal by `j0 drafter
patch-config` (checked the way vLLM 0.33 resolves each draft layer's causality)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("dflash")


@pytest.fixture(scope="module")
def made_here(tmp_path_factory: pytest.TempPathFactory):
    """The tiny models made in this process, where `dflash` imports (its draft writer): what both
    tests below compare with (one making of them, not one per test)."""
    from j0.engine_check.tiny_models import make_models

    return make_models(tmp_path_factory.mktemp("tiny") / "a")


@pytest.mark.slow
def test_make_models_writes_a_causal_draft_and_a_seeded_target(made_here, tmp_path: Path) -> None:
    from safetensors import safe_open
    from transformers import AutoTokenizer

    from j0.drafter import config as drafter_config
    from j0.engine_check.tiny_models import MASK_TOKEN, make_models

    made = made_here
    config = json.loads((made.draft / "config.json").read_text())
    assert config["dflash_config"]["causal"] is True
    assert config["dflash_config"]["mask_token_id"] == MASK_TOKEN == 4095
    assert (made.draft / "config.json.orig").is_file()  # patch-config kept the original
    assert "all 2 draft layers causal" in drafter_config.check_causality(made.draft).summary()
    tokenizer = AutoTokenizer.from_pretrained(made.target)
    assert tokenizer("t5 t4000 t17")["input_ids"][-3:] == [5, 4000, 17]
    # the same seed gives the same weights (the recorded H200 dumps were made from these models)
    again = make_models(tmp_path / "b")
    for folder_a, folder_b in ((made.target, again.target), (made.draft, again.draft)):
        with (
            safe_open(folder_a / "model.safetensors", "pt") as fa,
            safe_open(folder_b / "model.safetensors", "pt") as fb,
        ):
            assert sorted(fa.keys()) == sorted(fb.keys())
            name = sorted(fa.keys())[0]
            assert fa.get_tensor(name).equal(fb.get_tensor(name))


@pytest.mark.slow
def test_the_draft_without_dflash_is_what_dflash_writes(made_here, tmp_path: Path) -> None:
    """vLLM's image has no `dflash`: there the draft is written from transformers' Qwen3 layers.
    Its tensors (names, shapes, dtypes) and config.json must be those of dflash's own
    DFlashDraftModel.save_pretrained for the same config (dflash is installed in the test
    environment, and made unimportable in the process of `python -m j0.engine_check.tiny_models`
    here; dflash's own draft is the one made in this process)."""
    import subprocess
    import sys

    from safetensors import safe_open

    root = Path(__file__).resolve().parents[2]
    hide = root / "tests" / "selfcheck" / "hide_modules"
    assert made_here.draft_written_by == "dflash"
    outs = {"with": made_here.draft}
    out = tmp_path / "without"
    env = {
        "PYTHONPATH": f"{hide}:{root / 'scripts'}",
        "J0_TEST_HIDE_MODULES": "dflash",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    cmd = [sys.executable, "-m", "j0.engine_check.tiny_models", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "(draft written by transformers)" in done.stdout, done.stdout
    outs["without"] = out / "draft"

    def tensors(folder: Path) -> dict[str, tuple[tuple[int, ...], str]]:
        with safe_open(folder / "model.safetensors", "pt") as f:
            return {
                k: (tuple(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in f.keys()
            }

    assert tensors(outs["without"]) == tensors(outs["with"])
    assert "fc.weight" in tensors(outs["with"])
    configs = [json.loads((outs[n] / "config.json").read_text()) for n in ("with", "without")]
    for config in configs:
        config.pop("transformers_version", None)
    assert configs[0] == configs[1]
    assert configs[1]["architectures"] == ["DFlashDraftModel"]
