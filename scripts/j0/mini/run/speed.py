"""`j0 mini speed OUT`: the miniature's speed, measured cleanly (issue 54, item 6), after `j0 mini
run` has measured acceptance: the baseline without speculative decoding, vLLM's n-gram speculator
and the best DFlash setting of the run (the highest pooled acceptance length at --tokens), each
served with CUDA graphs (eager with --eager), prefix caching off, on the same prompts (the first
--prompts of the run's, every context), sampled as the run samples them.

Clean means: the servers are started together and then wait, and only ONE of them is sent
requests at any time (concurrency --slots, 1 by default: one request after the other), so no
measurement shares the GPU with another's work; the settings take turns in each of --repeats
rounds (round r starts with setting r mod n, so no setting is always first after a pause); and
speed is total output tokens over total request time (the sum of the requests' latencies, first
token included), and milliseconds per engine step (that time over the verify steps, one per
output token without speculative decoding), each setting's rounds pooled; the speedup is the
ratio of those totals, with each round's ratio beside it for the spread. The machine (the GPU's
name and driver, from nvidia-smi) is named in speed.json and speed.md.

Writes RUN/speed/ (RUN: --run-dir, default OUT/run): prompts.jsonl, SETTING/round-R.json (`j0 bench
run`'s result of each round, outputs kept), server logs, speed.json (a SpeedRecord,
j0.mini.run.speed_record) and speed.md. A RUN/speed/ that exists is refused (exit 64): nothing is
written twice.
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.edge.atomic import write_text_atomic
from j0.errors import INPUT_LACKS, USAGE, J0Error
from j0.mini.run.run_summary import RunSummary
from j0.mini.run.setting_record import BASELINE, DFLASH, NGRAM
from j0.mini.run.speed_record import HOW, ORDER, SPEED_JSON, SpeedMachine, SpeedRecord, SpeedRow

SPEED = "speed"


@dataclass(frozen=True)
class SpeedOptions:
    out: Path
    run_dir: Path | None = None  # the acceptance run (None: OUT/run)
    tokens: int = 7
    prompts: int = 24
    repeats: int = 3
    slots: int = 1  # requests in flight, and the servers' max-num-seqs
    max_tokens: int = 256
    graphs: bool = True
    port: int = 8865
    startup_timeout: float = 600.0
    settings: tuple[str, ...] | None = None  # None: baseline, ngram/kK, the best DFlash one
    server_command: list[str] | None = None  # in the place of `vllm serve` (tests)


@dataclass
class SpeedResult:
    doc: SpeedRecord

    @property
    def problems(self) -> list[str]:
        return self.doc.problems

    @property
    def exit_code(self) -> int:
        return 1 if self.problems else 0


def best_dflash(summary: RunSummary, tokens: int) -> str:
    """The run's DFlash setting at `tokens` draft tokens with the highest pooled acceptance
    length (J0 on with the pinned seed or J0 off: a setting the speed part can serve as is)."""
    best, value = None, -1.0
    for name, record in sorted(summary.records().items()):
        pooled = record.pooled_acceptance_length
        if record.kind != DFLASH or record.k != tokens:
            continue
        if "-seed" in name or pooled is None:
            continue
        if pooled > value:
            best, value = name, float(pooled)
    if best is None:
        raise J0Error(
            f"mini-run.json: no DFlash setting at {tokens} draft tokens with an acceptance "
            "length; run `j0 mini run` with a drafter part first, or name --settings",
            INPUT_LACKS,
        )
    return best


def serve_setting(
    name: str, options: SpeedOptions, port: int, length: int, share: dict, dumps: Path
) -> Any:
    """The ServerStart of a setting named as the run names them (no dumps: 0 steps)."""
    from j0.engine.server.launcher import ServerStart
    from j0.mini.run.setting import spec_config

    kind, drafter, j0 = BASELINE, "mask", False
    if name.startswith(NGRAM):
        kind = NGRAM
    elif name.startswith("drafter-"):
        kind = DFLASH
        drafter = name.split("/")[0].removeprefix("drafter-")
        j0 = name.endswith("-j0-on")
    elif name != BASELINE:
        raise J0Error(
            f"--settings {name}: expected baseline, ngram/kK or drafter-INIT/kK-j0-off|on", USAGE
        )
    draft = options.out / f"drafter-{drafter}"
    lookup = {"prompt_lookup_max": 4} if kind == NGRAM else {}
    return ServerStart(
        target=options.out / "target",
        draft=draft,
        spec=spec_config(kind, options.tokens, draft, lookup),
        graphs=options.graphs,
        j0=j0,
        dumps=dumps,
        dump_steps=0,
        port=port,
        max_model_len=length,
        max_num_seqs=options.slots,
        **share,
    )


def machine() -> SpeedMachine:
    """The GPU's name and driver as nvidia-smi gives them ("unknown" where it says nothing)."""
    try:
        text = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
    except OSError:
        text = ""
    name, _, driver = text.splitlines()[0].partition(",") if text else ("", "", "")
    return SpeedMachine(gpu=name.strip() or "unknown", driver=driver.strip() or "unknown")


def totals(result: Path) -> dict[str, float]:
    """One round's totals: output tokens, request seconds (sum of latencies), engine steps."""
    from j0.bench import read_result

    doc = read_result(result)
    tokens = seconds = steps = 0.0
    failed = 0
    for entry in doc.requests:
        if not entry.ok or entry.output_tokens is None or entry.latency_s is None:
            failed += 1
            continue
        tokens += float(entry.output_tokens)
        seconds += float(entry.latency_s)
        per_step = entry.per_step_accepted
        steps += len(per_step) + 1 if per_step else float(entry.output_tokens)
    return {"tokens": tokens, "seconds": seconds, "steps": steps, "failed": failed}


def summarize(rounds: dict[str, list[dict[str, float]]], base: str) -> dict[str, SpeedRow]:
    """Per setting: pooled tokens/s and ms per step, each round's tokens/s, the speedup over
    `base` (pooled, and per round)."""
    table: dict[str, SpeedRow] = {}
    for name, each in rounds.items():
        tokens = sum(r["tokens"] for r in each)
        seconds = sum(r["seconds"] for r in each)
        steps = sum(r["steps"] for r in each)
        table[name] = SpeedRow(
            rounds=len(each),
            tokens=int(tokens),
            seconds=round(seconds, 3),
            tokens_per_s=round(tokens / seconds, 2) if seconds else None,
            ms_per_step=round(1000 * seconds / steps, 3) if steps else None,
            tokens_per_step=round(tokens / steps, 3) if steps else None,
            round_tokens_per_s=[
                round(r["tokens"] / r["seconds"], 2) if r["seconds"] else None for r in each
            ],
            failed_requests=int(sum(r["failed"] for r in each)),
        )
    reference = table[base].tokens_per_s if base in table else None
    for name, row in table.items():
        if reference and row.tokens_per_s:
            table[name] = dataclasses.replace(
                row,
                speedup=round(row.tokens_per_s / reference, 3),
                round_speedups=[
                    round(a / b, 3) if a and b else None
                    for a, b in zip(
                        row.round_tokens_per_s, table[base].round_tokens_per_s, strict=False
                    )
                ],
            )
    return table


def run_speed(options: SpeedOptions, say: Any = print) -> SpeedResult:
    from j0.engine.server.launcher import LocalServer, wait_healthy
    from j0.mini.run.preflight import preflight
    from j0.mini.run.run import read_manifest
    from j0.mini.run.setting import Sampling, memory_share

    if options.prompts < 1 or options.repeats < 1 or options.slots < 1:
        raise J0Error("--prompts, --repeats and --slots: expected whole numbers >= 1", USAGE)
    manifest = read_manifest(options.out)
    work = options.run_dir or options.out / "run"
    summary_path = work / "mini-run.json"
    if not summary_path.is_file() or not (work / "prompts.jsonl").is_file():
        raise J0Error(f"{work}: no mini-run.json or prompts.jsonl; run `j0 mini run` first", USAGE)
    folder = work / SPEED
    if folder.exists():
        raise J0Error(f"{folder}: exists; the speed part is never written twice", USAGE)
    summary = RunSummary.read(summary_path)  # typed: a file of other kinds is refused, named
    names = list(options.settings or (BASELINE, f"{NGRAM}/k{options.tokens}"))
    if options.settings is None:
        names.append(best_dflash(summary, options.tokens))
    preflight("article", stand_in=options.server_command is not None)
    folder.mkdir(parents=True)
    lines = (work / "prompts.jsonl").read_text().splitlines()[: options.prompts]
    dataset = folder / "prompts.jsonl"
    write_text_atomic(dataset, "".join(line + "\n" for line in lines))
    length = summary.max_model_len or 8192
    share = memory_share(len(names))
    servers = {}
    sampling = Sampling(manifest.temperature(), summary.sample_seed or 0)
    try:
        for number, name in enumerate(names):
            log = folder / name.replace("/", "_") / "server.log"
            log.parent.mkdir(parents=True)
            setting = serve_setting(
                name, options, options.port + number, length, share, log.parent / "dumps"
            )
            servers[name] = LocalServer(setting, log, options.server_command)
        for name, server in servers.items():
            healthy = wait_healthy(server, options.startup_timeout)
            say(f"==> speed: {name} healthy after {healthy:.0f} s ({server.url})")
        rounds = measure(servers, names, options, dataset, len(lines), sampling, folder, say)
    finally:
        for server in servers.values():
            server.stop()
    table = summarize(rounds, BASELINE if BASELINE in names else names[0])
    doc = record(options, names, len(lines), sampling.temperature, table, machine())
    doc.write(work / SPEED_JSON)
    write_text_atomic(work / "speed.md", markdown(doc))
    return SpeedResult(doc)


def record(
    options: SpeedOptions,
    names: list[str],
    prompts: int,
    temperature: float,
    table: dict[str, SpeedRow],
    gpu: SpeedMachine,
) -> SpeedRecord:
    """speed.json: how it was measured, on which machine (`gpu`: machine()), the table
    (summarize) and the problems (requests that failed)."""
    problems = [
        f"{name}: {row.failed_requests} requests failed"
        for name, row in table.items()
        if row.failed_requests
    ]
    return SpeedRecord(
        machine=gpu,
        graphs=options.graphs,
        slots=options.slots,
        prompts=prompts,
        repeats=options.repeats,
        max_tokens=options.max_tokens,
        tokens=options.tokens,
        temperature=temperature,
        settings=list(names),
        order=ORDER,
        how=HOW,
        table=table,
        problems=problems,
    )


def measure(
    servers: dict[str, Any],
    names: list[str],
    options: SpeedOptions,
    dataset: Path,
    count: int,
    sampling: Any,
    folder: Path,
    say: Any,
) -> dict[str, list[dict[str, float]]]:
    """Each round: every setting in turn (round r from setting r mod n), the prompts sent to
    its server alone; per setting the rounds' totals."""
    from j0.bench import RunOptions
    from j0.bench import run_bench as run

    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for number in range(options.repeats):
        order = names[number % len(names) :] + names[: number % len(names)]
        for name in order:
            out = folder / name.replace("/", "_") / f"round-{number + 1}.json"
            mark = time.monotonic()
            run(
                RunOptions(
                    url=servers[name].url,
                    out=out,
                    requests=count,
                    max_tokens=options.max_tokens,
                    dataset=str(dataset),
                    endpoint="completions",
                    thinking=False,
                    ignore_eos=True,
                    label=f"{name} round {number + 1}",
                    bin_size=256,
                    temperature=sampling.temperature,
                    seed=sampling.bench_seed,
                    concurrency=options.slots,
                    keep_outputs=True,
                    progress=False,
                )
            )
            rounds[name].append(totals(out))
            last = rounds[name][-1]
            rate = last["tokens"] / last["seconds"] if last["seconds"] else 0.0
            say(
                f"    round {number + 1} {name}: {rate:.1f} tok/s ({time.monotonic() - mark:.0f} s)"
            )
    return rounds


def markdown(doc: SpeedRecord) -> str:
    """speed.md: the heading and table_lines."""
    return "\n".join(["# j0 mini speed", "", *table_lines(doc)]) + "\n"


def table_lines(doc: SpeedRecord) -> list[str]:
    """The machine, how it was measured and the table (`j0 mini numbers`' `speed` block)."""
    machine_words = f"{doc.machine.gpu} (driver {doc.machine.driver})"
    lines = [
        f"On {machine_words}; CUDA graphs {'on' if doc.graphs else 'off'}; "
        f"{doc.prompts} prompts, {doc.max_tokens} tokens each, {doc.slots} in flight; "
        f"temperature {doc.temperature}; {doc.repeats} rounds, the settings interleaved "
        f"({doc.order}); {doc.how}.",
        "Speed is total output tokens over total request time (the sum of the requests' "
        "latencies, first token included), each setting's rounds pooled; ms per step is that "
        "time over the engine's steps (verify steps, or one per token without speculation).",
        "",
        "| setting | tokens | seconds | tok/s | ms per step | tokens per step | speedup "
        "(pooled) | speedup by round | tok/s by round |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in doc.table.items():
        by_round = ", ".join(str(x) for x in row.round_speedups or [])
        speedup = "n/a" if row.speedup is None else row.speedup
        lines.append(
            f"| {name} | {row.tokens} | {row.seconds} | {row.tokens_per_s} | "
            f"{row.ms_per_step} | {row.tokens_per_step} | {speedup} | "
            f"{by_round or 'n/a'} | {', '.join(str(x) for x in row.round_tokens_per_s)} |"
        )
    if doc.problems:
        lines += ["", "Problems: " + "; ".join(doc.problems)]
    return lines
