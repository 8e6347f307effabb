"""RUN/speed.json, the record of `j0 mini speed`, as a type owned by its writer
(j0.mini.run.speed.record builds a SpeedRecord and writes its to_json; speed.md's table and
`j0 mini numbers`' speed kind read it through from_json): the machine, how it was measured, one
SpeedRow per setting measured (by name, in the order measured) and the problems.

The keys are the ones written, in their order, so a kept speed.json reads back as it was
written; every key the writer writes is one a reader needs. A file of other kinds is refused
naming the file, the key, the value and what was expected (exit 2). Standard library only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from j0.edge.document import Document, absent
from j0.edge.fields import NULL, NUMBER, list_of, read_document, write_document
from j0.errors import INPUT_LACKS, J0Error

SPEED_JSON = "speed.json"
EXPECTED = "the speed.json of `j0 mini speed`"
ORDER = "round r: setting r mod n first, then the others in turn"
HOW = "servers started together, then only one sent requests at a time"
# Each round's figure: a number, null where the round took no time (or its baseline's did).
BY_ROUND = list_of((*NUMBER, NULL), words="a list of numbers or nulls")


@dataclass(frozen=True)
class SpeedMachine(Document):
    """The GPU's name and driver as nvidia-smi gives them ("unknown" where it says nothing)."""

    gpu: str
    driver: str


@dataclass(frozen=True)
class SpeedRow(Document):
    """One setting's rounds pooled: output tokens, request seconds, tokens/s, ms per engine step
    and tokens per step (null where no time or no step was counted), each round's tokens/s, the
    requests that failed; the speedup over the baseline (pooled and by round) where both have a
    rate (the keys are left out where not)."""

    rounds: int
    tokens: int
    seconds: float
    tokens_per_s: float | None
    ms_per_step: float | None
    tokens_per_step: float | None
    round_tokens_per_s: Annotated[list[Any], BY_ROUND]
    failed_requests: int
    speedup: float | None = absent()
    round_speedups: Annotated[list[Any] | None, BY_ROUND] = absent()


@dataclass(frozen=True)
class SpeedRecord(Document):
    """speed.json: how it was measured, on which machine, the table (a SpeedRow per setting, by
    name) and the problems (requests that failed), in the writer's order."""

    machine: SpeedMachine
    graphs: bool
    slots: int
    prompts: int
    repeats: int
    max_tokens: int
    tokens: int
    temperature: float
    settings: list[str]
    order: str
    how: str
    table: dict[str, SpeedRow]
    problems: list[str]

    def to_json(self) -> dict[str, Any]:
        """speed.json's object: the keys in their order, each row as its to_json."""
        value = super().to_json()
        value["table"] = {name: row.to_json() for name, row in self.table.items()}
        return value

    @classmethod
    def from_json(cls, value: Any, where: str) -> SpeedRecord:
        """The record, or J0Error (exit 2) naming `where`, the key (a row's as `table.NAME`),
        its value and what was expected; a table without a row is refused."""
        record = super().from_json(value, where)
        if not record.table:
            raise J0Error(
                f"{where}: table is {{}}, expected one row per setting measured", INPUT_LACKS
            )
        rows = {
            name: SpeedRow.from_json(row, f"{where}: table.{name}")
            for name, row in record.table.items()
        }
        return dataclasses.replace(record, table=rows)

    @classmethod
    def read(cls, path: Path) -> SpeedRecord:
        """The record in the file at `path`; J0Error (exit 2) naming it where it cannot be read
        or is not what `j0 mini speed` writes."""
        return cls.from_json(read_document(path, EXPECTED), str(path))

    def write(self, path: Path) -> Path:
        """The record into `path` (atomically, one space of indent); `path`."""
        return write_document(path, self.to_json())
