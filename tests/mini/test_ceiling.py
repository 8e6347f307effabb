"""The ceiling beside the measurement (issue 54, item 2): a perfect greedy drafter's acceptance
length on an output whose tokens are kept with the target's p_T(argmax), worked by hand and
checked against a simulation of the verify loop written here; the per-token log p(argmax) and
entropy against softmax done by hand; and the cross-check recording them on the smoke models."""

from __future__ import annotations

import math
import random
import time
from pathlib import Path

import pytest

from j0.mini.run import ceiling


def simulate(q: list[float], k: int, runs: int, seed: int) -> float:
    """(N - 1) / mean verify steps over `runs` simulated requests: each step keeps draft j with
    q[anchor + j] until the first rejection (all k at most), then commits one more token."""
    rng = random.Random(seed)
    n, steps = len(q), 0
    for _ in range(runs):
        anchor = 0
        while anchor < n - 1:
            steps += 1
            kept = 0
            while kept < k and anchor + kept + 1 < n and rng.random() < q[anchor + kept + 1]:
                kept += 1
            anchor += kept + 1
    return (n - 1) / (steps / runs)


def test_the_oracle_by_hand() -> None:
    # three output tokens, one draft: S(1) = 1, S(0) = 1 + (1 - q1) S(1): (n - 1) / S(0)
    assert ceiling.oracle_acceptance([1.0, 0.5, 0.9], 1) == pytest.approx(2 / 1.5)
    # every draft kept: steps of k + 1 tokens; none kept: one token a step
    assert ceiling.oracle_acceptance([1.0] * 25, 7) == pytest.approx(8.0)  # 24 = 3 x 8
    assert ceiling.oracle_acceptance([0.0] * 25, 7) == pytest.approx(1.0)
    assert ceiling.oracle_acceptance([1.0], 7) is None


def test_the_oracle_is_the_simulated_loop() -> None:
    rng = random.Random(3)
    q = [rng.uniform(0.3, 0.95) for _ in range(60)]
    for k in (1, 3, 7):
        assert ceiling.oracle_acceptance(q, k) == pytest.approx(simulate(q, k, 20_000, k), rel=0.01)


def test_token_stats_by_hand() -> None:
    import torch

    logits = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    logp, entropy = ceiling.token_stats(logits, 0.5)
    # at T = 0.5 the first row is [4, 2, 0]: p = e^4 / (e^4 + e^2 + 1)
    z = math.exp(4) + math.exp(2) + 1
    p = [math.exp(4) / z, math.exp(2) / z, 1 / z]
    assert logp[0] == pytest.approx(math.log(p[0]), abs=1e-4)
    assert entropy[0] == pytest.approx(-sum(x * math.log(x) for x in p), abs=1e-4)
    assert logp[1] == pytest.approx(-math.log(3), abs=1e-4)
    assert entropy[1] == pytest.approx(math.log(3), abs=1e-4)
    assert ceiling.token_stats(logits, 0.0) == ([0.0, 0.0], [0.0, 0.0])  # greedy: one-hot


def test_by_context_and_the_line() -> None:
    requests = [
        {"prompt_id": "ctx512-00", "oracle": 3.0, "measured": 1.5, "logp_argmax": [-0.1, -0.3],
         "entropy": [1.0, 2.0]},
        {"prompt_id": "ctx512-01", "oracle": 2.0, "measured": 1.7, "logp_argmax": [-0.2],
         "entropy": [3.0]},
        {"prompt_id": "ctx4096-00", "oracle": 2.5, "measured": 1.2, "logp_argmax": [],
         "entropy": []},
    ]  # fmt: skip
    table = ceiling.by_context(requests)
    assert list(table) == ["512", "4096"]
    assert table["512"] == {
        "requests": 2,
        "oracle": 2.5,
        "measured": 1.6,
        "logp_argmax": -0.2,
        "entropy": 2.0,
    }
    assert ceiling.words(table).endswith("512: 2.50 vs 1.60, 4096: 2.50 vs 1.20")


@pytest.mark.slow  # dflash_generate on trained smoke models
def test_the_cross_check_records_the_ceiling(
    smoke_out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dflash.model
    import torch

    from j0.mini.run.crosscheck import Response, check_response, load_models
    from j0.mini.run.crosscheck_steps import Agreement
    from j0.mini.train.tokenizer import load

    monkeypatch.setattr(dflash.model, "_cuda_time", time.perf_counter)
    models = load_models(smoke_out / "target", smoke_out / "drafter-mask", "cpu")
    ids = load(smoke_out / "target")("def main():\n    return 1\n" * 8)["input_ids"][:60]
    stats = dflash.model.dflash_generate(
        models.drafter, models.target, torch.tensor([ids]), 24, None, block_size=8,
        return_stats=True,
    )  # fmt: skip
    output = stats.output_ids[0, len(ids) :].tolist()
    accepted = [n - 1 for n in stats.acceptance_lengths][:-1]
    agreement = Agreement()
    response = Response("r0", ids, output, accepted, "ctx60-00")
    check_response(models, response, 7, 0.0, agreement, temperature=0.7)
    (record,) = agreement.ceiling
    assert record["prompt_id"] == "ctx60-00"
    assert len(record["logp_argmax"]) == len(record["entropy"]) == len(output)
    # the logits that predict output token 0 are the prompt's last position's
    with torch.no_grad():
        logits = models.target(input_ids=torch.tensor([ids + output])).logits[0]
    first = torch.log_softmax(logits[len(ids) - 1] / 0.7, dim=-1).max()
    assert record["logp_argmax"][0] == pytest.approx(float(first), abs=1e-4)
    assert 1.0 <= record["oracle"] <= 8.0
    assert record["measured"] == pytest.approx(1 + sum(accepted) / len(accepted))
