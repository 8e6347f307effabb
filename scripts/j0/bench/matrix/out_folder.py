"""The results folder of `j0 bench matrix`, claimed before anything is written: new, empty, or
holding only what a dry run of a matrix wrote there (its matrix.json says "dry_run": true), which
the real run then replaces. Anything else in it is the user's and is never overwritten: a
prompts.jsonl or a folder named like a setting that the user put there is refused (exit 64), and
so is a matrix that ran (its matrix.json without "dry_run").

Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

from j0.bench.matrix.layout import MATRIX_JSON, PROMPTS, MatrixJson
from j0.errors import USAGE, InputLimit, J0Error, read_json_file

K8S_DIR = "k8s"  # j0.bench.matrix.k8s.backend.MANIFEST_DIR
SHOWN = 3


def dry_run_record(out: Path) -> MatrixJson | None:
    """OUT/matrix.json where it is the record of a dry run (read through its type: one of other
    kinds is refused naming the file, exit 2), else None."""
    path = out / MATRIX_JSON
    if not os.path.lexists(path):
        return None
    # Bounded (a regular file under its limit, JSON nested at most JsonLimit.DEPTH deep): what
    # it cannot read is refused naming the file (exit 2), never taken for a dry run's record.
    value = read_json_file(path, limit=InputLimit.ANY)
    if isinstance(value, dict) and value.get("dry_run") is True:
        return MatrixJson.from_json(value, str(path))
    return None


def dry_run_names(record: MatrixJson) -> set[str]:
    """What a dry run writes in OUT: its record, the prompts, the k8s manifests' folder and one
    folder per setting (compose's baseline override)."""
    return {MATRIX_JSON, PROMPTS, K8S_DIR} | {entry.name for entry in record.settings}


def claim_out_folder(out: Path) -> None:
    """Refuse (exit 64) an --out that holds anything but a dry run's files; make it if new."""
    if os.path.lexists(out) and not out.is_dir():
        raise J0Error(f"--out {out}: a file; expected the results folder", USAGE)
    entries = sorted(os.listdir(out)) if out.is_dir() else []
    if entries:
        record = dry_run_record(out)
        if record is None and MATRIX_JSON in entries:
            raise J0Error(
                f"{out / MATRIX_JSON} exists: a matrix ran there already; choose another --out",
                USAGE,
            )
        foreign = entries if record is None else sorted(set(entries) - dry_run_names(record))
        if foreign:
            shown = ", ".join(foreign[:SHOWN])
            more = f" and {len(foreign) - SHOWN} more" if len(foreign) > SHOWN else ""
            raise J0Error(
                f"--out {out}: holds files that are not a matrix dry run's ({shown}{more}); a "
                "matrix writes only into a new or empty folder: choose another --out",
                USAGE,
            )
    out.mkdir(parents=True, exist_ok=True)
