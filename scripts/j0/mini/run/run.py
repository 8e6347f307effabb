"""`j0 mini run OUT`: the miniature in vLLM's real engine (this Python's, `--here`), on prompts
that can decide (j0.mini.run.prompts: per context bin `--requests` prompts, each from a file no
model was trained on, none a prefix of another; bins up to 8x the drafters' training length by
default), every setting one server start (prefix caching off), measured by `j0 bench run`'s
function with the requests spread over the request slots (`--slots` at a time, max-num-seqs the
same):

    baseline                  no speculative decoding (the speedups' reference)
    ngram/kK                  vLLM's n-gram speculator (prompt lookup), K draft tokens
    drafter-INIT/kK-j0-off    the drafter with vLLM's mask initialisation of the query slots
    drafter-INIT/kK-j0-on     J0 with the pinned seed; kK-j0-on-seedS: J0 with seed S
                              (j0.mini.run.seeds)

then `j0 bench report`'s function on each drafter's folder, `j0 dumps check` (with the setting's
seed) on each J0-on dump set, the teacher-forced cross-check on each J0-off setting (the first
--crosscheck-requests prompts), the repetition gate on every setting's outputs
(j0.measure.repetition), and the comparisons by name (j0.measure.stats), per draft-token count, over
all prompts and per context bin:

    article    the J0-trained drafter, J0 on (the mean over J0's seeds) against J0 off
    systems    the J0-trained drafter with J0 on against the mask-trained drafter with J0 off
    control    the mask-trained drafter, J0 on against off: the negative control (a drafter
               served with an initialisation it was not trained on)
    seeds      per drafter, J0 with one seed against another: J0's own randomness
    ngram      the J0-trained drafter with J0 on against the n-gram speculator
and every speculative setting's speedup over the baseline.

Everything goes to OUT/run/ (`--run-dir` another folder); `--resume` adds the settings a folder
lacks (a setting's folder is never written twice) and makes the reports and the summary again
over all of them, so a long run can be split into commands. OUT/run/mini-run.json holds the
summary; mini-run.md the tables, each saying whether its figures are pooled or request means.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from j0.edge.atomic import write_text_atomic
from j0.engine.server.identity_record import IdentityRecord
from j0.errors import CHECK_FAILED, INPUT_LACKS, OK, USAGE, J0Error
from j0.mini.manifest import TRAINED_KEYS, MiniManifest, read_manifest_file
from j0.mini.run.run_summary import RunSummary
from j0.mini.run.setting_record import BASELINE, NGRAM, SETTING_JSON, PointRecord
from j0.mini.train.run import DRAFTERS

CONTEXT_MULTIPLES = (0.5, 1, 2, 4, 8)  # of the drafters' training length: the default bins
PARTS = (BASELINE, NGRAM, *DRAFTERS)  # baseline, ngram, mask, j0
# a drafter's settings apart: its J0-off one, or its J0-on ones (every seed)
PARTS_APART = ("mask-off", "mask-on", "j0-off", "j0-on")


@dataclass(frozen=True)
class MiniRunOptions:
    out: Path
    tokens: tuple[int, ...] = (7, 15)
    contexts: tuple[int, ...] | None = None  # None: CONTEXT_MULTIPLES x the drafters' length
    requests: int = 48  # per context bin
    max_tokens: int = 256
    port: int = 8765
    startup_timeout: float = 600.0
    graphs: bool = False
    crosscheck: bool = True
    crosscheck_requests: int = 12
    device: str = "auto"  # the cross-check's reference
    dump_steps: int = 200
    server_command: list[str] | None = None  # in the place of `vllm serve` (tests)
    run_dir: Path | None = None  # where the run goes (None: OUT/run)
    slots: int = 4  # request slots (max-num-seqs) and requests in flight
    j0_seeds: tuple[int, ...] | None = None  # None: the pinned seed and the next one
    parts: tuple[str, ...] = PARTS
    ngram_max: int = 4  # prompt_lookup_max
    reuse_files: bool = False
    resume: bool = False
    variant: str = "article"  # the speculator.py J0 must run from: article or prefix-safe
    servers: int = 1  # settings served at once on the GPU, on ports port, port + 1, ...
    sample_seed: int = 0  # under sampling: each request's seed from it and its prompt's id
    beyond_training: bool = False  # serve contexts past the target's training window, labelled
    long_requests: int | None = None  # prompts at the longest context (None: --requests)


@dataclass
class MiniRunResult:
    summary: RunSummary | None = None  # mini-run.json, once the run is summarized
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return CHECK_FAILED if self.problems else (INPUT_LACKS if self.missing else OK)

    @property
    def verdict(self) -> str:
        if self.problems:
            return "==> FAIL: " + "; ".join(self.problems)
        if self.missing:
            return "==> INCOMPLETE: " + "; ".join(self.missing)
        return "==> PASS: every setting ran, every check passed"

    def to_json(self) -> dict[str, Any]:
        """`j0 mini run --json`: the verdict, its reasons, and mini-run.json's summary."""
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "problems": self.problems,
            "missing": self.missing,
            "summary": self.summary.to_json() if self.summary is not None else {},
        }


def contexts_of(manifest: MiniManifest, options: MiniRunOptions) -> tuple[int, ...]:
    if options.contexts:
        return tuple(options.contexts)
    draft_seq = manifest.draft_seq
    return tuple(max(1, int(m * draft_seq)) for m in CONTEXT_MULTIPLES)


def requests_by_context(contexts: tuple[int, ...], options: MiniRunOptions) -> dict[int, int]:
    """Prompts per context: --requests, and --long-requests at the longest (item 5 of issue 54:
    power where the drafters' context is longest)."""
    counts = dict.fromkeys(contexts, options.requests)
    if options.long_requests is not None:
        counts[max(contexts)] = options.long_requests
    return counts


def beyond_training(
    manifest: MiniManifest, contexts: tuple[int, ...], options: MiniRunOptions
) -> list[int]:
    """The contexts whose prompt plus output (--max-tokens) pass the target's training window
    (mini.json's sizes.target_seq): there every token the run measures past the window is one
    the target was never trained to write, so acceptance there mixes the drafter's decay with
    the target's. Refused unless --beyond-training (then labelled in mini-run.json and .md);
    a folder whose mini.json does not say its window counts as covering nothing."""
    window = manifest.sizes.get("target_seq")
    if not isinstance(window, int):
        return sorted(contexts)
    return sorted(c for c in contexts if c + options.max_tokens > window)


def refuse_beyond_training(
    manifest: MiniManifest, contexts: tuple[int, ...], options: MiniRunOptions, say: Any
) -> list[int]:
    """beyond_training's contexts; J0Error (exit 64) where there are any and the run was not
    told to label them (--beyond-training)."""
    beyond = beyond_training(manifest, contexts, options)
    if not beyond:
        return []
    window = manifest.sizes.get("target_seq")
    what = (
        f"the target was trained on windows of {window} tokens"
        if isinstance(window, int)
        else "mini.json does not say how long the target's training windows were"
    )
    text = (
        f"{manifest.where}: {what}; contexts {', '.join(map(str, beyond))} plus "
        f"{options.max_tokens} output tokens pass it"
    )
    if not options.beyond_training:
        raise J0Error(
            f"{text}: acceptance there would mix the drafters' decay with the target's own. "
            "Ask shorter --contexts or fewer --max-tokens, train a target on longer windows, "
            "or pass --beyond-training to serve them labelled as such",
            USAGE,
        )
    say(f"==> NOTE: {text}: served as asked (--beyond-training), labelled in mini-run.json")
    return beyond


def seeds_of(options: MiniRunOptions) -> tuple[int, ...]:
    if options.j0_seeds:
        return tuple(dict.fromkeys(options.j0_seeds))
    from j0.pins import load_pins

    pinned = load_pins().j0_seed
    return (pinned, pinned + 1)


def max_model_len(manifest: MiniManifest, options: MiniRunOptions, contexts: Any = None) -> int:
    """>= 4x the drafters' training length and the longest prompt, plus generation; in 256s."""
    draft_seq = manifest.draft_seq
    contexts = contexts or contexts_of(manifest, options)
    need = max(4 * draft_seq, max(contexts)) + options.max_tokens + max(options.tokens) + 1
    return -(-need // 256) * 256


def read_manifest(out: Path) -> MiniManifest:
    """OUT/mini.json, typed (j0.mini.manifest), and the three models' folders beside it."""
    manifest = read_manifest_file(out)
    for name in ("target", *(f"drafter-{d}" for d in DRAFTERS)):
        if not (out / name / "config.json").is_file():
            raise J0Error(
                f"{out / name}/config.json: missing; run `j0 mini train` again", INPUT_LACKS
            )
    return manifest


def setting_folder(k: int, j0: bool, seed: int, pinned: int) -> str:
    if not j0:
        return f"k{k}-j0-off"
    return f"k{k}-j0-on" if seed == pinned else f"k{k}-j0-on-seed{seed}"


def plans(options: MiniRunOptions, work: Path, length: int, pinned: int) -> list[Any]:
    """Every setting of the run, in the order they are served."""
    from j0.mini.run.setting import PointPlan

    out = []
    if "baseline" in options.parts:
        out.append(
            PointPlan(None, 0, False, length, work / BASELINE, kind=BASELINE, slots=options.slots)
        )
    for k in options.tokens:
        if "ngram" in options.parts:
            out.append(
                PointPlan(
                    None,
                    k,
                    False,
                    length,
                    work / NGRAM / f"k{k}",
                    kind=NGRAM,
                    speculative_extra={"prompt_lookup_max": options.ngram_max},
                    slots=options.slots,
                )
            )
        for drafter in DRAFTERS:
            off = drafter in options.parts or f"{drafter}-off" in options.parts
            on = drafter in options.parts or f"{drafter}-on" in options.parts
            runs = [(False, pinned)] if off else []
            runs += [(True, s) for s in seeds_of(options)] if on else []
            for j0, seed in runs:
                folder = work / f"drafter-{drafter}" / setting_folder(k, j0, seed, pinned)
                out.append(
                    PointPlan(
                        drafter,
                        k,
                        j0,
                        length,
                        folder,
                        seed=seed if j0 else None,
                        slots=options.slots,
                        variant=options.variant,
                    )
                )
    return out


def check_options(options: MiniRunOptions) -> None:
    """The flags' ranges, before anything is read or served (exit 64)."""
    for part in options.parts:
        if part not in (*PARTS, *PARTS_APART):
            raise J0Error(
                f"--parts {part}: expected some of {', '.join((*PARTS, *PARTS_APART))}", USAGE
            )
    if not options.parts:
        raise J0Error(f"--parts: expected some of {', '.join(PARTS)}", USAGE)
    for flag, value, least in (
        ("--requests", options.requests, 1),
        ("--slots", options.slots, 1),
        ("--max-tokens", options.max_tokens, 1),
        ("--ngram-max", options.ngram_max, 1),
        ("--crosscheck-requests", options.crosscheck_requests, 0),
        ("--servers", options.servers, 1),
        ("--long-requests", options.long_requests or 1, 1),
    ):
        if value < least:
            raise J0Error(f"{flag} {value}: expected a whole number, {least} or more", USAGE)


def run_mini_run(options: MiniRunOptions, say: Any = print) -> MiniRunResult:
    from j0.mini.run import seeds as seeds_mod
    from j0.mini.run.preflight import STARTED, check_run_dir, move_aside, preflight
    from j0.mini.run.prompts import make_prompts, write_jsonl, write_record
    from j0.mini.run.setting import Sampling, run_setting
    from j0.mini.train import corpus as corpus_mod
    from j0.mini.train import tokenizer as tok_mod
    from j0.pins import load_pins

    check_options(options)
    manifest = read_manifest(options.out)
    work = options.run_dir or options.out / "run"
    contexts = contexts_of(manifest, options)
    beyond = refuse_beyond_training(manifest, contexts, options, say)
    # --resume adds to the run folder as it is; else an earlier unfinished or failed run's folder
    # is moved aside (after the checks below), one that passed or is not a run's refused (64)
    earlier = None if options.resume else check_run_dir(work)
    # Before anything is made: a GPU, vLLM's server, the speculator.py (69 otherwise).
    speculator = preflight(options.variant, stand_in=options.server_command is not None)
    if earlier is not None:
        move_aside(work, earlier, say)
    work.mkdir(parents=True, exist_ok=True)
    begun = {"variant": options.variant, "speculator": speculator.to_json(), "time": time.time()}
    write_text_atomic(work / STARTED, json.dumps(begun, indent=1) + "\n")
    corpus = corpus_mod.read(options.out / "corpus.json")
    tokenizer = tok_mod.load(options.out / "target")
    counts = requests_by_context(contexts, options)
    prompts = make_prompts(corpus, tokenizer, contexts, counts, reuse=options.reuse_files)
    dataset = work / "prompts.jsonl"
    if work.exists() and dataset.is_file():
        previous = hashlib.sha256(dataset.read_bytes()).hexdigest()
        write_jsonl(prompts, work / ".prompts-now.jsonl")
        now = work / ".prompts-now.jsonl"
        same = hashlib.sha256(now.read_bytes()).hexdigest() == previous
        now.unlink()
        if not same:
            raise J0Error(
                f"{dataset}: other prompts than this run would send (another corpus, "
                "tokenizer, --contexts or --requests): --resume only adds settings on the same "
                "prompts",
                USAGE,
            )
    else:
        work.mkdir(parents=True, exist_ok=True)
        write_jsonl(prompts, dataset)
        write_record(prompts, work / "prompts.json")
    pins = load_pins()
    length = max_model_len(manifest, options, contexts)
    say(
        f"==> {len(prompts)} prompts ({', '.join(f'{counts[c]} of {c}' for c in contexts)} "
        f"tokens), {len({p.source for p in prompts})} files; "
        f"max-model-len {length}; {options.slots} request slots"
    )
    sampling = Sampling(manifest.temperature(), options.sample_seed)
    if sampling.temperature > 0:
        say(
            f"==> sampling at temperature {sampling.temperature} (mini.json), each request "
            f"with its own seed (from --sample-seed {options.sample_seed} and its prompt's id)"
        )
    result = MiniRunResult()
    started = time.monotonic()
    article: str | None = None
    todo = []
    for plan in plans(options, work, length, pins.j0_seed):
        if plan.folder.exists():
            if (plan.folder / "result.json").is_file():
                say(f"==> {plan.name}: measured before, kept")
                continue
            raise J0Error(
                f"{plan.folder}: exists without a result.json (a setting that did not finish): "
                "move it away, then --resume",
                USAGE,
            )
        if plan.j0 and plan.seed != pins.j0_seed:
            if article is None:
                article = seeds_mod.article_text(pins)
            env = seeds_mod.prepare(
                work / "speculators" / f"seed{plan.seed}", plan.seed, pins, article
            )
            plan = replace(plan, extra_env=env)
        todo.append(plan)

    def serve(plan: Any, port: int) -> None:
        plan = replace(plan, port=port, servers=min(options.servers, len(todo)))
        outcome = run_setting(options, plan, dataset, prompts, say, sampling)
        record = PointRecord.made(
            **outcome.summary, problems=outcome.problems, missing=outcome.missing
        )
        record.write(plan.folder)

    at_once(todo, options.servers, options.port, serve)
    summarize(
        options, manifest, work, contexts, length, tokenizer, result, started, speculator, beyond
    )
    return result


def at_once(todo: list[Any], servers: int, port: int, serve: Any) -> None:
    """serve(plan, port) for every plan, `servers` at a time, each on a port of its own from
    port, port + 1, ...: one after the other where servers is 1."""
    if servers <= 1 or len(todo) <= 1:
        for plan in todo:
            serve(plan, port)
        return
    import queue
    from concurrent.futures import ThreadPoolExecutor

    ports: queue.Queue[int] = queue.Queue()
    for n in range(min(servers, len(todo))):
        ports.put(port + n)

    def one(plan: Any) -> None:
        mine = ports.get()
        try:
            serve(plan, mine)
        finally:
            ports.put(mine)

    with ThreadPoolExecutor(max_workers=min(servers, len(todo))) as pool:
        for future in [pool.submit(one, plan) for plan in todo]:
            future.result()


def summarize(
    options: MiniRunOptions,
    manifest: MiniManifest,
    work: Path,
    contexts: tuple[int, ...],
    length: int,
    tokenizer: Any,
    result: MiniRunResult,
    started: float,
    speculator: IdentityRecord,
    beyond: list[int] | None = None,
) -> None:
    """The reports, the gate and the comparisons over every setting in WORK."""
    from j0.mini.run import compare

    settings: dict[str, PointRecord] = {}
    for path in sorted(work.rglob(SETTING_JSON)):
        name = path.parent.relative_to(work).as_posix()
        settings[name] = PointRecord.read(path)
        # every setting's problems, those of an earlier command of a resumed run too
        result.problems.extend(settings[name].problems or [])
        result.missing.extend(settings[name].missing or [])
    reports = {}
    for drafter in DRAFTERS:
        if (work / f"drafter-{drafter}").is_dir():
            reports[drafter] = make_report(work / f"drafter-{drafter}", contexts, result)
    data = compare.load(work, settings, tokenizer)
    gate = compare.gate(data, contexts)
    if (failed := compare.gate_problem(gate)) is not None:
        result.problems.append(failed)
    comparisons = compare.comparisons(data, settings, contexts, options.tokens)
    result.summary = RunSummary.made(
        out=str(work),
        max_model_len=length,
        trained={key: getattr(manifest, key) for key in TRAINED_KEYS},
        temperature=(temperature := manifest.temperature()),
        sample_seed=options.sample_seed if temperature > 0 else None,
        servers_at_once=options.servers,
        contexts=list(contexts),
        tokens=list(options.tokens),
        requests_per_context=options.requests,
        requests_by_context={str(c): n for c, n in requests_by_context(contexts, options).items()},
        prompts_sha256=hashlib.sha256((work / "prompts.jsonl").read_bytes()).hexdigest(),
        max_tokens=options.max_tokens,
        target_seq=manifest.sizes.get("target_seq"),
        beyond_training=beyond or [],
        slots=options.slots,
        j0_seeds=list(seeds_of(options)),
        seconds=round(time.monotonic() - started, 1),
        variant=options.variant,
        speculator=speculator.to_json(),
        settings={name: record.to_json() for name, record in settings.items()},
        gate=gate,
        comparisons=comparisons,
        reports=reports,
        problems=result.problems,
        missing=result.missing,
    )
    result.summary.write(work)
    write_text_atomic(work / "mini-run.md", compare.markdown(result.summary))


def make_report(folder: Path, contexts: tuple[int, ...], result: MiniRunResult) -> str:
    """`j0 bench report FOLDER` through its function (bins at the contexts); what it wrote, or
    why it could not."""
    from j0.bench import ReportOptions
    from j0.bench import run_report as report

    edges = sorted(set(contexts))
    try:
        report(ReportOptions(folder=folder, bins=edges))
    except J0Error as exc:
        result.missing.append(f"j0 bench report {folder.name}: {exc}")
        return f"not made: {exc}"
    return str(folder / "report.md")
