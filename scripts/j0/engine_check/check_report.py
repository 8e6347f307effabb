"""What `j0 engine-check` found, as one type: the object its `--json` prints and `--keep DIR`
writes as DIR/engine-check.json. Two forms, one per check: the engine check (J0 on and off
servers: identity, log lines, outputs, dumps, metrics, the J0-on server's `j0 status`) and the
scenario check (`--scenario`: the settings the scenarios forced, one row per scenario, each
check's status beside ok). The verdict is made from the checks, never set apart from them.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j0.checks import WARN, Check
from j0.edge.fields import write_document

if TYPE_CHECKING:
    from j0.status import StatusReport

REPORT_JSON = "engine-check.json"


@dataclass(frozen=True)
class EngineCheckReport:
    mode: str  # "here", or "image IMAGE"
    graphs: bool
    num_speculative_tokens: int
    max_tokens: int
    seconds: float
    healthy_after_s: dict[str, float]
    checks: tuple[Check, ...]
    kept: str | None  # --keep's folder
    status: StatusReport | None = None  # the engine check: the J0-on server's `j0 status`
    settings: dict[str, Any] | None = None  # the scenario check: what its servers were given
    scenarios: tuple[dict[str, Any], ...] | None = None  # the scenario check: one row each

    @property
    def is_scenario_check(self) -> bool:
        return self.scenarios is not None

    @property
    def failed(self) -> list[str]:
        """The names of the checks that failed, in order."""
        return [c.name for c in self.checks if not c.ok]

    @property
    def verdict(self) -> str:
        return "FAIL" if self.failed else "PASS"

    def word(self, check: Check) -> str:
        """How the text names a check's outcome: WARN (the scenario check's warnings), ok, FAIL."""
        if self.is_scenario_check and check.status == WARN:
            return "WARN"
        return "ok  " if check.ok else "FAIL"

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "verdict": self.verdict,
            "mode": self.mode,
            "graphs": self.graphs,
            "num_speculative_tokens": self.num_speculative_tokens,
            "max_tokens": self.max_tokens,
            "seconds": self.seconds,
            "healthy_after_s": self.healthy_after_s,
        }
        if self.is_scenario_check:
            found["settings"] = self.settings
            found["checks"] = [{**c.to_verdict_json(), "status": c.status} for c in self.checks]
            found["scenarios"] = list(self.scenarios or ())
        else:
            found["checks"] = [c.to_verdict_json() for c in self.checks]
            found["status"] = self.status.to_json() if self.status is not None else None
        found["kept"] = self.kept
        return found

    def keep(self, work: Path) -> None:
        """DIR/engine-check.json, where --keep asked for the folder."""
        write_document(work / REPORT_JSON, self.to_json(), indent=2)
