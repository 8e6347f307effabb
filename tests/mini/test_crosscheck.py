"""The teacher-forced cross-check's arithmetic: anchors rebuilt from per_step_accepted (worked by
hand), a step cut by max_tokens, and the whole check on a record made by the dflash package's own
speculative loop (`dflash_generate`, greedy) with the smoke models: every step must agree, and a
record with one count changed must not. dflash_generate's statistics call torch.cuda.synchronize
for its timer; on this CPU-only torch that timer is replaced with time.perf_counter (the loop
itself is dflash's, unchanged)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from j0.errors import J0Error
from j0.mini.run.crosscheck_steps import Agreement, EngineStep, compare, engine_steps


def test_anchors_by_hand() -> None:
    # prompt of 10; output of 9 tokens; steps accept 2, 0, 3 -> anchors at output 0, 3, 4, 8
    steps = engine_steps(10, 9, [2, 0, 3, 1])
    assert [(s.anchor_index, s.position, s.available) for s in steps] == [
        (0, 10, 8),
        (3, 13, 5),
        (4, 14, 4),
        (8, 18, 0),
    ]
    with pytest.raises(ValueError, match="past the 9 output tokens"):
        engine_steps(10, 9, [2, 0, 3, 1, 0])


def test_compare_counts_leading_matches_and_cut_steps() -> None:
    step = EngineStep(1, 0, 10, accepted=2, available=8)
    assert compare(step, [5, 6, 9], [5, 6, 7], 3).equal
    worse = compare(step, [5, 1, 9], [5, 6, 7], 3)
    assert (worse.reference, worse.equal, worse.slot) == (1, False, 2)
    # last step cut by max_tokens: the engine counted 3, only 1 token came back after the anchor
    cut = EngineStep(4, 8, 18, accepted=3, available=1)
    assert compare(cut, [4, 4, 4], [4], 7).equal


def _record(smoke_out: Path, k: int, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    import dflash.model
    import torch

    from j0.mini.run.crosscheck import Response, load_models
    from j0.mini.train.tokenizer import load

    monkeypatch.setattr(dflash.model, "_cuda_time", time.perf_counter)
    models = load_models(smoke_out / "target", smoke_out / "drafter-mask", "cpu")
    tokenizer = load(smoke_out / "target")
    text = (Path(dflash.model.__file__)).read_text()[:3000]
    ids = tokenizer(text)["input_ids"][:120]
    stats = dflash.model.dflash_generate(
        models.drafter,
        models.target,
        torch.tensor([ids]),
        48,
        None,
        block_size=k + 1,
        return_stats=True,
    )
    output = stats.output_ids[0, len(ids) :].tolist()
    # dflash_generate caps its last step's count at max_new_tokens (vLLM counts it uncut): the
    # last step is left out of the record
    accepted = [n - 1 for n in stats.acceptance_lengths][:-1]
    return models, Response("r0", ids, output, accepted)


@pytest.mark.slow  # dflash_generate on trained smoke models
def test_dflash_generate_record_agrees(smoke_out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from j0.mini.run.crosscheck import check_response

    models, response = _record(smoke_out, 7, monkeypatch)
    agreement = Agreement()
    check_response(models, response, 7, 0.0, agreement)
    assert agreement.steps == len(response.per_step_accepted) >= 3
    assert agreement.equal == agreement.steps and agreement.ok, agreement.differing[:3]
    assert agreement.engine_accepted == agreement.reference_accepted


@pytest.mark.slow  # dflash_generate on trained smoke models
def test_a_changed_count_is_found(smoke_out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from j0.mini.run.crosscheck import Response, check_response

    models, response = _record(smoke_out, 7, monkeypatch)
    counts = list(response.per_step_accepted)
    # one count changed: up by one where the engine accepted fewer than 7, else down by one
    changed = next((i for i, n in enumerate(counts) if n < 7), 1)
    counts[changed] += 1 if counts[changed] < 7 else -1
    agreement = Agreement()
    check_response(
        models,
        Response("r0", response.prompt_ids, response.output_ids, counts),
        7,
        0.0,
        agreement,
    )
    assert not agreement.ok and agreement.unexplained >= 1
    first = agreement.differing[0]
    assert first["step"] == changed + 1 and first["engine"] == counts[changed]
    assert first["drafter_margin"] is not None and first["target_margin"] is not None


def test_answers_without_token_ids_are_named() -> None:
    from j0.mini.run.crosscheck import responses_from_answers

    with pytest.raises(J0Error, match="return_token_ids"):
        responses_from_answers([{"choices": [{"text": "x"}]}])
    with pytest.raises(J0Error, match="per_step_accepted"):
        responses_from_answers([{"choices": [{"token_ids": [1], "prompt_token_ids": [2]}]}])
    found = responses_from_answers(
        [
            {
                "id": "cmpl-1",
                "choices": [{"token_ids": [7, 8], "prompt_token_ids": [5, 6]}],
                "metrics": {"speculative_decoding": {"per_step_accepted": [1]}},
            }
        ]
    )
    assert found[0].output_ids == [7, 8] and found[0].per_step_accepted == [1]
