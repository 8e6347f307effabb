"""`--draft-data generated`: the rows the target writes for the drafters are its greedy choices,
checked against one teacher-forced forward of the whole row (smoke target, CPU, fp32)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from j0.mini.sizes import SMOKE
from j0.mini.train.generate import generate_rows, greedy_rows

# transformers imported in-process: one worker for its users (tests/mini/test_train_smoke.py).
pytestmark = pytest.mark.xdist_group("transformers")


def test_rows_are_the_targets_greedy_continuations(smoke_out: Path) -> None:
    from transformers import Qwen3ForCausalLM

    target = Qwen3ForCausalLM.from_pretrained(str(smoke_out / "target"), dtype=torch.float32)
    target.eval()
    prompts = torch.randint(5, 512, (3, 16), generator=torch.Generator().manual_seed(0))
    rows = greedy_rows(target, prompts, 40, "cpu")
    assert rows.shape == (3, 40)
    assert torch.equal(rows[:, :16], prompts)
    with torch.no_grad():
        greedy = target(input_ids=rows).logits.argmax(-1)
    assert torch.equal(rows[:, 16:], greedy[:, 15:-1])


def test_generate_rows_makes_at_least_one_batch(smoke_out: Path) -> None:
    from transformers import Qwen3ForCausalLM

    target = Qwen3ForCausalLM.from_pretrained(str(smoke_out / "target"), dtype=torch.float32)
    tokens = torch.arange(5, 505)
    rows = generate_rows(target.eval(), tokens, SMOKE, 0.0, "cpu", torch.Generator())
    assert rows.shape == (SMOKE.gen_batch, SMOKE.draft_seq)
