"""The cross-check's arithmetic, standard library only: from one greedy J0-off response (prompt
token ids, output token ids, `per_step_accepted`) rebuild each verify step's anchor as vLLM
committed it, count what a reference's drafts would have had accepted against the committed
tokens, and compare step by step.

Step s's anchor is output token a_s (a_1 = 0: the prefill's token), at position
len(prompt) + a_s; its drafts d_1..d_K are accepted while d_i equals the committed token
output[a_s + i]; then a_{s+1} = a_s + accepted_s + 1 (the accepted drafts and the bonus token).
The last step may have been cut by max_tokens (vLLM counts its accepted drafts first): there only
the tokens that were returned are compared ("available").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class EngineStep:
    number: int  # 1-based verify step
    anchor_index: int  # index of the anchor in the output
    position: int  # the anchor's position in prompt + output
    accepted: int  # the engine's accepted count
    available: int  # committed output tokens after the anchor that the response holds


def engine_steps(
    prompt_len: int, output_len: int, per_step_accepted: Sequence[int]
) -> list[EngineStep]:
    """Every verify step whose anchor is in the response; ValueError where the counts do not fit
    the output (a step after the output's end, a negative count)."""
    steps: list[EngineStep] = []
    index = 0
    for number, accepted in enumerate(per_step_accepted, start=1):
        if accepted < 0:
            raise ValueError(f"step {number}: accepted {accepted} < 0")
        if index >= output_len:
            raise ValueError(
                f"step {number}: anchor index {index} is past the {output_len} output tokens"
            )
        steps.append(
            EngineStep(number, index, prompt_len + index, accepted, output_len - index - 1)
        )
        index += accepted + 1
    return steps


def leading_matches(drafts: Sequence[int], committed: Sequence[int]) -> int:
    """How many leading drafts equal the committed tokens (at most len(committed))."""
    count = 0
    for draft, token in zip(drafts, committed, strict=False):
        if draft != token:
            break
        count += 1
    return count


@dataclass
class StepComparison:
    step: int
    position: int
    engine: int
    reference: int
    compared_up_to: int  # drafts compared (K, or fewer at a cut last step)
    equal: bool
    slot: int | None = None  # first draft slot (1-based) where the two differ
    drafter_margin: float | None = None  # the reference drafter's top-1 minus top-2 logit there
    target_margin: float | None = None  # the target's top-1 minus top-2 logit there
    near_tie: bool = False


def compare(
    step: EngineStep, drafts: Sequence[int], committed: Sequence[int], k: int
) -> StepComparison:
    """The reference's accepted count for one step against the engine's (committed: the output
    tokens after the anchor that the response holds)."""
    limit = min(k, step.available)
    reference = leading_matches(drafts[:limit], committed[:limit])
    engine = min(step.accepted, limit)
    equal = reference == engine
    slot = None if equal else min(reference, engine) + 1
    return StepComparison(step.number, step.position, step.accepted, reference, limit, equal, slot)


@dataclass
class Agreement:
    requests: int = 0
    steps: int = 0
    equal: int = 0
    near_ties: int = 0
    unexplained: int = 0
    engine_accepted: int = 0
    reference_accepted: int = 0
    differing: list[dict[str, Any]] = field(default_factory=list)
    # per request: the target's log p_T(argmax) and entropy per output token, and the ceiling
    # (j0.mini.run.ceiling) beside the engine's acceptance length
    ceiling: list[dict[str, Any]] = field(default_factory=list)

    def add(self, request: str, comparison: StepComparison) -> None:
        self.steps += 1
        self.engine_accepted += min(comparison.engine, comparison.compared_up_to)
        self.reference_accepted += comparison.reference
        if comparison.equal:
            self.equal += 1
            return
        self.near_ties += comparison.near_tie
        self.unexplained += not comparison.near_tie
        self.differing.append({"request": request, **asdict(comparison)})

    @property
    def ok(self) -> bool:
        return self.steps > 0 and self.unexplained == 0

    def line(self, threshold: float) -> str:
        return (
            f"teacher-forced cross-check: {self.equal}/{self.steps} steps of {self.requests} "
            f"requests equal; {self.near_ties} differ at a near-tie (logit margin < "
            f"{threshold:g}), {self.unexplained} unexplained; accepted drafts engine "
            f"{self.engine_accepted}, reference {self.reference_accepted}"
        )

    def to_json(self, threshold: float) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "threshold": threshold, "line": self.line(threshold)}
