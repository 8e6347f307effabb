"""One check's outcome, shared by every command that reports checks (doctor, status, engine-check,
the image's smoke test): a name, a status (ok / warn / fail), a one-line detail and, where there is
something to do, a one-line fix; and a titled list of them with its verdict.

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

OK, WARN, FAIL = "ok", "warn", "fail"
SKIP = "skip"  # not run here (the image smoke test: no GPU, no network)


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # OK, WARN, FAIL or SKIP
    detail: str
    fix: str = ""  # one line: what to do; empty when nothing is to be done

    @classmethod
    def of(cls, name: str, ok: bool, detail: str) -> Check:
        """A pass/fail check (no warning level)."""
        return cls(name, OK if ok else FAIL, detail)

    @classmethod
    def from_exit(cls, name: str, code: int, detail: str, ok_codes: Iterable[int] = (0,)) -> Check:
        """A check that passed when a step ended with one of `ok_codes`."""
        return cls.of(name, code in tuple(ok_codes), f"exit {code}: {detail}")

    @property
    def ok(self) -> bool:
        return self.status != FAIL

    def to_json(self) -> dict[str, Any]:
        """{"name", "status", "detail", "fix"}: the form of `j0 doctor --json`."""
        return asdict(self)

    def to_verdict_json(self) -> dict[str, Any]:
        """{"name", "ok", "detail"}: the pass/fail form of the engine check's report."""
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


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
        """One line per check (a detail or fix that holds foreign text stays on its line: its
        control characters escaped, j0.terminal.escape)."""
        from j0.terminal.escape import shown

        width = max((len(c.name) for c in self.checks), default=0)
        lines = [f"==> {shown(self.title)}"]
        for check in self.checks:
            lines.append(f"{check.status:<4}  {shown(check.name):<{width}}  {shown(check.detail)}")
            if check.fix and check.status != OK:
                lines.append(f"{'':<4}  {'':<{width}}  fix: {shown(check.fix)}")
        lines.append(f"==> {self.verdict()}")
        return "\n".join(lines)

    def json(self) -> str:
        return json.dumps(
            {
                "title": self.title,
                "ready": self.ready,
                "verdict": self.verdict(),
                "checks": [c.to_json() for c in self.checks],
            },
            indent=2,
        )
