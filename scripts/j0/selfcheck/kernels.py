"""Load a speculator.py as vLLM's module; call its real `prepare_dflash_inputs` on a battery step.

Module-level imports are the standard library only; numpy and torch come in inside the functions.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from j0.selfcheck.batches import BatchStep, Case

OK, DEVIATES, NO_J0 = 0, 1, 2
NO_CUDA = 75  # --device cuda on a machine where torch sees no GPU (the CLI may fall back)
SPECULATOR_MODULE = "vllm.v1.worker.gpu.spec_decode.dflash.speculator"
INTERPRETER_ENV = {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}


# --- Does the file have J0 at all? (standard library, before anything is imported) ----------


def static_check(path: Path) -> tuple[int, str]:
    """(OK, '') when the file's prepare_dflash_inputs takes ctx_pool; else the exit code and why."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as exc:
        return DEVIATES, f"{path}: does not compile: {exc}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "prepare_dflash_inputs":
            names = [a.arg for a in (*node.args.args, *node.args.kwonlyargs)]
            if "ctx_pool" in names:
                return OK, ""
            return NO_J0, (
                f"{path}: no J0: prepare_dflash_inputs has no ctx_pool parameter "
                "(this looks like vLLM's unpatched speculator.py)"
            )
    return NO_J0, f"{path}: no prepare_dflash_inputs function: not a DFlash speculator.py"


# --- Loading the file as vLLM's module ---------------------------------------------------------


def load_speculator(path: Path) -> Any:
    """Import `path` as SPECULATOR_MODULE; the rest of vLLM comes from the installed package."""
    import importlib
    import importlib.util

    parent = SPECULATOR_MODULE.rsplit(".", 1)[0]
    importlib.import_module(parent)
    spec = importlib.util.spec_from_file_location(SPECULATOR_MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(SPECULATOR_MODULE)
    sys.modules[SPECULATOR_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if previous is not None:
            sys.modules[SPECULATOR_MODULE] = previous
        else:
            sys.modules.pop(SPECULATOR_MODULE, None)
        raise
    return module


# --- One call of prepare_dflash_inputs -----------------------------------------------------------


@dataclass
class Inputs:
    """The torch tensors of one step, on the device."""

    input_batch: Any
    num_sampled: Any
    num_rejected: Any
    last_sampled: Any
    next_prefill: Any
    temperature: Any
    seeds: Any
    block_table: Any


# Rows past the batch: vLLM 0.34.0 launches programs past num_reqs (its CUDA-graph padding), which
# must read no request there, and a J0 kernel launched over them would. The per-request tensors
# handed to the kernels (idx_mapping, query_start_loc, num_sampled, num_rejected) are views of
# the first rows of longer buffers whose tail holds what such a read would find in vLLM: live
# request slots (this batch's, reversed) and the batch's end. A kernel that reads there then
# writes a wrong token into a history row or an output that the reference compares, where it
# would otherwise read out of bounds; the tensors' own shapes are the batch's.
PAST_BATCH = 40


def _with_tail(t: Any, values: np.ndarray, tail: Any) -> Any:
    import numpy as np

    whole = np.concatenate([values, np.resize(np.asarray(tail, dtype=values.dtype), PAST_BATCH)])
    return t(whole)[: len(values)]


def make_inputs(module: Any, case: Case, step: BatchStep, device: str) -> Inputs:
    import dataclasses

    import numpy as np
    import torch

    ids = np.concatenate([*(r.tokens for r in step.requests), step.pad_ids]).astype(np.int32)
    pos = np.concatenate(
        [*(r.start_pos + np.arange(r.num_tokens) for r in step.requests), np.zeros(step.pad_tokens)]
    ).astype(np.int64)
    counts = np.asarray([r.num_tokens for r in step.requests], dtype=np.int32)
    qsl = np.zeros(step.num_reqs + 1, dtype=np.int32)
    np.cumsum(counts, out=qsl[1:])
    idx = np.asarray([r.req_state_idx for r in step.requests], dtype=np.int64)

    def t(a: np.ndarray) -> Any:
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)

    def per_request(name: str) -> np.ndarray:
        return np.asarray([getattr(r, name) for r in step.requests], dtype=np.int32)

    scratch = module.InputBuffers(case.max_num_seqs, max(len(ids), step.num_reqs), device)
    batch = module.InputBatch.make_dummy(step.num_reqs, max(len(ids), step.num_reqs), scratch)
    batch = dataclasses.replace(
        batch,
        num_reqs=step.num_reqs,
        num_reqs_after_padding=step.num_reqs,
        idx_mapping=_with_tail(t, idx, idx[::-1]),
        idx_mapping_np=idx.astype(np.intp),
        expanded_idx_mapping=_with_tail(t, idx, idx[::-1]),
        num_scheduled_tokens=counts,
        num_tokens=int(counts.sum()),
        num_tokens_after_padding=len(ids),
        query_start_loc=_with_tail(t, qsl, qsl[-1]),
        query_start_loc_np=qsl,
        input_ids=t(ids),
        positions=t(pos),
    )
    return Inputs(
        input_batch=batch,
        num_sampled=_with_tail(t, per_request("num_sampled"), 1),
        num_rejected=_with_tail(t, per_request("num_rejected"), 0),
        last_sampled=t(step.last_sampled.astype(np.int64).reshape(-1, 1)),
        next_prefill=t(step.next_prefill.astype(np.int32)),
        temperature=t(step.temperature),
        seeds=t(step.seeds),
        block_table=t(step.block_table),
    )


@dataclass
class Outputs:
    """The output buffers of one call: vLLM's InputBuffers plus the separate tensors."""

    input_buffers: Any
    bufs: dict[str, Any]


def make_outputs(module: Any, case: Case, before: dict[str, np.ndarray], device: str) -> Outputs:
    import torch

    bufs = {name: torch.from_numpy(arr.copy()).to(device) for name, arr in before.items()}
    ib = module.InputBuffers(case.max_num_seqs, case.max_num_tokens, device)
    ib.input_ids = bufs["input_ids"]
    ib.positions = bufs["positions"]
    ib.is_padding = bufs["is_padding"]
    ib.query_start_loc = bufs["query_start_loc"]
    ib.seq_lens = bufs["seq_lens"]
    return Outputs(ib, bufs)


def call_prepare_into(
    module: Any, case: Case, inputs: Inputs, outputs: Outputs, ctx_pool: Any
) -> None:
    """One call of prepare_dflash_inputs as DFlashSpeculator.propose makes it (cp_size 1)."""
    bufs = outputs.bufs
    kwargs = {} if ctx_pool is None else {"ctx_pool": ctx_pool}
    module.prepare_dflash_inputs(
        outputs.input_buffers,
        bufs["query_slot_mapping"],
        bufs["context_positions"],
        bufs["context_slot_mapping"],
        bufs["sample_indices"],
        bufs["sample_pos"],
        bufs["sample_idx_mapping"],
        bufs["temperature"],
        bufs["seeds"],
        inputs.input_batch,
        inputs.num_sampled,
        inputs.num_rejected,
        inputs.last_sampled,
        inputs.next_prefill,
        inputs.temperature,
        inputs.seeds,
        inputs.block_table,
        case.block_size,
        0,  # cp_rank
        1,  # cp_size
        1,  # cp_interleave
        case.mask_token,
        case.num_query_per_req,
        case.num_spec,
        case.max_num_seqs,
        case.max_num_tokens,
        case.max_model_len,
        False,  # sample_from_anchor: DFlash refuses True
        None,  # num_reqs_override
        **kwargs,
    )


def call_prepare(
    module: Any,
    case: Case,
    inputs: Inputs,
    before: dict[str, np.ndarray],
    device: str,
    ctx_pool: Any,
) -> Outputs:
    """Run prepare_dflash_inputs into fresh copies of `before`."""
    outputs = make_outputs(module, case, before, device)
    call_prepare_into(module, case, inputs, outputs, ctx_pool)
    return outputs
