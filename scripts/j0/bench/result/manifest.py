"""The setup a result was measured with: server, model, J0 state, drafter pin, dataset, j0 itself.

J0 on/off comes from the file that ran where the run can see it (j0.engine.server.j0_state): the
server's log (`--log FILE`: its identity line and the patch's DFLASH_CTX_NOISE line), else
`--status-json FILE` (the output of `j0 status --json`, which read the same lines); "on" only where
that file is a J0 file. Where neither is given it is what `--j0 on|off` says (j0_source "--j0":
asked, not seen), else "unknown". What was asked is kept as j0_asked, and where the file that ran
says otherwise, j0_differs says how.

The manifest is a document of this module (SetupManifest): `j0 bench run` writes it into its
result as the key "manifest", `j0 bench report` reads it back through from_json, checked once
against its type. Standard library only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0 import __version__
from j0.edge.document import Document, attribute, table_of
from j0.edge.fields import field_problem
from j0.engine.server import server_log
from j0.engine.server.j0_state import OFF, ON, ON_OFF, UNKNOWN, J0State, j0_ran
from j0.errors import (
    INPUT_LACKS,
    InputLimit,
    J0Error,
    parse_json,
    read_input_bytes,
    read_input_text,
)
from j0.pins import checkout_revision, load_pins, project_root
from j0.status import StatusReport


@dataclass
class SetupManifest(Document):
    """The setup one `j0 bench run` measured, a typed document: its keys in the order they are
    written, each with the kinds a reader takes (null where the writer may leave a key so, or an
    older file did). None must be there: a result written before a key was added is read with
    that key None. `present` is the keys the document had (to_json writes those only, so a
    result read back is written as it was); `extra` the keys the type does not know, kept as
    they were."""

    time: str | None = None
    server: dict[str, Any] | None = None
    model: str | None = None
    model_root: str | None = None
    max_model_len: int | None = None
    endpoint: str | None = None
    thinking: bool | None = None
    speculative_config: dict[str, Any] | str | None = None  # "unknown" where nothing said
    j0: str | None = None
    j0_source: str | None = None
    j0_asked: str | None = None
    j0_from: str | None = None
    j0_differs: str | None = None
    j0_state: dict[str, Any] | None = None  # J0State.to_json(): the one form (j0...: older)
    overlay_identity: str | None = None
    status_json: str | None = None
    server_log: str | None = None
    drafter: dict[str, Any] | None = None
    dataset: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    j0_revision: dict[str, Any] | None = None
    j0_version: str | None = None
    # added by the summary: the draft-token counts the responses carried
    num_speculative_tokens_seen: list[Any] | None = None
    present: set[str] = attribute(default_factory=set)
    extra: dict[str, Any] = attribute(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The manifest's object: the keys it has, in the type's order, then the unknown ones."""
        known = {key: getattr(self, key) for key in table_of(SetupManifest) if key in self.present}
        return {**known, **self.extra}

    def set(self, key: str, value: Any) -> None:
        """Give `key` (one of the type's) a value, and the document that key."""
        if key not in table_of(SetupManifest):
            raise KeyError(key)
        setattr(self, key, value)
        self.present.add(key)

    def block(self, key: str) -> dict[str, Any]:
        """An object-valued field (server, options, dataset, drafter, speculative_config), or {}
        where the manifest has none ("unknown", null, absent)."""
        value = getattr(self, key)
        return value if isinstance(value, dict) else {}

    @classmethod
    def from_json(cls, value: Any, where: str) -> SetupManifest:
        """A manifest read back; J0Error naming `where` and the key where one has another kind
        than the type says."""
        if value is None:
            return cls()
        if not isinstance(value, dict):
            raise J0Error(f"{where}: expected an object, got {type(value).__name__}", INPUT_LACKS)
        if (problem := problem_of(value)) is not None:
            raise J0Error(f"{where}: {problem}", INPUT_LACKS)
        table = table_of(cls)
        kept = {key: value[key] for key in table if key in value}
        extra = {key: item for key, item in value.items() if key not in table}
        return cls(**kept, present=set(kept), extra=extra)


def problem_of(value: dict[str, Any]) -> str | None:
    """What in a manifest's object has another kind than SetupManifest says, or None."""
    return field_problem(value, table_of(SetupManifest))


@dataclass(frozen=True)
class SeenRun:
    """What a file that saw the server says ran: `j0 status --json`'s output (--status-json
    FILE, its report in `status`) or the server's log (--log FILE). `ran` is J0's state as that
    file shows it (j0.engine.server.j0_state), None where a status file shows nothing of it; the
    other facts are None where the file does not have them."""

    file: str
    ran: J0State | None = None
    overlay_identity: str | None = None
    speculative_config: dict[str, Any] | None = None
    vllm_commit: str | None = None
    status: StatusReport | None = None

    @property
    def j0_on(self) -> bool | None:
        """Whether J0 ran, where the file shows it."""
        return None if self.ran is None or self.ran.ran not in ON_OFF else self.ran.ran == ON


def read_status(path: Path) -> SeenRun:
    """What a `j0 status --json` file says about J0, the overlay, the speculative config and the
    engine, with the file's report."""
    text = read_input_text(path, "--status-json", limit=InputLimit.SMALL)
    value = parse_json(text, f"--status-json {path}")
    status = StatusReport.from_json(value, f"--status-json {path}")
    state = J0State.from_json(value, f"--status-json {path}")
    return SeenRun(
        file=str(path),
        ran=state if state.seen else None,
        overlay_identity=status.identity,
        speculative_config=status.speculative_config or None,
        vllm_commit=status.vllm_commit,
        status=status,
    )


def read_log(path: Path) -> SeenRun:
    """What a server's log (`--log FILE`) says ran: J0's state (always: "unknown" where the log
    does not show it), the overlay identity, the speculative config and the vLLM commit."""
    text = read_input_bytes(path, "--log").decode("utf-8", errors="replace")
    facts = server_log.parse(text, f"--log {path}")
    return SeenRun(
        file=str(path),
        ran=j0_ran(facts),
        overlay_identity=facts.identity,
        speculative_config=facts.speculative_config or None,
        vllm_commit=facts.vllm_commit,
    )


def _first_said(key: str, *seen: SeenRun | None) -> Any:
    """`key` from the first of `seen` that has it (the log before the status file)."""
    return next((v for s in seen if s is not None and (v := getattr(s, key)) is not None), None)


def git_revision(root: Path) -> dict[str, Any]:
    """The j0 checkout's commit and whether it has changes (None outside a git checkout)."""
    revision = checkout_revision(root)
    return {"commit": revision.commit, "dirty": revision.dirty}


def drafter_pin() -> dict[str, Any]:
    try:
        pins = load_pins(project_root())
    except J0Error as exc:
        return {"error": str(exc)}
    return {
        "repo": pins.drafter_repo,
        "revision": pins.drafter_revision,
        "commit": pins.drafter_commit or None,
    }


def build(
    *,
    url: str,
    server_version: str | None,
    models: list[dict[str, Any]],
    model: str,
    endpoint: str,
    thinking: bool,
    status: SeenRun | None,
    j0_flag: bool | None,
    overlay_identity: str | None,
    dataset: dict[str, Any],
    options: dict[str, Any],
    log: SeenRun | None = None,
) -> SetupManifest:
    card = next((m for m in models if m.get("id") == model), {})
    state = j0_state(j0_flag, status, log)
    identity = _first_said("overlay_identity", log, status) or overlay_identity
    spec = _first_said("speculative_config", log, status)
    root = project_root_or_none()
    written = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "server": {
            "url": url,
            "vllm_version": server_version,
            "vllm_commit": _first_said("vllm_commit", log, status),
        },
        "model": model,
        "model_root": card.get("root"),
        "max_model_len": card.get("max_model_len"),
        "endpoint": endpoint,
        "thinking": thinking if endpoint == "chat" else None,
        "speculative_config": spec if spec is not None else "unknown",
        "j0": state.ran if state.seen else (state.asked if state.asked in ON_OFF else UNKNOWN),
        "j0_source": _j0_source(j0_flag, status, log),
        "j0_asked": state.asked if state.asked in ON_OFF else None,
        "j0_from": state.why if state.seen else None,
        "j0_differs": state.differs(),
        "j0_state": state.to_json(),
        "overlay_identity": identity if identity is not None else "unknown",
        "status_json": status.file if status is not None else None,
        "server_log": log.file if log is not None else None,
        "drafter": drafter_pin(),
        "dataset": dataset,
        "options": options,
        "j0_revision": git_revision(root) if root else None,
        "j0_version": __version__,
    }
    return SetupManifest.from_json(written, "the manifest being written")


def j0_state(j0_flag: bool | None, status: SeenRun | None, log: SeenRun | None) -> J0State:
    """J0 as asked (--j0) and as the file that ran shows it: the log, else the status file;
    where neither shows it, not seen."""
    seen = next((s.ran for s in (log, status) if s is not None and s.ran is not None), None)
    if seen is not None:
        return seen.asking(j0_flag)
    if j0_flag is not None:
        asked = ON if j0_flag else OFF
        return J0State(asked, UNKNOWN, f"as asked (--j0 {asked}); not verified", seen=False)
    why = "not asked (--j0), and no --log or --status-json"
    return J0State(UNKNOWN, UNKNOWN, why, seen=False)


def state_of(manifest: SetupManifest, where: str = "the manifest") -> J0State:
    """The manifest's J0 state (its j0_state, or an older manifest's keys: J0State.from_json)."""
    if not manifest.present & {"j0", "j0_state"}:
        return J0State(UNKNOWN, UNKNOWN, "the manifest says nothing of J0", seen=False)
    return J0State.from_json(manifest.to_json(), where)


def j0_said(manifest: SetupManifest) -> str:
    """J0's state as `j0 bench run` prints it, saying how it is known: "as run" where the
    server's log or `j0 status --json` showed the file that ran (with what was asked, where that
    differs), else "as asked" (--j0) and "not verified"."""
    m, state = manifest, state_of(manifest)
    shown = {"--log": m.server_log, "--status-json": m.status_json}.get(m.j0_source or "")
    if shown is not None and state.seen and state.ran in ON_OFF:
        said = f"{state.ran}, as run ({m.j0_source} {shown}: {state.why})"
        if state.asked in ON_OFF and state.asked != state.ran:
            said += f"; {state.asked} as asked"
        return said
    looked = (
        f"{m.j0_source} {shown} does not show which file ran"
        if shown is not None
        else "no --log or --status-json showed the file that ran"
    )
    if state.asked in ON_OFF:
        return f"{state.asked}, as asked (--j0 {state.asked}); not verified: {looked}"
    return f"unknown: not asked (--j0), not verified: {looked}"


def _j0_source(j0_flag: bool | None, status: SeenRun | None, log: SeenRun | None) -> str | None:
    """Where the manifest's "j0" comes from: the file that ran (--log, else --status-json), else
    what was asked (--j0)."""
    if log is not None and log.ran is not None:
        return "--log"
    if status is not None and status.ran is not None:
        return "--status-json"
    if j0_flag is not None:
        return "--j0"
    return None


def project_root_or_none() -> Path | None:
    try:
        return project_root()
    except J0Error:
        return None
