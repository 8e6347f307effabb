"""`j0 serve`'s work, apart from its parsing (cli.py): run_serve(ServeOptions) checks the
server's arguments and the J0 switches (launch.py's plan), logs what will run, swaps the overlay
in where one is mounted, then execs vLLM (unless a dry run). Standard library only."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from j0.commands import check_json_output, emit_json
from j0.engine import server_log
from j0.errors import INPUT_LACKS, J0Error
from j0.serve.launch import (
    DEFAULT_OVERLAY_MOUNT,
    DEFAULT_THEN,
    LOGGED_KNOBS,
    Plan,
    apply_overlay_swap,
    claim_dumps,
    drop_own_pythonpath,
    identify_running,
    plan_serve,
)


@dataclass(frozen=True)
class ServeOptions:
    """vLLM's arguments (after `--`), the program to exec, and the checks' switches."""

    args: list[str] = field(default_factory=list)
    then: str = DEFAULT_THEN
    dry_run: bool = False
    api_key_file: Path | None = None
    overlay_mount: Path = DEFAULT_OVERLAY_MOUNT
    force: bool = False
    json: str | None = None  # the plan (plan_document.py): "-" on stdout, else the file OUT


def _emit_plan(plan: Plan, options: ServeOptions) -> None:
    """--json: the plan as its document, on stdout or into OUT, before vLLM starts. The lines on
    stderr stay where they are with --json alone: they are the server's log."""
    from j0.serve.plan_document import ServePlanDocument

    document = ServePlanDocument.of(
        started=not options.dry_run,
        program=options.then,
        args=plan.args,
        api_keys=plan.api_keys,
        env=plan.env,
        switch_names=LOGGED_KNOBS,
        facts=plan.facts,
        warnings=plan.warnings,
    )
    emit_json(document.to_json(), options.json)


def run_serve(options: ServeOptions) -> int:
    """Check, log, swap the overlay if one is mounted, then exec `then ARGS` (a dry run: 0)."""
    check_json_output(options.json)  # before the checks, not after them
    plan = plan_serve(options.args, os.environ, options.api_key_file)
    claim_dumps(plan, options.force, options.dry_run)
    overlay_mount = options.overlay_mount
    if overlay_mount.is_dir():  # J0_OVERLAY named a folder: no file to swap in
        raise J0Error(
            f"--overlay-mount {overlay_mount}: a folder, expected the speculator.py to swap in "
            "(does J0_OVERLAY name a folder?); the server was not started",
            INPUT_LACKS,
        )
    if overlay_mount.is_file() and overlay_mount.stat().st_size > 0:
        from j0.engine.base_sources import installed_speculator
        from j0.pins import load_pins

        apply_overlay_swap(overlay_mount, installed_speculator(load_pins()), plan)
    identify_running(plan)
    # One line each, whatever a value holds (the log's grammar: j0.engine.server_log).
    for fact in plan.facts:
        print(f"{server_log.SERVE_PREFIX}{server_log.log_safe(fact)}", file=sys.stderr)
    for warning in plan.warnings:
        print(f"{server_log.SERVE_PREFIX}warning: {server_log.log_safe(warning)}", file=sys.stderr)
    _emit_plan(plan, options)
    if options.dry_run:
        print("j0 serve: checks passed (--dry-run: not starting the server)", file=sys.stderr)
        return 0
    drop_own_pythonpath(plan.env)
    sys.stderr.flush()
    sys.stdout.flush()
    try:
        os.execvpe(options.then, [options.then, *plan.args], plan.env)
    except OSError as exc:
        raise J0Error(f"cannot run {options.then}: {exc}", INPUT_LACKS) from exc
    return 0  # not reached
