"""What the readers of a `j0 bench run` result file (`j0 bench report`, the pairing, the figures)
take each key to be, checked once when the file is read: a file with a key of another type (a
string where a count goes, a list where an object goes, per-step arrays of different lengths) is
refused naming the file, the request and the key (exit 2), rather than crashing a reader.

Absent keys and null are allowed where the writer may leave them so; the values' ranges are not
judged here (that is the figures' business), only their types and shapes. The request entries'
kinds and check are their type's (request_entry.RequestEntry, entry_problem), the manifest's its
own (manifest.SetupManifest).

Standard library only.
"""

from __future__ import annotations

from typing import Any

from j0.bench.result.manifest import problem_of as manifest_problem
from j0.bench.result.metrics_crosscheck import problem_of as crosscheck_problem
from j0.bench.result.request_entry import entry_problem, kinds_named
from j0.edge.fields import is_of, shown


def _typed(where: str, mapping: dict[str, Any], types: dict[str, tuple[type, ...]]) -> str | None:
    for key, wanted in types.items():
        value = mapping.get(key)
        if value is not None and not is_of(value, wanted):
            return f"{where}{key!r} is {shown(value)}, expected {kinds_named(wanted)}"
    return None


def document_problem(doc: dict[str, Any], top: dict[str, tuple[type, ...]]) -> str | None:
    """What in a result document has another type than the readers take (`top`: its top-level
    keys' kinds, null aside, as results.BenchResult declares them), or None."""
    problem = _typed("", doc, top)
    if problem is not None:
        return f"key {problem}"
    for key in ("format_version", "repeats"):
        if key in doc and doc[key] is None:
            return f"key {key!r} is null, expected int"
    if isinstance(doc.get("metrics_crosscheck"), dict):
        if (problem := crosscheck_problem(doc["metrics_crosscheck"])) is not None:
            return f"key 'metrics_crosscheck': {problem}"
    if isinstance(doc.get("manifest"), dict):
        if (problem := manifest_problem(doc["manifest"])) is not None:
            return f"key 'manifest': {problem}"
    for index, entry in enumerate(doc.get("requests") or []):
        problem = entry_problem(index, entry)
        if problem is not None:
            return problem
    return None
