"""`j0 mini train|run`: arguments only; the work is in j0.mini.train.run and j0.mini.run.run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from j0.article.variants import VARIANTS
from j0.commands import (
    DEVICES,
    FOLDER,
    MAX_PORT,
    MAX_SEED,
    WholeNumbers,
    add_command,
    add_json_option,
    check_json_output,
    finite_number,
    reads,
    whole_number,
    writes,
)
from j0.edge.processes import owning
from j0.errors import INPUT_LACKS, USAGE, J0Error
from j0.mini.run.run import MiniRunOptions
from j0.mini.train.batch import DRAFT_DATA, LABELS
from j0.mini.train.temperature import MAX_TEMPERATURE
from j0.terminal import sink

if TYPE_CHECKING:
    from j0.mini.run.run import MiniRunResult

TRAIN_HELP = """\
Train the miniature into OUT (a new folder): a byte-level BPE tokenizer (vocab 4096) and a Qwen3
target (6 layers, hidden 512, windows of 4608 tokens: every context `j0 mini run` asks about by
default, with its output) on this machine's Python source (the standard library and
site-packages, listed with sha256 in OUT/corpus.json; one file in 50 held out by a hash of its
path; its held-out loss by position in the window and its throughput, tokens/s and MFU, go to
mini.json), then two DFlash drafters of the `dflash` package on the target's taps (layers 1 and 4;
2 layers, block 16, causal, sequences of 512): `drafter-mask` with vLLM's mask initialisation of
the query slots, `drafter-j0` with J0's (slot k > 0 a committed token drawn from 0..anchor).
Each model is a folder vLLM serves (the drafters pass `j0 drafter check`); OUT/logs/ has the
training logs and the drafters' per-slot accuracy on held-out text; OUT/mini.json what was made.
The drafters learn as DFlash trains them: on the target's own continuations of its training text
(--rows, default 49152 rows of 512 tokens, held-out rows' loss logged as a curve), labels the
target's greedy prediction, slot losses weighted exp(-(k-1)/7). The target samples at the lowest
temperature at which its continuations are not loops (--temperature auto: a small target loops
greedily); `j0 mini run` then samples at it, each request with its own seed.
--smoke: tiny sizes, seconds per model (CI, CPU). Needs `pip install -e '.[mini]'` (dflash with
--no-deps). A log gets plain progress lines (a bar only on a terminal). Stopped before the end
(Ctrl-C: 130, SIGTERM: 143, an error), it removes what it made in OUT, so the same command runs
again. Exit 0: trained; 64: bad arguments, or OUT not new or empty (the message says what it
holds and what to do); 69: --device cuda without one.
"""

RUN_HELP = """\
Serve the miniature of OUT (from `j0 mini train`) in vLLM's real engine, prefix caching off: a
baseline without speculative decoding, vLLM's n-gram speculator, and each drafter (mask/J0) with
J0 off and on (each --j0-seeds seed), for each --tokens; every setting measured with `j0 bench
run` on the same prompts (--requests per --contexts length, each from a file no model was
trained on, none a prefix of another; --slots requests in flight, spread over the request
slots). Then `j0 bench report` per drafter, `j0 dumps check` on every J0-on dump set (with its
seed), the teacher-forced cross-check on each J0-off setting, the repetition gate on every
setting's outputs, and the comparisons by name with intervals and verdicts (j0.measure.stats): the
article's (J0-trained drafter, J0 on vs off), the systems' (J0-trained with J0 on vs
mask-trained with J0 off), the negative control (mask drafter, J0 on vs off), J0's seeds, the
n-gram speculator, the speedups. --here serves with this Python's vLLM. Writes OUT/run/
(prompts, results with the outputs, report.md, plots, server logs, mini-run.json/.md).
First, before anything is made or started, it checks what `j0 engine-check` checks: an NVIDIA
GPU, vLLM and what its server imports (uvicorn, fastapi, ...), and that the speculator.py this
Python's vLLM imports is the article's file (--variant prefix-safe: its prefix-safe variant), by
sha256; on another file the J0-on settings would be J0 off. Each drafter setting is labelled J0
on or off by what its server's log shows ran (identity line, DFLASH_CTX_NOISE line), not by what
was asked (the baseline and the n-gram speculator have no J0). An OUT/run/ an earlier run left
unfinished or failed is moved aside (OUT/run.failed-N), not overwritten; one that passed is
refused (--resume adds the settings it lacks instead).
Exit 0: every setting ran and every check passed; 1: one did not (named, the repetition gate and
a setting that did not run J0 as asked among them); 2: a check could not run, or OUT is missing
or not made by `j0 mini train`; 64: bad arguments, OUT/run/ holding a run that passed; 69: no
GPU, a package missing, or the speculator.py not the one asked (one line; nothing was made or
started).
"""


SPEED_HELP = """\
Measure the speed of a `j0 mini run` folder's settings cleanly: the baseline, the n-gram
speculator and the run's best DFlash setting (highest pooled acceptance length at --tokens), each
with CUDA graphs (--eager: without), started together and then sent requests ONE server at a
time (--slots in flight, 1 by default), the settings interleaved over --repeats rounds, on the
run's first --prompts prompts, sampled as the run samples. Speed: total output tokens over total
request time, and ms per engine step; the speedup: the ratio of those totals (each round's beside
it). The GPU is named. Writes RUN/speed/ (each round's result), RUN/speed.json and RUN/speed.md.
Exit 0: measured; 1: requests failed; 64: no run there, or RUN/speed/ exists; 69: no GPU or vLLM.
"""

SETS_HELP = """\
Combine several trained model sets (each a folder with its `j0 mini train` mini.json and its `j0
mini run` mini-run.json, e.g. a committed results folder): per comparison of the runs (article,
systems, control, ngram), per draft-token count, overall and per context, each set's effect and
interval, and the replications (the sets of --recipe-of's recipe: same sizes, budgets, rows,
labels; any seed) combined by random effects (DerSimonian-Laird, Hartung-Knapp interval). A
comparison is resolved only where at least 3 replications have it, the combined interval excludes
0, no replication resolves the opposite sign and they served the same prompts (the sha256 of the
prompts.jsonl served: mini-run.json's prompts_sha256, else a prompts.jsonl or run.tar.xz in the
set's folder; unknown prompts keep it open); otherwise "not resolved" and what would resolve it.
Sets of other recipes are shown beside, labelled, never combined.
Exit 0: reported; 2: a folder is not a set (missing, or without mini.json or mini-run.json), or
a set's files are not what the commands write (an unreadable prompts.jsonl or run.tar.xz too).
"""

NUMBERS_HELP = """\
The tables of a results README written from the data stored beside it: each block
`<!-- numbers: KIND PATH... -->` ... `<!-- /numbers -->` (KIND: training, engine, comparisons,
gate, checks, positions, throughput, ceiling, speed, sets; PATH relative to the README) is made
again from PATH's mini.json, result files, mini-run.json, speed.json or model sets. Without
--write it checks: exit 0 when every block agrees with the data, 1 when one does not (the
difference printed); --write writes them. Exit 2: a block's data is missing (a file, or a key
that data made before issue 54 lacks).
"""


def _curves(args: argparse.Namespace) -> int:
    from j0.errors import require
    from j0.mini.train.curves import plot_curves

    if not args.out.is_dir():
        what = "a file" if args.out.exists() else "no such folder"
        raise J0Error(f"{args.out}: {what}; expected a folder made by `j0 mini train`", INPUT_LACKS)
    check_json_output(args.json)
    require("matplotlib", "j0 mini curves", extra="mini")
    plot = plot_curves(args.out / "logs")
    sink.result(f"wrote {plot}", json.dumps({"plot": str(plot)}, indent=2))
    return 0


def _sets(args: argparse.Namespace) -> int:
    from j0.edge.atomic import write_text_atomic
    from j0.mini import sets as sets_mod

    check_json_output(args.json)
    if args.write is not None and args.write.exists() and not args.write.is_dir():
        raise J0Error(f"{args.write}: a file; expected a folder for sets.json and sets.md", USAGE)
    doc = sets_mod.report([sets_mod.read_set(f) for f in args.folders], args.recipe_of)
    text = sets_mod.markdown(doc)
    if args.write is not None:
        args.write.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.write / "sets.json", json.dumps(doc, indent=1) + "\n")
        write_text_atomic(args.write / "sets.md", text)
    sink.result(text, json.dumps(doc, indent=2))
    return 0


def _speed(args: argparse.Namespace) -> int:
    import shlex

    from j0.mini.run.speed import SpeedOptions, run_speed

    check_json_output(args.json)
    result = run_speed(
        SpeedOptions(
            out=args.out,
            run_dir=args.run_dir,
            tokens=args.tokens,
            prompts=args.prompts,
            repeats=args.repeats,
            slots=args.slots,
            max_tokens=args.max_tokens,
            graphs=args.graphs,
            port=args.port,
            startup_timeout=args.startup_timeout,
            settings=tuple(x.strip() for x in args.settings.split(",") if x.strip())
            if args.settings
            else None,
            server_command=shlex.split(args.server_command) if args.server_command else None,
        )
    )
    from j0.mini.run.speed import markdown

    sink.result(markdown(result.doc), json.dumps(result.doc.to_json(), indent=2))
    return result.exit_code


def _numbers(args: argparse.Namespace) -> int:
    from j0.mini.numbers import check_numbers

    check_json_output(args.json)
    outcome = check_numbers(args.readme, write=args.write)
    sink.result(outcome.text, json.dumps(outcome.to_json(), indent=2))
    return outcome.exit_code


def file_and_its_folder(value: object) -> list[Path]:
    """A results README and the folder it lies in, whose data `j0 mini numbers` reads."""
    path = Path(str(value))
    return [path, path.parent]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = add_command(subparsers, "mini", "the miniature: trained models, real acceptance", "")
    sub = parser.add_subparsers(dest="mini_command", metavar="SUBCOMMAND")
    sub.required = True
    _register_train(sub)
    _register_run(sub)
    _register_others(sub)


def _register_train(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    train = add_command(sub, "train", "train the tokenizer, target and drafters", TRAIN_HELP)
    train.add_argument("out", type=Path, metavar="OUT")
    train.add_argument(
        "--budget",
        type=finite_number(0, above=True),
        help="seconds per drafter (default 100; smoke 4); alone, also the target's and the "
        "generated rows' (as before)",
    )
    train.add_argument(
        "--target-budget",
        type=finite_number(0, above=True),
        help="seconds of the target's training (default 180; smoke 4)",
    )
    train.add_argument(
        "--gen-budget",
        type=finite_number(0, above=True),
        help="at most this many seconds for the generated rows (default 80; smoke 4)",
    )
    train.add_argument(
        "--corpus-mb",
        type=finite_number(0, above=True),
        help="MB of training text (default 100; smoke 0.12)",
    )
    train.add_argument(
        "--no-compile",
        dest="compile",
        action="store_false",
        help="train the target uncompiled (default: torch.compile on CUDA, eager where the "
        "first compiled step fails)",
    )
    train.add_argument("--smoke", action="store_true", help="tiny sizes, for CI on a CPU")
    train.add_argument(
        "--seed", type=whole_number(0, MAX_SEED), default=0, help="the seed (default 0)"
    )
    train.add_argument("--device", default="auto", choices=DEVICES)
    train.add_argument(
        "--labels",
        default="target",
        choices=LABELS,
        help="the drafters' labels: the target's greedy prediction (default: on the H200 it "
        "raised the J0 drafter's agreement with the target from 0.30 to 0.46, "
        "docs/results/mini-h200/), or the text",
    )
    train.add_argument(
        "--gamma",
        type=finite_number(0, above=False),
        default=7.0,
        help="slot loss weights exp(-(k-1)/GAMMA) (default 7, DFlash's for blocks of 16; "
        "0: equal weights)",
    )
    train.add_argument(
        "--temperature",
        type=temperature_choice,
        default=None,
        metavar="auto|T",
        help="the temperature the drafters' rows are sampled at and `j0 mini run` samples at "
        "(default auto: the lowest of 0, 0.5, ..., 1.0 at which 95 %% of the target's "
        "continuations of its training text are no loop; 0: greedy)",
    )
    train.add_argument(
        "--rows",
        type=whole_number(1),
        help="--draft-data generated: rows of the target's own text (default 49152; smoke 16)",
    )
    train.add_argument(
        "--anchors", type=whole_number(1), help="anchors per drafter sequence (default 48)"
    )
    train.add_argument("--draft-layers", type=whole_number(1), help="drafter layers (default 2)")
    train.add_argument(
        "--draft-lr", type=finite_number(0, above=True), help="drafter peak learning rate (1e-3)"
    )
    train.add_argument(
        "--draft-data",
        default="generated",
        choices=DRAFT_DATA,
        help="the drafters' windows: the target's own continuations of the text at the "
        "temperature (default, as DFlash trains), or the text itself",
    )
    train.add_argument("--no-progress", dest="progress", action="store_false")
    add_json_option(train, "the folder, its models and mini.json's manifest")
    writes(train, "out", FOLDER)
    train.set_defaults(func=owning(_train))  # SIGTERM as SystemExit: its clean-up runs


def _register_run(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = add_command(sub, "run", "the 2 x 2 matrix in vLLM's real engine", RUN_HELP)
    run.add_argument("out", type=Path, metavar="OUT")
    run.add_argument("--here", action="store_true", help="serve with this Python's vLLM")
    run.add_argument(
        "--variant",
        default="article",
        choices=VARIANTS,
        help="the speculator.py J0 must run from: article (default: the article's file) or "
        "prefix-safe (its prefix-safe variant)",
    )
    defaults = MiniRunOptions  # one place for the defaults: the options' own
    run.add_argument(
        "--tokens",
        type=WholeNumbers(1),
        default=list(defaults.tokens),
        help=f"draft tokens (default {','.join(map(str, defaults.tokens))})",
    )
    run.add_argument(
        "--contexts",
        type=WholeNumbers(1),
        help="prompt lengths in tokens (default 0.5, 1, 2, 4 and 8 times the drafters' training "
        "length: 256,512,1024,2048,4096)",
    )
    run.add_argument(
        "--requests",
        type=whole_number(1),
        default=defaults.requests,
        help=f"prompts per context (default {defaults.requests})",
    )
    run.add_argument(
        "--long-requests",
        type=whole_number(1),
        help="prompts at the longest context (default: --requests); the statistics cluster "
        "prompts that share a file",
    )
    run.add_argument(
        "--beyond-training",
        action="store_true",
        help="serve contexts whose prompt + output pass the target's training window "
        "(mini.json's sizes.target_seq), labelled as such (default: refused, exit 64)",
    )
    run.add_argument(
        "--slots",
        type=whole_number(1),
        default=defaults.slots,
        help=f"request slots (max-num-seqs) and requests in flight (default {defaults.slots})",
    )
    run.add_argument(
        "--j0-seeds",
        type=WholeNumbers(0, MAX_SEED),
        help="J0's seeds (default: the pinned 20261031 and 20261032); each one a J0-on setting",
    )
    run.add_argument(
        "--parts",
        default="baseline,ngram,mask,j0",
        help="which settings: some of baseline,ngram,mask,j0 (default all); mask-off, mask-on, "
        "j0-off, j0-on: a drafter's J0-off setting or its J0-on ones apart",
    )
    run.add_argument(
        "--ngram-max",
        type=whole_number(1),
        default=4,
        help="the n-gram speculator's prompt_lookup_max (4)",
    )
    run.add_argument(
        "--reuse-files",
        action="store_true",
        help="where too few files are long enough, cut more prompts from files already used "
        "(at offsets that do not overlap; the statistics cluster them by file)",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="the run folder may exist: add the settings it lacks, then make the reports again",
    )
    run.add_argument(
        "--crosscheck-requests",
        type=whole_number(0),
        default=12,
        help="prompts of the teacher-forced cross-check per J0-off setting (default 12)",
    )
    run.add_argument(
        "--max-tokens", type=whole_number(1), default=256, help="tokens per request (256)"
    )
    run.add_argument(
        "--port",
        type=whole_number(1, MAX_PORT - 64),
        default=8765,
        help="the first server's port (8765; with --servers N, N ports from it)",
    )
    run.add_argument(
        "--servers",
        type=whole_number(1, 64),
        default=1,
        help="settings served at once on the one GPU, each with a share of its memory "
        "(default 1: one after the other). They share the GPU and the CPU, so speedups then "
        "compare settings measured side by side, not one server alone; acceptance does not "
        "depend on it",
    )
    run.add_argument(
        "--sample-seed",
        type=whole_number(0, MAX_SEED),
        default=0,
        help="where the miniature samples (mini.json's temperature above 0): each request's "
        "seed comes from it and the prompt's id, the same in every setting (default 0)",
    )
    run.add_argument(
        "--startup-timeout", type=finite_number(0, above=True), default=600.0, metavar="S"
    )
    run.add_argument("--graphs", action="store_true", help="CUDA graphs (default: eager)")
    run.add_argument("--no-crosscheck", dest="crosscheck", action="store_false")
    run.add_argument(
        "--device",
        default="auto",
        choices=DEVICES,
        help="where the cross-check's reference runs",
    )
    run.add_argument(
        "--run-dir",
        type=Path,
        metavar="DIR",
        help="where the run goes (default OUT/run; new)",
    )
    run.add_argument("--server-command", help=argparse.SUPPRESS)
    add_json_option(run, "the verdict, its reasons and mini-run.json's summary")
    reads(run, "out")
    writes(run, "--run-dir", FOLDER, may_be_in=("out",))  # OUT/run by default
    run.set_defaults(func=owning(_run))  # the servers it starts stop with it


def _register_others(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    speed = add_command(sub, "speed", "clean speeds of the run's best settings", SPEED_HELP)
    speed.add_argument("out", type=Path, metavar="OUT")
    speed.add_argument("--run-dir", type=Path, metavar="DIR", help="the run (default OUT/run)")
    speed.add_argument("--tokens", type=whole_number(1), default=7, help="draft tokens (7)")
    speed.add_argument(
        "--prompts", type=whole_number(1), default=24, help="the run's first N prompts (24)"
    )
    speed.add_argument("--repeats", type=whole_number(1), default=3, help="rounds (3)")
    speed.add_argument(
        "--slots", type=whole_number(1), default=1, help="requests in flight (1: one by one)"
    )
    speed.add_argument(
        "--max-tokens", type=whole_number(1), default=256, help="tokens per request (256)"
    )
    speed.add_argument("--eager", dest="graphs", action="store_false", help="no CUDA graphs")
    speed.add_argument(
        "--settings",
        help="settings by the run's names, comma-separated (default: baseline, ngram/kK and "
        "the run's DFlash setting with the highest pooled acceptance length at K)",
    )
    speed.add_argument(
        "--port", type=whole_number(1, MAX_PORT - 64), default=8865, help="first port (8865)"
    )
    speed.add_argument(
        "--startup-timeout", type=finite_number(0, above=True), default=600.0, metavar="S"
    )
    speed.add_argument("--server-command", help=argparse.SUPPRESS)
    add_json_option(speed, "speed.json's document")
    reads(speed, "out", "--run-dir")  # speed/ goes into the run: its own folder
    speed.set_defaults(func=owning(_speed))

    sets = add_command(sub, "sets", "verdicts across independently trained model sets", SETS_HELP)
    sets.add_argument("folders", type=Path, nargs="+", metavar="SET")
    sets.add_argument(
        "--recipe-of",
        metavar="LABEL",
        help="the set (folder name) whose recipe the replications share (default: the first)",
    )
    sets.add_argument(
        "--write", type=Path, metavar="DIR", help="write DIR/sets.json and DIR/sets.md too"
    )
    add_json_option(sets, "the report: every set, every comparison row, the verdicts")
    reads(sets, "folders")
    writes(sets, "--write", FOLDER)
    sets.set_defaults(func=_sets)

    numbers = add_command(sub, "numbers", "a results README's tables, from its data", NUMBERS_HELP)
    numbers.add_argument("readme", type=Path, metavar="README")
    numbers.add_argument(
        "--write", action="store_true", help="write the tables into README (default: check)"
    )
    add_json_option(numbers, "whether the tables agree with the data, and the difference")
    reads(numbers, "readme", path_of=file_and_its_folder)  # the data lies beside it
    numbers.set_defaults(func=_numbers)
    curves = add_command(
        sub,
        "curves",
        "plot OUT/logs/curves.png from j0 mini train's logs",
        "Plot the training curves of a `j0 mini train` folder from its logs (OUT/logs/*.jsonl:\n"
        "the target's loss, each drafter's training loss and its held-out rows' loss) into\n"
        "OUT/logs/curves.png; `j0 mini train` makes it too. Exit 0: written; 2: no logs there.\n"
        "Example: j0 mini curves /tmp/mini",
    )
    curves.add_argument("out", type=Path, metavar="OUT", help="a `j0 mini train` folder")
    add_json_option(curves, "the plot's path")
    reads(curves, "out")
    curves.set_defaults(func=_curves)


def _train(args: argparse.Namespace) -> int:
    from j0.mini.train.run import TrainOptions, run_train

    check_json_output(args.json)
    result = run_train(
        TrainOptions(
            out=args.out,
            budget=args.budget,
            smoke=args.smoke,
            seed=args.seed,
            device=args.device,
            labels=args.labels,
            gamma=args.gamma,
            progress=args.progress,
            anchors=args.anchors,
            draft_layers=args.draft_layers,
            draft_lr=args.draft_lr,
            draft_data=args.draft_data,
            temperature=args.temperature,
            rows=args.rows,
            target_budget=args.target_budget,
            gen_budget=args.gen_budget,
            compile=args.compile,
            corpus_mb=args.corpus_mb,
        )
    )
    sink.emit_json(result.to_json())
    return 0


def temperature_choice(text: str) -> float | None:
    """--temperature: `auto` (None) or a finite number from 0 to MAX_TEMPERATURE."""
    if text.strip().lower() == "auto":
        return None
    return float(finite_number(0, above=False, maximum=MAX_TEMPERATURE)(text))


def _run(args: argparse.Namespace) -> int:
    if not args.here:
        raise J0Error("j0 mini run: only --here is implemented (this Python's vLLM)", USAGE)
    check_json_output(args.json)
    result = _run_mini_run(args)
    assert result.summary is not None  # run_mini_run returns a summarized run or raises
    text = (Path(result.summary.out) / "mini-run.md").read_text() + "\n" + result.verdict
    sink.result(text, json.dumps(result.to_json(), indent=2, default=str))
    return result.exit_code


def _run_mini_run(args: argparse.Namespace) -> MiniRunResult:
    import shlex

    from j0.mini.run.run import MiniRunOptions, run_mini_run

    return run_mini_run(
        MiniRunOptions(
            out=args.out,
            tokens=tuple(args.tokens),
            contexts=tuple(args.contexts) if args.contexts else None,
            requests=args.requests,
            max_tokens=args.max_tokens,
            port=args.port,
            startup_timeout=args.startup_timeout,
            graphs=args.graphs,
            crosscheck=args.crosscheck,
            device=args.device,
            server_command=shlex.split(args.server_command) if args.server_command else None,
            run_dir=args.run_dir,
            slots=args.slots,
            j0_seeds=tuple(args.j0_seeds) if args.j0_seeds else None,
            parts=tuple(p.strip() for p in args.parts.split(",") if p.strip()),
            ngram_max=args.ngram_max,
            reuse_files=args.reuse_files,
            resume=args.resume,
            crosscheck_requests=args.crosscheck_requests,
            variant=args.variant,
            servers=args.servers,
            sample_seed=args.sample_seed,
            beyond_training=args.beyond_training,
            long_requests=args.long_requests,
        )
    )
