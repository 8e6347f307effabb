"""`j0 status` from its options to its outcome, for the CLI and for any command that asks in
process (the engine check): read the log, ask the server, judge."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from j0.checks import Check, Report
from j0.compose.switches import resolve
from j0.engine.server import endpoints
from j0.errors import USAGE, J0Error
from j0.pins import load_pins
from j0.status import inputs, server_facts
from j0.status.judge import judge
from j0.status.status_report import StatusReport


@dataclass(frozen=True)
class StatusOptions:
    url: str | None = None  # None: http://127.0.0.1:$PORT, PORT as compose has it, else 8000
    log: Path | None = None  # the server's log in a file
    compose: bool = False  # the server's log from `docker compose logs server`
    api_key_file: Path | None = None  # None: API_KEY_FILE as compose has it
    probe: bool = True  # send one short request (else the counters are only checked for presence)
    deadline_s: float = server_facts.DEADLINE_S  # the whole conversation with the server


@dataclass(frozen=True)
class StatusOutcome:
    checks: list[Check]
    report: StatusReport
    exit_code: int  # 0: the article's setup (J0 on or off); 1: not

    def json_text(self) -> str:
        """What `j0 status --json` prints."""
        return json.dumps(self.report.to_json(), indent=2)

    def text(self) -> str:
        """What `j0 status` prints: a title, one line per check, the verdict."""
        source = self.report.log_source
        report = Report(
            f"j0 status of {self.report.url}" + (f" (log: {source})" if source is not None else "")
        )
        report.add(self.checks)
        return "\n".join([*report.text().splitlines()[:-1], self.report.verdict()])


def run_status(options: StatusOptions) -> StatusOutcome:
    if not (math.isfinite(options.deadline_s) and options.deadline_s > 0):
        raise J0Error(
            f"--deadline {options.deadline_s}: expected a positive, finite number of seconds",
            USAGE,
        )
    pins = load_pins()
    settings = resolve(pins)
    if options.url:
        url = endpoints.check_server_url(options.url)
    else:
        url = endpoints.check_server_url(
            f"http://127.0.0.1:{settings.get('PORT', '8000')}", "PORT (as compose has it) gives"
        )
    log, why_no_log = inputs.read_log(options.log, options.compose, pins)
    api_key = inputs.read_api_key(options.api_key_file, settings)
    facts = server_facts.ask(url, api_key, probe=options.probe, deadline_s=options.deadline_s)
    checks, report = judge(facts, log, pins, why_no_log)
    return StatusOutcome(checks, report, 0 if report.article_setup else 1)
