"""`j0 engine-check`: arguments only; the work is in j0.engine_check.run."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.commands import (
    FOLDER,
    MAX_PORT,
    add_command,
    add_json_option,
    check_json_output,
    finite_number,
    reads,
    whole_number,
    writes,
)
from j0.edge.processes import owning
from j0.engine_check.scenarios.check import NAMES as SCENARIO_NAMES
from j0.engine_check.scenarios.check import ScenarioChoice
from j0.errors import INPUT_LACKS, USAGE, J0Error
from j0.terminal import sink

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
--image IMAGE runs the server in a container of IMAGE with every GPU, and makes the tiny models
in a container of it too: the host needs Docker (and `pip install -e '.[docker]'`), nothing else.
The default IMAGE is the one `docker compose up` builds: J0_IMAGE, read as compose reads it (the
environment, .env, then compose.serve.yaml's default j0/vllm-openai:compose). The image is never
pulled: when it is absent, the message says what builds it (`docker compose build`, `j0 image
build`). --here runs the vLLM installed for this Python (e.g. inside the image: `docker compose
run --rm --entrypoint j0 server engine-check --here`, or `make engine-check`); it needs torch,
transformers and tokenizers (vLLM's own), and uses dflash where installed
(`pip install -e '.[engine-check]'`). Random weights accept nothing: this shows the plumbing, not
acceptance.
--scenario NAME (repeatable; with --here) sends serving scenarios instead of the 3 prompts:
single (one stream), chunked (a 700-token prompt, --max-num-batched-tokens 256), prefix (A, A,
B, A with prefix caching), concurrency-4 (4 streams at once, the article's max-num-seqs; 80 KV
blocks so that the scheduler preempts), prefix-4 (A, A, B, A at once), all. J0 on serves the
audited article's file (overlay/jetspec-j0-audit.patch, VLLM_DFLASH_AUDIT) from a tree of links to
this Python's vLLM (never changed); J0 off the article's. One row per scenario: what it forced,
the audit's verdict on its records (rows, draws, mismatches), preemptions (vllm:num_preemptions),
outputs J0 on vs off (token for token in one stream; under concurrency a WARN: not comparable,
vLLM's batch-dependent numerics). A scenario fails when its audit is not PASS or its outputs
differ; the article's file with prefix caching fails at prefix hits (its known defect).
Exit 0: every check passed; 1: one failed (the verdict line names it); 69: no GPU here, no Docker
engine, the image absent, or a package missing (with --here: vLLM or what its server imports,
such as uvicorn; one line says which; nothing was checked).
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = add_command(
        subparsers,
        "engine-check",
        "prove J0 in vLLM's real engine on this GPU with tiny random models (minutes)",
        HELP,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--image", help="serve in a container of IMAGE (default: compose's J0_IMAGE, never pulled)"
    )
    where.add_argument("--here", action="store_true", help="serve with this Python's vLLM")
    parser.add_argument(
        "--tokens", type=whole_number(1), default=7, help="draft tokens (default 7)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--graphs", dest="graphs", action="store_true", help="torch.compile + CUDA graphs"
    )
    mode.add_argument(
        "--eager", dest="graphs", action="store_false", help="--enforce-eager (default)"
    )
    parser.set_defaults(graphs=False)
    parser.add_argument(
        "--max-tokens", type=whole_number(1), default=64, help="tokens per request (default 64)"
    )
    parser.add_argument(
        "--dump-steps",
        type=whole_number(0),
        default=200,
        help="VLLM_DFLASH_DUMP_STEPS (default 200)",
    )
    parser.add_argument(
        "--port",
        type=whole_number(1, MAX_PORT),
        default=8765,
        help="the server's port (default 8765)",
    )
    parser.add_argument(
        "--startup-timeout",
        type=finite_number(0, above=True),
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
    add_json_option(parser, "the report")
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
        help="no GPU needed or given to the container (only for a stand-in in the place of vLLM)",
    )
    parser.add_argument(
        "--container-mount",
        action="append",
        default=[],
        metavar="SRC:DST",
        help="with --image: also mount SRC at DST, read-only (repeatable)",
    )
    scenario = parser.add_argument_group(
        "serving scenarios (docs/engine-check.md#the-scenarios-in-j0-engine-check)"
    )
    scenario.add_argument(
        "--scenario",
        action="append",
        default=[],
        choices=(*SCENARIO_NAMES, "all"),
        help="send this serving scenario instead of the 3 prompts (repeatable; all: every one)",
    )
    scenario.add_argument(
        "--max-num-batched-tokens",
        type=whole_number(1),
        metavar="N",
        help="prefill chunk (default with chunked or concurrency-4: 256, under their prompts)",
    )
    scenario.add_argument(
        "--num-gpu-blocks-override",
        type=whole_number(1),
        metavar="N",
        help="KV cache blocks of 16 tokens (default with concurrency-4: 80, so it preempts)",
    )
    caching = scenario.add_mutually_exclusive_group()
    caching.add_argument(
        "--prefix-caching",
        dest="prefix_caching",
        action="store_true",
        default=None,
        help="serve with prefix caching (the default with prefix or prefix-4)",
    )
    caching.add_argument(
        "--no-prefix-caching", dest="prefix_caching", action="store_false", help="without it"
    )
    reads(parser, "--models")
    writes(parser, "--keep", FOLDER)
    parser.set_defaults(func=owning(run))  # the servers it starts stop with it


def scenario_settings(args: argparse.Namespace) -> ScenarioChoice | None:
    """The scenarios and their server settings; a setting without --scenario, or --scenario
    without --here, is a usage error before anything starts."""
    from j0.engine_check.scenarios.check import choose

    given = [
        flag
        for flag, value in (
            ("--max-num-batched-tokens", args.max_num_batched_tokens),
            ("--num-gpu-blocks-override", args.num_gpu_blocks_override),
            ("--prefix-caching/--no-prefix-caching", args.prefix_caching),
        )
        if value is not None
    ]
    if not args.scenario:
        if given:
            raise J0Error(f"{', '.join(given)}: expected with --scenario only", USAGE)
        return None
    if not args.here:
        raise J0Error(
            "--scenario: expected with --here (the audited file is served from a tree of links "
            "to this Python's vLLM); in the image: docker compose run --rm --no-deps "
            "--entrypoint j0 server engine-check --here --scenario all",
            USAGE,
        )
    return choose(
        args.scenario,
        args.max_num_batched_tokens,
        args.num_gpu_blocks_override,
        args.prefix_caching,
    )


def compose_image() -> tuple[str, str]:
    """J0_IMAGE as `docker compose up` resolves it, and where it came from."""
    from j0.compose.switches import resolve
    from j0.pins import load_pins

    settings = resolve(load_pins())
    image = settings.get("J0_IMAGE")
    if not image:
        raise J0Error("J0_IMAGE: no value and no default in compose.serve.yaml", USAGE)
    return image, f"J0_IMAGE from {settings.source('J0_IMAGE')}"


def check_paths(args: argparse.Namespace) -> None:
    """--models (a folder with target/ and draft/), --keep (a folder to write) and --json (a file
    to write), each refused in one line before anything is checked or started."""
    from j0.edge.atomic import check_output_folder
    from j0.errors import require_input_folder

    if args.models is not None:
        require_input_folder(args.models, "--models")
        lacking = [p for p in ("target", "draft") if not (args.models / p).is_dir()]
        if lacking:
            raise J0Error(
                f"--models {args.models}: no {' and no '.join(f'{p}/' for p in lacking)} inside "
                "(expected DIR/target and DIR/draft, as engine-check makes them)",
                INPUT_LACKS,
            )
    if args.keep is not None:
        check_output_folder(args.keep, "--keep")
    check_json_output(args.json)


def run(args: argparse.Namespace) -> int:
    from j0.engine_check.run import EngineCheckOptions, run_engine_check

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
    chosen = scenario_settings(args)
    check_paths(args)
    image, image_source = args.image, "--image"
    if not args.here and image is None:
        image, image_source = compose_image()
    options = EngineCheckOptions(
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
        image_source=image_source,
        scenarios=chosen,
    )
    report = run_engine_check(options)
    for check in report.checks:
        sink.say(f"  {report.word(check)} {check.name}: {check.detail}")
    for row in report.scenarios or ():
        sink.say(f"  scenario {row['scenario']} forces: {row['forces']}")
    sink.emit_json(report.to_json())
    failed = report.failed
    if failed:
        sink.warn(f"==> engine check FAILED ({report.seconds} s): {', '.join(failed)}")
        return 1
    what = (
        "the audit passed in every scenario"
        if report.scenarios
        else "J0 runs in vLLM's engine as the article says"
    )
    sink.say(f"==> engine check PASSED ({report.seconds} s): {what}")  # not under --json alone
    return 0
