"""`j0 bench report`: argument parsing only (the work: run.py's report)."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.commands import (
    FOLDER,
    add_command,
    add_json_option,
    check_json_output,
    finite_number,
    reads,
    whole_number,
    writes,
)
from j0.terminal import sink

REPORT_DESCRIPTION = """\
Read DIR/<setting>/result.json (and result-shard-NN.json files of sharded runs, merged per
setting by request) and write DIR/report.md (a table of acceptance length by both definitions,
rate, tok/s, TTFT and ITL per setting; the acceptance histogram; acceptance by context length,
re-binned from the stored steps; the spread over repeats; every setting against a `baseline`
setting: speedup paired by prompt and the first output token that differs; and J0 on minus off
with a 95 % interval over prompts, paired by prompt), and
PNG plots with a CSV beside each: acceptance length against context length, per-position
acceptance, and tok/s against the decode roofline (acceptance length x memory bandwidth /
weight bytes).
"""


def report_files() -> tuple[str, ...]:
    """What the report writes into its folder itself (j0.bench.report.run.outputs_of): a --json
    OUT may replace one of these, never a result the report reads."""
    from j0.bench.report.run import outputs_of

    return tuple(path.name for _, path in outputs_of(Path()))


def register_report(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        commands,
        "report",
        "tables and plots of a results folder",
        REPORT_DESCRIPTION,
    )
    p.add_argument("dir", type=Path, metavar="DIR", help="one folder per setting inside")
    p.add_argument(
        "--gpu",
        help="GPU name for the roofline's memory bandwidth "
        "(H200, H100 SXM, A100 80GB, RTX PRO 6000 Blackwell, ...)",
    )
    p.add_argument(
        "--bandwidth",
        type=finite_number(0, above=True),
        metavar="TB/S",
        help="memory bandwidth in TB/s (instead of --gpu)",
    )
    p.add_argument(
        "--weights-index",
        type=Path,
        metavar="FILE",
        help="the target's model.safetensors.index.json (metadata.total_size)",
    )
    p.add_argument(
        "--weight-bytes",
        type=finite_number(0, above=True),
        metavar="BYTES",
        help="the target's weight bytes (instead of --weights-index)",
    )
    bins = p.add_mutually_exclusive_group()
    bins.add_argument(
        "--bin-size",
        type=whole_number(1),
        default=512,
        metavar="TOKENS",
        help="context-length bins of this width, re-binned from the stored per-step data "
        "(default 512)",
    )
    bins.add_argument(
        "--bins",
        metavar="A,B,C",
        help="context-length bins [0,A), [A,B), [B,C), [C,...) instead of --bin-size",
    )
    p.add_argument("--out", type=Path, metavar="DIR2", help="write there (default: DIR)")
    p.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="pair J0 on/off runs whose manifests differ (model, engine, temperature, "
        "max_tokens, dataset, speculative config) anyway, with a warning in the report; without "
        "it such a pair is refused (exit 2)",
    )
    add_json_option(p, "report.json (the figures, per setting and pair)")
    reads(p, "dir", own=report_files)
    reads(p, "--weights-index")
    writes(p, "--out", FOLDER, may_be_in=("dir",))  # DIR by default
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from j0.bench.analysis.acceptance import parse_bins
    from j0.bench.report import ReportOptions, run_report, said

    check_json_output(args.json)
    done = run_report(
        ReportOptions(
            folder=args.dir,
            out=args.out,
            gpu=args.gpu,
            bandwidth_tbs=args.bandwidth,
            weights_index=args.weights_index,
            weight_bytes=args.weight_bytes,
            bin_size=args.bin_size,
            bins=parse_bins(args.bins) if args.bins else None,
            allow_mismatch=args.allow_mismatch,
        )
    )
    sink.result(said(done), done.report_json.read_text())
    return 0
