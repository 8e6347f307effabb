"""What a server's log says about what runs: the lines our entrypoint, `j0 serve`, the patch and
vLLM write at start-up. Standard library only.

Lines read (the last of each kind wins: a log may hold several starts):

    j0-entrypoint: vLLM 0.33.0 commit 4ba787ec9 (not the pinned c50aca14), PATH: speculator.py
        sha256=... identity=article (...)          docker/entrypoint.sh (`j0 image identity`)
    j0 serve: --speculative-config {...}           j0.serve.command
    ... DFLASH_CTX_NOISE=1 pool=(4, 2048) dump=None/0                   the patch
    ... DFLASH_DRAFT_KV_DTYPES=['auto'] spec_kv_cache_dtype=auto        the patch
    ... non-default args: {... 'max_num_seqs': 4, 'speculative_config': {...}}
    ... Initializing a V1 LLM engine (v0.33.0) with config: model='...', speculative_config=
        SpeculativeConfig(method='dflash', model='...', num_spec_tokens=7), ...

The last two are vLLM 0.33.0's own (vllm/entrypoints/cli/serve startup, vllm/v1/engine/core.py),
as in the real engine's logs kept under tests/data/engine-h200/.

Each kind is believed only from its own writer's line, so that a value written into another line
cannot forge it: a line that starts (after `docker compose logs`' `server-1  | `) with
`j0 serve: ` gives the speculative config and nothing else, one that starts with `j0-entrypoint: `
the identity and nothing else, and no other line gives either. `j0 serve` writes every value
through `log_safe` (one line, whatever the value holds) and refuses arguments and knobs that hold
a line break or a marker of this grammar (`forged_marker`).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

# What `docker compose logs --no-color` puts before each line of a service ("server-1  | ").
_COMPOSE_PREFIX = re.compile(r"^[\w.-]+ +\| ?")
SERVE_PREFIX = "j0 serve: "
ENTRYPOINT_PREFIX = "j0-entrypoint: "
# The marker of each kind of line: a value holding one is refused by `j0 serve`.
MARKERS = (
    SERVE_PREFIX.strip(),
    ENTRYPOINT_PREFIX.strip(),
    "DFLASH_CTX_NOISE=",
    "DFLASH_DRAFT_KV_DTYPES=",
    "non-default args:",
    "Initializing a V1 LLM engine",
)
_IDENTITY = re.compile(
    r"j0-entrypoint: (?:vLLM (?P<version>\S+) commit (?P<commit>\S+) \([^)]*\), )?"
    r"(?P<path>\S+): speculator\.py sha256=(?P<sha>[0-9a-f]{64}) identity=(?P<kind>[\w-]+)"
)
_SERVE_SPEC = re.compile(r"j0 serve: --speculative-config (?P<json>\{.*\})\s*$")
_CTX_NOISE = re.compile(r"DFLASH_CTX_NOISE=(?P<on>\d+) pool=\((?P<rows>\d+), (?P<cols>\d+)\)")
_KV_DTYPES = re.compile(
    r"DFLASH_DRAFT_KV_DTYPES=(?P<dtypes>\[[^\]]*\])(?: spec_kv_cache_dtype=(?P<spec>\S+))?"
)
_NON_DEFAULT = re.compile(r"non-default args: (?P<args>\{.*\})\s*$")
_ENGINE = re.compile(
    r"Initializing a V1 LLM engine \(v(?P<version>[^)]+)\) with config: model='(?P<model>[^']*)'"
    r"(?:, speculative_config=SpeculativeConfig\(method='(?P<method>[^']*)', "
    r"model='(?P<draft>[^']*)', num_spec_tokens=(?P<n>\d+)\))?"
)


@dataclass
class LogFacts:
    source: str
    identity: str | None = None  # article / prefix-safe / base / other
    speculator_sha256: str | None = None
    speculator_path: str | None = None
    vllm_version: str | None = None
    vllm_commit: str | None = None
    j0: str | None = None  # "on" / "off"
    pool_shape: list[int] | None = None
    draft_kv_dtypes: list[str] | None = None
    spec_kv_cache_dtype: str | None = None
    speculative_config: dict[str, Any] | None = None
    max_num_seqs: int | None = None
    lines: dict[str, str] = field(default_factory=dict)  # kind -> the line it came from
    # kind -> a line that carries the kind's marker but not its grammar (the last such line)
    unreadable: dict[str, str] = field(default_factory=dict)


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def log_safe(value: str) -> str:
    """`value` as one line: what is not printable (line breaks of any kind, other control
    characters) written as its escape (`\\n`, `\\x1b`, `\\u2028`), backslashes doubled."""
    out = []
    for char in value:
        if char == "\\":
            out.append("\\\\")
        elif char.isprintable() or char == " ":
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def forged_marker(value: str) -> str | None:
    """What in `value` could start or pose as a line of this grammar: a line break or other
    control character, or a marker; None when there is nothing."""
    if any(not (c.isprintable() or c == " ") for c in value):
        return "a line break or control character"
    return next((f"the log marker {m!r}" for m in MARKERS if m in value), None)


def _own_line(body: str, line: str, facts: LogFacts) -> bool:
    """Read a line of `j0 serve` or of our entrypoint (`body`: without compose's prefix) for its
    one kind; True when `body` is such a line (read or not), so no other kind is taken from it."""
    if body.startswith(ENTRYPOINT_PREFIX):
        if (m := _IDENTITY.match(body)) is None:
            if "sha256=" in body:
                facts.unreadable["identity"] = line.strip()
            return True
        facts.identity, facts.speculator_sha256 = m["kind"], m["sha"]
        facts.speculator_path = m["path"]
        if m["commit"]:
            facts.vllm_version = m["version"]
            facts.vllm_commit = "" if m["commit"] == "unknown" else m["commit"]
        facts.lines["identity"] = line.strip()
        return True
    if not body.startswith(SERVE_PREFIX):
        return False
    if (m := _SERVE_SPEC.match(body)) is not None:
        try:
            value = json.loads(m["json"])
        except ValueError:
            value = None
        if isinstance(value, dict):
            facts.speculative_config = value
            facts.lines["speculative_config"] = line.strip()
    return True


def parse(text: str, source: str) -> LogFacts:
    facts = LogFacts(source)
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if _own_line(_COMPOSE_PREFIX.sub("", line, count=1), line, facts):
            continue
        if "DFLASH_CTX_NOISE=" in line and (m := _CTX_NOISE.search(line)):
            facts.j0 = "on" if m["on"] == "1" else "off"
            facts.pool_shape = [int(m["rows"]), int(m["cols"])]
            facts.lines["j0"] = line.strip()
        elif "DFLASH_DRAFT_KV_DTYPES=" in line and (m := _KV_DTYPES.search(line)):
            dtypes = _literal(m["dtypes"])
            if isinstance(dtypes, list):
                facts.draft_kv_dtypes = [str(x) for x in dtypes]
            facts.spec_kv_cache_dtype = m["spec"]
            facts.lines["draft_kv"] = line.strip()
        elif "non-default args: " in line and (m := _NON_DEFAULT.search(line)):
            args = _literal(m["args"])
            if isinstance(args, dict):
                if isinstance(args.get("max_num_seqs"), int):
                    facts.max_num_seqs = args["max_num_seqs"]
                if isinstance(args.get("speculative_config"), dict) and "j0 serve" not in (
                    facts.lines.get("speculative_config", "")
                ):
                    facts.speculative_config = args["speculative_config"]
                    facts.lines["speculative_config"] = line.strip()
        elif "Initializing a V1 LLM engine" in line and (m := _ENGINE.search(line)):
            if facts.vllm_version is None:
                facts.vllm_version = m["version"]
            if m["n"] and facts.speculative_config is None:
                facts.speculative_config = {
                    "method": m["method"],
                    "model": m["draft"],
                    "num_speculative_tokens": int(m["n"]),
                }
                facts.lines["speculative_config"] = line.strip()[:300]
    return facts
