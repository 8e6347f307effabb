"""`j0 selfcheck`'s worker: run a speculator.py's real `prepare_dflash_inputs` over the battery
(batches.py), J0 off and on, and compare every output with the reference (reference.py).

Run as `python -m j0.selfcheck ...` in a process of its own (cli.py starts it): on a
machine without a GPU, Triton's interpreter needs `TRITON_INTERPRET=1` and `CUDA_VISIBLE_DEVICES=`
before Triton is first imported, and a kernel that reads out of bounds can take its process
down. Module-level imports are the standard library only; numpy and torch come in later.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

from j0.commands import MAX_SEED, whole_number
from j0.selfcheck.compare import run_case
from j0.selfcheck.kernels import (
    DEVIATES,
    NO_CUDA,
    NO_J0,
    OK,
    SPECULATOR_MODULE,
    load_speculator,
    static_check,
)

# vLLM's platform code logs this where its compiled extension is absent (the wheel installed
# without its GPU build, as here: vllm/platforms/interface.py, import_kernels). On the CPU the check
# runs the speculator's Triton kernels in the interpreter and never calls vllm._C, so the line is
# noise printed before every result; it is dropped there, and only there.
C_EXTENSION_NOISE = "Failed to import from vllm._C"
PLATFORM_LOGGERS = ("vllm.platforms.interface", "vllm.platforms.cpu", "vllm.platforms.cuda")


class _DropCExtensionNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(C_EXTENSION_NOISE)


def quiet_c_extension_warning() -> None:
    for name in PLATFORM_LOGGERS:
        logging.getLogger(name).addFilter(_DropCExtensionNoise())


# --- A package missing here is not a verdict on the file ----------------------------------------

UNAVAILABLE = 69  # j0.errors.UNAVAILABLE: what the check imports is not installed
SETUP_COMMAND = "scripts/selfcheck-setup"


def missing_dependency(exc: ModuleNotFoundError, path: Path) -> str | None:
    """The package whose absence stopped vLLM's import (e.g. `cbor2`, which `pip install --no-deps
    vllm` leaves out); None when the failing import statement is the checked file's own (it names a
    module that is not there: the file's fault, a verdict)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    if not exc.name or (frames and Path(frames[-1].filename).resolve() == path.resolve()):
        return None
    return exc.name.split(".", 1)[0]


def unavailable_message(package: str) -> str:
    return (
        f"j0 selfcheck: vLLM's module cannot be imported here: it needs the Python package "
        f"`{package}`, which is not installed for {sys.executable}. Install everything the check "
        f"imports with `{SETUP_COMMAND}` (in the j0 checkout; PYTHON={sys.executable} "
        f"{SETUP_COMMAND} for this Python). Nothing was checked: this says nothing about the file"
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
    bench_prefix_fill: list[dict[str, Any]] | None = None  # the prefix-safe variant's fill only
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
    prefix_cache: bool = False,
    audit: bool = False,
    audit_out: Path | None = None,
) -> Result:
    """Check one file; never raises for a fault of the file (that is a Result with code 1).
    With `prefix_cache`, the prefix-cache batteries (prefix/check.py) run instead of the default
    battery."""
    from j0.selfcheck import batches

    result = Result(code=OK, file=str(path), device=device, seed=seed)
    code, why = static_check(path)
    if code != OK:
        result.code, result.message = code, why
        return result
    started = time.perf_counter()
    try:
        module = load_speculator(path)
    except ModuleNotFoundError as exc:
        missing = missing_dependency(exc, path)
        if missing is None:  # the file's own import names a module that is not there: its fault
            result.code = DEVIATES
            result.message = f"{path}: cannot import as {SPECULATOR_MODULE}: {exc!r}"
            return result
        result.code = UNAVAILABLE
        result.message = unavailable_message(missing)
        return result
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
    from j0.selfcheck import wiring

    problem = wiring.check(module)
    if problem is not None:
        result.code, result.message = DEVIATES, f"J0 deviates: the switch's wiring: {problem}"
        return result
    if audit:
        from j0.selfcheck.audit_run import check_with_audit

        started = time.perf_counter()
        try:
            result.code, result.message = check_with_audit(
                path, device, seed, cases, prefix_cache, audit_out
            )
        except Exception as exc:  # a kernel or the audit raised: the file's fault, reported
            result.code = DEVIATES
            result.message = f"the audited kernels failed: {exc!r}\n" + "".join(
                traceback.format_exception(exc)[-4:]
            )
        result.seconds = time.perf_counter() - started
        return result
    if prefix_cache:
        from j0.selfcheck.prefix.report import check_prefix_cache

        started = time.perf_counter()
        check_prefix_cache(module, path, device, seed, j0_seed, result)
        result.seconds = time.perf_counter() - started
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
    parser.add_argument("--seed", type=whole_number(0, MAX_SEED), default=0)
    parser.add_argument("--cases", type=whole_number(1), default=60)
    parser.add_argument("--case", type=whole_number(0), default=None)
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--prefix-cache", action="store_true")
    parser.add_argument("--audit", action="store_true")
    parser.add_argument("--audit-out", type=Path, default=None)
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
    if args.device == "cpu":
        quiet_c_extension_warning()
    from j0.pins import load_pins

    j0_seed = load_pins().j0_seed
    results = []
    for path in args.speculator:
        result = check_file(
            path,
            args.device,
            args.seed,
            args.cases,
            args.case,
            j0_seed,
            prefix_cache=args.prefix_cache,
            audit=args.audit,
            audit_out=args.audit_out,
        )
        if result.code == UNAVAILABLE:
            _report(result)
            return UNAVAILABLE
        result.environment = _environment(args.device)
        if result.code == OK and args.bench:
            from j0.selfcheck import timing as bench

            module = load_speculator(path)
            result.bench = bench.run(module, args.device)
            print(bench.table(result.bench), flush=True)
            from j0.selfcheck.prefix import timing as prefix_timing

            result.bench_prefix_fill = prefix_timing.run(module, args.device) or None
            if result.bench_prefix_fill:
                print(prefix_timing.table(result.bench_prefix_fill), flush=True)
        _report(result)
        results.append(result)
    if args.json is not None:
        from j0.edge.atomic import write_text_atomic

        payload = [r.__dict__ for r in results]
        write_text_atomic(
            args.json, json.dumps(payload if len(payload) > 1 else payload[0], indent=2) + "\n"
        )
    return max(r.code for r in results)


def _report(result: Result) -> None:
    if result.code == UNAVAILABLE:
        print(result.message, file=sys.stderr, flush=True)
        return
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
    stream.flush()


if __name__ == "__main__":
    sys.exit(main())
