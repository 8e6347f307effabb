"""The results table of scripts/engine-scenarios-h200.sh: scenario x file -> audit verdict, rows
checked, mismatches, preemptions, outputs J0 on vs off.

    python -m j0.engine_check.scenarios.table RESULTS

RESULTS holds one folder per server run, each with the scenarios.json that
j0.engine_check.scenarios.sender wrote and, for J0 on, the audit's records in its `audit/`
folder. Each J0-on scenario's audit verdict comes from the records written while it ran
(j0.article.audit_records, the same reader as `j0 dumps audit`). Outputs are compared with the
J0-off run of the same prefix caching and mode: token for token in single-stream scenarios;
under concurrency they are "not comparable" (a WARN: vLLM's batch-dependent numerics can change
outputs J0 on vs off even for the base file), and so is a run with no J0-off partner. Writes
RESULTS/table.md and RESULTS/table.json; exit 0 when written, 2 when RESULTS holds no run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from j0.article.audit_records import read_folder, verdict
from j0.engine_check.scenarios.record import SCENARIOS_JSON, ScenarioRecord, ScenariosRun
from j0.errors import INPUT_LACKS, J0Error

# What the issue expects of each file: the article's file right without prefix caching and
# showing its known cross-request defect at prefix hits with it; the variant right everywhere.
PREFIX_SCENARIOS = ("prefix", "prefix-4")


def expected(run: ScenariosRun, scenario: ScenarioRecord) -> str:
    """What issue 30 expects of this file here. A preempted request of the article's file may
    resume from its own cached blocks in another request slot: the same known defect."""
    if run.j0 != "on":
        return "-"
    if run.file == "article" and run.caching == "on":
        if scenario.name in PREFIX_SCENARIOS:
            return "FAIL (known defect)"
        if scenario.preemptions:
            return "PASS, or the known defect (resumed from cached blocks)"
    return "PASS"


def load_runs(results: Path) -> list[tuple[Path, ScenariosRun]]:
    """Every RESULTS/*/scenarios.json, typed (J0Error, exit 2, naming the file, the part, the key
    and the value of one that is not what j0.engine_check.scenarios.sender writes)."""
    return [
        (path.parent, ScenariosRun.read(path))
        for path in sorted(results.glob(f"*/{SCENARIOS_JSON}"))
    ]


def audit_cell(folder: Path, scenario: ScenarioRecord) -> dict[str, Any]:
    if not folder.is_dir():
        return {"verdict": "NO RECORDS", "rows": 0, "draws": 0, "mismatches": 0}
    summary = read_folder(folder, scenario.audit_lines)
    code, _ = verdict(summary)
    word = {0: "PASS", 1: "FAIL"}.get(code, "NOTHING TO JUDGE")
    return {
        "verdict": word,
        "steps": summary.steps,
        "batched_steps": summary.batched_steps,
        "rows": summary.rows_checked,
        "draws": summary.draws_checked,
        "mismatches": summary.mismatches,
        "mismatched_positions": summary.mismatched_positions,
        "first": summary.first[:2],
    }


def compare_outputs(
    run: ScenariosRun, scenario: ScenarioRecord, partner: ScenariosRun | None
) -> str:
    if run.j0 != "on":
        return "-"
    if partner is None:
        return f"WARN not comparable: no J0-off run with caching {run.caching}, {run.mode}"
    other = partner.scenario(scenario.name)
    if other is None:
        return "WARN not comparable: the J0-off run lacks this scenario"
    if not scenario.single_stream:
        same = scenario.outputs == other.outputs
        return (
            f"WARN not comparable ({'same' if same else 'differ'}): concurrent streams; "
            "batch-dependent numerics"
        )
    if any(o is None for o in scenario.outputs + other.outputs):
        return "WARN not comparable: a response without token ids"
    return "same" if scenario.outputs == other.outputs else "DIFFER"


def build_table(results: Path) -> list[dict[str, Any]]:
    runs = load_runs(results)
    if not runs:
        raise J0Error(f"{results}: no */scenarios.json: no run to tabulate", INPUT_LACKS)
    offs = {(r.caching, r.mode): r for _, r in runs if r.j0 == "off"}
    rows = []
    for folder, run in runs:
        partner = offs.get((run.caching, run.mode))
        for scenario in run.scenarios:
            row = {
                "run": run.label,
                "file": run.file,
                "caching": run.caching,
                "j0": run.j0,
                "mode": run.mode,
                "scenario": scenario.name,
                "forces": scenario.forces,
                "preemptions": scenario.preemptions,
                "cached_tokens": scenario.cached_tokens,
                "expected": expected(run, scenario),
                "outputs_vs_j0_off": compare_outputs(run, scenario, partner),
            }
            if run.j0 == "on":
                row["audit"] = audit_cell(folder / "audit", scenario)
            rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    head = (
        "| run | file | caching | J0 | mode | scenario | audit | expected | rows | draws | "
        "mismatches | preemptions | cached tokens | outputs vs J0 off |\n"
        "|---|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---|\n"
    )
    lines = []
    for r in rows:
        audit = r.get("audit") or {}
        lines.append(
            f"| {r['run']} | {r['file']} | {r['caching']} | {r['j0']} | {r['mode']} | "
            f"{r['scenario']} | {audit.get('verdict', '-')} | {r['expected']} | "
            f"{audit.get('rows', '-')} | {audit.get('draws', '-')} | "
            f"{audit.get('mismatches', '-')} | {r['preemptions']} | {r['cached_tokens']} | "
            f"{r['outputs_vs_j0_off']} |"
        )
    forces = sorted({(r["scenario"], r["forces"]) for r in rows})
    legend = "\n".join(f"- `{name}`: {text}" for name, text in forces)
    return head + "\n".join(lines) + "\n\nScenarios:\n\n" + legend + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m j0.engine_check.scenarios.table RESULTS", file=sys.stderr)
        return 64
    results = Path(args[0])
    try:
        rows = build_table(results)
    except J0Error as exc:
        print(f"scenario_table: {exc}", file=sys.stderr)
        return exc.exit_code
    (results / "table.json").write_text(json.dumps(rows, indent=1) + "\n")
    (results / "table.md").write_text(markdown(rows))
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
