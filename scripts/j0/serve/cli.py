"""`j0 serve -- ARGS`: check the server's command line and switches, then start the server."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.commands import add_command, add_json_option, reads
from j0.serve import launch as serve_launch
from j0.terminal import sink

DESCRIPTION = """\
The server's entrypoint in compose.yaml. ARGS are `vllm serve`'s arguments, read as vLLM 0.33
reads them (vLLM's own parser where vLLM is installed and a GPU is visible, else j0's table of
its options, by its rules: underscores, unambiguous prefixes, --name=value, dotted sub-keys of
a JSON argument, the last value winning). Before anything starts it checks them against the
article's setup and says what will run:

  refuses  a --speculative-config that contradicts the article's
             {"method":"dflash","model":"DIR","num_speculative_tokens":N,"kv_cache_dtype":"auto"}
           (DIR the drafter, N a positive integer): another or no method, no drafter folder, a
           draft kv_cache_dtype other than "auto" (or none under a non-auto --kv-cache-dtype);
           a drafter whose config.json would leave a draft layer non-causal in vLLM 0.33 (run
           `j0 drafter patch-config DIR`); VLLM_DFLASH_CTX_NOISE other than 1 or 0,
           VLLM_DFLASH_DUMP_STEPS not a number; an empty --api-key ""; --config FILE; what
           vLLM would refuse (an ambiguous prefix, an unknown option);
  notes    another key order or spacing, and keys the article did not set (passed to vLLM);
           a VLLM_DFLASH_DUMP folder that holds an earlier run's files (the patch would
           write over them; --force keeps them in its subfolder previous-STAMP/);
  warns    for num_speculative_tokens other than 15 or 7 (the article's values), --max-num-seqs
           other than 4, a dump folder without steps and steps without a folder, and J0 on
           with prefix caching on (cached prompt positions take J0 tokens from another
           request's history);
  applies  ENABLE_PREFIX_CACHING (1 or 0; empty: vLLM's default, on) as
           --enable-prefix-caching / --no-enable-prefix-caching; the API key in
           --api-key-file as VLLM_API_KEY, the equivalent of vLLM's --api-key that stays out
           of `ps` (a key file that is not one line of text stops here, exit 2: the server
           never starts without the key it was given); an overlay bind-mounted at --overlay-mount
           (compose: J0_OVERLAY), by linking the installed speculator.py to it when the mount did
           not land on it already;

then execs --then ARGS (the image's entrypoint: it logs the running speculator.py's sha256 and
identity, then execs `vllm serve ARGS`).
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = add_command(
        subparsers,
        "serve",
        "check the server's arguments and J0 switches, then start vLLM (compose entrypoint)",
        DESCRIPTION,
    )
    parser.add_argument(
        "--then",
        metavar="PROGRAM",
        default=serve_launch.DEFAULT_THEN,
        help=f"what to exec with ARGS after the checks (default: {serve_launch.DEFAULT_THEN})",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="check and say what would run, then exit 0"
    )
    parser.add_argument(
        "--api-key-file",
        metavar="FILE",
        type=Path,
        default=None,
        help="API key for vLLM: one line of text, or /dev/null for none (default: "
        f"{serve_launch.DEFAULT_API_KEY_FILE}, compose's api_key secret, where it is mounted)",
    )
    parser.add_argument(
        "--overlay-mount",
        metavar="FILE",
        type=Path,
        default=serve_launch.DEFAULT_OVERLAY_MOUNT,
        help="where compose bind-mounts J0_OVERLAY "
        f"(default: {serve_launch.DEFAULT_OVERLAY_MOUNT})",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="a VLLM_DFLASH_DUMP folder that holds an earlier run's files: move them into its "
        "subfolder previous-STAMP/ (named in the output) instead of refusing",
    )
    add_json_option(
        parser,
        "what will run (target, arguments with any API key masked, switches, facts, warnings; "
        "the log lines stay on stderr)",
    )
    parser.add_argument("serve_args", nargs=argparse.REMAINDER, metavar="-- ARGS")
    reads(parser, "--api-key-file", "--overlay-mount")
    parser.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    """Check; log what will run on stderr (the server's log) and write --json; then exec vLLM,
    unless a dry run."""

    from j0.commands import check_json_output
    from j0.serve.run import ServeOptions, exec_server, run_serve

    serve_args = list(args.serve_args)
    if serve_args and serve_args[0] == "--":
        serve_args = serve_args[1:]
    check_json_output(args.json)  # before the checks, not after them
    planned = run_serve(
        ServeOptions(
            args=serve_args,
            then=args.then,
            dry_run=args.dry_run,
            api_key_file=args.api_key_file,
            overlay_mount=Path(args.overlay_mount),
            force=args.force,
        )
    )
    for line in planned.log_lines():
        sink.warn(line)
    sink.emit_json(planned.document().to_json())  # before vLLM starts
    if planned.dry_run:
        sink.warn("j0 serve: checks passed (--dry-run: not starting the server)")
        return 0
    exec_server(planned)
