"""The setup a result was measured with: server, model, J0 state, drafter pin, dataset, j0 itself.

J0 on/off comes from the file that ran where the run can see it (j0.engine.j0_ran): the server's
log (`--log FILE`: its identity line and the patch's DFLASH_CTX_NOISE line), else `--status-json
FILE` (the output of `j0 status --json`, which read the same lines); "on" only where that file is
a J0 file. Where neither is given it is what `--j0 on|off` says (j0_source "--j0": asked, not
seen), else "unknown". What was asked is kept as j0_asked, and where the file that ran says
otherwise, j0_differs says how. Standard library only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from j0 import __version__
from j0.engine import server_log
from j0.engine.j0_ran import OFF, ON, UNKNOWN, asked_differs, j0_of, j0_ran
from j0.errors import (
    InputLimit,
    J0Error,
    parse_json,
    read_input_bytes,
    read_input_text,
)
from j0.pins import checkout_revision, load_pins, project_root
from j0.status import StatusReport


def read_status(path: Path) -> dict[str, Any]:
    """What a `j0 status --json` file says about J0, the overlay, the speculative config and the
    engine: "j0_on", "overlay_identity", "speculative_config" and "vllm_commit" where the file
    knows them."""
    text = read_input_text(path, "--status-json", limit=InputLimit.SMALL)
    value = parse_json(text, f"--status-json {path}")
    status = StatusReport.from_json(value, f"--status-json {path}")
    found: dict[str, Any] = {"file": str(path), "status": value}
    if status.j0 is not None or status.identity is not None:
        ran = j0_of(status.identity, status.j0, f"--status-json {path}")
        found["ran"] = ran
        if ran.j0 != UNKNOWN:
            found["j0_on"] = ran.j0 == ON
    if status.identity is not None:
        found["overlay_identity"] = status.identity
    if status.speculative_config:
        found["speculative_config"] = status.speculative_config
    if status.vllm_commit is not None:
        found["vllm_commit"] = status.vllm_commit
    return found


def read_log(path: Path) -> dict[str, Any]:
    """What a server's log (`--log FILE`) says ran: "ran" (j0.engine.j0_ran), "j0_on" where that
    is known, "overlay_identity", "speculative_config" and "vllm_commit" where the log has them."""
    text = read_input_bytes(path, "--log").decode("utf-8", errors="replace")
    facts = server_log.parse(text, f"--log {path}")
    ran = j0_ran(facts)
    found: dict[str, Any] = {"file": str(path), "ran": ran}
    if ran.j0 != UNKNOWN:
        found["j0_on"] = ran.j0 == ON
    if facts.identity is not None:
        found["overlay_identity"] = facts.identity
    if facts.speculative_config:
        found["speculative_config"] = facts.speculative_config
    if facts.vllm_commit is not None:
        found["vllm_commit"] = facts.vllm_commit
    return found


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
    status: dict[str, Any] | None,
    j0_flag: bool | None,
    overlay_identity: str | None,
    dataset: dict[str, Any],
    options: dict[str, Any],
    log: dict[str, Any] | None = None,
) -> dict[str, Any]:
    card = next((m for m in models if m.get("id") == model), {})
    seen = log if log and "ran" in log else (status if status and "ran" in status else None)
    j0_on = seen.get("j0_on") if seen is not None else j0_flag
    differs = asked_differs(j0_flag, seen["ran"]) if seen and j0_flag is not None else None
    told = {**(status or {}), **(log or {})}  # the log first where both say
    identity = told.get("overlay_identity") or overlay_identity
    root = project_root_or_none()
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "server": {
            "url": url,
            "vllm_version": server_version,
            "vllm_commit": told.get("vllm_commit"),
        },
        "model": model,
        "model_root": card.get("root"),
        "max_model_len": card.get("max_model_len"),
        "endpoint": endpoint,
        "thinking": thinking if endpoint == "chat" else None,
        "speculative_config": told.get("speculative_config", "unknown"),
        "j0": UNKNOWN if j0_on is None else (ON if j0_on else OFF),
        "j0_source": _j0_source(j0_flag, status, log),
        "j0_asked": None if j0_flag is None else (ON if j0_flag else OFF),
        "j0_from": seen["ran"].why if seen is not None else None,
        "j0_differs": differs,
        "overlay_identity": identity if identity is not None else "unknown",
        "status_json": (status or {}).get("file"),
        "server_log": (log or {}).get("file"),
        "drafter": drafter_pin(),
        "dataset": dataset,
        "options": options,
        "j0_revision": git_revision(root) if root else None,
        "j0_version": __version__,
    }


def _j0_source(
    j0_flag: bool | None, status: dict[str, Any] | None, log: dict[str, Any] | None
) -> str | None:
    """Where the manifest's "j0" comes from: the file that ran (--log, else --status-json), else
    what was asked (--j0)."""
    if log and "ran" in log:
        return "--log"
    if status and "ran" in status:
        return "--status-json"
    if j0_flag is not None:
        return "--j0"
    return None


def project_root_or_none() -> Path | None:
    try:
        return project_root()
    except J0Error:
        return None
