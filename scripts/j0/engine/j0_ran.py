"""J0 on or off as the file that ran shows it, never as it was asked: a setting is labelled "J0 on"
only where the server's log names a J0 speculator.py (its identity line: the article's file or
the prefix-safe variant, by sha256, or either cut for a later release, as the vLLM plugin's
identity line names it) and the patch logged `DFLASH_CTX_NOISE=1`. vLLM's unpatched
file (identity=base) has no J0, whatever VLLM_DFLASH_CTX_NOISE says: J0 off. A log without an
identity line, or naming another file, leaves J0 unknown. `j0 mini run`, `j0 bench matrix` and
`j0 bench run --log` label their settings with this, and refuse or flag what differs from what
was asked. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from j0.article.identity import BASE, J0_KINDS
from j0.engine.server_log import LogFacts, role_of

ON, OFF, UNKNOWN = "on", "off", "unknown"
# The value sets, declared here once: J0 as asked (on or off), and as a log shows it.
ON_OFF = (ON, OFF)
STATES = (ON, OFF, UNKNOWN)


@dataclass(frozen=True)
class J0Ran:
    j0: str  # ON, OFF or UNKNOWN
    identity: str | None  # the identity line's kind (article, prefix-safe, base, other), or None
    why: str  # how the log tells it, in words

    def to_json(self) -> dict[str, str | None]:
        return {"j0": self.j0, "speculator_identity": self.identity, "j0_from": self.why}


def j0_ran(facts: LogFacts) -> J0Ran:
    """What a server's log says ran (see the module's docstring)."""
    return j0_of(facts.identity, facts.j0, facts.source)


def j0_of(identity: str | None, logged: str | None, source: str) -> J0Ran:
    """The same from the identity line's kind and the patch line's J0 state (`j0 status` reports
    both as `identity` and `j0`), read from `source`."""
    if identity is None:
        return J0Ran(UNKNOWN, None, f"no identity line in {source}: which file ran is unknown")
    role = role_of(identity)  # a later release's files (article-0.34.0) run the same J0
    if role == BASE:
        return J0Ran(OFF, identity, "identity=base: vLLM's unpatched speculator.py, with no J0")
    if role not in J0_KINDS:
        return J0Ran(UNKNOWN, identity, f"identity={identity}: not a J0 file j0 knows")
    if logged not in (ON, OFF):
        why = f"identity={identity}, no DFLASH_CTX_NOISE line in {source}"
        return J0Ran(UNKNOWN, identity, why)
    return J0Ran(logged, identity, f"identity={identity}, DFLASH_CTX_NOISE={int(logged == ON)}")


def asked_differs(asked: bool | None, ran: J0Ran) -> str | None:
    """The sentence that says a setting did not run as asked (J0 on asked and not on, or off
    asked and on), or None. None asked (J0 not applicable: no speculative decoding, vLLM's n-gram
    speculator, no DFlash drafter) differs from nothing."""
    if asked is None:
        return None
    want = ON if asked else OFF
    if ran.j0 == want:
        return None
    return (
        f"J0 {want} was asked, but the server's log says J0 {ran.j0} ({ran.why}): "
        f"not a J0-{want} measurement"
    )
