"""`j0 bench matrix`'s work (run_matrix(MatrixOptions) -> MatrixOutcome): the article's
experiment, every setting on the same prompts.

Settings are --tokens x --j0 (default 15,7 x off,on: k15-j0-off, k15-j0-on, k7-j0-off,
k7-j0-on), with prefix caching off unless --prefix-caching; --baseline adds `baseline` first,
the same server without --speculative-config. The prompts are made once (OUT/prompts.jsonl);
every setting sends them --repeats times (same order, server not restarted between repeats),
with --system-prompt before each. Backends:

    compose   one setting after another on this machine (compose/): OUT/<setting>/result.json
    k8s       one Indexed Job on a cluster, an index per (setting, shard) (k8s/):
              OUT/<setting>/result-shard-NN.json

and OUT/<setting>/server.log, OUT/matrix.json (layout.py) from both; `j0 bench report OUT`
reads either. Exit 0 when every setting ran, 1 otherwise (matrix.json says which and why).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from j0.bench.matrix import BACKENDS, DEFAULT_J0, DEFAULT_TOKENS
from j0.bench.matrix.layout import (
    MATRIX_JSON,
    SERVER_LOG,
    MatrixRecord,
    PointRun,
    j0_revision,
    judge_ran,
    now,
)
from j0.bench.matrix.out_folder import claim_out_folder
from j0.bench.matrix.prompts import make_prompts, write_prompts
from j0.bench.matrix.settings import matrix_settings
from j0.bench.run.options import system_prompt_of
from j0.compose.server import MatrixPoint, ServerKnobs
from j0.edge.atomic import claimed
from j0.errors import CHECK_FAILED, USAGE, J0Error, parse_json, require
from j0.pins import Pins, load_pins
from j0.terminal import sink


def say(text: str) -> None:
    sink.warn(f"j0 bench matrix: {text}", flush=True)


@dataclass(frozen=True)
class MatrixOptions:
    """`j0 bench matrix`'s flags (cli.py): the settings (--tokens x --j0, prefix caching,
    --baseline), the prompts and how each setting sends them, the results folder, the backend
    and its k8s knobs, and --dry-run."""

    out: Path
    tokens: str = DEFAULT_TOKENS
    j0: str = DEFAULT_J0
    prefix_caching: bool = False
    baseline: bool = False
    dataset: str = "synthetic"
    requests: int | None = None
    max_tokens: int | None = None
    repeats: int = 1
    system_prompt: str | None = None  # the text, or @FILE
    backend: str = "compose"
    namespace: str | None = None
    gpus: int | None = None
    shards: int | None = None
    dry_run: bool = False


@dataclass(frozen=True)
class MatrixOutcome:
    """What the matrix exits with (0: every setting ran or rendered; 1 otherwise) and its record
    (OUT/matrix.json)."""

    exit_code: int
    record: MatrixRecord


def run_matrix(options: MatrixOptions) -> MatrixOutcome:
    backend = options.backend
    if backend not in BACKENDS:
        raise J0Error(f"--backend {backend}: expected compose or k8s", USAGE)
    baseline = options.baseline
    settings = matrix_settings(options.tokens, options.j0, options.prefix_caching, baseline)
    system_prompt, system_prompt_file = system_prompt_of(options.system_prompt)
    shards, gpus = options.shards, options.gpus
    if backend == "compose" and shards not in (None, 1):
        raise J0Error("--shards: only with --backend k8s (compose runs one server)", USAGE)
    if backend == "compose" and (gpus is not None or options.namespace):
        say("--gpus and --namespace are for --backend k8s; compose uses this host's server")
    for name, value in (("--shards", shards), ("--gpus", gpus)):
        if value is not None and value < 1:
            raise J0Error(f"{name} {value}: expected 1 or more", USAGE)
    # --out is claimed until the last write: a second matrix into it is refused (exit 64), and
    # what it holds is judged under the claim.
    with claimed(options.out, "--out"):
        claim_out_folder(options.out)  # new, empty, or a dry run's: nothing of the user's is lost
        return _run_into(options, settings, system_prompt, system_prompt_file, shards, gpus)


def _run_into(
    options: MatrixOptions,
    settings: list[MatrixPoint],
    system_prompt: str | None,
    system_prompt_file: str | None,
    shards: int | None,
    gpus: int | None,
) -> MatrixOutcome:
    """The matrix, into its claimed --out (run_matrix)."""
    backend, baseline, repeats, out = (
        options.backend,
        options.baseline,
        options.repeats,
        options.out,
    )
    pins = load_pins()
    knobs = ServerKnobs.from_env(pins)
    made = make_prompts(options.dataset, options.requests)
    prompts_file = write_prompts(out, made)
    if backend == "k8s" and shards is None:
        shards = max(1, (gpus or len(settings)) // len(settings))
    runs = [PointRun(setting) for setting in settings]
    record = MatrixRecord(
        out=out,
        backend=backend,
        runs=runs,
        prefix_caching=options.prefix_caching,
        dataset=made.dataset,
        requests=made.count,
        max_tokens=options.max_tokens,
        shards=shards or 1,
        j0_revision=j0_revision(pins.root),
        prompts={"file": prompts_file.name, "sha256": made.sha256},
        baseline=baseline,
        repeats=repeats,
        system_prompt=system_prompt,
        system_prompt_file=system_prompt_file,
        dry_run=options.dry_run,
    )
    record.write()
    say(
        f"{len(settings)} settings ({', '.join(r.setting.name for r in runs)}) x {made.count} "
        f"prompts of {made.dataset}, prefix caching {'on' if options.prefix_caching else 'off'}, "
        f"backend {backend}"
    )
    if backend == "compose":
        code = _compose(options, record, prompts_file, made.count)
    else:
        code = _k8s(options, record, pins, knobs, made.lines, shards or 1, gpus)
    return MatrixOutcome(code, record)


def _finish(record: MatrixRecord) -> int:
    record.finished = now()
    record.write()
    failed = [run.setting.name for run in record.runs if run.entry.status not in ("ok", "rendered")]
    if failed:
        say(f"failed: {', '.join(failed)} (see {record.out / MATRIX_JSON})")
        return CHECK_FAILED
    say(f"done: {record.out / MATRIX_JSON}")
    return 0


def _compose(options: MatrixOptions, record: MatrixRecord, prompts_file: Path, count: int) -> int:
    from j0.bench.matrix.compose.backend import ComposeBackend
    from j0.bench.matrix.compose.project import rendered_setting
    from j0.compose.server import compose_switches

    backend = ComposeBackend(
        root=load_pins().root,
        out=record.out,
        prompts_file=prompts_file.resolve(),
        requests=count,
        max_tokens=options.max_tokens,
        environ=dict(os.environ),
        say=say,
        repeats=record.repeats,
        system_prompt=record.system_prompt,
        system_prompt_file=record.system_prompt_file,
    )
    for run in record.runs:
        if options.dry_run:
            folder = record.out / run.setting.name
            environ = {**backend.environ, **compose_switches(run.setting)}
            compose = backend.project(folder, environ, run.setting.baseline)
            config = compose(["config", "--format", "json"], timeout=120)
            if config.returncode != 0:
                raise J0Error(f"docker compose config failed:\n{config.stderr.strip()}")
            seen, run.entry.server_args, run.entry.server_env = rendered_setting(
                parse_json(config.stdout, "`docker compose config`'s output")
            )
            run.entry.status = "rendered" if seen == run.setting else "failed"
            if seen != run.setting:
                run.entry.error = f"the compose project renders {seen}"
            record.write()
            continue
        try:
            backend.run_setting(run)
            run.entry.status = "ok"
        except J0Error as exc:
            run.entry.status, run.entry.error = "failed", str(exc)
            say(f"{run.setting.name}: {exc}")
        log = record.out / run.setting.name / SERVER_LOG
        if log.is_file():
            judge_ran(run, [log.read_text(errors="replace")])
            if run.ran is not None:
                say(f"{run.setting.name}: J0 {run.ran.ran}, its server's log says ({run.ran.why})")
        record.write()
    return _finish(record)


def _k8s(
    options: MatrixOptions,
    record: MatrixRecord,
    pins: Pins,
    knobs: ServerKnobs,
    lines: list[str],
    shards: int,
    gpus: int | None,
) -> int:
    from j0.bench.matrix.k8s.backend import K8sBackend, run_name, write_manifests
    from j0.bench.matrix.k8s.plan import BenchOptions, build_plan
    from j0.bench.matrix.k8s.render import K8sOptions
    from j0.kube.serving import default_image

    # huggingface_hub's repo id validator checks the names the pods run (j0.kube.literal)
    require("huggingface_hub", "j0 bench matrix --backend k8s", extra="k8s")
    settings = [run.setting for run in record.runs]
    plan = build_plan(
        run_name(),
        settings,
        knobs,
        shards,
        BenchOptions(
            dataset=None,
            requests=len(lines),
            max_tokens=options.max_tokens,
            repeats=record.repeats,
            system_prompt=record.system_prompt,
        ),
        lines,
    )
    k8s = K8sOptions(
        image=os.environ.get("J0_IMAGE") or default_image(pins),
        namespace=options.namespace,
    )
    # One watch of the Job's pods lasts this long before the Job's status is read again.
    window = os.environ.get("J0_K8S_WATCH_S", "")
    backend = K8sBackend(pins, knobs, record.out, k8s, gpus or plan.completions, say)
    backend.window_s = int(window) if window.isdigit() and int(window) > 0 else 10
    manifests = backend.render(plan)
    path = write_manifests(record.out, manifests, plan)
    for run in record.runs:
        server = plan.document.settings[run.setting.name]
        run.entry.server_args, run.entry.server_env = server.server_args, server.server_env
        run.entry.status = "rendered"
    record.k8s = {
        "run": plan.run,
        "manifests": str(path.relative_to(record.out)),
        "image": k8s.image,
        "namespace": k8s.namespace,
        "parallelism": backend.parallelism,
    }
    record.write()
    say(f"manifests: {path} ({plan.completions} indexes, {shards} shard(s) per setting)")
    if options.dry_run:
        return _finish(record)
    for run in record.runs:
        run.entry.status, run.entry.started = "running", now()
    record.write()
    record.k8s.update(backend.apply_and_follow(plan, manifests, record.runs))
    return _finish(record)
