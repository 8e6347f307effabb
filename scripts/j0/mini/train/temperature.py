"""The temperature the miniature samples with, chosen by the repetition gate before any drafter
is trained: a small target continues its prompts greedily into loops (on the H200, all 12 of
an earlier run's outputs: 4-33 distinct tokens in 256), and acceptance measured on loops says
nothing about drafting. So the target continues windows of its own training stream (never the
run's prompts, which come from held-out files) at each temperature of TEMPERATURES, greedy
first, and the lowest one at which at least PICK_SHARE of the continuations are no loop
(j0.measure.repetition: no loop of period <= 64 covering the second half) is the miniature's: the
drafters learn from the target's text at it, and `j0 mini run` samples at it. PICK_SHARE is
above the run's gate (90 %) so that the choice holds on other prompts."""

from __future__ import annotations

from typing import Any

from j0.mini.sizes import Sizes

TEMPERATURES = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
MAX_TEMPERATURE = 2.0  # the most --temperature takes, and mini.json may hold
PICK_SHARE = 0.95


def loop_share(rows: Any, prompt_tokens: int) -> tuple[int, int]:
    """(outputs, loops) of the rows' continuations (the tokens after the prompt)."""
    from j0.measure.repetition import is_loop

    outputs = rows[:, prompt_tokens:].tolist()
    return len(outputs), sum(1 for units in outputs if is_loop(units))


def pick(target: Any, tokens: Any, sizes: Sizes, device: str, seed: int) -> dict[str, Any]:
    """The grid's figures and the temperature picked (1.0, the target's own distribution,
    where none passes; `passed` then says so)."""
    import torch

    from j0.mini.train.data import windows
    from j0.mini.train.generate import continue_rows, device_generator

    prompt_tokens, new_tokens = sizes.draft_seq, sizes.check_tokens
    prompts = windows(
        tokens, prompt_tokens, sizes.check_prompts, torch.Generator().manual_seed(seed)
    )
    grid = []
    chosen: float | None = None
    for temperature in TEMPERATURES:
        rows = continue_rows(
            target,
            prompts,
            prompt_tokens + new_tokens,
            device,
            temperature,
            device_generator(device, seed + 1) if temperature > 0 else None,
        ).cpu()
        outputs, loops = loop_share(rows, prompt_tokens)
        share = (outputs - loops) / outputs
        grid.append(
            {
                "temperature": temperature,
                "outputs": outputs,
                "loops": loops,
                "share_without_loop": round(share, 4),
            }
        )
        if chosen is None and share >= PICK_SHARE:
            chosen = temperature
            break
    return {
        "temperature": 1.0 if chosen is None else chosen,
        "passed": chosen is not None,
        "share_needed": PICK_SHARE,
        "prompts": "windows of the training stream",
        "prompt_tokens": prompt_tokens,
        "new_tokens": new_tokens,
        "grid": grid,
    }
