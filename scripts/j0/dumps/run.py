"""The work of `j0 dumps show`, `audit` and `compare`, apart from their parsing (cli.py):
run_show(ShowOptions) -> Shown, run_audit(AuditOptions) -> Audited, run_compare(CompareOptions)
-> Compared. `check` and `replay` have theirs in check/run.py and replay/run.py. The modules that
need torch (show, compare) are imported inside the functions, so that `j0 --help` stays fast."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from j0.article.audit_records import AuditSummary
    from j0.dumps.compare import CompareReport
    from j0.dumps.show import Summary


@dataclass(frozen=True)
class ShowOptions:
    """The dump folder to summarize."""

    folder: Path


@dataclass(frozen=True)
class Shown:
    """The folder's summary; exit 1 where a step file had a problem or a step is missing."""

    summary: Summary

    @property
    def exit_code(self) -> int:
        return 1 if self.summary.problems or self.summary.missing else 0

    def to_json(self) -> dict[str, Any]:
        from j0.dumps import show

        return show.to_json(self.summary)


def run_show(options: ShowOptions) -> Shown:
    from j0.dumps import show

    return Shown(show.summarize(options.folder))


@dataclass(frozen=True)
class AuditOptions:
    """The folder of the audited speculator.py's records (VLLM_DFLASH_AUDIT)."""

    folder: Path


@dataclass(frozen=True)
class Audited:
    """The records' counts, the verdict's exit code (0 PASS, 1 FAIL, else nothing to judge) and
    its text."""

    summary: AuditSummary
    exit_code: int
    text: str

    def to_json(self) -> dict[str, Any]:
        name = {0: "PASS", 1: "FAIL"}.get(self.exit_code, "NOTHING TO JUDGE")
        return {"verdict": name, "exit": self.exit_code, **self.summary.as_json()}


def run_audit(options: AuditOptions) -> Audited:
    from j0.article.audit_records import read_folder, verdict

    summary = read_folder(options.folder)
    code, text = verdict(summary)
    return Audited(summary, code, text)


@dataclass(frozen=True)
class CompareOptions:
    """Two dump folders of the same prompts, and the relative tolerance (None: the default)."""

    a: Path
    b: Path
    rtol: float | None = None


def run_compare(options: CompareOptions) -> CompareReport:
    from j0.dumps import compare

    rtol = compare.DEFAULT_RTOL if options.rtol is None else options.rtol
    return compare.compare_dirs(options.a, options.b, rtol)
