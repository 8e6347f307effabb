"""What `j0 dumps check` finds: one Finding per failure, unverifiable draw or note, and the
Findings that collect them, in the order they were found, for one dump folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from j0.dumps.load import Step

FAIL, UNVERIFIABLE, NOTE = "fail", "unverifiable", "note"


@dataclass
class Finding:
    level: str  # fail | unverifiable | note
    check: str  # format, counts, positions, anchor, query-positions, j0-draw, mask, ...
    step: str  # the step file ("" for the whole folder)
    why: str
    slot: int | None = None  # query slot k
    expected: Any = None
    actual: Any = None
    request: int | None = None

    def text(self) -> str:
        where = self.step or "(folder)"
        if self.slot is not None:
            where += f" slot {self.slot}"
        values = ""
        if self.expected is not None or self.actual is not None:
            values = f": expected {self.expected}, actual {self.actual}"
        return f"{where} [{self.check}]{values}: {self.why}"


@dataclass
class Findings:
    """Every finding of one folder's check, in the order the checks made them."""

    all: list[Finding] = field(default_factory=list)

    def add(self, level: str, check: str, step: Step | None, why: str, **kw: Any) -> None:
        """A finding about `step` (None: the whole folder)."""
        self.all.append(Finding(level, check, step.name if step else "", why, **kw))

    def append(self, finding: Finding) -> None:
        self.all.append(finding)
