"""What the readers of a `j0 bench run` result file (`j0 bench report`, the pairing, the figures)
take each key to be, checked once when the file is read: a file with a key of another type (a
string where a count goes, a list where an object goes, per-step arrays of different lengths) is
refused naming the file, the request and the key (exit 2), rather than crashing a reader.

Absent keys and null are allowed where the writer (results.request_entry) may leave them so; the
values' ranges are not judged here (that is the figures' business), only their types and shapes.

Standard library only.
"""

from __future__ import annotations

from typing import Any

from j0.bench.manifest import problem_of as manifest_problem
from j0.edge.fields import NUMBER, is_of, shown
from j0.engine import spec_counts

_NUMBER = NUMBER
TOP_TYPES: dict[str, tuple[type, ...]] = {
    "format_version": (int,),
    "label": (str,),
    "complete": (bool,),
    "error": (str,),
    "acceptance_length": _NUMBER,
    "acceptance_rate": _NUMBER,
    "per_position_acceptance": (list,),
    "acceptance_length_request_mean": _NUMBER,
    "acceptance_histogram": (list,),
    "acceptance_by_context_request_mean": (dict,),
    "acceptance_source": (str,),
    "counts": (dict,),
    "metrics_crosscheck": (dict,),
    "acceptance_by_context": (dict,),
    "summary": (dict,),
    "repeats": (int,),
    "flags": (list,),
    "notes": (list,),
    "warmup": (dict,),
    "manifest": (dict,),
    "requests": (list,),
}
# An entry's times and rates (results.py reads its checks of times from here too).
ENTRY_TIMES = (
    "ttft_ms",
    "itl_ms_mean",
    "itl_ms_median",
    "tpot_ms",
    "latency_s",
    "decode_s",
    "output_tok_s",
    "client_time_s",
)
ENTRY_TYPES: dict[str, tuple[type, ...]] = {
    **{
        key: _NUMBER for key in ("started_at", *ENTRY_TIMES, "acceptance_length", "acceptance_rate")
    },
    "index": (int,),
    # counts may be any numbers here: one that is no count (12.5, -4) is the range checks'
    **{key: _NUMBER for key in ("prompt_tokens", "cached_tokens", "output_tokens")},
    **{
        key: (str,)
        for key in (
            "prompt_id",
            "prompt_sha256",
            "prompt_source",
            "error",
            "finish_reason",
            "output_sha256",
        )
    },
    "ok": (bool,),
    "speculative_decoding": (dict,),
    "repetition": (dict,),
    "output_text": (str,),
    "flags": (list,),
    "warnings": (list,),
}
# Never null where present: read as int(entry.get("repeat", 0)), entry["num_chunks"] - 1.
NOT_NULL = {"repeat": (int,), "num_chunks": (int,)}
INT_LISTS = (
    "chunk_tokens",
    "output_token_ids",
    "per_step_accepted",
    "per_step_drafted",
    "per_step_context_length",
)


def _names(types: tuple[type, ...]) -> str:
    return " or ".join("a number" if t in _NUMBER else t.__name__ for t in types)


def _all_are(values: list[Any], types: tuple[type, ...]) -> bool:
    """_is of every item; plain items of the wanted types (thousands of per-step ints) at the
    speed of set(map(type, ...))."""
    return set(map(type, values)) <= set(types) - {bool} or all(is_of(x, types) for x in values)


def _typed(where: str, mapping: dict[str, Any], types: dict[str, tuple[type, ...]]) -> str | None:
    for key, wanted in types.items():
        value = mapping.get(key)
        if value is not None and not is_of(value, wanted):
            return f"{where}{key!r} is {shown(value)}, expected {_names(wanted)}"
    return None


def entry_problem(index: int, entry: Any) -> str | None:
    """What in one request entry has another type or shape than the readers take, or None."""
    where = f"requests[{index}]: "
    if not isinstance(entry, dict):
        return f"requests[{index}] is {shown(entry)}, expected an object"
    problem = _typed(where, entry, ENTRY_TYPES)
    for key, wanted in NOT_NULL.items():
        if problem is None and key in entry and not is_of(entry[key], wanted):
            problem = f"{where}{key!r} is {shown(entry[key])}, expected {_names(wanted)}"
    for key in INT_LISTS:
        value = entry.get(key)
        if problem is None and value is not None:
            # per-step counts may be any numbers here: one that is no count (2.5, -1) is the
            # range checks' (j0.engine.spec_ranges: flagged, kept out of the figures)
            item = (int, float) if key.startswith("per_step_") else (int,)
            if not isinstance(value, list) or not _all_are(value, item):
                what = "numbers" if key.startswith("per_step_") else "whole numbers"
                problem = f"{where}{key!r} is {shown(value)}, expected a list of {what}"
    if problem is not None:
        return problem
    lengths = {k: len(entry[k]) for k in INT_LISTS[2:] if isinstance(entry.get(k), list)}
    if len(set(lengths.values())) > 1:
        return f"{where}per-step arrays of different lengths ({lengths})"
    spec = entry.get("speculative_decoding")
    if spec:
        steps = {k: entry[k] for k in spec_counts.STEP_KEYS if k in entry}
        found = spec_counts.spec_problem({**spec, **steps}, whole=False)
        if found is not None:
            return f"{where}{found}"
    return None


def document_problem(doc: dict[str, Any]) -> str | None:
    """What in a result document has another type than the readers take, or None."""
    problem = _typed("", doc, TOP_TYPES)
    if problem is not None:
        return f"key {problem}"
    for key in ("format_version", "repeats"):
        if key in doc and doc[key] is None:
            return f"key {key!r} is null, expected int"
    if isinstance(doc.get("manifest"), dict):
        if (problem := manifest_problem(doc["manifest"])) is not None:
            return f"key 'manifest': {problem}"
    for index, entry in enumerate(doc.get("requests") or []):
        problem = entry_problem(index, entry)
        if problem is not None:
            return problem
    return None
