"""`j0 selfcheck --audit`: run an audited speculator.py's real kernels over the batteries and let
the file's own J0 audit (overlay/jetspec-j0-audit.patch) write its per-step records, as it does
in vLLM's engine; `j0 dumps audit` (j0/article/audit_records.py) then gives the verdict.

Each step is run as DFlashSpeculator.propose runs it: the prefix-safe fill first where the file
has it, then prepare_dflash_inputs with J0 on, then the audit's `check_step` with a stand-in for
the speculator (its history, its input buffers, its sizes) and for vLLM's RequestState, whose
`all_token_ids` holds, per request slot, what vLLM's own buffer holds when propose runs: the
prompt (add_request) and every token sampled so far (post_update runs before propose), i.e. the
battery's committed tokens with the anchor. A file without the audit (the article's or the
variant's) gets the audit patch applied first, in a temporary folder.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from j0.selfcheck.kernels import call_prepare, make_inputs

if TYPE_CHECKING:
    from j0.selfcheck.batches import BatchStep, Case

AUDIT_FUNCTION = "j0_audit_rows"
AUDIT_CLASS = "_J0Audit"
FILL = "fill_ctx_pool_cached_prefix"


@dataclass
class AuditRun:
    """Where the records went and how much the kernels ran."""

    folder: Path
    sessions: int = 0
    steps: int = 0


def audited_copy(path: Path, tmp: Path) -> Path:
    """`path` itself when it holds the audit; else a copy with the audit patch applied (no fuzz,
    as `j0 overlay build --audit`), under `tmp`: overlay/jetspec-j0-audit.patch, or the one cut
    for a later release (overlay/vllm-0.34.0/...) where that is the one that applies."""
    from j0.article.build import audit_patch_file
    from j0.article.patching import apply_patch
    from j0.article.releases import releases
    from j0.errors import J0Error
    from j0.pins import load_pins

    data = path.read_bytes()
    if AUDIT_FUNCTION.encode() in data:
        return path
    pins = load_pins()
    refusals: list[J0Error] = []
    for release in releases(pins):  # the release whose audit patch applies (c50aca14's first)
        try:
            patched = apply_patch(data, audit_patch_file(pins, release.release))
            break
        except J0Error as exc:
            refusals.append(exc)
    else:
        raise refusals[0]
    out = tmp / "speculator.py"
    out.write_bytes(patched)
    return out


def _standin(case: Case, pool: Any, query_ids: Any) -> Any:
    """What the audit reads of a DFlashSpeculator."""
    return SimpleNamespace(
        ctx_noise=True,
        ctx_pool=pool,
        input_buffers=SimpleNamespace(input_ids=query_ids),
        num_query_per_req=case.num_query_per_req,
        max_num_reqs=case.max_num_seqs,
        max_model_len=case.max_model_len,
    )


def _committed_into(store: Any, step: BatchStep) -> None:
    """vLLM's all_token_ids at propose time: each request's committed tokens with the anchor."""
    import torch

    for r in step.requests:
        tokens = torch.from_numpy(r.committed.astype("int32")).to(store.device)
        store[r.req_state_idx, : len(tokens)] = tokens


def _run_session(
    module: Any,
    case: Case,
    device: str,
    folder: Path,
    req_ids: list[tuple[str, ...]] | None = None,
    num_computed: list[tuple[int, ...]] | None = None,
) -> int:
    """One session's steps through the kernels and the file's audit; returns the steps run."""
    import numpy as np
    import torch

    from j0.selfcheck import batches

    storage = torch.from_numpy(batches.initial_pool(case)).to(device)
    pool = batches.pool_view(storage, case)
    store = torch.zeros((case.max_num_seqs, case.max_model_len), dtype=torch.int32, device=device)
    owner: list[str | None] = [None] * case.max_num_seqs
    audit = None
    for step_no, step in enumerate(case.steps):
        ids = list(req_ids[step_no]) if req_ids else [f"r{r.req_state_idx}" for r in step.requests]
        _committed_into(store, step)
        if num_computed is not None and hasattr(module, FILL):
            slots = np.asarray([r.req_state_idx for r in step.requests], dtype=np.intp)
            computed = np.asarray(num_computed[step_no], dtype=np.int32)
            getattr(module, FILL)(pool, store, owner, ids, slots, computed, len(slots))
        inputs = make_inputs(module, case, step, device)
        before = batches.initial_outputs(case, step_no)
        on = call_prepare(module, case, inputs, before, device, pool)
        spec = _standin(case, pool, on.bufs["input_ids"])
        if audit is None:
            req_states = SimpleNamespace(all_token_ids=SimpleNamespace(gpu=store))
            audit = getattr(module, AUDIT_CLASS)(str(folder), req_states, spec)
            audit.path = str(folder / f"audit-case{case.index:03d}.jsonl")
        batch = SimpleNamespace(**vars(inputs.input_batch))
        batch.req_ids = ids
        audit.check_step(spec, batch, inputs.num_rejected, step.num_reqs)
    return len(case.steps)


def run_audit(
    module: Any, device: str, seed: int, cases: int, prefix_cache: bool, folder: Path
) -> AuditRun:
    """The default battery's first `cases` cases (or, with `prefix_cache`, the first `cases`
    prefix-cache sessions) through the kernels and the audit, records into `folder`."""
    from j0.selfcheck import batches

    run = AuditRun(folder)
    if prefix_cache:
        from j0.selfcheck.prefix.sessions import battery

        for index, pcase in enumerate(battery(seed)[:cases]):
            case = pcase.case
            case = dataclasses.replace(case, index=index)
            run.steps += _run_session(
                module, case, device, folder, list(pcase.req_ids), list(pcase.num_computed)
            )
            run.sessions += 1
        return run
    for index in range(cases):
        run.steps += _run_session(module, batches.make_case(seed, index), device, folder)
        run.sessions += 1
    return run


def check_with_audit(
    path: Path, device: str, seed: int, cases: int, prefix_cache: bool, out: Path | None
) -> tuple[int, str]:
    """Run the audit over the batteries and read its records back: (exit code, report)."""
    from j0.article.audit_records import read_folder, verdict
    from j0.selfcheck.kernels import load_speculator

    with tempfile.TemporaryDirectory(prefix="j0-audit-") as tmp:
        audited = audited_copy(path, Path(tmp))
        module = load_speculator(audited)
        if not hasattr(module, AUDIT_FUNCTION):
            return 2, f"{audited}: no {AUDIT_FUNCTION}: the audit patch is not in this file"
        folder = out if out is not None else Path(tmp) / "records"
        folder.mkdir(parents=True, exist_ok=True)
        run = run_audit(module, device, seed, cases, prefix_cache, folder)
        summary = read_folder(folder)
        code, text = verdict(summary)
    where = f"records in {out}" if out is not None else "records in a temporary folder (removed)"
    return code, (
        f"{text}\n  the kernels of {path} ran {run.sessions} sessions, {run.steps} steps, on "
        f"{device}; {where}"
    )
