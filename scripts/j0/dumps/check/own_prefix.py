"""What `j0 dumps check` knows of positions no dumped step wrote: which speculator.py ran (from the
server log's identity line, or --variant) and the requests' prompt token ids (--prompts FILE).

A request that starts at position N > 0 (a prefix-cache hit) has draws below N. The article's file
reads there whatever the request slot's history held (UNVERIFIABLE, its known behaviour); the
prefix-safe variant fills positions 0..N-1 from the request's own tokens at admission, so with the
request's prompt known those draws are checked like any other. The prompt of a request is the one
of PROMPTS whose tokens equal the request's dumped inputs at every position the prompt covers;
prompts that match but differ below N leave the request unverifiable there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j0.article.variants import VARIANTS
from j0.engine.server.j0_state import ON_OFF, J0State
from j0.errors import INPUT_LACKS, USAGE, J0Error, parse_json, read_input_bytes, read_input_text

if TYPE_CHECKING:
    import numpy as np

    from j0.dumps import load


@dataclass(frozen=True)
class LogRead:
    """What `j0 dumps check --log FILE` reads of a server's log: J0 as it ran (the one rule,
    j0.engine.server.j0_state), the identity line's kind, and the plugin's J0 seed (None: the
    image's file, whose seed is the pinned one)."""

    path: Path
    state: J0State
    identity: str | None
    seed: int | None


def log_read(path: Path) -> LogRead:
    from j0.engine.server.j0_state import j0_ran
    from j0.engine.server.server_log import parse

    text = read_input_bytes(path, "--log").decode("utf-8", errors="replace")
    facts = parse(text, f"--log {path}")
    return LogRead(path, j0_ran(facts), facts.identity, facts.seed)


def variant_from_log(log: Path | LogRead) -> str:
    """The speculator.py a server ran, from its log's identity line (`j0-entrypoint: ...
    identity=KIND`, or the vLLM plugin's `j0-plugin: ... identity=KIND`, KIND then carrying its
    release: article-0.34.0): article or prefix-safe; anything else is refused (exit 2)."""
    from j0.engine.server.server_log import role_of

    read = log if isinstance(log, LogRead) else log_read(log)
    if read.identity is None:
        raise J0Error(
            f"--log {read.path}: no `j0-entrypoint: ... identity=...` line; expected the log of a "
            "server started by the image's entrypoint or `j0 engine-check --here`",
            INPUT_LACKS,
        )
    role = role_of(read.identity)
    if role not in VARIANTS:
        raise J0Error(
            f"--log {read.path}: identity={read.identity}; expected article or prefix-safe (a "
            "speculator.py with J0)",
            INPUT_LACKS,
        )
    return str(role)


def seed_from_log(path: Path) -> int | None:
    """The J0 seed the vLLM plugin's identity line names (`seed=N`); None in a log without it
    (the image's file: its seed is the pinned one)."""
    return log_read(path).seed


def settle_variant(given: str | None, log: Path | LogRead | None) -> str | None:
    """--variant and --log together must agree; either alone says it; neither: unknown."""
    if given is not None and given not in VARIANTS:
        raise J0Error(f"--variant {given!r}: expected article or prefix-safe", USAGE)
    from_log = variant_from_log(log) if log is not None else None
    if given and from_log and given != from_log:
        where = log.path if isinstance(log, LogRead) else log
        raise J0Error(f"--variant {given}, but {where} says identity={from_log}", USAGE)
    return given or from_log


def refuse_other_server(dumps_j0: str, read: LogRead | None, folder: Path) -> None:
    """Dumps of J0 on (off) checked with the log of a server that ran J0 off (on), by the one
    rule: not that server's dumps (exit 2). A log that does not show J0's state says nothing."""
    if read is None or read.state.ran not in ON_OFF or dumps_j0 not in ON_OFF:
        return
    if read.state.ran != dumps_j0:
        raise J0Error(
            f"--log {read.path} says J0 {read.state.ran} ({read.state.why}), but the dumps in "
            f"{folder} are J0 {dumps_j0}: they are not that server's dumps",
            INPUT_LACKS,
        )


def _token_list(item: Any) -> list[int] | None:
    if isinstance(item, dict):
        if "prompt_token_ids" in item:
            item = item["prompt_token_ids"]
        elif isinstance(item.get("choices"), list) and item["choices"]:
            item = item["choices"][0].get("prompt_token_ids")
    if isinstance(item, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in item):
        return item
    return None


def read_prompts(path: Path) -> list[np.ndarray]:
    """The prompts' token ids: a JSON list, each item a list of token ids, an object with
    `prompt_token_ids`, or a completions response (vLLM's `return_token_ids`: its first choice's
    `prompt_token_ids`)."""
    import numpy as np

    value = parse_json(read_input_text(path, "--prompts"), f"--prompts {path}")
    if not isinstance(value, list) or not value:
        raise J0Error(f"--prompts {path}: expected a non-empty JSON list of prompts", INPUT_LACKS)
    prompts = []
    for number, item in enumerate(value):
        tokens = _token_list(item)
        if not tokens:
            raise J0Error(
                f"--prompts {path}: item {number} is not a prompt: expected a list of token ids, "
                "an object with prompt_token_ids, or a completions response with them",
                INPUT_LACKS,
            )
        prompts.append(np.asarray(tokens, dtype=np.int64))
    return prompts


@dataclass(frozen=True)
class OwnPrefix:
    """A request's own tokens at positions 0..len(tokens)-1 (None: not known) and why."""

    tokens: np.ndarray | None
    note: str


def _matches(req: load.Request, prompt: np.ndarray) -> bool:
    """The prompt covers the request's start and equals its dumped inputs wherever both exist."""
    if len(prompt) <= req.start_pos:
        return False
    for step in req.steps:
        valid = step.num_valid
        pos, ids = step.positions[:valid], step.input_ids[:valid]
        inside = (pos >= 0) & (pos < len(prompt))
        if not (prompt[pos[inside]] == ids[inside]).all():
            return False
    return True


def own_prefix(req: load.Request, prompts: list[np.ndarray]) -> OwnPrefix:
    """The request's tokens below its first dumped position, from the prompt it matches."""
    start = req.start_pos
    found = [i for i, p in enumerate(prompts) if _matches(req, p)]
    if not found:
        return OwnPrefix(None, f"no prompt of --prompts matches its dumped tokens from {start}")
    first = prompts[found[0]][:start]
    if any(not (prompts[i][:start] == first).all() for i in found[1:]):
        return OwnPrefix(
            None,
            f"prompts {', '.join(map(str, found))} of --prompts match its dumped tokens but "
            f"differ below position {start}",
        )
    return OwnPrefix(first, f"prompt {found[0]} of --prompts")
