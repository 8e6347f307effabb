"""Run a speculator.py's real kernels over the prefix-cache batteries (sessions.py) and
compare them with the reference: J0's draws must read each request's own committed tokens, the
prefix-cached positions included.

A step is run as DFlashSpeculator.propose runs it: where the file has the prefix-safe fill
(`fill_ctx_pool_cached_prefix`, called by propose before prepare_dflash_inputs; wiring.py checks
that), it is called first with the slot's owner list, the batch's request ids and computed counts
and vLLM's per-slot token store (RequestState.all_token_ids, written at admission as vLLM's
add_request writes it); then prepare_dflash_inputs, J0 off and on. The reference's history holds
every request's committed tokens, cached ones included.

Where a draw reads a foreign token, the report names the request, the query slot, the token it
should have drawn and the one it drew, and which earlier request of that request slot wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from j0.selfcheck.compare import (
    Mismatch,
    compare_buffers,
    compare_history,
    compare_query_ids,
    prepare_off_and_on,
)
from j0.selfcheck.prefix.sessions import PrefixCase, battery

if TYPE_CHECKING:
    import numpy as np

FILL = "fill_ctx_pool_cached_prefix"
KNOWN_BEHAVIOUR = (
    "This is the known behaviour of the article's file: its J0 history is written only from the "
    "tokens each step schedules, so the positions of a prefix-cache hit keep whatever the request "
    "slot's previous request wrote there. The prefix-safe variant (`j0 overlay build --variant "
    "prefix-safe`) fills them from the request's own tokens."
)


@dataclass
class ScenarioResult:
    label: str
    steps: int
    requests: int
    mismatch: Mismatch | None = None
    foreign: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        if self.mismatch is None:
            return f"ok        {self.label}: {self.steps} steps, {self.requests} request-steps"
        return f"DEVIATES  {self.label}: {self.mismatch.text()}"


def _all_token_ids(pcase: PrefixCase, device: str) -> Any:
    import torch

    case = pcase.case
    store = torch.zeros((case.max_num_seqs, case.max_model_len), dtype=torch.int32, device=device)
    return store


def _admit(store: Any, ref_view: np.ndarray, pcase: PrefixCase, step_no: int) -> None:
    """vLLM's add_request: the prompt into all_token_ids; and the reference's rule, the history
    holds the request's committed tokens, cached ones included."""
    import torch

    for adm in pcase.admitted_at(step_no):
        n = len(adm.prompt)
        store[adm.slot, :n] = torch.from_numpy(adm.prompt.astype("int32")).to(store.device)
        ref_view[adm.slot, : adm.cached] = adm.prompt[: adm.cached]


def _fill(module: Any, pool: Any, store: Any, owner: list[str | None], pcase: PrefixCase, n: int):
    import numpy as np

    step = pcase.case.steps[n]
    idx = np.asarray([r.req_state_idx for r in step.requests], dtype=np.intp)
    computed = np.asarray(pcase.num_computed[n], dtype=np.int32)
    getattr(module, FILL)(pool, store, owner, list(pcase.req_ids[n]), idx, computed, len(idx))


def run_prefix_case(module: Any, pcase: PrefixCase, device: str, j0_seed: int) -> ScenarioResult:
    """One session, step by step; the first mismatch stops it."""
    import torch

    from j0.selfcheck import batches
    from j0.selfcheck import expected as reference

    case = pcase.case
    storage_np = batches.initial_pool(case)
    storage = torch.from_numpy(storage_np.copy()).to(device)
    pool = batches.pool_view(storage, case)
    store = _all_token_ids(pcase, device)
    owner: list[str | None] = [None] * case.max_num_seqs
    has_fill = hasattr(module, FILL)
    result = ScenarioResult(pcase.label(), 0, 0)
    for step_no, step in enumerate(case.steps):
        ref_storage = storage_np.copy()
        ref_view = batches.pool_view(ref_storage, case)
        _admit(store, ref_view, pcase, step_no)
        if has_fill:
            _fill(module, pool, store, owner, pcase, step_no)
        before, off_np, on_np = prepare_off_and_on(module, case, step_no, step, device, pool)
        ref_on, draws = reference.expected_outputs(case, step, before, j0_seed, j0=True)
        ref_off, _ = reference.expected_outputs(case, step, before, j0_seed, j0=False)
        ref_view[...] = reference.update_history(ref_view, case, step)
        found = (
            compare_query_ids(
                case, step_no, step, "J0 on", ref_on["input_ids"], on_np["input_ids"], draws
            )
            or compare_history(case, step_no, step, ref_storage, storage.cpu().numpy())
            or compare_query_ids(
                case, step_no, step, "J0 off", ref_off["input_ids"], off_np["input_ids"], {}
            )
            or compare_buffers(case, step_no, "J0 off", ref_off, off_np, list(ref_off))
            or compare_buffers(case, step_no, "J0 on", ref_on, on_np, list(ref_on))
        )
        result.steps += 1
        result.requests += step.num_reqs
        if found:
            result.mismatch = found
            result.foreign = foreign_origin(pcase, step_no, found, draws)
            return result
        storage_np = ref_storage
    return result


def foreign_origin(
    pcase: PrefixCase, step_no: int, found: Mismatch, draws: dict[tuple[int, int], Any]
) -> dict[str, Any]:
    """For a J0 draw that read a wrong token: the request, its own token, the drawn one, whether
    the index is a prefix-cached position, and which earlier request of the slot holds the drawn
    token at that index (or that none does: the row's initial contents)."""
    facts = found.facts
    if "slot" not in facts or (facts["request"], facts["slot"]) not in draws:
        return {}
    draw = draws[(facts["request"], facts["slot"])]
    name = pcase.req_ids[step_no][facts["request"]]
    admission = next(a for a in pcase.admissions if a.name == name)
    owner = "the row's initial contents (no earlier request wrote it)"
    for earlier in pcase.earlier_in_slot(admission.slot, name):
        tokens = committed_tokens(pcase, earlier.name)
        if draw.index < len(tokens) and int(tokens[draw.index]) == facts["actual"]:
            owner = f"request {earlier.name!r}, which ran in request slot {earlier.slot} before"
            break
    return {
        "request_id": name,
        "req_state_idx": admission.slot,
        "query_slot": facts["slot"],
        "index": draw.index,
        "cached_position": draw.index < admission.cached,
        "expected": facts["expected"],
        "drawn": facts["actual"],
        "drawn_from": owner,
    }


def committed_tokens(pcase: PrefixCase, name: str) -> Any:
    """The committed tokens of request `name` at its last step (its prompt if it never ran)."""
    last = None
    for step_no, ids in enumerate(pcase.req_ids):
        for i, rid in enumerate(ids):
            if rid == name:
                last = pcase.case.steps[step_no].requests[i].committed
    if last is None:
        return next(a.prompt for a in pcase.admissions if a.name == name)
    return last


def describe_foreign(foreign: dict[str, Any]) -> str:
    if not foreign:
        return ""
    where = "a prefix-cached position" if foreign["cached_position"] else "a scheduled position"
    return (
        f"request {foreign['request_id']!r} (request slot {foreign['req_state_idx']}), query slot "
        f"{foreign['query_slot']}: expected its own committed token {foreign['expected']} at index "
        f"{foreign['index']} ({where}), drew {foreign['drawn']}, a foreign token: "
        f"{foreign['drawn_from']}"
    )


@dataclass
class PrefixOutcome:
    results: list[ScenarioResult]

    @property
    def hits_failed(self) -> list[ScenarioResult]:
        return [r for r in self.results if r.mismatch is not None and "hit)" in r.label]

    @property
    def controls_failed(self) -> list[ScenarioResult]:
        return [r for r in self.results if r.mismatch is not None and "control)" in r.label]

    @property
    def ok(self) -> bool:
        return all(r.mismatch is None for r in self.results)

    @property
    def steps(self) -> int:
        return sum(r.steps for r in self.results)


def run_battery(module: Any, device: str, seed: int, j0_seed: int) -> PrefixOutcome:
    return PrefixOutcome([run_prefix_case(module, p, device, j0_seed) for p in battery(seed)])
