"""The drafter's training batch: the one attention mask for all anchors (written out by hand for a
small case), the J0 and mask initialisations, the labels, and one forward of all blocks against a
separate forward per anchor through the dflash package's own causal attention (no mask given),
with the smoke models on the CPU."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from j0.mini.sizes import MASK_ID
from j0.mini.train import batch as drafter_batch


def test_block_mask_by_hand() -> None:
    # seq 4, block 2, anchors at 1 and 3: query rows (a0 s0, a0 s1, a1 s0, a1 s1)
    mask = drafter_batch.block_mask(torch.tensor([[1, 3]]), seq=4, block=2)
    expected = [
        # context 0 1 2 3 | block a0s0 a0s1 a1s0 a1s1
        [1, 0, 0, 0, 1, 0, 0, 0],
        [1, 0, 0, 0, 1, 1, 0, 0],
        [1, 1, 1, 0, 0, 0, 1, 0],
        [1, 1, 1, 0, 0, 0, 1, 1],
    ]
    assert mask.shape == (1, 1, 4, 8)
    assert mask[0, 0].int().tolist() == expected


def test_slot_weights() -> None:
    weights = drafter_batch.slot_weights(4, 2.0, "cpu")
    raw = [1.0, math.exp(-0.5), math.exp(-1.0)]
    assert torch.allclose(weights, torch.tensor([r / (sum(raw) / 3) for r in raw]))
    assert torch.equal(drafter_batch.slot_weights(4, 0.0, "cpu"), torch.ones(3))


def _models(smoke_out: Path):  # type: ignore[no-untyped-def]
    from dflash.model import DFlashDraftModel
    from transformers import Qwen3ForCausalLM

    target = Qwen3ForCausalLM.from_pretrained(str(smoke_out / "target"), dtype=torch.float32)
    drafter = DFlashDraftModel.from_pretrained(str(smoke_out / "drafter-mask"), dtype=torch.float32)
    return target.eval(), drafter.eval()


@pytest.mark.slow  # trains smoke drafters
def test_inits_and_labels(smoke_out: Path) -> None:
    target, _ = _models(smoke_out)
    ids = torch.randint(5, 512, (3, 64), generator=torch.Generator().manual_seed(1))
    for init in ("mask", "j0"):
        batch = drafter_batch.build(
            ids, target, (0, 1), 16, 4, init, "data", torch.Generator().manual_seed(2)
        )
        blocks = batch.noise_ids.view(3, 4, 16)
        anchors = batch.position_ids[:, 64:].view(3, 4, 16)[:, :, 0]
        for b in range(3):
            for a in range(4):
                p = int(anchors[b, a])
                assert 1 <= p <= 64 - 16
                assert int(blocks[b, a, 0]) == int(ids[b, p])
                assert batch.data_labels[b, a].tolist() == ids[b, p + 1 : p + 16].tolist()
                rest = blocks[b, a, 1:].tolist()
                if init == "mask":
                    assert rest == [MASK_ID] * 15
                else:
                    assert set(rest) <= set(ids[b, : p + 1].tolist())
        with torch.no_grad():
            greedy = target(input_ids=ids).logits.argmax(-1)
        b, a = 1, 2
        p = int(anchors[b, a])
        assert batch.target_labels[b, a].tolist() == greedy[b, p : p + 15].tolist()


# Slow: one forward per anchor on the CPU, 16 s in a fast-subset run of 2026-12-06.
@pytest.mark.slow
def test_one_forward_equals_one_forward_per_anchor(smoke_out: Path) -> None:
    target, drafter = _models(smoke_out)
    ids = torch.randint(5, 512, (2, 64), generator=torch.Generator().manual_seed(3))
    batch = drafter_batch.build(
        ids, target, (0, 1), 16, 4, "j0", "data", torch.Generator().manual_seed(4)
    )
    with torch.no_grad():
        together = drafter_batch.logits(drafter, target, batch, 16)  # [2, 4, 15, V]
        embed = target.model.embed_tokens
        for b in range(2):
            for a in range(4):
                block = batch.noise_ids[b].view(4, 16)[a]
                p = int(batch.position_ids[b, 64 + 16 * a])
                alone = drafter(
                    position_ids=torch.arange(p + 16)[None],
                    noise_embedding=embed(block[None]),
                    target_hidden=batch.taps[b : b + 1, :p],
                )
                scores = target.lm_head(alone[0, 1:])
                assert torch.allclose(together[b, a], scores, atol=1e-4), (b, a)


def test_expected_acceptance() -> None:
    agree = torch.tensor([[True, True, False, True], [False, True, True, True]])
    assert drafter_batch.expected_acceptance(agree, 4) == 1.0 + (2 + 0) / 2
    assert drafter_batch.expected_acceptance(agree, 1) == 1.0 + (1 + 0) / 2
