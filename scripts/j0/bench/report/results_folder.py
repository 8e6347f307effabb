"""The settings of a results folder: DIR/<setting>/result.json (compose) or
DIR/<setting>/result-shard-NN.json (sharded runs, merged here per setting by request: a request
measured in two shards is kept once, from the first; a request is its prompt and its repeat).
A request whose figures cannot be true (results.entry_problems: a negative count, accepted >
drafted, NaN, ...) is set aside in `excluded` with its reasons, out of every figure.
A setting's draft tokens, J0 state, prefix caching and whether it is the baseline come from
DIR/matrix.json where there is one, else from the result's manifest and responses, else from a
name like `k15-j0-on` (or `baseline`); but J0's state comes first from the file that ran, where
the setting's server log showed it (matrix.json's `j0_ran`, a manifest's `j0` from --log or
--status-json): what was asked never labels a setting the log contradicts (said in its notes).

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j0.bench.result import results
from j0.bench.result.manifest import state_of
from j0.bench.result.request_entry import RequestEntry
from j0.bench.result.results import BenchResult
from j0.engine.server.j0_state import NOT_APPLICABLE, ON_OFF, STATES, J0State
from j0.errors import INPUT_LACKS, J0Error

if TYPE_CHECKING:
    from j0.bench.matrix.layout import PointEntry

_NAME = re.compile(r"k(?P<k>\d+).*?j0[-_]?(?P<j0>on|off)", re.IGNORECASE)
BASELINE_NAME = "baseline"


@dataclass
class PointResults:
    name: str
    files: list[Path]
    requests: list[RequestEntry] = field(default_factory=list)
    docs: list[BenchResult] = field(default_factory=list)
    k: int | None = None
    j0: str = "unknown"
    j0_as: str | None = None  # "run": a log or status showed the file that ran; "asked": not
    prefix_caching: str = "unknown"
    baseline: bool = False
    notes: list[str] = field(default_factory=list)
    # requests whose figures cannot be true (results.entry_problems): named, not pooled
    excluded: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> list[RequestEntry]:
        return [r for r in self.requests if r.ok]

    @property
    def repeats(self) -> list[int]:
        """The repeats the setting's requests belong to, in order (one, 0, for older files)."""
        return sorted({r.repeat for r in self.requests}) or [0]


def prompt_key(entry: RequestEntry) -> str:
    return str(entry.prompt_sha256 or entry.prompt_id)


def request_key(entry: RequestEntry) -> tuple[str, int]:
    return prompt_key(entry), entry.repeat


def find_settings(folder: Path) -> list[PointResults]:
    if not folder.is_dir():
        what = "a file, expected the results folder" if folder.exists() else "no such folder"
        raise J0Error(f"{folder}: {what}", INPUT_LACKS)
    settings = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        files = [sub / "result.json"] if (sub / "result.json").is_file() else []
        files += sorted(sub.glob("result-shard-*.json"))
        if files:
            settings.append(PointResults(sub.name, files))
    if not settings:
        raise J0Error(
            f"{folder}: no <setting>/result.json or <setting>/result-shard-NN.json inside",
            INPUT_LACKS,
        )
    matrix = _matrix_settings(folder)
    for setting in settings:
        _merge(setting)
        _describe(setting, matrix.get(setting.name))
    return settings


def _matrix_settings(folder: Path) -> dict[str, PointEntry]:
    from j0.bench.matrix.layout import read_settings

    return read_settings(folder)


def _merge(setting: PointResults) -> None:
    seen: set[tuple[str, int]] = set()
    for path in setting.files:
        doc = results.read_result(path)
        setting.docs.append(doc)
        for position, entry in enumerate(doc.requests):
            problems = results.entry_problems(entry)
            if problems:
                setting.excluded.append(_excluded(path, position, entry, problems))
                continue
            key = request_key(entry)
            if key in seen:
                setting.notes.append(f"{path.name}: request {entry.prompt_id} seen before")
                continue
            seen.add(key)
            setting.requests.append(entry)
        if not doc.complete:
            setting.notes.append(f"{path.name}: incomplete run ({doc.error})")
        status = doc.metrics_crosscheck.status
        if status == "mismatch":
            setting.notes.append(f"{path.name}: per-request metrics and /metrics deltas differ")
        elif status == "out of range":
            setting.notes.append(
                f"{path.name}: the /metrics deltas are outside their possible ranges ("
                + "; ".join(map(str, doc.metrics_crosscheck.delta_problems or []))
                + ")"
            )


def _excluded(
    path: Path, position: int, entry: RequestEntry, problems: list[str]
) -> dict[str, Any]:
    return {
        "file": path.name,
        "request": entry.index if entry.has("index") else position,
        "prompt_id": entry.prompt_id,
        "repeat": entry.repeat if entry.has("repeat") else None,
        "reasons": problems,
    }


def _recorded_j0(setting: PointResults, matrix: PointEntry | None) -> list[J0State]:
    """What records J0's state, first first: matrix.json's entry (J0 as its server's log showed
    it), the result's manifest (--log, --status-json, else --j0)."""
    manifest = setting.docs[0].manifest
    states = [matrix.state] if matrix and matrix.state else []
    if manifest.present & {"j0", "j0_state"}:
        states.append(state_of(manifest, f"{setting.files[0]}: manifest"))
    return states


def _describe(setting: PointResults, matrix: PointEntry | None) -> None:
    if matrix:
        setting.k = matrix.num_speculative_tokens
        setting.baseline = matrix.baseline
        if matrix.prefix_caching is not None:
            setting.prefix_caching = "on" if matrix.prefix_caching else "off"
    if setting.name == BASELINE_NAME:
        setting.baseline = True
    if setting.baseline:
        setting.k, setting.j0 = 0, NOT_APPLICABLE
        return
    records = _recorded_j0(setting, matrix)
    # the label comes from the file that ran where one showed it, never from what was asked
    seen = next((s for s in records if s.seen and s.ran in STATES), None)
    recorded = next((s.asked for s in records if s.asked in ON_OFF), None)
    named = J0State.from_name(setting.name)
    asked = recorded or (named.asked if named else None)
    if seen is not None:
        if recorded is not None and recorded != seen.ran:
            setting.notes.append(
                f"J0 {recorded} was asked, but the file that ran says J0 {seen.ran}: "
                f"labelled J0 {seen.ran}"
            )
        setting.j0, setting.j0_as = seen.ran, "run"
    elif asked is not None:
        setting.j0, setting.j0_as = asked, "asked"  # --j0, matrix.json's or the name: not verified
    if setting.k is None:
        ks = {(r.speculative_decoding or {}).get("num_spec_tokens") for r in setting.requests} - {
            None
        }
        if len(ks) == 1:
            setting.k = int(ks.pop())
    match = _NAME.search(setting.name)
    if match:
        if setting.k is None:
            setting.k = int(match["k"])
