"""`j0 engine-check`: arguments only; the work is in j0.engine_check.run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from j0.commands import add_command
from j0.errors import USAGE, J0Error

HELP = """\
Prove J0 inside vLLM's real engine on this machine's GPU in a few minutes, before loading 27B
weights. Makes tiny random models (no downloads: a Qwen3 target, a DFlash draft of the `dflash`
package made causal by `j0 drafter patch-config`, a word-level tokenizer), serves them J0 on with
step dumps and then J0 off, sends 3 prompts (40, 200, 700 words; greedy; plain and streamed), and
checks:
  identity       the log's identity line names the article's speculator.py (sha256)
  patch lines    DFLASH_CTX_NOISE=1 pool=(4, 2048) with J0 on (=0 pool=(1, 1) off) and
                 DFLASH_DRAFT_KV_DTYPES=[...]
  outputs        greedy token ids identical J0 on and off (speculative decoding is lossless)
  dumps          `j0 dumps check` passes on both dump sets (CUDA-graph warm-up recognised)
  metrics        per-request spec-decode metrics, summed, equal the /metrics counter deltas
  status         `j0 status` finds J0 on and the article's file (the tiny models and a vLLM
                 release's commit are not the article's: said, not failed)
--image IMAGE (default: the project's image) runs the server in a container with every GPU;
--here runs the vLLM installed for this Python (e.g. inside the image). Random weights accept
nothing: this shows the plumbing, not acceptance. Needs torch, transformers, tokenizers and
dflash (`pip install -e '.[engine-check]'`; `dflash` with --no-deps).
Exit 0: every check passed; 1: one failed (the verdict line names it).
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = add_command(
        subparsers,
        "engine-check",
        "prove J0 in vLLM's real engine on this GPU with tiny random models (minutes)",
        HELP,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--image", help="serve in a container of IMAGE (default: the pinned tag)")
    where.add_argument("--here", action="store_true", help="serve with this Python's vLLM")
    parser.add_argument("--tokens", type=int, default=7, help="draft tokens (default 7)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--graphs", dest="graphs", action="store_true", help="torch.compile + CUDA graphs"
    )
    mode.add_argument(
        "--eager", dest="graphs", action="store_false", help="--enforce-eager (default)"
    )
    parser.set_defaults(graphs=False)
    parser.add_argument(
        "--max-tokens", type=int, default=64, help="tokens per request (default 64)"
    )
    parser.add_argument(
        "--dump-steps", type=int, default=200, help="VLLM_DFLASH_DUMP_STEPS (default 200)"
    )
    parser.add_argument("--port", type=int, default=8765, help="the server's port (default 8765)")
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds to wait for /health (default 600)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep models, dumps, server logs, responses and the report in DIR",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the report as JSON")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the server (repeatable)",
    )
    parser.add_argument(
        "--models",
        type=Path,
        metavar="DIR",
        help="use DIR/target and DIR/draft instead of making the tiny models",
    )
    parser.add_argument(
        "--server-command",
        metavar="CMD",
        help="with --here: run CMD ARGS instead of `python -m vllm... serve ARGS`",
    )
    parser.add_argument(
        "--no-gpu",
        dest="gpus",
        action="store_false",
        help="with --image: no GPU for the container (only for a stand-in in the place of vLLM)",
    )
    parser.add_argument(
        "--container-mount",
        action="append",
        default=[],
        metavar="SRC:DST",
        help="with --image: also mount SRC at DST, read-only (repeatable)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from j0.engine_check.run import Options, engine_check

    if args.tokens < 1:
        raise J0Error(f"--tokens {args.tokens}: expected a number of draft tokens >= 1", USAGE)
    extra_env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise J0Error(f"--env {item!r}: expected KEY=VALUE", USAGE)
        extra_env[key] = value
    mounts = {}
    for item in args.container_mount:
        source, sep, target = item.partition(":")
        if not sep or not source or not target.startswith("/"):
            raise J0Error(f"--container-mount {item!r}: expected SRC:/ABSOLUTE/DST", USAGE)
        mounts[str(Path(source).resolve())] = target
    image = args.image
    if not args.here and image is None:
        from j0.image.build import default_tag
        from j0.pins import load_pins

        image = default_tag(load_pins())
    options = Options(
        here=args.here,
        image=image,
        tokens=args.tokens,
        graphs=args.graphs,
        max_tokens=args.max_tokens,
        dump_steps=args.dump_steps,
        port=args.port,
        startup_timeout=args.startup_timeout,
        keep=args.keep,
        extra_env=extra_env,
        server_command=args.server_command.split() if args.server_command else None,
        models=args.models,
        gpus=args.gpus,
        container_mounts=mounts,
    )
    report = engine_check(options)
    for check in report["checks"]:
        print(f"  {'ok  ' if check['ok'] else 'FAIL'} {check['name']}: {check['detail']}")
    if args.json:
        from j0.atomic import write_text_atomic

        write_text_atomic(args.json, json.dumps(report, indent=2) + "\n")
    failed = [c["name"] for c in report["checks"] if not c["ok"]]
    stream = sys.stdout if not failed else sys.stderr
    if failed:
        print(f"==> engine check FAILED ({report['seconds']} s): {', '.join(failed)}", file=stream)
        return 1
    print(
        f"==> engine check PASSED ({report['seconds']} s): "
        "J0 runs in vLLM's engine as the article says"
    )
    return 0
