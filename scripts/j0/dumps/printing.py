"""What `j0 dumps` prints and writes: a `j0 dumps check` report as a rich table of its requests,
its findings and its summary line; and any `j0 dumps` report (show, check, compare) as JSON."""

from __future__ import annotations

from typing import Any

from j0.dumps.check.findings import FAIL, NOTE, UNVERIFIABLE
from j0.dumps.check.report import CheckReport, summary_after_verdict

SHOW_FINDINGS = 12  # failures printed in full; the JSON report has all of them

VERDICT_STYLE = {
    "PASS": "bold green",
    "FAIL": "bold red",
    "UNVERIFIABLE": "bold yellow",
    "NOTHING TO CHECK": "bold yellow",
}


def render(report: CheckReport, console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"j0 dumps check {escape(report.root)}", title_justify="left")
    for col in ("#", "steps", "first", "start", "status", "J0", "slot", "ok", "wrong", "unverif."):
        table.add_column(
            col,
            justify="left" if col in ("first", "status") else "right",
            no_wrap=col == "first",
            min_width=11 if col == "first" else None,
        )
    for r in report.requests:
        if r.slot is None:
            slot = "-"
        elif r.slot_candidates:
            slot = f"{r.slot}?"  # several slots fit equally: slot_candidates in the JSON
        else:
            slot = str(r.slot)
        table.add_row(
            str(r.number),
            str(r.steps),
            r.first_step,
            str(r.start_pos),
            r.status,
            "-" if r.j0 is None else ("on" if r.j0 else "off"),
            slot,
            str(r.verified),
            str(r.mismatched),
            str(r.unverifiable),
        )
    console.print(table)
    for r in report.requests:
        if r.note:
            console.print(f"request {r.number}: {escape(r.note)}")
        if r.slot_candidates:
            shown = ", ".join(map(str, r.slot_candidates[:8]))
            console.print(f"request {r.number}: request slot ambiguous, the draws fit {shown}")
    fails = [f for f in report.findings if f.level == FAIL]
    for f in fails[:SHOW_FINDINGS]:
        console.print(f"[red]FAIL[/red] {escape(f.text())}")
    if len(fails) > SHOW_FINDINGS:
        console.print(f"... and {len(fails) - SHOW_FINDINGS} more failures (--json has them all)")
    for f in report.findings:
        if f.level == UNVERIFIABLE:
            console.print(f"[yellow]UNVERIFIABLE[/yellow] {escape(f.text())}")
    for f in report.findings:
        if f.level == NOTE:
            console.print(f"note: {escape(f.text())}")
    style = VERDICT_STYLE.get(report.verdict, "bold")
    # The summary has no markup of its own: escaped, it prints as check.report.summary_line.
    console.print(f"[{style}]{report.verdict}[/{style}]{escape(summary_after_verdict(report))}")
