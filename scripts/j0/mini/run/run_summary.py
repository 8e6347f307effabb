"""mini-run.json, the summary of a `j0 mini run` folder, as a type: how the run was made (its
folder, context length, the training it read, sampling, servers at once, contexts, draft tokens,
prompts and the sha256 of the prompts.jsonl served, slots, J0's seeds, seconds, the variant and
the speculator.py it served), every setting's record (setting.json's, by name), the gate, the
comparisons, the reports, and the problems and missing pieces. `j0 mini run` writes it last (so a
folder without one did not finish); its markdown, `j0 mini numbers`, `j0 mini sets` and the next
run's check of the folder read it through this type. The keys are the ones written, in their
order: the first runs wrote fewer (no sampling, slots, seeds, gate or comparisons; those before
2026-12-08 no prompts_sha256), and are read as they are.

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from j0.edge.document import KeptKeys, absent, attribute, needed
from j0.edge.fields import Rule, read_document, shown, write_document
from j0.errors import INPUT_LACKS, J0Error
from j0.mini.run.setting_record import PointRecord

MINI_RUN_JSON = "mini-run.json"
SHA256 = Rule(
    "a sha256 (64 lowercase hex digits)",
    lambda value: isinstance(value, str) and re.fullmatch("[0-9a-f]{64}", value) is not None,
)


@dataclass
class RunSummary(KeptKeys):
    """The summary, a typed document in the writer's order; a key it lacks reads as None (a
    key whose default is absent() is never null where it is there)."""

    out: str = needed(default="")
    max_model_len: int = needed(default=0)
    trained: dict[str, Any] | None = absent()
    temperature: float | None = absent()
    sample_seed: int | None = None
    servers_at_once: int | None = absent()
    contexts: list[Any] = needed(default_factory=list)  # whole numbers
    tokens: list[Any] | None = absent()  # whole numbers
    requests_per_context: int = needed(default=0)
    requests_by_context: dict[str, int] | None = absent()  # where the longest context has more
    # the sha256 of the prompts.jsonl served (`j0 mini sets`: whether sets served the same prompts)
    prompts_sha256: Annotated[str | None, SHA256] = absent()
    max_tokens: int = needed(default=0)
    target_seq: int | None = None  # the target's training window (None: not recorded)
    beyond_training: list[Any] | None = absent()  # contexts whose prompt + output pass it
    slots: int | None = absent()
    j0_seeds: list[Any] | None = absent()  # whole numbers
    seconds: float | None = absent()
    variant: str | None = absent()
    speculator: dict[str, Any] | None = absent()
    settings: dict[str, Any] = needed(default_factory=dict)  # setting.json's records, by name
    gate: dict[str, Any] | None = absent()
    comparisons: dict[str, Any] | None = absent()
    reports: dict[str, Any] | None = absent()
    problems: list[Any] = needed(default_factory=list)  # in words
    missing: list[Any] = needed(default_factory=list)  # in words
    keys: tuple[str, ...] = attribute(default=())
    extra: dict[str, Any] = attribute(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every setting ran and every check passed: nothing in problems or missing."""
        return not self.problems and not self.missing

    def records(self) -> dict[str, PointRecord]:
        """The settings' records as their type (as they were gathered from setting.json)."""
        return {name: PointRecord.from_json(value) for name, value in self.settings.items()}

    @classmethod
    def checked(cls, value: Any, where: str) -> RunSummary:
        """The summary, or J0Error naming `where`, the key, its value and what was expected."""
        cls.check(value, where)
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
