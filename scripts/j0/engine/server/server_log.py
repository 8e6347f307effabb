"""What a server's log says about what runs: the lines our entrypoint, `j0 serve`, the patch and
vLLM write at start-up. Standard library only.

Lines read (the last of each kind before the server is up wins):

    j0-entrypoint: vLLM 0.33.0 commit 4ba787ec9 (not the pinned c50aca14), PATH: speculator.py
        sha256=... identity=article (...)          docker/entrypoint.sh (`j0 image identity`)
    j0 serve: --speculative-config {...}           j0.serve.launch
    ... DFLASH_CTX_NOISE=1 pool=(4, 2048) dump=None/0                   the patch
    ... DFLASH_DRAFT_KV_DTYPES=['auto'] spec_kv_cache_dtype=auto        the patch
    ... [dflash_j0.py:N] j0-plugin: vLLM 0.34.0 commit 62d4bc3c7 (method dflash_j0), PATH:
        speculator.py sha256=... identity=article-0.34.0 variant=article j0=on seed=20261031
        running=... patches=...                    the vLLM plugin (j0.plugin.log_line)
    ... non-default args: {... 'max_num_seqs': 4, 'speculative_config': {...}}
    ... Initializing a V1 LLM engine (v0.33.0) with config: model='...', speculative_config=
        SpeculativeConfig(method='dflash', model='...', num_spec_tokens=7), ...

The last two are vLLM 0.33.0's own (vllm/entrypoints/cli/serve startup, vllm/v1/engine/core.py),
as in the real engine's logs kept under tests/data/engine-h200/.

Each kind is believed only from its own writer's line, and only from the server's start-up, so
that neither a value written into another line nor a line a request writes can forge it:

- position: only the lines before the server is up are read: up to the first line that says so
  (vLLM's `Starting vLLM server on ...`, uvicorn's `Started server process`, `Application startup
  complete`, or an access-log line). No request is answered before it; after it, a client's text
  reaches the log (vLLM logs an unknown model's name from a request, with its line breaks;
  uvicorn's access log writes a request's raw query), so nothing after it is believed.
  `server_up` says whether the log shows that line: without it the position is not known.
  A log of several start-ups (a restarted server, an appended log) is read at its last start-up
  that came up (`startups_of`, docs/status.md): it begins at a line a start-up writes first, after
  the earlier server is up, and ends at a line only a server coming up writes (CAME_UP).
- writer: a line that starts (after `docker compose logs`' `server-1  | `) with `j0 serve: ` gives
  the speculative config and nothing else, one that starts with `j0-entrypoint: ` the identity
  and nothing else; the patch's lines count only as records of vLLM's logger from the patch's
  file (`(EngineCore pid=N) INFO MM-DD HH:MM:SS [speculator.py:N] DFLASH_CTX_NOISE=...`, the
  message starting with the marker), vLLM's lines only as records of its logger; the plugin's
  identity line only as a record of vLLM's logger from the plugin's file (`[dflash_j0.py:N]`),
  the identity on the plugin route (no entrypoint line there: vLLM's own image).

`j0 serve` writes every value through `log_safe` (one line, whatever the value holds) and
refuses arguments and knobs that hold a line break or a marker of this grammar (`forged_marker`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from j0.article.spec_config import LoggedSpec
from j0.errors import J0Error, parse_json

# What `docker compose logs --no-color` puts before each line of a service ("server-1  | ").
_COMPOSE_PREFIX = re.compile(r"^[\w.-]+ +\| ?")
# A record as vLLM's logger writes it (vllm/logger.py's format, "%(levelname)s %(asctime)s
# [%(fileinfo)s:%(lineno)d] %(message)s"), with "(PROCESS pid=N) " before it in vLLM's processes.
_VLLM_RECORD = re.compile(
    r"(?:\((?P<process>[\w-]+) pid=(?P<pid>\d+)\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[(?P<file>[\w.-]+):\d+\] (?P<message>.*)"
)
# The file of the patch's logger: its lines are believed only from a record of that file.
PATCH_FILE = "speculator.py"
# The first line that says the server is up (vLLM's own, then uvicorn's start-up and access
# lines): no request is answered before it, so nothing after it is read.
SERVER_UP = re.compile(
    r"(?:\([\w-]+ pid=\d+\) )?(?:"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w.-]+:\d+\] "
    r"Starting vLLM (?:API )?server on "
    r"|(?:INFO|WARNING|ERROR): +(?:Started server process|Waiting for application startup"
    r"|Application startup complete|Uvicorn running on|\S+ - \")"
    r")"
)
# The lines of a server coming up that only the server writes as such (vLLM's and uvicorn's
# start-up lines, not an access-log line, whose request line a client writes): what ends a start-up
# after the first.
CAME_UP = re.compile(
    r"(?:\([\w-]+ pid=\d+\) )?(?:"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w.-]+:\d+\] "
    r"Starting vLLM (?:API )?server on "
    r"|INFO: +(?:Started server process|Application startup complete)"
    r")"
)
SERVE_PREFIX = "j0 serve: "
# The plugin's identity line (j0.plugin.log_line, kept standard-library and import-light).
PLUGIN_PREFIX = "j0-plugin: "
PLUGIN_FILE = "dflash_j0.py"
_RELEASE_SUFFIX = re.compile(r"-\d+(?:\.\d+)+$")
ENTRYPOINT_PREFIX = "j0-entrypoint: "
# The marker of each kind of line: a value holding one is refused by `j0 serve`.
MARKERS = (
    SERVE_PREFIX.strip(),
    ENTRYPOINT_PREFIX.strip(),
    "DFLASH_CTX_NOISE=",
    "DFLASH_DRAFT_KV_DTYPES=",
    PLUGIN_PREFIX.strip(),
    "non-default args:",
    "Initializing a V1 LLM engine",
    "Starting vLLM",
    "Started server process",
    "Application startup complete",
)
_IDENTITY = re.compile(
    r"j0-entrypoint: (?:vLLM (?P<version>\S+) commit (?P<commit>\S+) \([^)]*\), )?"
    r"(?P<path>\S+): speculator\.py sha256=(?P<sha>[0-9a-f]{64}) identity=(?P<kind>[\w-]+)"
)
_SERVE_SPEC = re.compile(r"j0 serve: --speculative-config (?P<json>\{.*\})\s*$")
_CTX_NOISE = re.compile(r"^DFLASH_CTX_NOISE=(?P<on>\d+) pool=\((?P<rows>\d+), (?P<cols>\d+)\)")
_KV_DTYPES = re.compile(
    r"^DFLASH_DRAFT_KV_DTYPES=(?P<dtypes>\[[^\]]*\])(?: spec_kv_cache_dtype=(?P<spec>\S+))?"
)
_NON_DEFAULT = re.compile(r"^non-default args: (?P<args>\{.*\})\s*$")
_ENGINE = re.compile(
    r"^Initializing a V1 LLM engine \(v(?P<version>[^)]+)\) with config: model='(?P<model>[^']*)'"
    r"(?:, speculative_config=SpeculativeConfig\(method='(?P<method>[^']*)', "
    r"model='(?P<draft>[^']*)', num_spec_tokens=(?P<n>\d+)\))?"
)


@dataclass
class LogFacts:
    source: str
    identity: str | None = None  # article / prefix-safe / base / other (-<release>: 0.34.0's)
    route: str | None = None  # "plugin" where the identity came from the plugin's line
    variant: str | None = None  # the plugin's variant (article / prefix-safe)
    seed: int | None = None  # the plugin's J0 seed
    plugin_j0: str | None = None  # the plugin's j0= ("on" / "off": its speculator_options)
    running_sha256: str | None = None  # the plugin's kernel text (differs with another seed)
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
    # the line that says the server is up (nothing after it is read), None: not in the log
    server_up: str | None = None
    startups: int = 0  # the start-ups in the log that came up (the last one is read)
    startup_line: int = 1  # where the start-up read begins (1-based line of the whole log)
    # the first line of a start-up after the one read that never came up, None: there is none
    not_up: str | None = None
    lines: dict[str, str] = field(default_factory=dict)  # kind -> the line it came from
    # kind -> a line that carries the kind's marker but not its grammar (the last such line)
    unreadable: dict[str, str] = field(default_factory=dict)


def role_of(identity: str | None) -> str | None:
    """An identity without its release (`article-0.34.0` -> `article`); None stays None."""
    return None if identity is None else _RELEASE_SUFFIX.sub("", identity)


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
            value = parse_json(m["json"], "the log's speculative config")
        except J0Error:
            value = None
        if isinstance(value, dict):
            facts.speculative_config = value
            facts.lines["speculative_config"] = line.strip()
    return True


def begins_startup(body: str) -> bool:
    """Whether a line (compose's prefix taken off) is one that a start-up writes first: `j0
    serve`'s, our entrypoint's, or vLLM's record of its non-default args."""
    if body.startswith((SERVE_PREFIX, ENTRYPOINT_PREFIX)):
        return True
    record = _VLLM_RECORD.fullmatch(body)
    return record is not None and _NON_DEFAULT.match(record["message"]) is not None


def startups_of(lines: list[str]) -> tuple[list[tuple[int, int]], int | None]:
    """([(first line, the line of the server coming up)] of each start-up that came up, the
    first line of a start-up after the last of them that did not come up, or None).

    The first start-up begins with the log. Once the server is up, what follows is the server's
    (and its clients') until a line that begins a start-up (`begins_startup`): the next process.
    A client's text written before that process began lies before its first line, so it is
    never read as part of it."""
    found: list[tuple[int, int]] = []
    start: int | None = 0
    for index, raw in enumerate(lines):
        body = _COMPOSE_PREFIX.sub("", raw.rstrip("\r"), count=1)
        if start is not None:
            if (SERVER_UP if not found else CAME_UP).match(body):
                found.append((start, index))
                start = None
        elif begins_startup(body):
            start = index
    return found, start


def parse(text: str, source: str) -> LogFacts:
    """The facts of the last start-up in `text` that came up: its lines up to the server being
    up (see above). A log of several start-ups (a restarted server, an appended log) is judged
    by its last, the server that answers now; `startups` counts them."""
    facts = LogFacts(source)
    lines = text.splitlines()
    found, pending = startups_of(lines)
    facts.startups = len(found)
    if pending is not None and found:
        facts.not_up = lines[pending].strip()
    first, up = found[-1] if found else (0, len(lines))
    facts.startup_line = first + 1
    if found:
        facts.server_up = lines[up].rstrip("\r").strip()
    for raw in lines[first:up]:
        line = raw.rstrip("\r")
        body = _COMPOSE_PREFIX.sub("", line, count=1)
        if _own_line(body, line, facts):
            continue
        if (record := _VLLM_RECORD.fullmatch(body)) is not None:
            _vllm_record(record, line.strip(), facts)
    return facts


def _vllm_record(record: re.Match[str], line: str, facts: LogFacts) -> None:
    """Read one record of vLLM's logger: the patch's lines from the patch's file only."""
    message = record["message"]
    patch = record["file"] == PATCH_FILE
    if record["file"] == PLUGIN_FILE and message.startswith(PLUGIN_PREFIX):
        _plugin_line(message, line, facts)
    elif patch and (m := _CTX_NOISE.match(message)):
        facts.j0 = "on" if m["on"] == "1" else "off"
        facts.pool_shape = [int(m["rows"]), int(m["cols"])]
        facts.lines["j0"] = line
    elif patch and (m := _KV_DTYPES.match(message)):
        dtypes = _literal(m["dtypes"])
        if isinstance(dtypes, list):
            facts.draft_kv_dtypes = [str(x) for x in dtypes]
        facts.spec_kv_cache_dtype = m["spec"]
        facts.lines["draft_kv"] = line
    elif m := _NON_DEFAULT.match(message):
        args = _literal(m["args"])
        if isinstance(args, dict):
            if isinstance(args.get("max_num_seqs"), int):
                facts.max_num_seqs = args["max_num_seqs"]
            if isinstance(args.get("speculative_config"), dict) and "j0 serve" not in (
                facts.lines.get("speculative_config", "")
            ):
                facts.speculative_config = args["speculative_config"]
                facts.lines["speculative_config"] = line
    elif m := _ENGINE.match(message):
        if facts.vllm_version is None:
            facts.vllm_version = m["version"]
        if m["n"] and facts.speculative_config is None:
            facts.speculative_config = LoggedSpec(m["method"], m["draft"], int(m["n"])).to_dict()
            facts.lines["speculative_config"] = line[:300]


def _plugin_line(message: str, line: str, facts: LogFacts) -> None:
    """The plugin's identity line (j0.plugin.log_line's grammar)."""
    from j0.plugin.log_line import LINE

    if (m := LINE.match(message)) is None:
        facts.unreadable["identity"] = line
        return
    facts.identity, facts.speculator_sha256 = m["kind"], m["sha"]
    facts.speculator_path, facts.vllm_version, facts.vllm_commit = (
        m["path"],
        m["version"],
        m["commit"],
    )
    facts.route, facts.variant, facts.seed = "plugin", m["variant"], int(m["seed"])
    facts.plugin_j0 = m["j0"]
    facts.running_sha256 = m["running"]
    facts.lines["identity"] = line
