"""`j0 serve`'s work, apart from its parsing (cli.py): run_serve(ServeOptions) -> ServePlanned
checks the server's arguments and the J0 switches (launch.py's plan) and swaps the overlay in
where one is mounted; the command then logs what will run, writes its --json and, unless a dry
run, execs vLLM (exec_server). Standard library only."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from j0.engine.server import server_log
from j0.errors import INPUT_LACKS, J0Error
from j0.serve.launch import (
    DEFAULT_OVERLAY_MOUNT,
    DEFAULT_THEN,
    LOGGED_KNOBS,
    ServePlan,
    apply_overlay_swap,
    claim_dumps,
    drop_own_pythonpath,
    identify_running,
    plan_serve,
)

if TYPE_CHECKING:
    from j0.serve.plan_document import ServePlanDocument


@dataclass(frozen=True)
class ServeOptions:
    """vLLM's arguments (after `--`), the program to exec, and the checks' switches."""

    args: list[str] = field(default_factory=list)
    then: str = DEFAULT_THEN
    dry_run: bool = False
    api_key_file: Path | None = None
    overlay_mount: Path = DEFAULT_OVERLAY_MOUNT
    force: bool = False


@dataclass(frozen=True)
class ServePlanned:
    """What passed the checks and will run: the plan (launch.py's: arguments, environment,
    facts, warnings), the program to exec, and whether this is a dry run."""

    plan: ServePlan
    program: str
    dry_run: bool

    def log_lines(self) -> list[str]:
        """The server log's lines of what will run, one per fact and warning, whatever a value
        holds (the log's grammar: j0.engine.server.server_log)."""
        lines = [f"{server_log.SERVE_PREFIX}{server_log.log_safe(f)}" for f in self.plan.facts]
        return lines + [
            f"{server_log.SERVE_PREFIX}warning: {server_log.log_safe(w)}"
            for w in self.plan.warnings
        ]

    def document(self) -> ServePlanDocument:
        """The plan as --json writes it (plan_document.py)."""
        from j0.serve.plan_document import ServePlanDocument

        return ServePlanDocument.of(
            started=not self.dry_run,
            program=self.program,
            args=self.plan.args,
            api_keys=self.plan.api_keys,
            env=self.plan.env,
            switch_names=LOGGED_KNOBS,
            facts=self.plan.facts,
            warnings=self.plan.warnings,
            j0_state=self.plan.j0.to_json() if self.plan.j0 is not None else None,
        )


def run_serve(options: ServeOptions) -> ServePlanned:
    """Check, claim the dump folder, swap the overlay in if one is mounted: what exec_server
    then runs (a J0Error, before anything starts, for what fails a check)."""
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
        from j0.engine.source.base_sources import installed_speculator
        from j0.pins import load_pins

        apply_overlay_swap(overlay_mount, installed_speculator(load_pins()), plan)
    identify_running(plan)
    return ServePlanned(plan, options.then, options.dry_run)


def exec_server(planned: ServePlanned) -> NoReturn:
    """Replace this process by `program ARGS` in the plan's environment."""
    drop_own_pythonpath(planned.plan.env)
    sys.stderr.flush()
    sys.stdout.flush()
    try:
        os.execvpe(planned.program, [planned.program, *planned.plan.args], planned.plan.env)
    except OSError as exc:
        raise J0Error(f"cannot run {planned.program}: {exc}", INPUT_LACKS) from exc
