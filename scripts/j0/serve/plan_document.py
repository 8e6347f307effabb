"""The document `j0 serve --json` writes, owned here: what the checks found will run, in the order
it was said. A researcher keeps it beside a run's results as the record of the server's setup;
the same facts and warnings are the lines `j0 serve` logs (which `j0 status` reads).

Keys (format_version 1), in the order they are written:

    kind, format_version    "j0-serve-plan", 1
    started                 false for --dry-run; true: vLLM was exec'd right after this was written
    program                 what is exec'd with the arguments (--then)
    args                    `vllm serve`'s arguments as vLLM gets them, an API key given in them
                            masked as "***"
    switches                the J0, dump, prefix-caching and Hub settings vLLM's environment holds
                            (the ones `j0 serve` logs; never a key or a token)
    facts, warnings         the logged lines, without their "j0 serve: " prefix
    j0_state                J0 as asked and as it will run with the speculator.py vLLM will
                            import, by the one rule (j0.engine.server.j0_state; its one JSON form:
                            asked, ran, why, identity, seen); null without a J0 switch

Standard library only: this runs inside the image, on the base image's python3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KIND = "j0-serve-plan"
FORMAT_VERSION = 1
MASK = "***"


def mask_keys(args: Sequence[str], keys: Sequence[str | None]) -> list[str]:
    """`args` with every API key among them masked: a word that is the key, and the value of an
    `--option=KEY` word (a key that equals some other word masks that word too: never shown)."""
    secret = {k for k in keys if k}
    masked = []
    for word in args:
        name, eq, value = word.partition("=")
        if word in secret:
            masked.append(MASK)
        elif eq and name.startswith("-") and value in secret:
            masked.append(f"{name}={MASK}")
        else:
            masked.append(word)
    return masked


@dataclass(frozen=True)
class ServePlanDocument:
    started: bool
    program: str
    args: list[str]
    switches: dict[str, str]
    facts: list[str]
    warnings: list[str]
    j0_state: dict[str, Any] | None = None

    @classmethod
    def of(
        cls,
        *,
        started: bool,
        program: str,
        args: Sequence[str],
        api_keys: Sequence[str | None],
        env: Mapping[str, str],
        switch_names: Sequence[str],
        facts: Sequence[str],
        warnings: Sequence[str],
        j0_state: dict[str, Any] | None = None,
    ) -> ServePlanDocument:
        return cls(
            started=started,
            program=program,
            args=mask_keys(args, api_keys),
            switches={name: env[name] for name in switch_names if name in env},
            facts=list(facts),
            warnings=list(warnings),
            j0_state=j0_state,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "format_version": FORMAT_VERSION,
            "started": self.started,
            "program": self.program,
            "args": self.args,
            "switches": self.switches,
            "facts": self.facts,
            "warnings": self.warnings,
            "j0_state": self.j0_state,
        }
