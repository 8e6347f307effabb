"""`j0 selfcheck`'s worker: run a speculator.py's real `prepare_dflash_inputs` over the battery
(j0.batches), J0 off and on, and compare every output with the reference (j0.reference).

Run as `python -m j0.selfcheck ...` in a process of its own (j0.cli_selfcheck starts it): on a
machine without a GPU, Triton's interpreter needs `TRITON_INTERPRET=1` and `CUDA_VISIBLE_DEVICES=`
before Triton is first imported, and a kernel that reads out of bounds can take its process
down. Module-level imports are the standard library only; numpy and torch come in later.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from j0.batches import Case, Step

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


def make_inputs(module: Any, case: Case, step: Step, device: str) -> Inputs:
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

    scratch = module.InputBuffers(case.max_num_seqs, max(len(ids), step.num_reqs), device)
    batch = module.InputBatch.make_dummy(step.num_reqs, max(len(ids), step.num_reqs), scratch)
    batch = dataclasses.replace(
        batch,
        num_reqs=step.num_reqs,
        num_reqs_after_padding=step.num_reqs,
        idx_mapping=t(idx),
        idx_mapping_np=idx.astype(np.intp),
        expanded_idx_mapping=t(idx),
        num_scheduled_tokens=counts,
        num_tokens=int(counts.sum()),
        num_tokens_after_padding=len(ids),
        query_start_loc=t(qsl),
        query_start_loc_np=qsl,
        input_ids=t(ids),
        positions=t(pos),
    )
    return Inputs(
        input_batch=batch,
        num_sampled=t(np.asarray([r.num_sampled for r in step.requests], dtype=np.int32)),
        num_rejected=t(np.asarray([r.num_rejected for r in step.requests], dtype=np.int32)),
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


def _describe_request(step: Step, i: int) -> str:
    r = step.requests[i]
    return (
        f"request {i} of {step.num_reqs} (req_state_idx {r.req_state_idx}, {r.kind}, "
        f"{r.num_tokens} target tokens from position {r.start_pos}, {r.num_rejected} rejected, "
        f"num_sampled {r.num_sampled})"
    )


def compare_query_ids(
    case: Case,
    step_no: int,
    step: Step,
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
    case: Case, step_no: int, step: Step, expected: np.ndarray, actual: np.ndarray
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


def run_case(module: Any, case: Case, device: str, j0_seed: int) -> Mismatch | None:
    import torch

    from j0 import batches, reference

    storage_np = batches.initial_pool(case)
    storage = torch.from_numpy(storage_np.copy()).to(device)
    pool = batches.pool_view(storage, case)
    non_query = [n for n in batches.OUTPUT_SPECS if n != "input_ids"]
    nq = case.num_query_per_req
    for step_no, step in enumerate(case.steps):
        before = batches.initial_outputs(case, step_no)
        inputs = make_inputs(module, case, step, device)
        off = call_prepare(module, case, inputs, before, device, None)
        on = call_prepare(module, case, inputs, before, device, pool)
        if device != "cpu":
            torch.cuda.synchronize()
        off_np = {k: v.cpu().numpy() for k, v in off.bufs.items()}
        on_np = {k: v.cpu().numpy() for k, v in on.bufs.items()}
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
    case: Case, step_no: int, step: Step, off: dict[str, Any], on: dict[str, Any], nq: int
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


# --- The whole check ---------------------------------------------------------------------------


@dataclass
class Result:
    code: int
    file: str
    device: str
    seed: int
    cases_run: int = 0
    steps_run: int = 0
    requests_run: int = 0
    seconds: float = 0.0
    import_seconds: float = 0.0
    message: str = ""
    replay: str = ""
    mismatch: dict[str, Any] | None = None
    bench: list[dict[str, Any]] | None = None
    environment: dict[str, str] = field(default_factory=dict)


def replay_command(path: Path, seed: int, case: int, device: str) -> str:
    return f"j0 selfcheck --speculator {path} --seed {seed} --case {case} --device {device}"


def check_file(
    path: Path,
    device: str,
    seed: int,
    cases: int,
    only_case: int | None,
    j0_seed: int,
    quiet: bool = False,
) -> Result:
    """Check one file; never raises for a fault of the file (that is a Result with code 1)."""
    from j0 import batches

    result = Result(code=OK, file=str(path), device=device, seed=seed)
    code, why = static_check(path)
    if code != OK:
        result.code, result.message = code, why
        return result
    started = time.perf_counter()
    try:
        module = load_speculator(path)
    except BaseException as exc:  # the file is broken: report, do not crash
        result.code = DEVIATES
        result.message = f"{path}: cannot import as {SPECULATOR_MODULE}: {exc!r}\n" + "".join(
            traceback.format_exception(exc)[-6:]
        )
        return result
    result.import_seconds = time.perf_counter() - started
    import inspect

    if "ctx_pool" not in inspect.signature(module.prepare_dflash_inputs).parameters:
        result.code, result.message = NO_J0, f"{path}: prepare_dflash_inputs takes no ctx_pool"
        return result
    from j0 import wiring

    problem = wiring.check(module)
    if problem is not None:
        result.code, result.message = DEVIATES, f"J0 deviates: the switch's wiring: {problem}"
        return result
    indices = [only_case] if only_case is not None else list(range(cases))
    started = time.perf_counter()
    for index in indices:
        case = batches.make_case(seed, index)
        try:
            mismatch = run_case(module, case, device, j0_seed)
        except Exception as exc:
            result.code = DEVIATES
            result.message = f"case {index}: prepare_dflash_inputs failed: {exc!r}\n" + "".join(
                traceback.format_exception(exc)[-4:]
            )
            result.replay = replay_command(path, seed, index, device)
            break
        result.cases_run += 1
        result.steps_run += len(case.steps)
        result.requests_run += sum(s.num_reqs for s in case.steps)
        if mismatch is not None:
            result.code = DEVIATES
            result.message = "J0 deviates: " + mismatch.text() + "\n  " + case.describe()
            result.replay = replay_command(path, seed, index, device)
            result.mismatch = {
                "case": mismatch.case,
                "step": mismatch.step,
                "mode": mismatch.mode,
                **mismatch.facts,
            }
            break
        if not quiet and only_case is not None:
            print(f"  ok  {case.describe()}", flush=True)
    result.seconds = time.perf_counter() - started
    if result.code == OK:
        result.message = (
            f"J0 matches the reference: {result.cases_run} cases, {result.steps_run} steps, "
            f"{result.requests_run} request-steps, J0 off and on, on {device}"
        )
    return result


def _environment(device: str) -> dict[str, str]:
    import platform

    import torch
    import triton

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "device": device,
        "triton_interpret": os.environ.get("TRITON_INTERPRET", ""),
    }
    try:
        import vllm

        env["vllm"] = getattr(vllm, "__version__", "?")
    except Exception as exc:  # pragma: no cover - reported, not fatal
        env["vllm"] = f"import failed: {exc!r}"
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m j0.selfcheck")
    parser.add_argument("--speculator", type=Path, action="append", required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--case", type=int, default=None)
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        print(
            "j0 selfcheck: --device cpu needs TRITON_INTERPRET=1 set before Triton is imported",
            file=sys.stderr,
        )
        return DEVIATES
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("j0 selfcheck: --device cuda but torch sees no CUDA device", file=sys.stderr)
            return NO_CUDA
    from j0.pins import load_pins

    j0_seed = load_pins().j0_seed
    results = []
    for path in args.speculator:
        result = check_file(path, args.device, args.seed, args.cases, args.case, j0_seed)
        result.environment = _environment(args.device)
        if result.code == OK and args.bench:
            from j0 import bench

            result.bench = bench.run(load_speculator(path), args.device)
            print(bench.table(result.bench), flush=True)
        _report(result)
        results.append(result)
    if args.json is not None:
        from j0.atomic import write_text_atomic

        payload = [r.__dict__ for r in results]
        write_text_atomic(
            args.json, json.dumps(payload if len(payload) > 1 else payload[0], indent=2) + "\n"
        )
    return max(r.code for r in results)


def _report(result: Result) -> None:
    stream = sys.stdout if result.code == OK else sys.stderr
    head = {OK: "PASS", DEVIATES: "FAIL", NO_J0: "NO J0"}.get(result.code, "ERROR")
    print(f"{head}: {result.file}", file=stream)
    print(f"  {result.message}", file=stream)
    if result.replay:
        print(f"  replay: {result.replay}", file=stream)
    if result.code == OK:
        print(
            f"  import {result.import_seconds:.1f} s, check {result.seconds:.1f} s",
            file=stream,
        )
    print(f"RESULT {result.code} {result.file}", file=stream, flush=True)


if __name__ == "__main__":
    sys.exit(main())
