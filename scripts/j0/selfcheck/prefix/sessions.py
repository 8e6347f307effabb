"""`j0 selfcheck --prefix-cache`'s batteries: sessions in which requests start with cached
positions, as vLLM's prefix cache gives them, cut into the batches `prepare_dflash_inputs` sees.

A request with a prefix-cache hit of `cached` tokens (a whole number of KV blocks, fewer than its
prompt) is admitted with positions 0..cached-1 already computed: its first step is a prefill chunk
from position `cached`, and those positions are never scheduled. Its committed tokens still start
with them, so the reference's J0 draws (index r mod L of the committed tokens) may land there.

Scenarios, each also run without the hit (the control, `cached` 0), where every file with J0 must
agree with the reference:

* `A, A again`: prompt A in a request slot, then A again in the same slot (the article's file is
  right by luck: the row still holds A's tokens);
* `A, B, A again`: a different prompt B in between, in the same slot;
* `shared prefix, other slot`: A in one slot while C runs in another; then B, which shares A's
  first blocks, in C's slot;
* `chunked prefill after a hit`: B, then a long A in the same slot whose rest of the prompt after
  the hit takes several prefill chunks;
* `hit beside other requests`: A and B in two slots, then A again in B's slot batched with a new
  request without a hit.

Everything derives from (seed, scenario index), as in batches.py, and reuses its step builder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from j0.selfcheck import batches

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Admission:
    """A request admitted before step `step` (vLLM's add_request: its prompt goes to
    RequestState.all_token_ids, positions 0..cached-1 count as computed)."""

    step: int
    slot: int
    name: str  # "A", "A again", "B", ...: the request's id in the session
    prompt: Any  # np.ndarray[int32]
    cached: int


@dataclass(frozen=True)
class PrefixCase:
    """One session: the battery case (sizes and steps), each step's request ids and computed
    counts (InputBatch.req_ids and num_computed_tokens_np), and the admissions."""

    scenario: str
    hit: bool
    case: batches.Case
    req_ids: tuple[tuple[str, ...], ...]
    num_computed: tuple[tuple[int, ...], ...]
    admissions: tuple[Admission, ...]

    def label(self) -> str:
        return f"{self.scenario} ({'with a prefix-cache hit' if self.hit else 'no hit: control'})"

    def admitted_at(self, step_no: int) -> list[Admission]:
        return [a for a in self.admissions if a.step == step_no]

    def earlier_in_slot(self, slot: int, before: str) -> list[Admission]:
        """The requests that ran in `slot` before request `before`, latest first."""
        names = [a.name for a in self.admissions]
        upto = names.index(before)
        return [a for a in reversed(self.admissions[:upto]) if a.slot == slot]


@dataclass(frozen=True)
class _Spec:
    """A request of a phase: its name, slot, prompt and cached prefix length."""

    name: str
    slot: int
    prompt: Any
    cached: int


SCENARIOS = (
    "A, A again",
    "A, B, A again",
    "shared prefix, other slot",
    "chunked prefill after a hit",
    "hit beside other requests",
)


def _case_sizes(rng: np.random.Generator, seed: int, index: int, chunk_cap: int) -> batches.Case:
    max_num_seqs = int(rng.choice([2, 3, 4]))
    num_spec = int(rng.choice([7, 15]))
    nq = num_spec + 1
    budget = chunk_cap + nq * max_num_seqs
    return batches.Case(
        index=index,
        seed=seed,
        max_num_seqs=max_num_seqs,
        num_spec=num_spec,
        max_model_len=int(rng.choice([320, 512, 640])),
        block_size=int(rng.choice([16, 32])),
        max_num_tokens=budget + int(rng.integers(0, 16)),
        pool_pad=int(rng.choice([0, 0, 3])),
        mask_token=int(rng.integers(batches.VOCAB, batches.VOCAB + 5000)),
        chunk_cap=chunk_cap,
    )


def _prompt(rng: np.random.Generator, low: int, high: int) -> np.ndarray:
    import numpy as np

    n = int(rng.integers(low, high))
    return rng.integers(1, batches.VOCAB, size=n, dtype=np.int64).astype(np.int32)


def _cached(rng: np.random.Generator, prompt_len: int, block_size: int) -> int:
    """A hit of whole blocks that leaves at least one prompt token to schedule."""
    blocks = (prompt_len - 1) // block_size
    return block_size * int(rng.integers(max(1, blocks // 2), blocks + 1))


def _phases(
    rng: np.random.Generator, scenario: str, case: batches.Case, hit: bool
) -> list[list[_Spec]]:
    """The session's phases: the requests of a phase run together until each is done."""
    import numpy as np

    bs = case.block_size
    top = case.max_model_len - 3 * case.num_query_per_req
    s1, s2 = (int(x) for x in rng.permutation(case.max_num_seqs)[:2])
    a, b, c = (_prompt(rng, 3 * bs, top) for _ in range(3))

    def again(name: str, prompt: np.ndarray, slot: int) -> _Spec:
        return _Spec(name, slot, prompt, _cached(rng, len(prompt), bs) if hit else 0)

    if scenario == "A, A again":
        return [[_Spec("A", s1, a, 0)], [again("A again", a, s1)]]
    if scenario == "A, B, A again":
        return [[_Spec("A", s1, a, 0)], [_Spec("B", s1, b, 0)], [again("A again", a, s1)]]
    if scenario == "shared prefix, other slot":
        shared = _cached(rng, len(a), bs)
        tail = _prompt(rng, 2, max(3, top - shared))
        b_prompt = np.concatenate([a[:shared], tail]).astype(np.int32)
        b_spec = _Spec("B", s2, b_prompt, shared if hit else 0)
        return [[_Spec("A", s1, a, 0), _Spec("C", s2, c, 0)], [b_spec]]
    if scenario == "chunked prefill after a hit":
        long_a = _prompt(rng, max(4 * bs, top - 2 * case.chunk_cap), top)
        hit_len = bs * int(rng.integers(1, 3)) if hit else 0
        return [[_Spec("B", s1, b, 0)], [_Spec("A", s1, long_a, hit_len)]]
    if scenario == "hit beside other requests":
        d = _prompt(rng, 2, top // 2)
        return [
            [_Spec("A", s1, a, 0), _Spec("B", s2, b, 0)],
            [again("A again", a, s2), _Spec("D", s1, d, 0)],
        ]
    raise ValueError(f"unknown scenario {scenario!r}")


def make_prefix_case(seed: int, index: int, hit: bool) -> PrefixCase:
    """Scenario SCENARIOS[index % 5] drawn from (seed, index), with or without the hit."""
    rng = batches.rng_for(seed, 7_000 + index)
    scenario = SCENARIOS[index % len(SCENARIOS)]
    chunk_cap = 24 if scenario == "chunked prefill after a hit" else int(rng.choice([64, 128]))
    case = _case_sizes(rng, seed, 7_000 + index, chunk_cap)
    phases = _phases(rng, scenario, case, hit)
    steps, req_ids, computed, admissions = _run_phases(rng, case, phases)
    return PrefixCase(
        scenario=scenario,
        hit=hit,
        case=batches.Case(**{**case.__dict__, "steps": tuple(steps)}),
        req_ids=tuple(req_ids),
        num_computed=tuple(computed),
        admissions=tuple(admissions),
    )


def _run_phases(
    rng: np.random.Generator, case: batches.Case, phases: list[list[_Spec]]
) -> tuple[list[batches.BatchStep], list[tuple[str, ...]], list[tuple[int, ...]], list[Admission]]:
    steps: list[batches.BatchStep] = []
    req_ids: list[tuple[str, ...]] = []
    computed: list[tuple[int, ...]] = []
    admissions: list[Admission] = []
    budget = case.chunk_cap + case.num_query_per_req * case.max_num_seqs
    for phase in phases:
        live: dict[int, batches._Live] = {}
        names: dict[int, str] = {}
        decodes_left: dict[int, int] = {}
        for spec in phase:
            seq = [int(t) for t in spec.prompt[: spec.cached]]
            live[spec.slot] = batches._Live(spec.slot, spec.prompt, seq, spec.cached)
            names[spec.slot] = spec.name
            decodes_left[spec.slot] = int(rng.integers(2, 5))
            admissions.append(Admission(len(steps), spec.slot, spec.name, spec.prompt, spec.cached))
        while live:
            chosen = list(live.values())
            before = {slot: req.computed for slot, req in live.items()}
            step = batches._make_step(rng, case, chosen, budget)
            steps.append(step)
            req_ids.append(tuple(names[r.req_state_idx] for r in step.requests))
            computed.append(tuple(before[r.req_state_idx] for r in step.requests))
            for r in step.requests:
                if r.kind == batches.DECODE:
                    decodes_left[r.req_state_idx] -= 1
            _retire(live, decodes_left, case.max_model_len)
    return steps, req_ids, computed, admissions


def _retire(live: dict[int, Any], decodes_left: dict[int, int], max_model_len: int) -> None:
    def done(slot: int) -> bool:
        return not live[slot].prefilling and (
            decodes_left[slot] <= 0 or len(live[slot].seq) >= max_model_len - 1
        )

    for slot in [s for s in live if done(s)]:
        del live[slot]


def battery(seed: int) -> list[PrefixCase]:
    """Every scenario with its hit, then each again as the no-hit control."""
    indices = range(len(SCENARIOS))
    return [make_prefix_case(seed, i, True) for i in indices] + [
        make_prefix_case(seed, i, False) for i in indices
    ]
