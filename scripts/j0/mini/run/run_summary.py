"""mini-run.json, the summary of a `j0 mini run` folder, as a type: how the run was made (its
folder, context length, the training it read, sampling, servers at once, contexts, draft tokens,
prompts, slots, J0's seeds, seconds, the variant and the speculator.py it served), every
setting's record (setting.json's, by name), the gate, the comparisons, the reports, and the
problems and missing pieces. `j0 mini run` writes it last (so a folder without one did not
finish); its markdown, `j0 mini numbers` and the next run's check of the folder read it through
this type. The keys are the ones written, in their order: the first runs wrote fewer (no
sampling, slots, seeds, gate or comparisons), and are read as they are.

Standard library only.
"""

from __future__ import annotations

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
from j0.errors import INPUT_LACKS, J0Error
from j0.mini.run.setting_record import SettingRecord

MINI_RUN_JSON = "mini-run.json"
# (kinds, needed), in the writer's order; tests/mini/test_run_summary.py holds it to the fields.
SUMMARY_FIELDS: FieldTable = {
    "out": ((str,), True),
    "max_model_len": ((int,), True),
    "trained": ((dict,), False),
    "temperature": (NUMBER, False),
    "sample_seed": ((int, NULL), False),
    "servers_at_once": ((int,), False),
    "contexts": ((list,), True),
    "tokens": ((list,), False),
    "requests_per_context": ((int,), True),
    "requests_by_context": ((dict,), False),
    "max_tokens": ((int,), True),
    "target_seq": ((int, NULL), False),
    "beyond_training": ((list,), False),
    "slots": ((int,), False),
    "j0_seeds": ((list,), False),
    "seconds": (NUMBER, False),
    "variant": ((str,), False),
    "speculator": ((dict,), False),
    "settings": ((dict,), True),
    "gate": ((dict,), False),
    "comparisons": ((dict,), False),
    "reports": ((dict,), False),
    "problems": ((list,), True),
    "missing": ((list,), True),
}


@dataclass
class RunSummary(KeptKeys):
    """The summary (SUMMARY_FIELDS says each key); a key it lacks reads as None."""

    FIELD_TABLE = SUMMARY_FIELDS

    out: str = ""
    max_model_len: int = 0
    trained: dict[str, Any] | None = None
    temperature: float | None = None
    sample_seed: int | None = None
    servers_at_once: int | None = None
    contexts: list[int] = field(default_factory=list)
    tokens: list[int] | None = None
    requests_per_context: int = 0
    requests_by_context: dict[str, int] | None = None  # where the longest context has more
    max_tokens: int = 0
    target_seq: int | None = None  # the target's training window (None: not recorded)
    beyond_training: list[int] | None = None  # contexts whose prompt + output pass target_seq
    slots: int | None = None
    j0_seeds: list[int] | None = None
    seconds: float | None = None
    variant: str | None = None
    speculator: dict[str, Any] | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # setting.json's records, by name
    gate: dict[str, Any] | None = None
    comparisons: dict[str, Any] | None = None
    reports: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    keys: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every setting ran and every check passed: nothing in problems or missing."""
        return not self.problems and not self.missing

    def records(self) -> dict[str, SettingRecord]:
        """The settings' records as their type (as they were gathered from setting.json)."""
        return {name: SettingRecord.from_json(value) for name, value in self.settings.items()}

    @classmethod
    def checked(cls, value: Any, where: str) -> RunSummary:
        """The summary, or J0Error naming `where`, the key, its value and what was expected."""
        checked_object(value, SUMMARY_FIELDS, where)
        for name, record in value["settings"].items():
            if not isinstance(record, dict):
                raise J0Error(
                    f"{where}: settings[{name!r}] is {shown(record)}, expected an object",
                    INPUT_LACKS,
                )
        return cls.from_json(value)

    @classmethod
    def read(cls, path: Path) -> RunSummary:
        value = read_document(path, f"the {MINI_RUN_JSON} of `j0 mini run`")
        return cls.checked(value, str(path))

    def write(self, work: Path) -> None:
        write_document(work / MINI_RUN_JSON, self.to_json())
