"""`j0 selfcheck`: is J0 doing what the article says, here? Runs a speculator.py's real kernels
against j0's independent reference (standard library here; the work happens in a child process).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.article.variants import VARIANTS
from j0.commands import (
    DEVICES,
    FOLDER,
    MAX_SEED,
    add_command,
    add_json_option,
    reads,
    whole_number,
    writes,
)
from j0.edge.processes import owning
from j0.terminal import sink

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

--vllm 0.34.0 checks J0 cut for vLLM 0.34.0 (docs/overlay.md): without --speculator, the file
`j0 overlay build --vllm 0.34.0 [--variant V]` writes (built first where absent, from the
installed vLLM 0.34.0's base or the vllm==0.34.0 wheel). The kernels are 0.34.0's own (the
num_reqs argument and the padding programs past the batch included), against the same
reference. The file runs inside the vLLM this Python imports, which must be that release: put
vLLM 0.34.0's package first on PYTHONPATH (`pip install --no-deps --target DIR vllm==0.34.0`);
otherwise exit 69, nothing checked. A pinned file of another release than the imported vLLM's is
refused the same way, with or without --vllm.
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
        choices=DEVICES,
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
    parser.add_argument(
        "--vllm",
        metavar="RELEASE",
        help="the vLLM release the file is for: the article's (c50aca14 = 0.33.0, the default) "
        "or 0.34.0; without --speculator, that release's built J0 file is checked",
    )
    parser.add_argument(
        "--variant",
        choices=VARIANTS,
        help="without --speculator: check this variant's built file (article, prefix-safe), of "
        "--vllm's release",
    )
    add_json_option(parser, "the result (and bench)")
    reads(parser, "--speculator")
    writes(parser, "--audit-out", FOLDER)
    parser.set_defaults(func=owning(_selfcheck))  # its worker stops with it


def _selfcheck(args: argparse.Namespace) -> int:
    """The check (its cases printed as they end), then its result document as --json says."""
    from j0.commands import JSON_ON_STDOUT, check_json_output
    from j0.selfcheck.run import SelfcheckOptions, run_selfcheck

    check_json_output(args.json)  # before the check, not after it
    done = run_selfcheck(
        SelfcheckOptions(
            speculator=args.speculator,
            device=args.device,
            seed=args.seed,
            cases=args.cases,
            case=args.case,
            bench=args.bench,
            prefix_cache=args.prefix_cache,
            audit=args.audit,
            audit_out=args.audit_out,
            quiet=args.json == JSON_ON_STDOUT,
            vllm=args.vllm,
            variant=args.variant,
        )
    )
    if done.document is not None:
        sink.emit_json(done.document)
    return done.exit_code
