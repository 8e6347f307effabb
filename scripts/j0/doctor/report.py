"""Checks with a status (ok / warn / fail), a one-line detail and a one-line fix, and their report.

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""  # one line: what to do; empty when nothing is to be done


@dataclass
class Report:
    title: str
    checks: list[Check] = field(default_factory=list)

    def add(self, checks: Check | Iterable[Check]) -> None:
        if isinstance(checks, Check):
            self.checks.append(checks)
        else:
            self.checks.extend(checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == FAIL]

    @property
    def ready(self) -> bool:
        return not self.failed

    def verdict(self) -> str:
        warned = [c.name for c in self.checks if c.status == WARN]
        if self.failed:
            names = ", ".join(c.name for c in self.failed)
            also = f"; warnings: {', '.join(warned)}" if warned else ""
            return f"NOT READY: {names} failed{also}"
        return "READY" + (f" (warnings: {', '.join(warned)})" if warned else "")

    def text(self) -> str:
        width = max((len(c.name) for c in self.checks), default=0)
        lines = [f"==> {self.title}"]
        for check in self.checks:
            lines.append(f"{check.status:<4}  {check.name:<{width}}  {check.detail}")
            if check.fix and check.status != OK:
                lines.append(f"{'':<4}  {'':<{width}}  fix: {check.fix}")
        lines.append(f"==> {self.verdict()}")
        return "\n".join(lines)

    def json(self) -> str:
        return json.dumps(
            {
                "title": self.title,
                "ready": self.ready,
                "verdict": self.verdict(),
                "checks": [asdict(c) for c in self.checks],
            },
            indent=2,
        )
