"""J0's state, one value: as asked (on, off, or unknown: not asked), as run (on, off, unknown, or
not applicable: no DFlash drafter), and why (the evidence: the log line, identity or file that
says it). `J0State.to_json()` is its one JSON form; `J0State.from_json()` its one reader, which
also reads every older shape the project wrote (listed at `from_json`).

The one rule of J0 as run (`j0_of`): J0 on or off as the file that ran shows it, never as it was
asked. A setting is "J0 on" only where the server's log names a J0 speculator.py (its identity
line: the article's file or the prefix-safe variant, by sha256, or either cut for a later release,
as the vLLM plugin's `j0-plugin:` line names it) and the J0 file logged `DFLASH_CTX_NOISE=1`.
vLLM's unpatched file (identity=base) has no J0, whatever VLLM_DFLASH_CTX_NOISE says: J0 off. A
log without an identity line, naming another file, or whose plugin line (`j0=on|off`) says
otherwise than the J0 file's own line, leaves J0 unknown. `j0 status`, `j0 serve` (for the file
it will start), `j0 bench run --log`, `j0 bench matrix`, `j0 mini run`, `j0 bench report` and
`j0 dumps check --log` decide J0 by it. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from j0.article.identity import BASE, J0_KINDS
from j0.engine.server.server_log import LogFacts, role_of
from j0.errors import INPUT_LACKS, J0Error

ON, OFF, UNKNOWN, NOT_APPLICABLE = "on", "off", "unknown", "n/a"
# The value sets, declared here once: J0 as asked (on or off), and as a log shows it.
ON_OFF = (ON, OFF)
STATES = (ON, OFF, UNKNOWN)
ASKED = STATES  # unknown: not asked
RAN = (ON, OFF, UNKNOWN, NOT_APPLICABLE)  # n/a: no DFlash drafter (no speculation, n-gram)
# J0 as asked in a folder's name (`k7-j0-on`, `drafter-mask/k15-j0-off-seed7`, `k7_J0on`).
NAME = re.compile(r"j0[-_]?(?P<j0>on|off)", re.IGNORECASE)


@dataclass(frozen=True)
class J0State:
    asked: str  # ASKED
    ran: str  # RAN
    why: str  # the evidence, in words: which line, identity or file says it
    identity: str | None = None  # the identity line's kind (article, prefix-safe, base, other)
    seen: bool = True  # a file that saw the server was read (its log, `j0 status --json`)

    def __post_init__(self) -> None:
        if self.asked not in ASKED or self.ran not in RAN:
            raise ValueError(f"J0State({self.asked!r}, {self.ran!r}): not a J0 state")

    def to_json(self) -> dict[str, str | None]:
        """The one JSON form: {"asked", "ran", "why", "identity", "seen"}."""
        return {
            "asked": self.asked,
            "ran": self.ran,
            "why": self.why,
            "identity": self.identity,
            "seen": self.seen,
        }

    def asking(self, asked: bool | None) -> J0State:
        """The same as run, with what was asked (None: not asked)."""
        want = UNKNOWN if asked is None else (ON if asked else OFF)
        return J0State(want, self.ran, self.why, self.identity, self.seen)

    def differs(self) -> str | None:
        """The sentence that says it did not run as asked (J0 on asked and not on, or off asked
        and on), or None. Not asked (J0 not applicable) differs from nothing."""
        if not self.seen or self.asked not in ON_OFF or self.ran == self.asked:
            return None
        return (
            f"J0 {self.asked} was asked, but the server's log says J0 {self.ran} ({self.why}): "
            f"not a J0-{self.asked} measurement"
        )

    @classmethod
    def from_json(cls, value: Any, where: str) -> J0State:
        """J0's state in `value`, or J0Error naming `where`, the value and what was expected.
        Reads `to_json()`'s object, an object holding it as `j0_state`, and the older shapes:

        - `j0 bench run`'s manifest: `j0` (on/off/unknown) as run where `j0_source` is --log or
          --status-json, else as asked (--j0); `j0_asked`, `j0_from`, `overlay_identity`;
        - a setting of matrix.json: `j0` (a boolean, as asked), `j0_ran` (null: no log read),
          `speculator_identity`, `j0_from`; `baseline` true: not applicable;
        - a setting.json of `j0 mini run`: `kind` (not dflash: not applicable), `j0` (on/off/
          unknown as run, or a boolean: as asked, in records before j0_asked), `j0_asked`,
          `speculator_identity`, `j0_from`;
        - `j0 status --json`: `identity` and `j0` (the J0 file's DFLASH_CTX_NOISE line), judged
          by the rule (`j0_of`)."""
        return _read(value, where)

    @classmethod
    def from_name(cls, name: str) -> J0State | None:
        """J0 as asked in a folder's name (`k7-j0-on`: results from before any record), None
        where the name says nothing of it."""
        if (match := NAME.search(name)) is None:
            return None
        why = f"as asked in the name {name!r}; not verified"
        return cls(match["j0"].lower(), UNKNOWN, why, seen=False)


def j0_ran(facts: LogFacts) -> J0State:
    """What a server's log says ran (see the module's docstring); asked: unknown."""
    state = j0_of(facts.identity, facts.j0, facts.source)
    if facts.plugin_j0 is not None and state.ran in ON_OFF and facts.plugin_j0 != state.ran:
        why = (
            f"the plugin's line says j0={facts.plugin_j0}, the J0 file's "
            f"DFLASH_CTX_NOISE={int(state.ran == ON)} in {facts.source}"
        )
        return J0State(UNKNOWN, UNKNOWN, why, facts.identity)
    return state


def j0_of(identity: str | None, logged: str | None, source: str) -> J0State:
    """The rule, from the identity line's kind and the J0 file's DFLASH_CTX_NOISE state (`j0
    status` reports both as `identity` and `j0`), read from `source`; asked: unknown."""
    if identity is None:
        why = f"no identity line in {source}: which file ran is unknown"
        return J0State(UNKNOWN, UNKNOWN, why)
    role = role_of(identity)  # a later release's files (article-0.34.0) run the same J0
    if role == BASE:
        why = "identity=base: vLLM's unpatched speculator.py, with no J0"
        return J0State(UNKNOWN, OFF, why, identity)
    if role not in J0_KINDS:
        why = f"identity={identity}: not a J0 file j0 knows"
        return J0State(UNKNOWN, UNKNOWN, why, identity)
    if logged not in ON_OFF:
        why = f"identity={identity}, no DFLASH_CTX_NOISE line in {source}"
        return J0State(UNKNOWN, UNKNOWN, why, identity)
    why = f"identity={identity}, DFLASH_CTX_NOISE={int(logged == ON)}"
    return J0State(UNKNOWN, str(logged), why, identity)


def not_applicable(kind: str, identity: str | None = None, seen: bool = False) -> J0State:
    """A server with no DFlash drafter (`kind`: baseline, ngram): no J0 asked, none to run."""
    why = f"not applicable: {kind} has no DFlash drafter"
    return J0State(UNKNOWN, NOT_APPLICABLE, why, identity, seen)


def state_error(where: str, key: str, value: Any, expected: str) -> J0Error:
    from j0.edge.fields import shown

    return J0Error(f"{where}: {key!r} is {shown(value)}, expected {expected}", INPUT_LACKS)


# The reader of every shape (J0State.from_json), each older document's by the keys only it has.
# Where a manifest's "j0" was read from the file that ran (j0.bench.result.manifest), not from --j0.
SEEN_SOURCES = ("--log", "--status-json")
# Keys only `j0 status --json` has among the documents that hold J0.
STATUS_KEYS = {"identity", "article_setup", "url", "log_source"}
_WORDS = {
    ASKED: '"on", "off" or "unknown"',
    RAN: '"on", "off", "unknown" or "n/a"',
    STATES: '"on", "off" or "unknown"',
}


def _read(value: Any, where: str) -> J0State:
    if not isinstance(value, dict):
        raise J0Error(f"{where}: J0's state is not an object", INPUT_LACKS)
    if value.get("j0_state") is not None:
        return _read(value["j0_state"], f"{where}: 'j0_state'")
    if "ran" in value or "asked" in value:
        return _own(value, where)
    if "j0_source" in value or "j0_differs" in value or "overlay_identity" in value:
        return _manifest(value, where)
    if STATUS_KEYS & value.keys():
        return _status(value, where)
    if "kind" in value:
        return _setting_record(value, where)
    if "num_speculative_tokens" in value or "j0_ran" in value:
        return _matrix_entry(value, where)
    raise J0Error(
        f"{where}: no J0 state (expected an object with 'asked' and 'ran', or a j0 document's "
        "keys: j0 and j0_source, j0_ran, j0_asked, or identity)",
        INPUT_LACKS,
    )


def _text(value: dict[str, Any], key: str, where: str, allowed: tuple[str, ...]) -> str | None:
    """`value[key]`: one of `allowed`, or null/absent (None)."""
    item = value.get(key)
    if item is not None and item not in allowed:
        raise state_error(where, key, item, _WORDS.get(allowed, " or ".join(allowed)) + " or null")
    return item


def _why(value: dict[str, Any], key: str, where: str) -> str | None:
    item = value.get(key)
    if item is not None and not isinstance(item, str):
        raise state_error(where, key, item, "a string or null")
    return item


def _own(value: dict[str, Any], where: str) -> J0State:
    asked = _text(value, "asked", where, ASKED)
    ran = _text(value, "ran", where, RAN)
    why = _why(value, "why", where)
    identity = _why(value, "identity", where)
    seen = value.get("seen", True)
    if not isinstance(seen, bool):
        raise state_error(where, "seen", seen, "true or false")
    if asked is None or ran is None or why is None:
        missing = [k for k, v in (("asked", asked), ("ran", ran), ("why", why)) if v is None]
        raise J0Error(f"{where}: J0's state lacks {', '.join(missing)}", INPUT_LACKS)
    return J0State(asked, ran, why, identity, seen)


def _manifest(value: dict[str, Any], where: str) -> J0State:
    """`j0 bench run`'s manifest: "j0" as run where --log or --status-json showed the file that
    ran, else as asked (--j0; the oldest manifests, without j0_source, alike)."""
    j0 = _text(value, "j0", where, STATES)
    source = value.get("j0_source")
    asked = _text(value, "j0_asked", where, ASKED)
    why = _why(value, "j0_from", where)
    identity = value.get("overlay_identity")
    identity = identity if isinstance(identity, str) and identity != UNKNOWN else None
    if source in SEEN_SOURCES and j0 is not None:
        shown = value.get("server_log" if source == "--log" else "status_json")
        return J0State(asked or UNKNOWN, j0, why or f"{source} {shown}", identity)
    asked = asked or (j0 if j0 in ON_OFF else None)
    if asked is None:
        why = "not asked (--j0), and no --log or --status-json"
        return J0State(UNKNOWN, UNKNOWN, why, identity, seen=False)
    return J0State(asked, UNKNOWN, f"as asked (--j0 {asked}); not verified", identity, False)


def _matrix_entry(value: dict[str, Any], where: str) -> J0State:
    """A setting of matrix.json: j0 (bool) as asked, j0_ran as its log showed (null: none read)."""
    j0 = value.get("j0")
    if j0 is not None and not isinstance(j0, bool):
        raise state_error(where, "j0", j0, "true or false")
    asked = UNKNOWN if j0 is None else (ON if j0 else OFF)
    identity = _why(value, "speculator_identity", where)
    if value.get("baseline") is True:
        return not_applicable("the baseline", identity)
    ran = _text(value, "j0_ran", where, STATES)
    why = _why(value, "j0_from", where)
    if ran is None:
        return J0State(asked, UNKNOWN, why or "no server log was read", identity, seen=False)
    return J0State(asked, ran, why or "the setting's server log", identity)


def _setting_record(value: dict[str, Any], where: str) -> J0State:
    """A setting.json of `j0 mini run`: j0 as run (a string), or as asked (a boolean: records
    from before j0_asked); a kind other than dflash has no J0."""
    identity = _why(value, "speculator_identity", where)
    kind = value.get("kind")
    if kind != "dflash":
        return not_applicable(str(kind), identity)
    j0 = value.get("j0")
    why = _why(value, "j0_from", where)
    if isinstance(j0, bool):
        asked = ON if j0 else OFF
        return J0State(asked, UNKNOWN, why or "as asked; not verified", identity, seen=False)
    ran = _text(value, "j0", where, (*STATES, NOT_APPLICABLE))
    asked = _text(value, "j0_asked", where, ASKED)
    if ran is None:
        return J0State(asked or UNKNOWN, UNKNOWN, why or "no server log", identity, seen=False)
    return J0State(asked or UNKNOWN, ran, why or "the setting's server log", identity)


def _status(value: dict[str, Any], where: str) -> J0State:
    """`j0 status --json` of before j0_state: its identity and patch line, judged by the rule."""
    logged = _text(value, "j0", where, ON_OFF)
    identity = _why(value, "identity", where)
    source = value.get("log_source")
    state = j0_of(identity, logged, source if isinstance(source, str) else where)
    if identity is None and logged is None:  # no log, or one that shows nothing of J0
        return J0State(UNKNOWN, UNKNOWN, state.why, seen=False)
    return state
