"""scenarios.json, one server run of the serving scenarios, as a type owned by its writer
(j0.engine_check.scenarios.sender): the run's settings, and per scenario what it forces, its
requests (prompt length, cached tokens, output token ids), the preemptions counted and the
audit's line ranges. scenarios.table reads the files with `ScenariosRun.read`, `j0 engine-check
--scenario` takes the records from memory; neither reads a key by guessing. A file of other
kinds is refused naming the file, the scenario or request, the key, the value and what was expected.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

from j0.article.identity import ARTICLE, PREFIX_SAFE
from j0.edge.document import Document, needed
from j0.edge.fields import list_of, listed, read_document, shown, write_document
from j0.engine.server.j0_state import ON_OFF
from j0.errors import INPUT_LACKS, J0Error

SCENARIOS_JSON = "scenarios.json"
# The value sets of a run's settings: declared here once, read by the sender's options too.
FILES = (ARTICLE, PREFIX_SAFE, "any")  # "any": a J0-off run, whichever file served it
MODES = ("eager", "graphs")


def _whole_numbers(value: list[Any]) -> bool:
    return all(isinstance(x, int) and not isinstance(x, bool) for x in value)


TOKEN_IDS = list_of((int,), or_null=True, words="a list of token ids")


@dataclass(frozen=True)
class RequestRecord(Document):
    """One request of a scenario: its name (`position:prompt`), its prompt's length, the tokens
    the server served from its prefix cache (None where it did not say) and its output token ids
    (None where the server did not return them)."""

    name: str
    prompt_tokens: int
    cached_tokens: int | None
    output_token_ids: Annotated[list[int] | None, TOKEN_IDS]

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


@dataclass(frozen=True)
class ScenarioRecord(Document):
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
        lines = {name: list(span) for name, span in self.audit_lines.items()}
        return {**super().to_json(), "audit_lines": lines}

    @classmethod
    def from_json(cls, value: Any, where: str) -> ScenarioRecord:
        read = super().from_json(value, where)
        lines: dict[str, tuple[int, int]] = {}
        for name, span in read.audit_lines.items():
            if not (isinstance(span, list) and len(span) == 2 and _whole_numbers(span)):
                raise J0Error(
                    f"{where}: audit_lines[{name!r}] is {shown(span)}, expected [first line, "
                    "line after the last] as two whole numbers",
                    INPUT_LACKS,
                )
            lines[name] = (span[0], span[1])
        return replace(read, audit_lines=lines)


@dataclass(frozen=True)
class ScenariosRun(Document):
    """scenarios.json: one server's run of the scenarios, with the settings it ran under (which
    file, prefix caching, J0, eager or CUDA graphs) and the sender's options. audit, max_tokens
    and seed may be missing from a run written by hand: read as null."""

    label: str
    file: Annotated[str, listed(FILES)]
    caching: Annotated[str, listed(ON_OFF)]
    j0: Annotated[str, listed(ON_OFF)]
    mode: Annotated[str, listed(MODES)]
    audit: str | None = None
    max_tokens: int | None = None
    seed: int | None = None
    scenarios: tuple[ScenarioRecord, ...] = needed(default=())

    def scenario(self, name: str) -> ScenarioRecord | None:
        return next((s for s in self.scenarios if s.name == name), None)

    @classmethod
    def read(cls, path: Path) -> ScenariosRun:
        return cls.from_json(read_document(path, f"a {SCENARIOS_JSON}"), str(path))

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return write_document(folder / SCENARIOS_JSON, self.to_json())
