"""`j0 status`: arguments only; the work is in run.py (options in, a StatusOutcome out)."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.commands import (
    add_command,
    add_json_option,
    check_json_output,
    finite_number,
    reads,
)
from j0.terminal import sink

STATUS_HELP = """\
Say whether a running server is the article's setup. From the server: /health, /v1/models (model,
max_model_len), /metrics (the spec-decode counters, present and moving after one short probe
request). From its log (`docker compose logs server` with --compose, or --log FILE): the
entrypoint's identity line (which speculator.py runs, and vLLM's version and commit), J0 on/off and
the history's shape (the patch's `DFLASH_CTX_NOISE=... pool=(...)` line), the draft KV cache
dtypes (`DFLASH_DRAFT_KV_DTYPES=...`) and the speculative config. Ends with one line: the article's
setup or not, and why. --json prints flat keys for a benchmark's manifest.
Exit 0: the article's setup (J0 on or off); 1: not, or the server does not answer.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    status = add_command(
        subparsers,
        "status",
        "is the running server the article's setup? (health, counters, its log)",
        STATUS_HELP,
    )
    status.add_argument(
        "--url",
        metavar="URL",
        help="the server (default: http://127.0.0.1:$PORT, PORT as compose has it, else 8000)",
    )
    source = status.add_mutually_exclusive_group()
    source.add_argument(
        "--compose",
        action="store_true",
        help="read the server's log with `docker compose logs server` (in the j0 checkout)",
    )
    source.add_argument("--log", type=Path, metavar="FILE", help="read the server's log from FILE")
    status.add_argument(
        "--api-key-file",
        type=Path,
        metavar="FILE",
        help="the server's API key (default: API_KEY_FILE as compose has it)",
    )
    status.add_argument(
        "--no-probe",
        action="store_true",
        help="send no request (the counters are then only checked for presence)",
    )
    status.add_argument(
        "--deadline",
        type=finite_number(0, above=True),
        default=120.0,
        metavar="S",
        help="seconds for the whole conversation with the server (default 120); what is not "
        "asked in time is reported as not asked",
    )
    add_json_option(status, "one flat object of the checks (for `j0 bench run --status-json`)")
    reads(status, "--log", "--api-key-file")
    status.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from j0.status.run import StatusOptions, run_status

    check_json_output(args.json)
    outcome = run_status(
        StatusOptions(
            url=args.url,
            log=args.log,
            compose=args.compose,
            api_key_file=args.api_key_file,
            probe=not args.no_probe,
            deadline_s=args.deadline,
        )
    )
    sink.result(outcome.text(), outcome.json_text())
    return outcome.exit_code
