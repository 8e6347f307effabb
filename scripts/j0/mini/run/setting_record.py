"""setting.json, one setting of `j0 mini run` as it ran, as a type: what was started (kind,
drafter, draft tokens, J0 and its seed, slots, sampling, port, the speculative config), J0 as the
server's log shows it ran (j0, speculator_identity, j0_from) beside what was asked (j0_asked),
the setting's figures (pooled acceptance length, request means by context, requests answered,
the /metrics cross-check), its checks (dump_pass, dumps_check, crosscheck, lines) and its
problems. `j0 mini run` writes it into the setting's folder and gathers every one into
mini-run.json's `settings`; its comparisons and `j0 mini numbers` read it through this type. The
keys are the ones written, in their order, so a record read back is written as it was.

Runs from before setting.json was written (docs/results/mini-h200/2026-12-01-loops) are
described from their folder names (`from_folder_name`), the one place that does so.

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from j0.edge.document import KeptKeys, absent, attribute, needed
from j0.edge.fields import listed, read_document, write_document
from j0.engine.server.j0_state import OFF, ON, UNKNOWN, J0State

SETTING_JSON = "setting.json"
BASELINE = "baseline"  # no speculative decoding
NGRAM = "ngram"  # vLLM's prompt lookup
DFLASH = "dflash"
KINDS = (DFLASH, NGRAM, BASELINE)

_DFLASH_NAME = re.compile(r"drafter-(\w+)/k(\d+)-j0-(on|off)(?:-seed(\d+))?")
_NGRAM_NAME = re.compile(r"ngram/k(\d+)")


@dataclass
class PointRecord(KeptKeys):
    """One setting's record, a typed document in the writer's order; a key it lacks reads as
    None (a key whose default is absent() is never null where it is there)."""

    dump_pass: dict[str, Any] | None = absent()
    kind: Annotated[str, listed(KINDS)] = needed(default="")
    drafter: str | None = None
    k: int | None = None
    j0: str | bool | None = None  # as the log shows it; records of older runs: as asked
    seed: int | None = None
    slots: int | None = absent()
    temperature: float | None = absent()
    sample_seed: int | None = None
    port: int | None = absent()
    servers_at_once: int | None = absent()
    speculative_config: dict[str, Any] | None = None
    speculator_sha256: str | None = absent()
    j0_asked: str | None = None
    speculator_identity: str | None = None
    j0_from: str | None = absent()
    j0_state: dict[str, Any] | None = absent()  # J0State.to_json(): the one form (j0 ...: older)
    pooled_acceptance_length: float | None = None
    per_request_mean_by_context: dict[str, float] | None = absent()
    requests_ok: int | None = absent()
    metrics_crosscheck: str | None = None
    dumps_check: dict[str, Any] | None = absent()
    crosscheck: dict[str, Any] | None = absent()
    lines: list[Any] | None = absent()  # in words
    problems: list[Any] | None = absent()  # in words
    missing: list[Any] | None = absent()  # in words
    keys: tuple[str, ...] = attribute(default=())
    extra: dict[str, Any] = attribute(default_factory=dict)

    def state(self) -> J0State:
        """J0 as asked and as run (J0State.from_json: this record's j0_state, or an older
        record's keys; a record from a folder's name holds what was asked)."""
        return J0State.from_json(self.to_json(), f"the setting {self.kind}")

    def ran_as_asked(self, j0: bool) -> bool:
        """A setting that ran J0 on (off) as asked: the label from its server's log (on, off;
        j0.engine.server.j0_state) and what was asked agree; an older run's record holds what was
        asked (a boolean), not what ran."""
        want = ON if j0 else OFF
        state = self.state()
        if not state.seen:
            return state.asked == want
        return state.ran == want and state.asked in (want, UNKNOWN)

    @classmethod
    def checked(cls, value: Any, where: str) -> PointRecord:
        """The record, or J0Error naming `where`, the key, its value and what was expected."""
        return cls.from_json(value, where)

    @classmethod
    def read(cls, path: Path) -> PointRecord:
        value = read_document(path, f"the {SETTING_JSON} of `j0 mini run`")
        return cls.checked(value, str(path))

    def write(self, folder: Path) -> None:
        write_document(folder / SETTING_JSON, self.to_json())

    @classmethod
    def from_folder_name(cls, name: str) -> PointRecord | None:
        """A run from before setting.json: the setting as its folder's name says it
        (drafter-mask/k7-j0-on[-seedS], ngram/kK, baseline), J0 as asked; None for another."""
        if match := _DFLASH_NAME.fullmatch(name):
            return cls.made(
                kind=DFLASH,
                drafter=match[1],
                k=int(match[2]),
                j0=match[3] == ON,
                seed=int(match[4]) if match[4] else None,
            )
        if match := _NGRAM_NAME.fullmatch(name):
            return cls.made(kind=NGRAM, k=int(match[1]))
        if name == BASELINE:
            return cls.made(kind=BASELINE, k=None)
        return None
