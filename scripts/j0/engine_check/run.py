"""The engine check from start to verdict: make the tiny models, serve them J0 on (dumps kept) and
then off, send the same prompts to both, run every check, write the JSON report."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.article.identity import ARTICLE
from j0.article.server_setting import ARTICLE_MAX_NUM_SEQS
from j0.article.spec_config import SpecConfig
from j0.engine.server.endpoints import first_model, get_text
from j0.engine.server.j0_state import ON
from j0.engine.server.launcher import (
    MAX_MODEL_LEN,
    ContainerServer,
    LocalServer,
    Server,
    ServerStart,
    wait_healthy,
)
from j0.engine_check import checks
from j0.engine_check.check_report import EngineCheckReport
from j0.engine_check.requests import Exchange, exchange
from j0.engine_check.scenarios.check import SCENARIO_MAX_MODEL_LEN, ScenarioChoice
from j0.engine_check.scenarios.record import ScenarioRecord
from j0.errors import J0Error
from j0.pins import load_pins
from j0.status import StatusOptions, StatusReport, run_status

# What `j0 status` may object to in this check without it being J0's fault: the tiny models are
# not the article's target and drafter, and the engine may be a vLLM release, not c50aca14.
STATUS_EXPECTED_HERE = ("model", "target", "drafter", "commit", "engine", "max_model_len")


@dataclass
class EngineCheckOptions:
    here: bool
    image: str | None
    tokens: int
    graphs: bool
    max_tokens: int
    dump_steps: int
    port: int
    startup_timeout: float
    keep: Path | None
    extra_env: dict[str, str] = field(default_factory=dict)
    server_command: list[str] | None = None  # `--here` only: in the place of `vllm serve`
    gpus: bool = True  # `--image` only: False for a stand-in image without a GPU (tests)
    container_mounts: dict[str, str] = field(default_factory=dict)  # `--image` only, read-only
    models: Path | None = None  # ready-made tiny models (target/, draft/) instead of making them
    image_source: str = "--image"  # where the image's name came from (for messages)
    # --scenario: the serving scenarios (j0.engine_check.scenarios.check) instead of the 3 prompts
    scenarios: ScenarioChoice | None = None


@dataclass
class Run:
    """One server start's evidence."""

    setting: ServerStart
    log: str = ""
    exchanges: list[Exchange] = field(default_factory=list)
    metrics_before: str = ""
    metrics_after: str = ""
    healthy_after_s: float = 0.0
    status: StatusReport | None = None
    status_exit: int | None = None


@contextlib.contextmanager
def work_dir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="j0-engine-check-") as tmp:
        yield Path(tmp)


def serve_setting(
    options: EngineCheckOptions,
    target: Path,
    draft: Path,
    j0: bool,
    work: Path,
    extra_env: dict[str, str],
    **scenario: Any,
) -> ServerStart:
    """One server of the check: the options' draft length, graphs, dump steps and port, J0 on or
    off with its own dump folder under `work`; `scenario` adds the scenario mode's settings."""
    return ServerStart(
        target=target,
        draft=draft,
        spec=SpecConfig.article(str(draft), options.tokens),
        graphs=options.graphs,
        j0=j0,
        dumps=work / f"dumps-j0-{'on' if j0 else 'off'}",
        dump_steps=options.dump_steps,
        port=options.port,
        extra_env=extra_env,
        **scenario,
    )


def start(options: EngineCheckOptions, setting: ServerStart, work: Path) -> Server:
    log = work / f"server-{setting.name}.log"
    if options.here:
        return LocalServer(setting, log, options.server_command)
    assert options.image is not None
    return ContainerServer(
        setting, log, options.image, work, gpus=options.gpus, mounts=options.container_mounts
    )


def serve_and_ask(
    options: EngineCheckOptions, setting: ServerStart, work: Path, say: Callable[[str], None]
) -> Run:
    run = Run(setting)
    say(
        f"==> {setting.name}: starting the server ({'CUDA graphs' if setting.graphs else 'eager'}, "
        f"{options.tokens} draft tokens)"
    )
    server = start(options, setting, work)
    try:
        run.healthy_after_s = wait_healthy(server, options.startup_timeout)
        say(f"    healthy after {run.healthy_after_s:.0f} s; sending {3 * 2} requests")
        model = str(first_model(server.url)["id"])
        run.metrics_before = get_text(f"{server.url}/metrics")
        run.exchanges = exchange(server.url, model, options.max_tokens)
        run.metrics_after = get_text(f"{server.url}/metrics")
        if setting.j0:
            server.log_text()  # brings a container's log into server.log
            run.status_exit, run.status = ask_status(server)
    finally:
        server.stop()
        run.log = server.log.read_text(errors="replace")
    return run


def ask_status(server: Server) -> tuple[int, StatusReport | None]:
    """`j0 status --url URL --log LOG` of the server, in this process: its exit code and its
    report (None where it stopped with an error)."""
    try:
        outcome = run_status(StatusOptions(url=server.url, log=server.log))
    except J0Error as exc:
        return exc.exit_code, None
    return outcome.exit_code, outcome.report


def status_check(run: Run) -> checks.Check:
    name = "j0 status (J0 on)"
    status = run.status
    if status is None:
        return checks.Check.of(name, False, f"no JSON from `j0 status` (exit {run.status_exit})")
    j0_ok = status.state().ran == ON and status.identity == ARTICLE  # the one rule
    other = [r for r in status.reasons if not any(w in r.lower() for w in STATUS_EXPECTED_HERE)]
    if status.article_setup:
        return checks.Check.of(name, True, "the article's setup (J0 on)")
    if j0_ok and not other:
        return checks.Check.of(
            name,
            True,
            "J0 on, the article's speculator.py; not the article's setup only because: "
            + "; ".join(status.reasons),
        )
    return checks.Check.of(name, False, "; ".join(status.reasons) or "J0 not on")


def dumps_check(folder: Path, run_name: str) -> checks.Check:
    """`j0 dumps check FOLDER` through its entry point; the detail: the line it prints last."""
    from j0.dumps import CheckOptions, run_check

    result = run_check(CheckOptions(folder))
    return checks.from_exit(f"j0 dumps check ({run_name})", result.exit_code, result.summary)


def preflight(options: EngineCheckOptions) -> Any:
    """A GPU, with --here vLLM's server packages (unless --server-command stands in for `vllm
    serve`), with --image the engine and the image, before anything heavy: each missing one is
    one line, exit 69. Returns the docker client for --image (None for --here)."""
    from j0.engine.server import local_needs
    from j0.engine_check import preflight as needs

    if options.gpus:
        local_needs.require_gpu()
    if options.here:
        if options.server_command is None:
            local_needs.require_server_packages("j0 engine-check --here")
            local_needs.require_engine_contract("j0 engine-check --here")
        return None
    assert options.image is not None
    client = needs.docker_client()
    needs.require_image(client, options.image, options.image_source)
    return client


def tiny_models(
    options: EngineCheckOptions, client: Any, work: Path, say: Callable[[str], None]
) -> tuple[Path, Path]:
    """(target, draft): given (--models), made inside the image (--image), or made here."""
    if options.models is not None:
        return options.models / "target", options.models / "draft"
    if client is not None:
        from j0.engine_check.preflight import make_models_in_image

        say(f"==> making the tiny models in a container of {options.image}")
        target, draft, _ = make_models_in_image(client, str(options.image), work)
        return target, draft
    from j0.engine_check.tiny_models import make_models

    say(f"==> making the tiny models in {work / 'models'}")
    made = make_models(work / "models")
    return made.target, made.draft


def run_engine_check(
    options: EngineCheckOptions, say: Callable[[str], None] = print
) -> EngineCheckReport:
    """The check as the options say (cli.py): the report `--json` prints (verdict, mode, checks,
    the status of the J0-on server...; scenario_check's with --scenario)."""
    pins = load_pins()
    client = preflight(options)
    started = time.monotonic()
    with work_dir(options.keep) as work:
        if options.scenarios is not None:
            from j0.engine_check.scenarios.check import audited_tree

            # the audited file first: an installed file that is not the article's stops here
            env = {**os.environ, **options.extra_env}
            tree = audited_tree(work, env, pins)
            models = tiny_models(options, client, work, say)
            return scenario_check(options, options.scenarios, models, tree, work, say)
        target, draft = tiny_models(options, client, work, say)
        runs: list[Run] = []
        for j0 in (True, False):
            setting = serve_setting(options, target, draft, j0, work, options.extra_env)
            runs.append(serve_and_ask(options, setting, work, say))
        on, off = runs
        found: list[checks.Check] = []
        for run in runs:
            found.append(checks.identity(run.log, pins, run.setting.name))
            found.append(
                checks.patch_log_lines(
                    run.log, run.setting.j0, run.setting.name, ARTICLE_MAX_NUM_SEQS, MAX_MODEL_LEN
                )
            )
        found.append(checks.outputs_identical(on.exchanges, off.exchanges))
        for run in runs:
            found.append(dumps_check(run.setting.dumps, run.setting.name))
        for run in runs:
            found.append(
                checks.metrics_agree(
                    run.exchanges, run.metrics_before, run.metrics_after, run.setting.name
                )
            )
        found.append(status_check(on))
        for run in runs:
            (work / f"responses-{run.setting.name}.json").write_text(
                json.dumps(
                    [
                        {"words": e.words, "plain": e.plain, "stream_chunks": e.stream_chunks}
                        for e in run.exchanges
                    ]
                )
            )
        report = EngineCheckReport(
            mode="here" if options.here else f"image {options.image}",
            graphs=options.graphs,
            num_speculative_tokens=options.tokens,
            max_tokens=options.max_tokens,
            seconds=round(time.monotonic() - started, 1),
            healthy_after_s={r.setting.name: round(r.healthy_after_s, 1) for r in runs},
            checks=tuple(found),
            kept=str(work) if options.keep else None,
            status=on.status,
        )
        if options.keep:
            report.keep(work)
    return report


def serve_scenarios(
    options: EngineCheckOptions,
    setting: ServerStart,
    chosen: ScenarioChoice,
    work: Path,
    say: Callable[[str], None],
) -> tuple[Run, list[ScenarioRecord]]:
    """One server of the scenario check: start, send every chosen scenario, stop."""
    from j0.engine_check.scenarios.check import send

    run = Run(setting)
    flags = " ".join(setting.server("T", "D", "").args()[3:])
    say(f"==> {setting.name}: starting the server ({flags})")
    server = start(options, setting, work)
    try:
        run.healthy_after_s = wait_healthy(server, options.startup_timeout)
        say(f"    healthy after {run.healthy_after_s:.0f} s; scenarios {', '.join(chosen.names)}")
        model = str(first_model(server.url)["id"])
        audit = work / "audit" if setting.j0 else None
        results = send(server.url, model, chosen, options.max_tokens, audit)
    finally:
        server.stop()
        run.log = server.log.read_text(errors="replace")
    return run, results


def scenario_check(
    options: EngineCheckOptions,
    chosen: ScenarioChoice,
    models: tuple[Path, Path],
    tree: Path,
    work: Path,
    say: Callable[[str], None],
) -> EngineCheckReport:
    """The scenarios on a J0-on server running the audited article's file (VLLM_DFLASH_AUDIT)
    and a J0-off server running the article's file, both with the settings the scenarios force;
    checks: identity, the patch's log lines, and one per scenario (audit, outputs on vs off)."""
    from j0.engine_check.scenarios.check import verdicts

    pins = load_pins()
    started = time.monotonic()
    target, draft = models
    audit = work / "audit"
    audit.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **options.extra_env}
    python_path = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    outcome = {}
    for j0 in (True, False):
        extra = {**options.extra_env}
        if j0:
            extra.update(PYTHONPATH=python_path, VLLM_DFLASH_AUDIT=str(audit))
        setting = serve_setting(
            options,
            target,
            draft,
            j0,
            work,
            extra,
            max_model_len=SCENARIO_MAX_MODEL_LEN,
            max_num_batched_tokens=chosen.max_num_batched_tokens,
            num_gpu_blocks_override=chosen.num_gpu_blocks_override,
            prefix_caching=chosen.prefix_caching,
        )
        outcome[j0] = serve_scenarios(options, setting, chosen, work, say)
    (on, on_results), (off, off_results) = outcome[True], outcome[False]
    found = [
        checks.identity(on.log, pins, on.setting.name, audited=True),
        checks.identity(off.log, pins, off.setting.name),
    ]
    for run in (on, off):
        found.append(
            checks.patch_log_lines(
                run.log,
                run.setting.j0,
                run.setting.name,
                ARTICLE_MAX_NUM_SEQS,
                SCENARIO_MAX_MODEL_LEN,
            )
        )
    mode = "graphs" if options.graphs else "eager"
    scenario_checks, rows = verdicts(on_results, off_results, audit, chosen, mode)
    found += scenario_checks
    for name, results in (("j0-on", on_results), ("j0-off", off_results)):
        records = [r.to_json() for r in results]
        (work / f"scenarios-{name}.json").write_text(json.dumps(records, indent=1) + "\n")
    report = EngineCheckReport(
        mode="here",
        graphs=options.graphs,
        num_speculative_tokens=options.tokens,
        max_tokens=options.max_tokens,
        seconds=round(time.monotonic() - started, 1),
        healthy_after_s={r.setting.name: round(r.healthy_after_s, 1) for r in (on, off)},
        checks=tuple(found),
        kept=str(work) if options.keep else None,
        settings={
            "max_num_seqs": ARTICLE_MAX_NUM_SEQS,
            "max_model_len": SCENARIO_MAX_MODEL_LEN,
            "max_num_batched_tokens": chosen.max_num_batched_tokens,
            "num_gpu_blocks_override": chosen.num_gpu_blocks_override,
            "prefix_caching": chosen.prefix_caching,
        },
        scenarios=tuple(rows),
    )
    if options.keep:
        report.keep(work)
    return report
