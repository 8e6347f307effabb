"""`j0 bench matrix`: argument parsing only (the work: run.py's main)."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.bench.matrix import BACKENDS, DEFAULT_J0, DEFAULT_TOKENS
from j0.bench.run.cli import add_repeats_and_system_prompt
from j0.commands import (
    FOLDER,
    add_command,
    add_json_option,
    check_json_output,
    existing_file,
    file_after_at,
    reads,
    whole_number,
    writes,
)
from j0.terminal import sink


def register_matrix(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        commands,
        "matrix",
        "run every setting (draft tokens x J0 off/on) on a restarted server",
        "For each setting, restart the server with those switches (prefix caching off unless\n"
        "--prefix-caching), wait for health, run the same prompts with `j0 bench run`, and keep\n"
        "each run's JSON and server log under --out DIR.",
    )
    p.add_argument(
        "--tokens",
        default=DEFAULT_TOKENS,
        help=f"num_speculative_tokens values (default {DEFAULT_TOKENS})",
    )
    p.add_argument("--j0", default=DEFAULT_J0, help=f"J0 states (default {DEFAULT_J0})")
    p.add_argument("--dataset", default="synthetic", help="as for `j0 bench run`")
    p.add_argument("--requests", type=whole_number(1), metavar="N", help="as for `j0 bench run`")
    p.add_argument("--max-tokens", type=whole_number(1), metavar="M", help="as for `j0 bench run`")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="results folder")
    p.add_argument(
        "--prefix-caching",
        action="store_true",
        help="keep vLLM's prefix caching on (default: off, for J0's sake)",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="compose",
        help="where the server runs (default compose)",
    )
    p.add_argument("--namespace", help="k8s: the namespace")
    p.add_argument("--gpus", type=whole_number(1), help="k8s: GPUs to use")
    p.add_argument("--shards", type=whole_number(1), help="k8s: shards of the prompts per setting")
    p.add_argument(
        "--baseline",
        action="store_true",
        help="add a setting `baseline`: the same server without --speculative-config (no "
        "speculative decoding), for speedups and the lossless check in `j0 bench report`",
    )
    add_repeats_and_system_prompt(p, "matrix")
    p.add_argument("--dry-run", action="store_true", help="say what would run, run nothing")
    add_json_option(p, "matrix.json (each setting's status, results and server log)")
    reads(p, "--dataset", path_of=existing_file)
    reads(p, "--system-prompt", path_of=file_after_at)
    writes(p, "--out", FOLDER)
    p.set_defaults(func=_matrix)


def _matrix(args: argparse.Namespace) -> int:
    from j0.bench.matrix import run as matrix_run
    from j0.bench.matrix.layout import MATRIX_JSON
    from j0.errors import InputLimit, read_json_file

    check_json_output(args.json)
    options = matrix_run.MatrixOptions(
        out=args.out,
        tokens=args.tokens,
        j0=args.j0,
        prefix_caching=args.prefix_caching,
        baseline=args.baseline,
        dataset=args.dataset,
        requests=args.requests,
        max_tokens=args.max_tokens,
        repeats=args.repeats,
        system_prompt=args.system_prompt,
        backend=args.backend,
        namespace=args.namespace,
        gpus=args.gpus,
        shards=args.shards,
        dry_run=args.dry_run,
    )
    code = matrix_run.run_matrix(options).exit_code
    record = Path(args.out) / MATRIX_JSON
    if record.is_file():
        sink.emit_json(read_json_file(record, limit=InputLimit.ANY))
    return code
