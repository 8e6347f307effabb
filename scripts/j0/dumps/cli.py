"""`j0 dumps show|check|compare|replay`: argument wiring only; the work is in the modules named
for it (load, show, check, printing, compare, replay), imported when a subcommand runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.article.variants import VARIANTS
from j0.commands import (
    FOLDER,
    add_command,
    add_json_option,
    check_json_output,
    finite_number,
    json_file,
    reads,
    whole_number,
    writes,
)
from j0.errors import CHECK_FAILED, INPUT_LACKS, J0Error
from j0.terminal import sink

GROUP_HELP = """\
The patch's step dumps: with VLLM_DFLASH_DUMP=DIR and VLLM_DFLASH_DUMP_STEPS=N (compose:
the same names in .env), the server saves its first N single-request draft steps as
DIR/stepNNNN.pt (target positions and ids, the drafter's input taps `aux`, num_rejected,
num_sampled, ctx_noise and, on steps with a query pass, query_ids, query_positions and
draft_tokens). Files are read with torch.load(weights_only=True). docs/dumps.md has the details.
"""

SHOW_HELP = """\
Tables of what DIR holds: the requests the steps form (positions restart at 0; the start-up
warm-up that vLLM runs with CUDA graphs starts elsewhere, before the first request), each
request's steps by kind (prefill chunk, last prefill chunk, decode) with accepted and rejected
drafts, J0 on or off, and the dtype and shape of every tensor. Exit 2: DIR is not a dump folder.
"""

CHECK_HELP = """\
Check every dumped step against J0's rule with the same reference as `j0 selfcheck`
(j0/selfcheck/philox.py, reference.py), request by request:
  counts       num_rejected / num_sampled fit the step's kind; positions run without holes;
               the next step starts at this step's anchor position (last valid position + 1)
  query block  positions anchor_pos + k; slot 0 is the anchor and comes back as the next
               step's first input id
  J0 on        slot k > 0 = the committed token at r mod L, L = last_valid_pos + 2,
               r = Philox(J0_SEED, req_state_idx * 64 + k); the committed tokens are rebuilt
               from the dumps (inputs minus rejected drafts, then the anchor) and the request
               slot, which is not dumped, is inferred from the draws and reported
  J0 off       slot k > 0 = the mask token (--mask-token, else the one value those slots hold)
A draw at a position that no dumped step of its request wrote (a prefix-cache hit: cached
prompt positions are never written to the history; or a request whose first steps ran beside
other requests) reads whatever the slot's history held: it is UNVERIFIABLE, never a pass.
The start-up warm-up (CUDA graphs) is recognised and not checked; --skip-requests K leaves out
the first K requests as well.
The prefix-safe variant of the article's file fills those positions from the request's own
tokens: for its runs (--log SERVER_LOG, whose identity line says identity=prefix-safe, or
--variant prefix-safe) with the prompts' token ids (--prompts FILE: a JSON list of token-id
lists, of objects with prompt_token_ids, or of completions responses made with
return_token_ids), the draws there are checked like any other. The article's file's stay
UNVERIFIABLE (its known behaviour under prefix caching).

Exit 0: PASS. Exit 1: FAIL (the first failures are named: step file, slot, expected, actual,
why). Exit 2: not a dump folder, nothing to check, or UNVERIFIABLE draws and no failure
(--allow-unverifiable makes that exit 0, with the warning kept).
"""

COMPARE_HELP = """\
Compare two dump sets of the same prompts step by step (J0 off vs on; vLLM vs the reference
that `j0 dumps replay` writes). Steps are paired by request and start position. Committed
tokens (inputs minus rejected drafts) and query positions must be equal, and `aux` on the
committed rows within a bf16-aware tolerance (|a-b| <= rtol * (max(|a|,|b|) + row rms),
rtol 2^-6 = two bf16 steps); draft-token agreement is reported per draft position (bf16 ties and
different J0 inputs make drafts differ legitimately). --plots DIR writes agreement.png and
errors.png with their CSVs. Exit 0: same; 1: different; 2: not dump folders / nothing in common.
"""

REPLAY_HELP = """\
Run the DFlash authors' reference drafter (PyPI `dflash`) with the drafter's weights and the
target's embed_tokens and lm_head on every dumped query step, write its draft tokens as a dump
set (`j0 dumps compare DIR OUT` reads it), and report per-position agreement with vLLM's drafts,
with logit margins where they differ. docs/dumps-replay.md has the conventions.
"""


AUDIT_HELP = """\
The verdict on the J0 audit's records: the audited speculator.py (`j0 overlay build --audit`,
docs/overlay.md), served with J0 on and VLLM_DFLASH_AUDIT=FOLDER, writes FOLDER/audit-<pid>.jsonl,
one line per draft step: for every request of the batch its request slot, the J0 history
positions and the draws checked against vLLM's own copy of its committed tokens, and the first
mismatches. This command sums every record: steps (and how many batched several requests),
requests, request slots, rows, positions and draws checked, mismatches.

Exit 0: PASS (steps audited, no mismatch). Exit 1: FAIL (the first mismatches are named: step,
request, slot, position or draw, the token found and the request's own). Exit 2: nothing to
judge (no such folder, no audit-*.jsonl, J0 off, or no audited step; never a pass), or a line
that is not a record (file and line named).
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    group = add_command(
        subparsers,
        "dumps",
        "show, check (J0 draws), compare and replay the patch's step dumps",
        GROUP_HELP,
    )
    commands = group.add_subparsers(dest="dumps_command", metavar="SUBCOMMAND")
    commands.required = True

    def add(name: str, summary: str, text: str) -> argparse.ArgumentParser:
        return add_command(commands, name, summary, text)

    show = add("show", "tables of the requests, steps and tensors in a dump folder", SHOW_HELP)
    show.add_argument("dir", type=Path, metavar="DIR", help="the dump folder")
    add_json_option(show, "the tables")
    reads(show, "dir")
    show.set_defaults(func=run_show)

    check = add("check", "check every dumped J0 draw against the reference", CHECK_HELP)
    check.add_argument("dir", type=Path, metavar="DIR", help="the dump folder")
    check.add_argument(
        "--skip-requests",
        type=whole_number(0),
        default=0,
        metavar="K",
        help="leave out the first K requests (the warm-up is recognised without it)",
    )
    add_json_option(check, "the report")
    check.add_argument(
        "--mask-token",
        type=whole_number(0, (1 << 31) - 1),
        metavar="ID",
        help="the drafter's mask_token_id, for J0 off (default: inferred from the dumps)",
    )
    check.add_argument(
        "--seed",
        type=whole_number(0, (1 << 64) - 1),  # Philox's 64-bit key
        metavar="N",
        help="J0's Philox seed (default: J0_SEED in overlay/pins.env, the patch's 20261031)",
    )
    check.add_argument(
        "--max-slots",
        type=whole_number(1, 65536),
        metavar="N",
        help="request slots tried when inferring the slot (default: 1024, at most 65536; "
        "vLLM's max_num_seqs)",
    )
    check.add_argument(
        "--log",
        type=Path,
        metavar="FILE",
        help="the server's log: its identity line says which speculator.py made the dumps",
    )
    check.add_argument(
        "--variant",
        choices=VARIANTS,
        help="which speculator.py made the dumps (instead of --log)",
    )
    check.add_argument(
        "--prompts",
        type=Path,
        metavar="FILE",
        help="the prompts' token ids (JSON): with the prefix-safe variant, the draws below a "
        "request's first dumped position are checked against them",
    )
    check.add_argument(
        "--allow-unverifiable",
        action="store_true",
        help="exit 0 when nothing failed but some draws were unverifiable (still reported)",
    )
    reads(check, "dir", "--log", "--prompts")
    check.set_defaults(func=run_check)

    audit = add("audit", "the verdict on the J0 audit's per-step records", AUDIT_HELP)
    audit.add_argument("dir", type=Path, metavar="FOLDER", help="the VLLM_DFLASH_AUDIT folder")
    add_json_option(audit, "the summary")
    reads(audit, "dir")
    audit.set_defaults(func=run_audit)

    compare = add("compare", "compare two dump sets of the same prompts step by step", COMPARE_HELP)
    compare.add_argument("a", type=Path, metavar="A", help="a dump folder")
    compare.add_argument("b", type=Path, metavar="B", help="another dump folder")
    add_json_option(compare, "the report")
    compare.add_argument(
        "--plots", type=Path, metavar="DIR", help="write agreement.png, errors.png (+ CSV) here"
    )
    compare.add_argument(
        "--rtol",
        type=finite_number(0, above=True),
        metavar="X",
        help="aux tolerance, relative: a finite number > 0 (default: 2^-6)",
    )
    reads(compare, "a", "b")
    writes(compare, "--plots", FOLDER)
    compare.set_defaults(func=run_compare)

    replay = add("replay", "replay the dumps on the DFlash authors' reference drafter", REPLAY_HELP)
    replay.add_argument("dir", type=Path, metavar="DIR", help="the dump folder")
    replay.add_argument("--drafter", type=Path, required=True, metavar="DIR", help="drafter folder")
    replay.add_argument(
        "--target",
        type=Path,
        required=True,
        metavar="TARGET",
        help="the target model's folder (only embed_tokens and lm_head are read)",
    )
    replay.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="default: cpu")
    replay.add_argument(
        "--out", type=Path, metavar="DIR", help="where the reference's dump set goes"
    )
    add_json_option(replay, "the report")
    reads(replay, "dir", "--drafter", "--target")
    writes(replay, "--out", FOLDER)
    replay.set_defaults(func=run_replay)


def _console():  # type: ignore[no-untyped-def]
    from j0 import errors as optional

    rich_console = optional.require("rich.console", "j0 dumps", "dumps")
    # Piped output (logs, CI) gets 120 columns rather than rich's 80, so tables stay whole.
    # Findings are printed whole (soft wrap): one line each, for grep and logs.
    # Its text goes where the run's sink sends text (nowhere under --json alone).
    file = sink.current().text_stream()
    width = None if file.isatty() else 120
    return rich_console.Console(file=file, highlight=False, width=width, soft_wrap=True)


def _need_torch() -> None:
    from j0 import errors as optional

    optional.require("torch", "j0 dumps", "dumps")
    optional.require("numpy", "j0 dumps", "dumps")


def _refuse_writing_into(args: argparse.Namespace, *folders: str) -> None:
    """--json, --plots and --out never go into a dump folder the command reads; --json names a
    file to write, --plots and --out a folder (each refused, exit 64, before any work)."""
    from j0.edge.atomic import check_output_folder, check_output_path, refuse_inside

    others = [(f"--{name}", getattr(args, name, None)) for name in ("plots", "out")]
    outputs = [("--json", json_file(args.json)), *others]
    refuse_inside(outputs, [(name.upper(), getattr(args, name)) for name in folders])
    for name, path in outputs:
        if path is not None and name == "--json":
            check_output_path(path)
        elif path is not None:
            check_output_folder(path, name)


def run_show(args: argparse.Namespace) -> int:
    _refuse_writing_into(args, "dir")
    _need_torch()
    from j0.dumps import show
    from j0.dumps.run import ShowOptions
    from j0.dumps.run import run_show as show_folder

    shown = show_folder(ShowOptions(folder=args.dir))
    show.render(shown.summary, _console())
    sink.emit_json(shown.to_json())
    return shown.exit_code


def run_check(args: argparse.Namespace) -> int:
    _refuse_writing_into(args, "dir")
    from j0.dumps import printing
    from j0.dumps.check import run as check

    options = check.CheckOptions(
        folder=args.dir,
        seed=args.seed,
        skip_requests=args.skip_requests,
        mask_token=args.mask_token,
        max_slots=args.max_slots,
        allow_unverifiable=args.allow_unverifiable,
        variant=args.variant,
        log=args.log,
        prompts=args.prompts,
    )
    result = check.run_check(options)
    if result.report is None:
        raise J0Error(result.error or result.summary, result.exit_code)  # printed by j0.cli
    printing.render(result.report, _console())
    sink.emit_json(result.report.to_json())
    return result.exit_code


def run_audit(args: argparse.Namespace) -> int:
    from j0.dumps.run import AuditOptions
    from j0.dumps.run import run_audit as audit

    check_json_output(args.json)  # before reading, not after
    audited = audit(AuditOptions(folder=args.dir))
    (sink.say if audited.exit_code == 0 else sink.warn)(audited.text)
    sink.emit_json(audited.to_json())
    return audited.exit_code


def run_compare(args: argparse.Namespace) -> int:
    _refuse_writing_into(args, "a", "b")
    _need_torch()
    from j0.dumps import compare
    from j0.dumps.run import CompareOptions
    from j0.dumps.run import run_compare as compare_folders

    result = compare_folders(CompareOptions(a=args.a, b=args.b, rtol=args.rtol))
    compare.render(result, _console())
    sink.emit_json(result.to_json())
    if args.plots is not None and result.pairs:
        optional_plots = compare.write_plots(result, args.plots)
        sink.say(f"plots: {', '.join(str(p) for p in optional_plots)}")
    return result.exit_code


def run_replay(args: argparse.Namespace) -> int:
    _refuse_writing_into(args, "dir")
    try:
        from j0.dumps.replay import run as replay
    except ModuleNotFoundError as exc:
        if exc.name != "j0.dumps.replay.run":
            raise
        raise J0Error(
            "j0 dumps replay is not in this checkout: scripts/j0/dumps/replay/run.py is missing",
            CHECK_FAILED,
        ) from None
    report = replay.run_replay(
        replay.ReplayOptions(
            folder=args.dir,
            drafter=args.drafter,
            target=args.target,
            device=args.device,
            out=args.out,
        )
    )
    for line in report.lines():
        sink.say(line)
    sink.emit_json(report.to_json())
    if not report.replayed_a_query:
        raise J0Error(f"{args.dir}: no query step could be replayed (see above)", INPUT_LACKS)
    return report.exit_code
