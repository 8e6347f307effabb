"""The results folder of `j0 bench matrix`, the same from both backends (`j0 bench report`
reads it):

    OUT/matrix.json                        the settings and how each ran (J0 on/off as the
                                           server's log shows it: j0_ran, judge_ran)
    OUT/<setting>/result.json              compose: one `j0 bench run` result per setting
    OUT/<setting>/result-shard-NN.json     k8s: one per shard of the prompts (report merges them)
    OUT/<setting>/server.log               the server's log (k8s: the shards' logs, one after
                                           the other, each under a `===== shard NN` line)
    OUT/prompts.jsonl                      the prompts every setting ran (where j0 made them)

Standard library only.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from j0.compose.server import MatrixPoint
from j0.edge.document import Document, absent, attribute, written_unless
from j0.edge.fields import Rule, is_of, one_of, read_document, write_document
from j0.engine.server import server_log
from j0.engine.server.j0_state import OFF, ON, STATES, UNKNOWN, J0State, j0_ran, not_applicable
from j0.pins import checkout_revision

MATRIX_JSON = "matrix.json"
SERVER_LOG = "server.log"
PROMPTS = "prompts.jsonl"
KIND = "j0-bench-matrix"
FORMAT_VERSION = 1

PREFIX_CACHING_OFF = (
    "off (--no-enable-prefix-caching): with prefix caching on, J0 draws the tokens of cached "
    "prompt positions from whatever its request slot's history holds (docs/selfcheck.md), "
    "which changes acceptance; pass --prefix-caching to run with vLLM's default"
)
PREFIX_CACHING_ON = (
    "on (--prefix-caching, vLLM's default): J0's history is not written for cached prompt "
    "positions, so acceptance with J0 on depends on what ran before in the same slot"
)


def result_name(shard: int | None) -> str:
    """compose: result.json; k8s: result-shard-NN.json."""
    return "result.json" if shard is None else f"result-shard-{shard:02d}.json"


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def j0_revision(root: Path) -> str:
    """The checkout's git commit (with -dirty for uncommitted changes), or "unknown"."""
    return checkout_revision(root).label() or "unknown"


@dataclass(slots=True)  # slots: a key set on the run instead of its entry is an error
class PointRun:
    """How one setting ran: `entry`, its entry in matrix.json as it runs (the setting as asked;
    its outcome: status pending, rendered, ok or failed, the files it left relative to OUT, ...,
    set by the backends), and J0 as asked and as the server's log shows it (`ran`, judge_ran)."""

    setting: MatrixPoint
    entry: PointEntry = field(init=False)
    ran: J0State | None = None

    def __post_init__(self) -> None:
        # the setting as asked: name, num_speculative_tokens, j0, ...
        self.entry = PointEntry(**self.setting.to_json())

    def written(self) -> PointEntry:
        """The setting's entry in matrix.json: `entry` with J0 as run."""
        ran = self.ran
        return dataclasses.replace(
            self.entry,
            j0_ran=ran.ran if ran is not None else None,
            speculator_identity=ran.identity if ran is not None else None,
            j0_from=ran.why if ran is not None else None,
            j0_state=self.j0_state().to_json(),
        )

    def to_json(self) -> dict[str, Any]:
        return self.written().to_json()

    def j0_state(self) -> J0State:
        """J0 as asked and as run: judge_ran's, else the baseline's (not applicable) or none
        read (unknown)."""
        if self.ran is not None:
            return self.ran
        if self.setting.baseline:
            return not_applicable("the baseline")
        asked = ON if self.setting.j0 else OFF
        return J0State(asked, UNKNOWN, "no server log was read", seen=False)


def judge_ran(run: PointRun, logs: list[str]) -> None:
    """Label the setting's J0 state from the server's log of each of its runs (compose: one;
    k8s: one per shard), never from what was asked (j0.engine.server.j0_state); a setting whose
    server did not run J0 as asked fails, saying what ran. The baseline has no J0 to judge."""
    if run.setting.baseline or not logs:
        return
    where = f"{run.setting.name}/{SERVER_LOG}"
    seen = [j0_ran(server_log.parse(text, where)).asking(run.setting.j0) for text in logs]
    differs = [d for d in (r.differs() for r in seen) if d]
    states = {r.ran for r in seen}
    run.ran = (
        seen[0] if len(states) == 1 else J0State(seen[0].asked, UNKNOWN, "its shards' logs differ")
    )
    if differs:
        run.entry.status = "failed"
        said = (run.entry.error, f"{run.setting.name}: {differs[0]}")
        run.entry.error = "; ".join(x for x in said if x)


@dataclass
class PointEntry(Document):
    """One of matrix.json's `settings`, as PointRun.written() writes it and read_settings reads
    it: the setting as asked, J0 as its server's log showed it (j0_ran; None where no log was
    read) and how it ran. prefix_caching is None where the record does not say (a record written
    by hand); `baseline` is written where true; `state` (no key) is J0 as asked and as run,
    J0State.from_json of the entry (any of its shapes)."""

    name: str
    num_speculative_tokens: Annotated[int, WHOLE_NUMBER]
    j0: bool
    prefix_caching: bool | None = absent()
    baseline: bool = written_unless(False)
    j0_ran: Annotated[str | None, one_of(STATES, or_null=True)] = None
    speculator_identity: str | None = None
    j0_from: str | None = None
    j0_state: dict[str, Any] | None = None
    status: str = "pending"
    error: str | None = None
    results: list[str] = field(default_factory=list)
    server_log: str | None = None
    server_args: list[str] = field(default_factory=list)
    server_env: dict[str, str] = field(default_factory=dict)
    started: str | None = None
    finished: str | None = None
    seconds: float | None = None
    shards: list[dict[str, Any]] = field(default_factory=list)
    state: J0State | None = attribute(default=None)

    @classmethod
    def from_json(cls, value: Any, where: str) -> PointEntry:
        """The entry, or J0Error naming `where`, the key, its value and what was expected."""
        entry = super().from_json(value, where)
        return dataclasses.replace(entry, state=J0State.from_json(value, where))


WHOLE_NUMBER = Rule("a whole number >= 0", lambda v: is_of(v, (int,)) and v >= 0)


@dataclass(frozen=True)
class MatrixJson(Document):
    """OUT/matrix.json: what MatrixRecord writes and read_settings reads. Every key but the
    settings may be left out (a record written by hand)."""

    kind: str = KIND
    format: int = FORMAT_VERSION
    backend: str | None = absent()
    created: str | None = absent()
    finished: str | None = None
    j0_revision: str | None = absent()
    prefix_caching: bool | None = absent()
    prefix_caching_note: str | None = absent()
    dataset: str | None = None
    requests: int | None = None
    max_tokens: int | None = None
    shards: int | None = absent()
    settings: list[PointEntry] = field(default_factory=list)
    prompts: dict[str, Any] = field(default_factory=dict)
    baseline: bool = False
    repeats: int = 1
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    dry_run: bool = False
    k8s: dict[str, Any] | None = absent()


@dataclass
class MatrixRecord:
    """OUT/matrix.json, rewritten (atomically) after every change so a crash leaves a record."""

    out: Path
    backend: str
    runs: list[PointRun]
    prefix_caching: bool
    dataset: str | None
    requests: int | None
    max_tokens: int | None
    shards: int
    j0_revision: str
    prompts: dict[str, Any] = field(default_factory=dict)  # the prompts file's name and sha256
    baseline: bool = False
    repeats: int = 1
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    dry_run: bool = False
    k8s: dict[str, Any] | None = None  # the k8s backend's run, manifests, image, namespace, ...
    created: str = field(default_factory=now)
    finished: str | None = None

    def document(self) -> MatrixJson:
        """The record as matrix.json holds it."""
        return MatrixJson(
            backend=self.backend,
            created=self.created,
            finished=self.finished,
            j0_revision=self.j0_revision,
            prefix_caching=self.prefix_caching,
            prefix_caching_note=PREFIX_CACHING_ON if self.prefix_caching else PREFIX_CACHING_OFF,
            dataset=self.dataset,
            requests=self.requests,
            max_tokens=self.max_tokens,
            shards=self.shards,
            settings=[run.written() for run in self.runs],
            prompts=self.prompts,
            baseline=self.baseline,
            repeats=self.repeats,
            system_prompt=self.system_prompt,
            system_prompt_file=self.system_prompt_file,
            dry_run=self.dry_run,
            k8s=self.k8s,
        )

    def to_json(self) -> dict[str, Any]:
        return self.document().to_json()

    def write(self) -> None:
        write_document(self.out / MATRIX_JSON, self.to_json(), indent=2)


def read_settings(out: Path) -> dict[str, PointEntry]:
    """OUT/matrix.json's settings by name, typed; {} where there is no matrix.json (a folder of
    `j0 bench run` results alone). J0Error for a record that is not valid JSON or whose entries
    have other types than MatrixJson says (named: file, entry, key, value)."""
    path = out / MATRIX_JSON
    if not path.is_file():
        return {}
    doc = read_document(path, f"the {MATRIX_JSON} of `j0 bench matrix`")
    return {entry.name: entry for entry in MatrixJson.from_json(doc, str(path)).settings}
