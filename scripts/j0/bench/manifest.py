"""The setup a result was measured with: server, model, J0 state, drafter pin, dataset, j0 itself.

J0 on/off and the overlay identity are known only where the run is told: `--status-json FILE`
(the output of `j0 status --json`), or `--j0 on|off` and `--overlay-identity TEXT`; otherwise
they are recorded as "unknown". Standard library only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from j0 import __version__
from j0.errors import INPUT_LACKS, J0Error, read_input_text
from j0.pins import checkout_revision, load_pins, project_root
from j0.status.status_report import StatusReport


def read_status(path: Path) -> dict[str, Any]:
    """What a `j0 status --json` file says about J0, the overlay, the speculative config and the
    engine: "j0_on", "overlay_identity", "speculative_config" and "vllm_commit" where the file
    knows them."""
    text = read_input_text(path, "--status-json")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise J0Error(f"--status-json {path}: not JSON ({exc})", INPUT_LACKS) from None
    status = StatusReport.from_json(value, f"--status-json {path}")
    found: dict[str, Any] = {"file": str(path), "status": value}
    if status.j0 is not None:
        found["j0_on"] = status.j0 == "on"
    if status.identity is not None:
        found["overlay_identity"] = status.identity
    if status.speculative_config:
        found["speculative_config"] = status.speculative_config
    if status.vllm_commit is not None:
        found["vllm_commit"] = status.vllm_commit
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
) -> dict[str, Any]:
    card = next((m for m in models if m.get("id") == model), {})
    j0_on = j0_flag if j0_flag is not None else (status or {}).get("j0_on")
    identity = overlay_identity or (status or {}).get("overlay_identity")
    root = project_root_or_none()
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "server": {
            "url": url,
            "vllm_version": server_version,
            "vllm_commit": (status or {}).get("vllm_commit"),
        },
        "model": model,
        "model_root": card.get("root"),
        "max_model_len": card.get("max_model_len"),
        "endpoint": endpoint,
        "thinking": thinking if endpoint == "chat" else None,
        "speculative_config": (status or {}).get("speculative_config", "unknown"),
        "j0": "unknown" if j0_on is None else ("on" if j0_on else "off"),
        "j0_source": _j0_source(j0_flag, status),
        "overlay_identity": identity if identity is not None else "unknown",
        "status_json": (status or {}).get("file"),
        "drafter": drafter_pin(),
        "dataset": dataset,
        "options": options,
        "j0_revision": git_revision(root) if root else None,
        "j0_version": __version__,
    }


def _j0_source(j0_flag: bool | None, status: dict[str, Any] | None) -> str | None:
    if j0_flag is not None:
        return "--j0"
    if status and "j0_on" in status:
        return "--status-json"
    return None


def project_root_or_none() -> Path | None:
    try:
        return project_root()
    except J0Error:
        return None
