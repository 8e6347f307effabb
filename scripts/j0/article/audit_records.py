"""The J0 audit's records read back and judged: the one reader that `j0 dumps audit FOLDER`,
`j0 engine-check --scenario` and `j0 selfcheck --audit` share.

The audited speculator.py (overlay/jetspec-j0-audit.patch on the article's file or the prefix-safe
variant; `j0 overlay build --audit`) writes, with VLLM_DFLASH_AUDIT=FOLDER and J0 on,
FOLDER/audit-<pid>.jsonl: one `start` line per engine start, then one `step` line per draft step,
for every request of the batch: its request slot, the history positions checked against vLLM's
own copy of its committed tokens (RequestState.all_token_ids), the draws checked, and the first
mismatches. This module reads them back (standard library only) and sums them up.

Verdicts: PASS (exit 0) when steps were audited and nothing mismatched; FAIL (exit 1) with the
first mismatches; exit 2 when there is nothing to judge (no folder, no records, J0 off, or starts
without a single audited step): never a pass. A line that is not a record is exit 2, naming the
file and line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from j0.errors import CHECK_FAILED, INPUT_LACKS, OK, J0Error, parse_json, read_input_text

RECORD_GLOB = "audit-*.jsonl"
STEP_COUNTS = (
    "rows_checked",
    "positions_checked",
    "draws_checked",
    "row_mismatches",
    "mismatched_positions",
    "draw_mismatches",
)
SHOWN = 6  # mismatches named in the report


@dataclass
class AuditSummary:
    folder: str
    files: int = 0
    starts: int = 0
    starts_j0_on: int = 0
    steps: int = 0
    batched_steps: int = 0
    max_requests: int = 0
    requests_seen: int = 0
    slots_seen: list[int] = field(default_factory=list)
    rows_checked: int = 0
    positions_checked: int = 0
    draws_checked: int = 0
    row_mismatches: int = 0
    mismatched_positions: int = 0
    draw_mismatches: int = 0
    steps_with_mismatches: int = 0
    first: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mismatches(self) -> int:
        return self.row_mismatches + self.draw_mismatches

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "mismatches": self.mismatches}


def _bad(path: Path, line_no: int, why: str) -> J0Error:
    return J0Error(f"{path}:{line_no}: {why}; expected a J0 audit record", INPUT_LACKS)


def _int(record: dict[str, Any], key: str, path: Path, line_no: int) -> int:
    value = record.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _bad(path, line_no, f"{key!r} is {value!r}, expected a count (an integer >= 0)")
    return value


def _add_step(
    summary: AuditSummary, record: dict[str, Any], path: Path, line_no: int, seen: set[str]
) -> None:
    requests = _int(record, "requests", path, line_no)
    slots = record.get("slots")
    if not isinstance(slots, list) or len(slots) != requests:
        raise _bad(path, line_no, f"'slots' is {slots!r}, expected {requests} request slots")
    counts = {key: _int(record, key, path, line_no) for key in STEP_COUNTS}
    if counts["rows_checked"] != requests:
        raise _bad(path, line_no, f"rows_checked {counts['rows_checked']} for {requests} requests")
    summary.steps += 1
    summary.batched_steps += requests > 1
    summary.max_requests = max(summary.max_requests, requests)
    summary.slots_seen = sorted(set(summary.slots_seen) | {int(s) for s in slots})
    seen.update(str(r) for r in record.get("req_ids") or [])
    for key, value in counts.items():
        setattr(summary, key, getattr(summary, key) + value)
    if counts["row_mismatches"] or counts["draw_mismatches"]:
        summary.steps_with_mismatches += 1
        for item in record.get("first") or []:
            if len(summary.first) < SHOWN and isinstance(item, dict):
                ids = record.get("req_ids") or []
                request = item.get("request")
                name = ids[request] if isinstance(request, int) and request < len(ids) else None
                summary.first.append(
                    {"file": path.name, "step": record.get("step"), "req_id": name, **item}
                )


def line_counts(folder: Path) -> dict[str, int]:
    """How many lines each record file under `folder` holds now (a scenario's records are the
    lines written between two counts: the audit writes a step's line before propose returns)."""
    return {
        path.name: len(read_input_text(path, "").splitlines())
        for path in sorted(folder.glob(RECORD_GLOB))
    }


def read_folder(folder: Path, ranges: dict[str, tuple[int, int]] | None = None) -> AuditSummary:
    """Sum every record under `folder` (its audit-*.jsonl files); with `ranges`, only the lines
    after `first` up to `last` (line numbers from 1) of the files named there."""
    if not folder.is_dir():
        what = "a file" if folder.exists() else "no such folder"
        raise J0Error(f"{folder}: {what} (expected the VLLM_DFLASH_AUDIT folder)", INPUT_LACKS)
    summary = AuditSummary(folder=str(folder))
    seen: set[str] = set()
    for path in sorted(folder.glob(RECORD_GLOB)):
        if ranges is not None and path.name not in ranges:
            continue
        first, last = ranges[path.name] if ranges is not None else (0, 1 << 62)
        summary.files += 1
        for line_no, line in enumerate(read_input_text(path, "").splitlines(), 1):
            if not line.strip() or not first < line_no <= last:
                continue
            try:
                record = parse_json(line, f"{path}:{line_no}")
            except J0Error as exc:
                raise J0Error(f"{exc}; expected a J0 audit record", INPUT_LACKS) from None
            if not isinstance(record, dict):
                raise _bad(path, line_no, "not a JSON object")
            kind = record.get("record")
            if kind == "start":
                summary.starts += 1
                summary.starts_j0_on += bool(record.get("ctx_noise"))
            elif kind == "step":
                _add_step(summary, record, path, line_no, seen)
            else:
                raise _bad(path, line_no, f"'record' is {kind!r}, expected 'start' or 'step'")
    summary.requests_seen = len(seen)
    return summary


def _counts(s: AuditSummary) -> str:
    return (
        f"{s.steps} draft steps ({s.batched_steps} with several requests, at most "
        f"{s.max_requests}), {s.requests_seen} requests in request slots {s.slots_seen}, "
        f"{s.rows_checked} history rows ({s.positions_checked} positions) and {s.draws_checked} "
        "draws checked against each request's own committed tokens"
    )


def describe(item: dict[str, Any]) -> str:
    who = f"step {item.get('step')} ({item.get('file')}), request {item.get('req_id')!r} in slot "
    who += str(item.get("slot"))
    if item.get("what") == "history":
        return (
            f"{who}: history position {item.get('pos')} holds {item.get('history')}, its own "
            f"token is {item.get('own')}"
        )
    holders = item.get("rows_holding_drawn") or []
    return (
        f"{who}: draw k={item.get('k')} at index {item.get('index')} drew {item.get('drawn')}, "
        f"its own token is {item.get('own')} (history rows holding the drawn token there: "
        f"{holders})"
    )


def verdict(s: AuditSummary) -> tuple[int, str]:
    """The exit code and the report."""
    if s.files == 0:
        return INPUT_LACKS, (
            f"NOTHING TO JUDGE: {s.folder} holds no {RECORD_GLOB} (was the audited speculator.py "
            "installed, J0 on and VLLM_DFLASH_AUDIT set to this folder?); not a pass"
        )
    if s.steps == 0:
        why = (
            "J0 was off in every start: the audit checks J0's history only"
            if s.starts and not s.starts_j0_on
            else "no draft step was audited"
        )
        return INPUT_LACKS, f"NOTHING TO JUDGE: {s.folder}: {s.starts} start(s), {why}; not a pass"
    if s.mismatches:
        shown = "\n  ".join(describe(item) for item in s.first)
        return CHECK_FAILED, (
            f"FAIL: {s.row_mismatches} history rows ({s.mismatched_positions} positions) and "
            f"{s.draw_mismatches} draws do not hold the request's own committed tokens, in "
            f"{s.steps_with_mismatches} of {s.steps} steps; {_counts(s)}\n  {shown}"
        )
    return OK, f"PASS: {_counts(s)}; no mismatch"
