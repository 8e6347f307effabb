"""Compare one case's kernel outputs, J0 off and on, with the independent reference."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from j0.selfcheck.batches import BatchStep, Case

from j0.selfcheck.kernels import call_prepare, make_inputs

# --- Comparing -----------------------------------------------------------------------------------


@dataclass
class Mismatch:
    case: int
    step: int
    mode: str  # "J0 on" / "J0 off"
    what: str  # a sentence naming the output, request, slot, expected and actual values
    facts: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        return f"case {self.case}, step {self.step} ({self.mode}): {self.what}"


def _first_diff(expected: np.ndarray, actual: np.ndarray) -> int | None:
    import numpy as np

    if expected.shape != actual.shape:
        return 0
    bad = np.flatnonzero(expected != actual)
    return int(bad[0]) if bad.size else None


def _describe_request(step: BatchStep, i: int) -> str:
    r = step.requests[i]
    return (
        f"request {i} of {step.num_reqs} (req_state_idx {r.req_state_idx}, {r.kind}, "
        f"{r.num_tokens} target tokens from position {r.start_pos}, {r.num_rejected} rejected, "
        f"num_sampled {r.num_sampled})"
    )


def compare_query_ids(
    case: Case,
    step_no: int,
    step: BatchStep,
    mode: str,
    expected: np.ndarray,
    actual: np.ndarray,
    draws: dict[tuple[int, int], Any],
) -> Mismatch | None:
    nq = case.num_query_per_req
    for i, req in enumerate(step.requests):
        for k in range(nq):
            q = i * nq + k
            exp, act = int(expected[q]), int(actual[q])
            if exp == act:
                continue
            if k == 0:
                why = "the anchor (" + ("bonus token" if req.num_sampled else "next prefill token")
                why += ")"
            elif (i, k) in draws:
                d = draws[(i, k)]
                why = f"committed token at r mod L = {d.r} mod {d.committed} = {d.index}"
                if act == case.mask_token:
                    why += "; got the mask token: J0 did not fill this slot"
            else:
                why = "the mask token (J0 off)"
            facts = {
                "request": i,
                "req_state_idx": req.req_state_idx,
                "slot": k,
                "expected": exp,
                "actual": act,
            }
            return Mismatch(
                case.index,
                step_no,
                mode,
                f"{_describe_request(step, i)}, query slot {k}: expected token {exp} "
                f"({why}), actual {act}",
                facts,
            )
    return None


def compare_buffers(
    case: Case,
    step_no: int,
    mode: str,
    expected: dict[str, np.ndarray],
    actual: dict[str, np.ndarray],
    names: list[str],
    label: str = "expected",
) -> Mismatch | None:
    for name in names:
        at = _first_diff(expected[name], actual[name])
        if at is not None:
            return Mismatch(
                case.index,
                step_no,
                mode,
                f"output {name}[{at}]: {label} {expected[name][at]!r}, actual {actual[name][at]!r}",
                {"output": name, "index": at},
            )
    return None


def compare_history(
    case: Case, step_no: int, step: BatchStep, expected: np.ndarray, actual: np.ndarray
) -> Mismatch | None:
    import numpy as np

    bad = np.argwhere(expected != actual)
    if not bad.size:
        return None
    row, col = (int(x) for x in bad[0])
    slot = row - 1
    where = (
        f"history row {slot} (req_state_idx {slot}), position {col}"
        if 0 <= slot < case.max_num_seqs and col < case.max_model_len
        else f"history storage [{row}, {col}], outside the [max_num_seqs, max_model_len] pool"
    )
    note = ""
    for i, r in enumerate(step.requests):
        if r.req_state_idx == slot:
            accepted = r.num_tokens - r.num_rejected
            apos = r.start_pos + accepted
            if r.start_pos + accepted <= col < r.start_pos + r.num_tokens:
                note = f"; a rejected token's position of request {i}"
            elif col == apos:
                note = f"; the anchor's position of request {i}"
            elif col == apos + 1 or col == apos - 1:
                note = f"; next to the anchor's position ({apos}) of request {i}"
    return Mismatch(
        case.index,
        step_no,
        "J0 on",
        f"{where}: expected token {int(expected[row, col])}, actual {int(actual[row, col])}"
        f"{note} (the history must hold only committed tokens and the anchor)",
        {"row": slot, "position": col},
    )


# --- One case ------------------------------------------------------------------------------------


def prepare_off_and_on(
    module: Any, case: Case, step_no: int, step: BatchStep, device: str, pool: Any
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One step through the module's prepare twice, J0 off (no pool) and J0 on (`pool`): the
    outputs it started from and both results, read back as numpy arrays."""
    import torch

    from j0.selfcheck import batches

    before = batches.initial_outputs(case, step_no)
    inputs = make_inputs(module, case, step, device)
    off = call_prepare(module, case, inputs, before, device, None)
    on = call_prepare(module, case, inputs, before, device, pool)
    if device != "cpu":
        torch.cuda.synchronize()
    off_np = {k: v.cpu().numpy() for k, v in off.bufs.items()}
    on_np = {k: v.cpu().numpy() for k, v in on.bufs.items()}
    return before, off_np, on_np


def run_case(module: Any, case: Case, device: str, j0_seed: int) -> Mismatch | None:
    import torch

    from j0.selfcheck import batches
    from j0.selfcheck import expected as reference

    storage_np = batches.initial_pool(case)
    storage = torch.from_numpy(storage_np.copy()).to(device)
    pool = batches.pool_view(storage, case)
    non_query = [n for n in batches.OUTPUT_SPECS if n != "input_ids"]
    nq = case.num_query_per_req
    for step_no, step in enumerate(case.steps):
        before, off_np, on_np = prepare_off_and_on(module, case, step_no, step, device, pool)
        got_storage = storage.cpu().numpy()

        ref_on, draws = reference.expected_outputs(case, step, before, j0_seed, j0=True)
        ref_off, _ = reference.expected_outputs(case, step, before, j0_seed, j0=False)
        ref_storage = storage_np.copy()
        ref_view = batches.pool_view(ref_storage, case)
        ref_view[...] = reference.update_history(ref_view, case, step)

        found = (
            compare_query_ids(
                case, step_no, step, "J0 on", ref_on["input_ids"], on_np["input_ids"], draws
            )
            or compare_history(case, step_no, step, ref_storage, got_storage)
            or compare_query_ids(
                case, step_no, step, "J0 off", ref_off["input_ids"], off_np["input_ids"], {}
            )
            or compare_buffers(
                case, step_no, "J0 on vs J0 off", off_np, on_np, non_query, label="J0 off wrote"
            )
            or _compare_other_ids(case, step_no, step, off_np, on_np, nq)
            or compare_buffers(case, step_no, "J0 off", ref_off, off_np, list(ref_off))
            or compare_buffers(case, step_no, "J0 on", ref_on, on_np, list(ref_on))
        )
        if found:
            return found
        storage_np = ref_storage
    return None


def _compare_other_ids(
    case: Case, step_no: int, step: BatchStep, off: dict[str, Any], on: dict[str, Any], nq: int
) -> Mismatch | None:
    """J0 may change the query ids at slots k > 0 only: slot 0 and the padding must agree."""
    import numpy as np

    ids_off, ids_on = off["input_ids"].copy(), on["input_ids"].copy()
    mask = np.zeros(len(ids_off), dtype=bool)
    for i in range(step.num_reqs):
        mask[i * nq + 1 : (i + 1) * nq] = True
    ids_off[mask] = ids_on[mask] = 0
    at = _first_diff(ids_off, ids_on)
    if at is None:
        return None
    return Mismatch(
        case.index,
        step_no,
        "J0 on vs J0 off",
        f"input_ids[{at}] (not a J0 slot): J0 off wrote {ids_off[at]}, J0 on wrote {ids_on[at]}",
        {"output": "input_ids", "index": at},
    )
