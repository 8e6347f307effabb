"""Issue 54's recipe (items 1 and 3): the target's window covers the run's longest context and
its output, its held-out loss by position (checked against a per-token cross-entropy computed
here with log_softmax on a real tiny Qwen3), the model-FLOPs count (written out by hand here for
the full sizes), the learning-rate schedule that ends with the budget at its floor, and what the
smoke training records of all of it in mini.json."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from j0.mini.sizes import FULL, SMOKE
from j0.mini.train import flops
from j0.mini.train.schedule import FLOOR, lr_at
from j0.mini.train.target import bucket_edges, heldout_by_position


def test_the_window_covers_the_longest_default_context_and_its_output() -> None:
    # the run's default longest context is 8 x draft_seq; it generates check_tokens (256)
    assert FULL.target_seq >= 8 * 512 + 256 == 4352
    assert FULL.target_seq == 4608
    assert SMOKE.target_seq >= 8 * SMOKE.draft_seq + SMOKE.check_tokens


def test_position_buckets_are_the_issues() -> None:
    assert bucket_edges(FULL) == [0, 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 4352, 4608]
    assert bucket_edges(SMOKE) == [0, 64, 128, 192, 256, 320, 384, 448, 512, 528, 576]


@pytest.mark.xdist_group("transformers")  # transformers imported in-process: one worker
def test_the_loss_by_position_is_the_per_token_cross_entropy() -> None:
    """A real (random) Qwen3 of the smoke sizes on windows of 40 tokens in buckets of 16: each
    bucket's loss equals the mean, over the same windows, of -log_softmax at the next token,
    computed here position by position."""
    import torch
    from transformers import Qwen3ForCausalLM

    from j0.mini.train.data import windows
    from j0.mini.train.target import target_config

    sizes = replace(SMOKE, target_seq=40, position_bucket=16, eval_batches=2, target_batch=3)
    torch.manual_seed(1)
    model = Qwen3ForCausalLM(target_config(sizes)).eval()
    tokens = torch.randint(5, sizes.vocab, (500,))
    overall, buckets = heldout_by_position(model, tokens, sizes, "cpu", seed=7)
    generator = torch.Generator().manual_seed(8)  # heldout_by_position draws with seed + 1
    losses = []
    with torch.no_grad():
        for _ in range(2):
            batch = windows(tokens, 40, 3, generator)
            logp = torch.log_softmax(model(input_ids=batch).logits.double(), dim=-1)
            for row in range(3):
                losses.append([-float(logp[row, p, batch[row, p + 1]]) for p in range(39)])
    per_position = [sum(x[p] for x in losses) / len(losses) for p in range(39)]
    assert [(b.start, b.to) for b in buckets] == [(0, 16), (16, 32), (32, 40)]
    assert [b.tokens for b in buckets] == [16 * 6, 16 * 6, 7 * 6]  # position 39 predicts nothing
    for bucket in buckets:
        part = per_position[bucket.start : min(bucket.to, 39)]
        assert bucket.loss == pytest.approx(sum(part) / len(part), abs=1e-3)
    assert overall == pytest.approx(sum(per_position) / 39, abs=1e-4)


def test_the_flops_of_the_full_target_written_out() -> None:
    # per layer: q 512x512, k and v 512x256, o 512x512 (4 heads of 128, 2 KV heads) and the MLP
    # 3 x 512x1536; 6 layers; the head 4096x512
    per_layer = 512 * 512 + 2 * 512 * 256 + 512 * 512 + 3 * 512 * 1536
    weights = 6 * per_layer + 4096 * 512
    assert flops.linear_weights(FULL) == weights == 20_971_520
    # attention: QK^T and AV, 2 FLOPs a multiply-add, over half the window of 4608 on average,
    # 4 heads x 128, 6 layers; forward + backward = 3 x forward
    attention = 3 * (2 * 2 * 2304 * 512 * 6)
    assert flops.target_flops_per_token(FULL) == 6 * weights + attention
    rate = flops.throughput(1_000_000, 2.0, 1e8, "NVIDIA H100 80GB HBM3")
    assert rate.tokens_per_s == 500_000 and rate.tflops == 50.0
    assert rate.peak_tflops == 989.4 and rate.mfu == round(50 / 989.4, 4)
    assert flops.peak_tflops("NVIDIA H100 PCIe") == 756.0
    assert flops.throughput(10, 1.0, 1e8, None).mfu is None  # the CPU: no peak, no MFU
    assert flops.throughput(10**6, 1.0, 1e8, "a GPU", peak=200.0).mfu == 0.5


def test_the_schedule_ends_with_the_budget_at_its_floor() -> None:
    base, budget = 1e-3, 200.0
    assert lr_at(base, 0.0, budget) == pytest.approx(base * 0.01)
    assert lr_at(base, 0.03 * budget, budget) == pytest.approx(base)  # warm-up done
    assert lr_at(base, budget, budget) == pytest.approx(base * FLOOR)
    assert lr_at(base, 2 * budget, budget) == pytest.approx(base * FLOOR)
    middle = 0.03 * budget + 0.5 * 0.97 * budget  # half-way through the cosine
    assert lr_at(base, middle, budget) == pytest.approx(base * (FLOOR + (1 - FLOOR) / 2))
    after = [lr_at(base, t, budget) for t in range(6, 201)]
    assert all(a >= b for a, b in itertools.pairwise(after))
    assert FLOOR > 0 and math.isclose(min(after), base * FLOOR)


@pytest.mark.slow
def test_the_smoke_training_records_the_recipe(smoke_out: Path) -> None:
    manifest = json.loads((smoke_out / "mini.json").read_text())
    target = manifest["target"]
    buckets = target["heldout_by_position"]
    assert [b["from"] for b in buckets] + [buckets[-1]["to"]] == bucket_edges(SMOKE)
    assert all(b["loss"] > 0 and b["tokens"] > 0 for b in buckets)
    total = sum(b["loss"] * b["tokens"] for b in buckets) / sum(b["tokens"] for b in buckets)
    assert total == pytest.approx(target["heldout_loss"], abs=1e-3)
    kept = json.loads((smoke_out / "logs" / "target-positions.json").read_text())
    assert kept["buckets"] == buckets
    rate = target["throughput"]
    # the first step (compilation on CUDA) is not timed: the rest are, each a full batch
    assert rate["tokens"] == (target["steps"] - 1) * SMOKE.target_seq * SMOKE.target_batch
    if rate["tokens"]:
        assert rate["tokens_per_s"] == pytest.approx(rate["tokens"] / rate["seconds"], rel=0.01)
    assert rate["mfu"] is None  # the CPU: no peak
    assert rate["flops_per_token"] == flops.target_flops_per_token(SMOKE)
    assert target["compiled"] == "eager"  # the CPU never compiles
    assert set(manifest["budgets"]) == {"target", "generate", "drafter"}
    for record in manifest["drafters"].values():
        assert record["rows_seen"] > 0 and record["passes"] > 0
    lines = [json.loads(x) for x in (smoke_out / "logs" / "target.jsonl").read_text().splitlines()]
    assert all(0 < line["lr"] <= SMOKE.target_lr for line in lines)
