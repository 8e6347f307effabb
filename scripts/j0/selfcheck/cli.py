"""`j0 selfcheck`: is J0 doing what the article says, here? Runs a speculator.py's real kernels
against j0's independent reference (standard library here; the work happens in a child process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from j0.commands import (
    JSON_ON_STDOUT,
    MAX_SEED,
    add_command,
    add_json_option,
    check_json_output,
    whole_number,
)
from j0.engine.processes import owning
from j0.errors import UNAVAILABLE, J0Error
from j0.pins import Pins, load_pins
from j0.selfcheck import kernels as selfcheck

DEFAULT_CASES = 24  # 25-40 s on a 2-core CPU with Triton's interpreter, vLLM's import included

HELP = f"""\
Check that a speculator.py does what the article says J0 does. FILE is imported as vLLM's
`vllm.v1.worker.gpu.spec_decode.dflash.speculator` (the rest of vLLM comes from the installed
package) and its real `prepare_dflash_inputs` runs on a battery of batches: 1..max_num_seqs
requests in random request slots, 7 and 15 draft tokens, prefill chunks (the next prompt token
as anchor), decode steps with 0..N rejected tokens, contexts from one token to max_model_len,
several steps per request so the history carries over. Each step runs with J0 off and on, and
every output (query ids, positions, slots, sample indices, the history) is compared with an
independent reference written from the seed's text (j0/reference/draws.py, j0/reference/philox.py).

Exit 0: J0 matches. Exit 1: J0 is there but deviates; the first mismatch is printed (case, step,
request, slot, expected and actual token) with a command that replays that case alone; a file
that does not compile, or imports a vLLM module that vLLM 0.33 lacks, is also 1. Exit 2: the
file has no J0 (e.g. vLLM's unpatched file). Exit 69: the check cannot run here, nothing was
checked: this Python lacks numpy, torch, triton, vllm or a package vLLM's module imports (e.g.
cbor2; named), or --device cuda finds no CUDA device. `scripts/selfcheck-setup` (in the j0
checkout) installs everything the check imports: the `selfcheck` extra, then vllm==0.33.0 with
--no-deps (the module, not its GPU dependencies).

Without a GPU (--device cpu, or auto on a machine without one) the kernels run in Triton's
interpreter: the check sets TRITON_INTERPRET=1 and CUDA_VISIBLE_DEVICES= itself, in a child
process. The default {DEFAULT_CASES} cases take 25-40 s on a 2-core CPU (8-14 s of it vLLM's
import). --device cuda runs the compiled kernels and compares them with the same CPU reference,
bit for bit. --bench then times the input preparation, J0 off and on (GPU time by CUDA graph
replay and events, host time per call), for 1, 4 and 8 requests and 7/15 draft tokens, and, for
the prefix-safe variant, its fill per step and per admission.

--prefix-cache runs other batteries: requests that start with prefix-cached positions (the same
prompt again in the same request slot, another prompt in between, a shared prefix in another
slot, chunked prefill after a hit, a hit batched beside other requests), each also without the
hit as a control. J0's draws must read the request's own committed tokens there. The article's
file fails them (exit 1), naming the request slot, the query slot and the foreign token it drew:
the known behaviour of the article's file; the prefix-safe variant passes; both pass the
controls. Exit codes as above.

--audit runs the J0 audit instead (overlay/jetspec-j0-audit.patch, applied to FILE in a
temporary folder unless FILE holds it already): the kernels run J0 on over the battery (or, with
--prefix-cache, the prefix-cache sessions) and, at every step, the file's own audit checks each
request's history row and draws against a per-slot copy of its committed tokens, as vLLM's
RequestState.all_token_ids holds them, and writes its records (--audit-out DIR keeps them;
--cases N runs the first N cases, or sessions with --prefix-cache);
`j0 dumps audit` then judges them: exit 0 PASS, 1 FAIL (the first mismatches named). The
article's file passes the default battery and fails the prefix-cache sessions; the variant
passes both.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = add_command(
        subparsers,
        "selfcheck",
        "check J0 in a speculator.py against an independent reference (CPU or GPU)",
        HELP,
    )
    parser.add_argument(
        "--speculator",
        type=Path,
        metavar="FILE",
        help="the speculator.py to check (default: the installed vLLM's, found without importing "
        "it); where `j0 overlay build` writes a variant (overlay/vllm/..., overlay/prefix-safe/"
        "vllm/...) and nothing is there yet, it is built first as that command builds it",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="cpu: Triton's interpreter; cuda: the compiled kernels; auto (default): cuda when "
        "an NVIDIA driver and a GPU are found, else cpu",
    )
    parser.add_argument(
        "--cases",
        type=whole_number(1),
        default=DEFAULT_CASES,
        metavar="N",
        help=f"how many cases of the battery to run (default {DEFAULT_CASES})",
    )
    parser.add_argument(
        "--case",
        type=whole_number(0),
        metavar="N",
        help="run case N alone (replay a reported mismatch)",
    )
    parser.add_argument(
        "--seed",
        type=whole_number(0, MAX_SEED),
        default=0,
        metavar="S",
        help="the battery's seed (default 0)",
    )
    parser.add_argument(
        "--bench",
        action="store_true",
        help="after a passing check, time prepare_dflash_inputs with J0 off and on",
    )
    parser.add_argument(
        "--prefix-cache",
        "--prefix-caching",
        dest="prefix_cache",
        action="store_true",
        help="run the prefix-cache batteries instead: requests that start with cached positions "
        "(the same prompt again in a slot, another prompt in between, a shared prefix in another "
        "slot, chunked prefill after a hit), each with a no-hit control",
    )
    parser.add_argument(
        "--audit",
        action="store_true",
        help="run the J0 audit over the battery instead and judge its records (j0 dumps audit)",
    )
    parser.add_argument(
        "--audit-out",
        type=Path,
        metavar="DIR",
        help="with --audit: keep the audit's records here (a new or empty folder)",
    )
    add_json_option(parser, "the result (and bench)")
    parser.set_defaults(func=owning(run))  # its worker stops with it


# What the check's process imports. One command installs all of it, vLLM's import dependencies
# included: scripts/selfcheck-setup (pyproject's `selfcheck` extra, then vllm==VLLM_RELEASE with
# --no-deps: the module only, not its GPU dependencies).
NEEDED = ("numpy", "torch", "triton", "vllm")
SETUP_COMMAND = "scripts/selfcheck-setup"


def check_installed(python: str = sys.executable) -> None:
    """Refuse, before starting the check, a Python that lacks what the check imports: a raw
    ModuleNotFoundError and exit 1 would read as "J0 deviates"."""
    from j0.errors import available

    missing = [name for name in NEEDED if not available(name)]
    if missing:
        raise J0Error(
            f"j0 selfcheck imports {', '.join(NEEDED)} to run the kernels, and {python} lacks "
            f"{', '.join(missing)}: {SETUP_COMMAND} installs them (in the j0 checkout; "
            f"PYTHON={python} {SETUP_COMMAND} for this Python). Nothing was checked",
            UNAVAILABLE,
        )


def overlay_variant(path: Path, pins: Pins) -> str | None:
    """The variant whose file `j0 overlay build` writes at `path` without -o (the article's at
    overlay/vllm/.../speculator.py, the prefix-safe one at overlay/prefix-safe/...), or None."""
    from j0.article.variants import VARIANTS, default_output

    where = path.resolve()
    return next((v for v in VARIANTS if default_output(pins, v).resolve() == where), None)


def build_overlay(path: Path, pins: Pins) -> None:
    """Make the file `j0 overlay build [--variant V]` makes at `path` (a fresh clone has none):
    the pinned vllm wheel's base (downloaded once, cached), its sha256, the patch's and the
    result's all checked against the pins, as that command does."""
    from j0.article.build import build_variant, write_overlay
    from j0.engine.base_sources import from_wheel

    variant = overlay_variant(path, pins) or "article"
    command = "j0 overlay build" + ("" if variant == "article" else f" --variant {variant}")
    print(
        f"j0 selfcheck: {path} is not built yet; building it as `{command}` does (from the "
        f"pinned vllm=={pins.vllm_release} wheel, every sha256 checked)",
        flush=True,
    )
    base = from_wheel(pins)
    made = build_variant(base.data, base.origin, pins, variant)
    print(f"j0 selfcheck: {write_overlay(made, path)}", flush=True)


def _gpu_present() -> bool:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    return Path("/dev/nvidiactl").exists() or shutil.which("nvidia-smi") is not None


def _child_env(device: str) -> dict[str, str]:
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    if device == "cpu":
        env.update(selfcheck.INTERPRETER_ENV)
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def _run_worker(args: argparse.Namespace, path: Path, device: str, json_out: Path | None) -> int:
    """The worker's exit code; it writes its JSON into json_out (where given) and prints as it
    checks, except where --json alone puts the JSON in the place of its text."""
    cmd = [
        sys.executable,
        "-m",
        "j0.selfcheck",
        "--speculator",
        str(path),
        "--device",
        device,
        "--seed",
        str(args.seed),
        "--cases",
        str(args.cases),
    ]
    if args.case is not None:
        cmd += ["--case", str(args.case)]
    if args.bench:
        cmd.append("--bench")
    if args.prefix_cache:
        cmd.append("--prefix-cache")
    if args.audit:
        cmd.append("--audit")
    if args.audit_out is not None:
        cmd += ["--audit-out", str(args.audit_out)]
    if json_out is not None:
        cmd += ["--json", str(json_out)]
    from j0.engine.processes import start_owned, wait_owned

    quiet = {"stdout": subprocess.DEVNULL} if args.json == JSON_ON_STDOUT else {}
    return wait_owned(start_owned(cmd, env=_child_env(device), **quiet))


def _check_audit_args(args: argparse.Namespace) -> None:
    if args.audit_out is not None and not args.audit:
        raise J0Error("--audit-out DIR keeps the records of --audit; add --audit", 64)
    if args.audit and (args.bench or args.case is not None):
        raise J0Error("--audit runs the audit over the battery; without --bench and --case", 64)
    out = args.audit_out
    if out is not None and (out.is_file() or (out.is_dir() and any(out.iterdir()))):
        raise J0Error(
            f"--audit-out {out}: {'a file' if out.is_file() else 'a folder that is not empty'}; "
            "expected a new or empty folder (records already there would be judged too)",
            64,
        )


def run(args: argparse.Namespace) -> int:
    pins = load_pins()
    if args.cases < 1:
        raise J0Error(f"--cases {args.cases}: expected a positive number", exit_code=64)
    if args.prefix_cache and args.case is not None:
        raise J0Error(
            f"--case {args.case} replays a case of the default battery; --prefix-cache runs its "
            "own sessions (all of them, from --seed)",
            exit_code=64,
        )
    _check_audit_args(args)
    check_json_output(args.json)  # before the check, not after it
    if args.speculator is not None:
        path = args.speculator
        if not path.exists() and overlay_variant(path, pins) is not None:
            check_installed()  # before a download for a check that could not run here
            build_overlay(path, pins)
    else:
        from j0.engine.base_sources import installed_speculator

        path = installed_speculator(pins)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise J0Error(
            f"{path}: {what} (expected a DFlash speculator.py; `j0 overlay build` writes the "
            f"article's to {pins.default_overlay_path})",
            exit_code=2,
        )
    code, why = selfcheck.static_check(path)
    if code != selfcheck.OK:
        print(f"{'NO J0' if code == selfcheck.NO_J0 else 'FAIL'}: {why}", file=sys.stderr)
        return code
    check_installed()
    device = args.device
    if device == "auto":
        device = "cuda" if _gpu_present() else "cpu"
    what = f"case {args.case}" if args.case is not None else f"{args.cases} cases"
    if args.prefix_cache:
        what = "the prefix-cache batteries"
    if args.audit:
        what += ", the J0 audit"
    say(args, f"j0 selfcheck: {path} on {device}, seed {args.seed}, {what}")
    if args.json != JSON_ON_STDOUT:
        return _checked(args, path, device, None if args.json is None else Path(args.json))
    import tempfile

    with tempfile.TemporaryDirectory(prefix="j0-selfcheck-") as folder:
        json_out = Path(folder) / "result.json"
        rc = _checked(args, path, device, json_out)
        if json_out.is_file():
            print(json_out.read_text().rstrip("\n"), flush=True)
        return rc


def say(args: argparse.Namespace, line: str) -> None:
    """A line of the text, which --json alone replaces by the JSON."""
    if args.json != JSON_ON_STDOUT:
        print(line, flush=True)


def _checked(args: argparse.Namespace, path: Path, device: str, json_out: Path | None) -> int:
    """Run the worker (on the CPU again where --device auto found no usable CUDA device) and turn
    what it exits with into the command's exit code or error."""
    rc = _run_worker(args, path, device, json_out)
    if rc == selfcheck.NO_CUDA and args.device == "auto":
        say(args, "j0 selfcheck: no usable CUDA device; running on the CPU instead")
        rc = _run_worker(args, path, "cpu", json_out)
    if rc == selfcheck.NO_CUDA:
        raise J0Error(
            "--device cuda: torch sees no CUDA device here; nothing was checked (--device cpu "
            "runs the same check in Triton's interpreter)",
            UNAVAILABLE,
        )
    if rc < 0:
        raise J0Error(
            f"{path}: the check's process died of signal {-rc} while running the kernels "
            "(an out-of-bounds access?): J0 deviates or the file is broken",
            exit_code=1,
        )
    if rc == UNAVAILABLE:  # the worker said which package is missing; no verdict on the file
        return rc
    if rc not in (selfcheck.OK, selfcheck.DEVIATES, selfcheck.NO_J0):
        raise J0Error(f"{path}: the check's process exited with {rc}", exit_code=1)
    return rc
