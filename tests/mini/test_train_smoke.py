"""`j0 mini train --smoke` on this CPU: what it writes loads in transformers and the dflash
package, the drafters pass `j0 drafter check`'s causality rule, the corpus split follows the
stated rule, and mini.json's hashes are the files' (each recomputed here with hashlib)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from j0.drafter.config import check_causality
from j0.errors import USAGE, J0Error
from j0.mini.train.run import TrainOptions, run_train

# The tests that import transformers in their own process share one pytest-xdist worker (the
# group "transformers", here and in test_recipe, test_train_interrupt, test_mini_cli): its import,
# about 3 s of CPU, was paid in each worker that ran one of them.
pytestmark = pytest.mark.xdist_group("transformers")


def test_models_load_and_drafters_are_causal(smoke_out: Path) -> None:
    from dflash.model import DFlashDraftModel
    from transformers import PreTrainedTokenizerFast, Qwen3ForCausalLM

    target = Qwen3ForCausalLM.from_pretrained(str(smoke_out / "target"))
    assert target.config.tie_word_embeddings is False
    assert target.config.vocab_size == 512
    for init in ("mask", "j0"):
        folder = smoke_out / f"drafter-{init}"
        config = json.loads((folder / "config.json").read_text())
        assert config["architectures"] == ["DFlashDraftModel"]
        assert config["dflash_config"]["mask_token_id"] == 4
        assert config["dflash_config"]["causal"] is True
        assert config["is_causal"] is True
        assert config["block_size"] == 16
        causality = check_causality(folder)
        assert causality.all_causal, causality.summary()
        drafter = DFlashDraftModel.from_pretrained(str(folder))
        assert drafter.target_layer_ids == [0, 1]
        assert drafter.fc.weight.shape == (64, 128)  # two taps of hidden 64
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(folder))
        ids = [tokenizer.convert_tokens_to_ids(t) for t in ("<unk>", "<s>", "</s>", "<pad>")]
        assert ids == [0, 1, 2, 3]
        assert tokenizer.mask_token_id == 4
        text = "def f(x):\n    return x  # é\n"
        assert tokenizer.decode(tokenizer(text)["input_ids"]) == text  # byte-level: lossless


def test_corpus_split_follows_the_rule(smoke_out: Path) -> None:
    corpus = json.loads((smoke_out / "corpus.json").read_text())
    files = corpus["files"]
    assert corpus["heldout_files"] >= 1 and corpus["train_files"] >= 1
    for f in files:
        digest = int(hashlib.sha256(f["relative"].encode()).hexdigest(), 16)
        assert f["heldout"] == (digest % 50 == 0), f["relative"]
        data = (Path(f["root"]) / f["relative"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"]
        assert 3000 <= len(data) <= 300_000
    first_root = [f["relative"] for f in files if f["root"] == files[0]["root"]]
    assert first_root == sorted(first_root)  # sorted paths


def test_manifest_hashes_and_logs(smoke_out: Path) -> None:
    manifest = json.loads((smoke_out / "mini.json").read_text())
    on_disk = {
        p.relative_to(smoke_out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in smoke_out.rglob("*")
        if p.is_file() and p.name != "mini.json"
    }
    assert manifest["files"] == on_disk
    assert manifest["smoke"] is True and manifest["device"] == "cpu"
    assert set(manifest["drafters"]) == {"mask", "j0"}
    for name in ("target", "drafter-mask", "drafter-j0"):
        lines = [
            json.loads(x) for x in (smoke_out / "logs" / f"{name}.jsonl").read_text().splitlines()
        ]
        assert lines and all(set(x) >= {"step", "loss", "seconds"} for x in lines)
        steps = [x["step"] for x in lines]
        assert steps == sorted(steps) and steps[0] == 1
    for init in ("mask", "j0"):
        slots = json.loads((smoke_out / "logs" / f"slots-{init}.json").read_text())
        assert len(slots["accuracy_vs_data"]) == 15
        assert all(0.0 <= a <= 1.0 for a in slots["agreement_with_target"])


def test_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(J0Error) as caught:
        run_train(TrainOptions(out=out, smoke=True, device="cpu"), say=lambda line: None)
    assert caught.value.exit_code == USAGE and str(out) in str(caught.value)
    assert (out / "mine.txt").read_text() == "keep me"
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
