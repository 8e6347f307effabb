"""scenarios.json, one server run of the serving scenarios, as a type owned by its writer
(j0.engine_check.scenarios.sender): the run's settings, and per scenario what it forces, its
requests (prompt length, cached tokens, output token ids), the preemptions counted and the
audit's line ranges. scenarios.table reads the files with `ScenariosRun.read`, `j0 engine-check
--scenario` takes the records from memory; neither reads a key by guessing. A file of other
kinds is refused naming the file, the scenario or request, the key, the value and what was expected.

Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from j0.article.identity import ARTICLE, PREFIX_SAFE
from j0.edge.fields import NUMBER, FieldTable, checked_object, read_document, shown, write_document
from j0.engine.j0_state import ON_OFF
from j0.errors import INPUT_LACKS, J0Error

SCENARIOS_JSON = "scenarios.json"
# The value sets of a run's settings: declared here once, read by the sender's options too.
FILES = (ARTICLE, PREFIX_SAFE, "any")  # "any": a J0-off run, whichever file served it
MODES = ("eager", "graphs")

# (kinds, needed), as to_json writes them; tests/engine_check/test_scenario_record.py holds
# each table to its dataclass's fields.
REQUEST_FIELDS: FieldTable = {
    "name": ((str,), True),
    "prompt_tokens": ((int,), True),
    "cached_tokens": ((int, type(None)), True),
    "output_token_ids": ((list, type(None)), True),
}
SCENARIO_FIELDS: FieldTable = {
    "name": ((str,), True),
    "forces": ((str,), True),
    "single_stream": ((bool,), True),
    "requests": ((list,), True),
    "preemptions": ((*NUMBER, type(None)), True),
    "audit_lines": ((dict,), True),
}
# audit, max_tokens and seed may be missing from a run written by hand: read as null.
RUN_FIELDS: FieldTable = {
    "label": ((str,), True),
    "file": ((str,), True),
    "caching": ((str,), True),
    "j0": ((str,), True),
    "mode": ((str,), True),
    "audit": ((str, type(None)), False),
    "max_tokens": ((int, type(None)), False),
    "seed": ((int, type(None)), False),
    "scenarios": ((list,), True),
}


def _whole_numbers(value: list[Any]) -> bool:
    return all(isinstance(x, int) and not isinstance(x, bool) for x in value)


@dataclass(frozen=True)
class RequestRecord:
    """One request of a scenario: its name (`position:prompt`), its prompt's length, the tokens
    the server served from its prefix cache (None where it did not say) and its output token ids
    (None where the server did not return them)."""

    name: str
    prompt_tokens: int
    cached_tokens: int | None
    output_token_ids: list[int] | None

    @classmethod
    def from_response(cls, name: str, prompt: list[int], response: dict[str, Any]) -> RequestRecord:
        """The record of a /v1/completions answer (vLLM's `return_token_ids`)."""
        choice = (response.get("choices") or [{}])[0]
        usage = response.get("usage") or {}
        return cls(
            name=name,
            prompt_tokens=len(prompt),
            cached_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens"),
            output_token_ids=choice.get("token_ids"),
        )

    def to_json(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_json(cls, value: Any, where: str) -> RequestRecord:
        checked = checked_object(value, REQUEST_FIELDS, where)
        ids = checked["output_token_ids"]
        if ids is not None and not _whole_numbers(ids):
            raise J0Error(
                f"{where}: 'output_token_ids' is {shown(ids)}, expected a list of token ids",
                INPUT_LACKS,
            )
        return cls(**{key: checked[key] for key in REQUEST_FIELDS})


@dataclass(frozen=True)
class ScenarioRecord:
    """One scenario as it ran: what it forces, whether its requests went one at a time, its
    requests, vLLM's preemptions counted over it (None where /metrics did not show the counter)
    and, per audit file, the line range [before, after] written while it ran."""

    name: str
    forces: str
    single_stream: bool
    requests: tuple[RequestRecord, ...]
    preemptions: float | None
    audit_lines: dict[str, tuple[int, int]]

    @property
    def cached_tokens(self) -> int:
        """The prefix-cached tokens over its requests (a request that did not say counts 0)."""
        return sum(r.cached_tokens or 0 for r in self.requests)

    @property
    def outputs(self) -> list[list[int] | None]:
        return [r.output_token_ids for r in self.requests]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "forces": self.forces,
            "single_stream": self.single_stream,
            "requests": [r.to_json() for r in self.requests],
            "preemptions": self.preemptions,
            "audit_lines": {name: list(span) for name, span in self.audit_lines.items()},
        }

    @classmethod
    def from_json(cls, value: Any, where: str) -> ScenarioRecord:
        checked = checked_object(value, SCENARIO_FIELDS, where)
        lines: dict[str, tuple[int, int]] = {}
        for name, span in checked["audit_lines"].items():
            if not (isinstance(span, list) and len(span) == 2 and _whole_numbers(span)):
                raise J0Error(
                    f"{where}: audit_lines[{name!r}] is {shown(span)}, expected [first line, "
                    "line after the last] as two whole numbers",
                    INPUT_LACKS,
                )
            lines[name] = (span[0], span[1])
        requests = tuple(
            RequestRecord.from_json(r, f"{where}: requests[{i}]")
            for i, r in enumerate(checked["requests"])
        )
        return cls(
            name=checked["name"],
            forces=checked["forces"],
            single_stream=checked["single_stream"],
            requests=requests,
            preemptions=checked["preemptions"],
            audit_lines=lines,
        )


@dataclass(frozen=True)
class ScenariosRun:
    """scenarios.json: one server's run of the scenarios, with the settings it ran under (which
    file, prefix caching, J0, eager or CUDA graphs) and the sender's options."""

    label: str
    file: str
    caching: str
    j0: str
    mode: str
    audit: str | None
    max_tokens: int | None
    seed: int | None
    scenarios: tuple[ScenarioRecord, ...]

    def scenario(self, name: str) -> ScenarioRecord | None:
        return next((s for s in self.scenarios if s.name == name), None)

    def to_json(self) -> dict[str, Any]:
        head = {field.name: getattr(self, field.name) for field in fields(self)}
        return {**head, "scenarios": [s.to_json() for s in self.scenarios]}

    @classmethod
    def from_json(cls, value: Any, where: str) -> ScenariosRun:
        """The run, or J0Error (exit 2) naming `where`, the part, the key and its value."""
        checked = checked_object(value, RUN_FIELDS, where)
        for key, allowed in (("file", FILES), ("caching", ON_OFF), ("j0", ON_OFF), ("mode", MODES)):
            if checked[key] not in allowed:
                raise J0Error(
                    f"{where}: {key!r} is {shown(checked[key])}, expected one of "
                    + ", ".join(map(json.dumps, allowed)),
                    INPUT_LACKS,
                )
        records = tuple(
            ScenarioRecord.from_json(s, f"{where}: scenarios[{i}]")
            for i, s in enumerate(checked["scenarios"])
        )
        head = {key: checked.get(key) for key in RUN_FIELDS if key != "scenarios"}
        return cls(**head, scenarios=records)

    @classmethod
    def read(cls, path: Path) -> ScenariosRun:
        return cls.from_json(read_document(path, f"a {SCENARIOS_JSON}"), str(path))

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return write_document(folder / SCENARIOS_JSON, self.to_json())
