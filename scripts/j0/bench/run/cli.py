"""`j0 bench run`: argument parsing only (the work: run.py's run)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from j0.bench.run.options import ENDPOINTS
from j0.commands import (
    FILE,
    add_command,
    add_json_option,
    check_json_output,
    existing_file,
    file_after_at,
    finite_number,
    json_file,
    reads,
    whole_number,
    writes,
)
from j0.edge.atomic import refuse_own_inputs
from j0.engine.server.j0_state import ON_OFF
from j0.terminal import sink

if TYPE_CHECKING:
    from j0.bench.run.options import RunOptions

RUN_DESCRIPTION = """\
Send prompts to a running vLLM server with speculative decoding (one at a time by default,
streaming) and write FILE.json: per request the prompt, cached and output tokens, TTFT,
inter-token latency, output tok/s and the accepted count of every verify step with the context
length at that step; for the run `acceptance_length` (1 + accepted / drafts, pooled: vLLM's
definition), `acceptance_length_request_mean` (the mean of each request's mean: the DFlash
paper's),
`acceptance_histogram` (fraction of steps with i accepted), `acceptance_rate`
(accepted / draft tokens) and `per_position_acceptance` (drafts that accepted more than i tokens
/ drafts, one per draft position), pooled over the measured requests from the server's
per-request metrics and cross-checked against its /metrics counters read before and after them
(warm-up excluded); acceptance length by context length; and a manifest of the setup.

The server needs `--per-request-spec-decode-metrics detailed` (per-step figures) and
`--enable-prompt-tokens-details` (cached tokens), as compose.yaml passes them. Without the first,
the figures come from /metrics deltas alone.

Datasets: synthetic[:LEN,...] (built-in long-context reasoning prompts of LEN words; default
synthetic:1000,4000,8000, capped to fit max_model_len), FILE.jsonl ({"prompt": ...} per line),
math500, aime, gsm8k, speed-bench:CONFIG (nvidia/SPEED-Bench throughput_1k..32k) and
longbench-v2[:LEN,...] (THUDM/LongBench-v2 cut to LEN words), through `datasets`, cached;
--dataset-files FILE for a local copy.
Prompts go to /v1/chat/completions with Qwen3's thinking on (chat_template_kwargs
enable_thinking); --no-thinking turns it off, --endpoint completions sends plain text.

FILE.json is written atomically after every finished request: a run that stops for any reason
(the server dies, a signal, kill -9) leaves the finished requests there ("complete": false).
A request that fails (an HTTP error, an answer with a field of the wrong type, a body over its
cap, a redirect to another origin, past --request-deadline) is kept as failed, with the reason,
and the run goes on.

J0 on/off in the manifest comes from the file that ran: --log FILE (the server's log, whose
identity line names the running speculator.py by sha256 and whose patch line says
DFLASH_CTX_NOISE), else --status-json; "on" only for a J0 file that logged DFLASH_CTX_NOISE=1.
--j0 is what was asked: the label only where neither shows the file (kept as j0_asked; where the
file says otherwise, the manifest and a note say so).

Exit 0: done; 1: the server failed or died, or requests failed (the finished requests are kept
in FILE.json); 2: a dataset or status file lacks what is needed; 64: usage; 130 (SIGINT,
Ctrl-C) and 143 (SIGTERM): stopped, FILE.json written with the finished requests first.
"""


def register_run(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        commands,
        "run",
        "measure one server setting into FILE.json",
        RUN_DESCRIPTION,
    )
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8000")
    p.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="FILE.json",
        help="result file; an existing one is refused unless --force, and one of the run's "
        "own inputs (--dataset, --dataset-files, --status-json, --log, --system-prompt @FILE) "
        "always",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out (there is no resume: the run starts again)",
    )
    p.add_argument(
        "--requests",
        type=whole_number(1),
        metavar="N",
        help="measured requests (default: 10, or all prompts of a smaller dataset)",
    )
    p.add_argument(
        "--max-tokens",
        type=whole_number(1),
        default=4096,
        metavar="M",
        help="max_tokens per request (default 4096)",
    )
    p.add_argument(
        "--dataset",
        default="synthetic",
        metavar="NAME|FILE.jsonl",
        help="synthetic[:LEN,...], FILE.jsonl, math500, aime, gsm8k, speed-bench:CONFIG[@REV] "
        "or longbench-v2[:LEN,...][@REV] (default synthetic:1000,4000,8000)",
    )
    p.add_argument(
        "--dataset-files",
        type=Path,
        metavar="FILE",
        help="a local copy (parquet, json, csv) of a named dataset, loaded with "
        "`datasets` like the Hub's",
    )
    p.add_argument(
        "--concurrency",
        type=whole_number(1),
        default=1,
        metavar="C",
        help="requests in flight at once (default 1: single stream)",
    )
    p.add_argument(
        "--warmup",
        type=whole_number(0),
        default=0,
        metavar="K",
        help="short requests sent first and not measured (default 0, as vLLM's "
        "benchmark); their prompts share nothing with the measured ones",
    )
    p.add_argument("--label", help="a name for this run (kept in FILE.json)")
    p.add_argument("--model", help="model name to send (default: the first of /v1/models)")
    p.add_argument(
        "--no-thinking",
        dest="thinking",
        action="store_false",
        help="chat_template_kwargs enable_thinking=false (default: thinking on)",
    )
    p.add_argument(
        "--endpoint",
        choices=ENDPOINTS,
        default="chat",
        help="chat (default; the model's chat template) or completions (plain text)",
    )
    p.add_argument(
        "--temperature",
        type=finite_number(0, above=False),
        default=0.0,
        help="sampling temperature (default 0: greedy, so J0 on and off generate the same tokens)",
    )
    p.add_argument(
        "--seed",
        type=whole_number(0, 2**31 - 1),
        help="with --temperature above 0: each request's sampling seed, made from SEED and its "
        "prompt's id (the same prompt draws with the same seed in every run of this SEED); "
        "default none: vLLM's unseeded sampling",
    )
    p.add_argument(
        "--ignore-eos",
        action="store_true",
        help="generate max_tokens tokens whatever the model says",
    )
    p.add_argument(
        "--bin-size",
        type=whole_number(1),
        default=512,
        metavar="TOKENS",
        help="context-length bin of acceptance_by_context (default 512)",
    )
    p.add_argument(
        "--status-json",
        type=Path,
        metavar="FILE",
        help="`j0 status --json` output: J0 on/off, overlay identity, spec config",
    )
    p.add_argument(
        "--log",
        type=Path,
        metavar="FILE",
        help="the server's log: J0 on/off and the speculator.py's identity from the file that "
        "ran (its identity line and the patch's DFLASH_CTX_NOISE line), over --status-json",
    )
    p.add_argument(
        "--j0",
        choices=ON_OFF,
        help="J0's state as asked, where no --log or --status-json shows the file that ran "
        "(kept as j0_asked; where they show otherwise, theirs is recorded and said)",
    )
    p.add_argument(
        "--overlay-identity",
        metavar="TEXT",
        help="the running speculator.py's identity, where no --log or --status-json says",
    )
    p.add_argument(
        "--timeout",
        type=finite_number(0, above=True),
        default=3600.0,
        metavar="S",
        help="longest wait for the next bytes of an answer (default 3600 s); keep-alive "
        "comments reset it, so --request-deadline bounds the whole request",
    )
    p.add_argument(
        "--request-deadline",
        type=finite_number(0, above=True),
        metavar="S",
        help="longest time for one whole request, first byte to last: a request past it is "
        "recorded as failed and the run goes on (default: --timeout + 1 s per --max-tokens "
        "token, 7696 s with the defaults)",
    )
    add_repeats_and_system_prompt(p, "run")
    p.add_argument(
        "--keep-outputs",
        action="store_true",
        help="keep each output's text in FILE.json (`output_text`), so that figures of the "
        "outputs (the repetition measure) can be recomputed from the file",
    )
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    add_json_option(p, "FILE.json's document, the same bytes (its lines stay on stderr)")
    reads(p, "--dataset", path_of=existing_file)
    reads(p, "--system-prompt", path_of=file_after_at)
    reads(p, "--dataset-files", "--status-json", "--log")
    writes(p, "--out", FILE)  # an existing one only with --force
    p.set_defaults(func=_run)


def add_repeats_and_system_prompt(p: argparse.ArgumentParser, command: str) -> None:
    restart = (
        "the server is not restarted between repeats"
        if command == "run"
        else "each setting's server is started once and runs all repeats"
    )
    p.add_argument(
        "--repeats",
        type=whole_number(1),
        default=1,
        metavar="N",
        help=f"send the prompts N times, in the same order each time ({restart}); the report "
        "gives the mean and spread over repeats (default 1)",
    )
    p.add_argument(
        "--system-prompt",
        metavar="TEXT|@FILE",
        help="a system message before each prompt (chat; with completions, the text and a blank "
        "line before the prompt); @FILE reads it from FILE; kept in the manifest",
    )


def _check_json_out(json_to: str | None, options: RunOptions) -> None:
    """--json OUT: a file to write, and neither --out nor one of the run's inputs (exit 64)."""
    check_json_output(json_to)
    out = json_file(json_to)
    if out is not None:
        refuse_own_inputs([("--json", out)], [("--out", options.out), *options.inputs()])


def _run(args: argparse.Namespace) -> int:
    from j0.bench.run import RunOptions, run_bench
    from j0.bench.run.options import system_prompt_of

    system_prompt, system_prompt_file = system_prompt_of(args.system_prompt)
    options = RunOptions(
        url=args.url,
        out=args.out,
        requests=args.requests,
        max_tokens=args.max_tokens,
        dataset=args.dataset,
        dataset_files=args.dataset_files,
        concurrency=args.concurrency,
        warmup=args.warmup,
        label=args.label,
        model=args.model,
        thinking=args.thinking,
        endpoint=args.endpoint,
        temperature=args.temperature,
        seed=args.seed,
        ignore_eos=args.ignore_eos,
        bin_size=args.bin_size,
        status_json=args.status_json,
        log=args.log,
        j0=None if args.j0 is None else args.j0 == "on",
        overlay_identity=args.overlay_identity,
        timeout_s=args.timeout,
        request_deadline_s=args.request_deadline,
        force=args.force,
        progress=args.progress,
        repeats=args.repeats,
        system_prompt=system_prompt,
        system_prompt_file=system_prompt_file,
        keep_outputs=args.keep_outputs,
    )
    _check_json_out(args.json, options)
    outcome = run_bench(options)
    sink.result("", outcome.out.read_text(encoding="utf-8").rstrip("\n"))  # done or not
    problem = outcome.failure()
    if problem is not None:
        raise problem
    return 0
