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

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.edge.fields import (
    NULL,
    NUMBER,
    FieldTable,
    KeptKeys,
    checked_object,
    read_document,
    shown,
    write_document,
)
from j0.engine.j0_state import OFF, ON, UNKNOWN, J0State
from j0.errors import INPUT_LACKS, J0Error

SETTING_JSON = "setting.json"
BASELINE = "baseline"  # no speculative decoding
NGRAM = "ngram"  # vLLM's prompt lookup
DFLASH = "dflash"
KINDS = (DFLASH, NGRAM, BASELINE)

# (kinds, needed), in the writer's order; tests/mini/test_setting_record.py holds it to the fields.
SETTING_FIELDS: FieldTable = {
    "dump_pass": ((dict,), False),
    "kind": ((str,), True),
    "drafter": ((str, NULL), False),
    "k": ((int, NULL), False),
    "j0": ((str, bool, NULL), False),  # as the log shows it; records of older runs: as asked
    "seed": ((int, NULL), False),
    "slots": ((int,), False),
    "temperature": (NUMBER, False),
    "sample_seed": ((int, NULL), False),
    "port": ((int,), False),
    "servers_at_once": ((int,), False),
    "speculative_config": ((dict, NULL), False),
    "speculator_sha256": ((str,), False),
    "j0_asked": ((str, NULL), False),
    "speculator_identity": ((str, NULL), False),
    "j0_from": ((str,), False),
    "j0_state": ((dict,), False),  # J0State.to_json(): the one form (j0 ... j0_from: older)
    "pooled_acceptance_length": ((*NUMBER, NULL), False),
    "per_request_mean_by_context": ((dict,), False),
    "requests_ok": ((int,), False),
    "metrics_crosscheck": ((str, NULL), False),
    "dumps_check": ((dict,), False),
    "crosscheck": ((dict,), False),
    "lines": ((list,), False),
    "problems": ((list,), False),
    "missing": ((list,), False),
}
_DFLASH_NAME = re.compile(r"drafter-(\w+)/k(\d+)-j0-(on|off)(?:-seed(\d+))?")
_NGRAM_NAME = re.compile(r"ngram/k(\d+)")


@dataclass
class SettingRecord(KeptKeys):
    """One setting's record (SETTING_FIELDS says each key); a key it lacks reads as None."""

    FIELD_TABLE = SETTING_FIELDS

    dump_pass: dict[str, Any] | None = None
    kind: str = ""
    drafter: str | None = None
    k: int | None = None
    j0: str | bool | None = None
    seed: int | None = None
    slots: int | None = None
    temperature: float | None = None
    sample_seed: int | None = None
    port: int | None = None
    servers_at_once: int | None = None
    speculative_config: dict[str, Any] | None = None
    speculator_sha256: str | None = None
    j0_asked: str | None = None
    speculator_identity: str | None = None
    j0_from: str | None = None
    j0_state: dict[str, Any] | None = None
    pooled_acceptance_length: float | None = None
    per_request_mean_by_context: dict[str, float] | None = None
    requests_ok: int | None = None
    metrics_crosscheck: str | None = None
    dumps_check: dict[str, Any] | None = None
    crosscheck: dict[str, Any] | None = None
    lines: list[str] | None = None
    problems: list[str] | None = None
    missing: list[str] | None = None
    keys: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def state(self) -> J0State:
        """J0 as asked and as run (J0State.from_json: this record's j0_state, or an older
        record's keys; a record from a folder's name holds what was asked)."""
        return J0State.from_json(self.to_json(), f"the setting {self.kind}")

    def ran_as_asked(self, j0: bool) -> bool:
        """A setting that ran J0 on (off) as asked: the label from its server's log (on, off;
        j0.engine.j0_state) and what was asked agree; an older run's record holds what was asked
        (a boolean), not what ran."""
        want = ON if j0 else OFF
        state = self.state()
        if not state.seen:
            return state.asked == want
        return state.ran == want and state.asked in (want, UNKNOWN)

    @classmethod
    def checked(cls, value: Any, where: str) -> SettingRecord:
        """The record, or J0Error naming `where`, the key, its value and what was expected."""
        checked_object(value, SETTING_FIELDS, where)
        if value["kind"] not in KINDS:
            raise J0Error(
                f"{where}: 'kind' is {shown(value['kind'])}, expected one of "
                + ", ".join(map(json.dumps, KINDS)),
                INPUT_LACKS,
            )
        return cls.from_json(value)

    @classmethod
    def read(cls, path: Path) -> SettingRecord:
        value = read_document(path, f"the {SETTING_JSON} of `j0 mini run`")
        return cls.checked(value, str(path))

    def write(self, folder: Path) -> None:
        write_document(folder / SETTING_JSON, self.to_json())

    @classmethod
    def from_folder_name(cls, name: str) -> SettingRecord | None:
        """A run from before setting.json: the setting as its folder's name says it
        (drafter-mask/k7-j0-on[-seedS], ngram/kK, baseline), J0 as asked; None for another."""
        if match := _DFLASH_NAME.fullmatch(name):
            return cls.from_json(
                {
                    "kind": DFLASH,
                    "drafter": match[1],
                    "k": int(match[2]),
                    "j0": match[3] == ON,
                    "seed": int(match[4]) if match[4] else None,
                }
            )
        if match := _NGRAM_NAME.fullmatch(name):
            return cls.from_json({"kind": NGRAM, "k": int(match[1])})
        if name == BASELINE:
            return cls.from_json({"kind": BASELINE, "k": None})
        return None
