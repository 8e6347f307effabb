"""The teacher-forced cross-check: the `dflash` package's reference (its DFlashDraftModel and the
target in transformers) run at each verify step of a greedy J0-off engine response, on the
engine's own committed tokens and anchor, and its accepted count compared with the engine's.

One target forward over prompt + output gives the taps of every position and the target's logits;
at each step the drafter sees the taps of positions < anchor and the block [anchor, mask x K]
(dflash's own causal mask, no cache), as `dflash_generate` drafts. Where the counts differ, the
first differing slot's logit margins (top-1 minus top-2) of the drafter and of the target are
recorded; below the threshold it is a near-tie (bf16 rounding can flip it), else unexplained.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.errors import INPUT_LACKS, J0Error, read_json_file
from j0.mini.device import autocast
from j0.mini.run.crosscheck_steps import Agreement, compare, engine_steps

DEFAULT_THRESHOLD = 0.5  # logits; bf16 carries about 3 significant digits


@dataclass(frozen=True)
class Response:
    """What the cross-check needs of one engine answer."""

    id: str
    prompt_ids: list[int]
    output_ids: list[int]
    per_step_accepted: list[int]
    prompt_id: str | None = None  # the run's prompt id (its context bin), where known


@dataclass
class Models:
    target: Any
    drafter: Any
    mask_token_id: int
    device: str


def load_models(target: Path, drafter: Path, device: str) -> Models:
    import torch
    from dflash.model import DFlashDraftModel
    from transformers import Qwen3ForCausalLM

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    tgt = Qwen3ForCausalLM.from_pretrained(str(target), dtype=dtype).to(device).eval()
    dft = DFlashDraftModel.from_pretrained(str(drafter), dtype=dtype).to(device).eval()
    config = read_json_file(drafter / "config.json")  # bounded; a J0Error (exit 2) naming it
    mask = (config.get("dflash_config") or {}).get("mask_token_id", config.get("mask_token_id"))
    if mask is None:
        raise J0Error(f"{drafter}/config.json: no dflash_config.mask_token_id", INPUT_LACKS)
    return Models(tgt, dft, int(mask), device)


def _margin(logits: Any) -> float:
    top = logits.float().topk(2).values
    return float(top[0] - top[1])


def check_response(
    models: Models,
    response: Response,
    k: int,
    threshold: float,
    agreement: Agreement,
    temperature: float = 0.0,
) -> None:
    import torch

    from j0.mini.run import ceiling

    steps = engine_steps(
        len(response.prompt_ids), len(response.output_ids), response.per_step_accepted
    )
    sequence = torch.tensor([response.prompt_ids + response.output_ids], device=models.device)
    layers = models.drafter.target_layer_ids
    with torch.no_grad(), autocast(models.device):
        out = models.target(input_ids=sequence, output_hidden_states=True)
        taps = torch.cat([out.hidden_states[layer + 1] for layer in layers], dim=-1)
        target_logits = out.logits[0]
        start = len(response.prompt_ids) - 1  # the logits that predict output token 0
        logp, entropy = ceiling.token_stats(
            target_logits[start : start + len(response.output_ids)], temperature
        )
        q = [2.718281828459045**x for x in logp]
        agreement.ceiling.append(
            {
                "request": response.id,
                "prompt_id": response.prompt_id,
                "oracle": ceiling.oracle_acceptance(q, k),
                "measured": ceiling.measured_acceptance(response.per_step_accepted),
                "logp_argmax": logp,
                "entropy": entropy,
            }
        )
        embed = models.target.model.embed_tokens
        for step in steps:
            anchor = response.output_ids[step.anchor_index]
            block = torch.tensor([[anchor] + [models.mask_token_id] * k], device=models.device)
            positions = torch.arange(step.position + k + 1, device=models.device)[None]
            hidden = models.drafter(
                position_ids=positions,
                noise_embedding=embed(block),
                target_hidden=taps[:, : step.position],
            )
            logits = models.drafter.compute_logits(hidden[0, 1:], models.target.lm_head)
            drafts = logits.argmax(-1).tolist()
            committed = response.output_ids[step.anchor_index + 1 : step.anchor_index + 1 + k]
            comparison = compare(step, drafts, committed, k)
            if not comparison.equal and comparison.slot is not None:
                slot = comparison.slot
                comparison.drafter_margin = round(_margin(logits[slot - 1]), 4)
                comparison.target_margin = round(
                    _margin(target_logits[step.position + slot - 1]), 4
                )
                comparison.near_tie = (
                    min(comparison.drafter_margin, comparison.target_margin) < threshold
                )
            agreement.add(response.id, comparison)
    agreement.requests += 1


def cross_check(
    target: Path,
    drafter: Path,
    responses: Sequence[Response],
    k: int,
    device: str,
    threshold: float = DEFAULT_THRESHOLD,
    temperature: float = 0.0,
) -> Agreement:
    """Every response checked step by step; with the per-token log p_T(argmax), entropy and the
    ceiling of each (j0.mini.run.ceiling) at the run's temperature."""
    models = load_models(target, drafter, device)
    agreement = Agreement()
    for response in responses:
        check_response(models, response, k, threshold, agreement, temperature)
    return agreement


def responses_from_answers(answers: Sequence[dict[str, Any]]) -> list[Response]:
    """Responses from the engine's completion answers (asked with return_token_ids and the
    `detailed` per-request metrics); J0Error naming what an answer lacks."""
    found = []
    for number, answer in enumerate(answers):
        choice = (answer.get("choices") or [{}])[0]
        spec = ((answer.get("metrics") or {}).get("speculative_decoding")) or {}
        prompt_ids, output_ids = choice.get("prompt_token_ids"), choice.get("token_ids")
        steps = spec.get("per_step_accepted")
        if not (isinstance(prompt_ids, list) and isinstance(output_ids, list)):
            raise J0Error(
                f"answer {number}: no prompt_token_ids/token_ids (the server ignored "
                "return_token_ids); expected vLLM's completion answer",
                INPUT_LACKS,
            )
        if not isinstance(steps, list):
            raise J0Error(
                f"answer {number}: no metrics.speculative_decoding.per_step_accepted; expected "
                "a server started with --per-request-spec-decode-metrics detailed",
                INPUT_LACKS,
            )
        prompt_id = answer.get("j0_prompt_id")
        found.append(
            Response(
                str(answer.get("id", number)),
                prompt_ids,
                output_ids,
                steps,
                str(prompt_id) if prompt_id is not None else None,
            )
        )
    return found
