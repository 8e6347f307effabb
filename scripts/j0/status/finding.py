"""One `j0 status` check and, where it is not ok, the reason the verdict line names for it."""

from __future__ import annotations

from dataclasses import dataclass

from j0.checks import OK, Check


@dataclass(frozen=True)
class StatusFinding:
    check: Check
    reason: str = ""  # the verdict's words where the check is not ok; the detail where empty

    @classmethod
    def of(cls, name: str, status: str, detail: str, reason: str = "") -> StatusFinding:
        return cls(Check(name, status, detail), reason)

    @property
    def why_not(self) -> str | None:
        """Why this is not the article's setup; None where the check is ok."""
        if self.check.status == OK:
            return None
        return self.reason or self.check.detail
