"""The setup a result was measured with: server, model, J0 state, drafter pin, dataset, j0 itself.

J0 on/off and the overlay identity are known only where the run is told: `--status-json FILE`
(the output of `j0 status --json`), or `--j0 on|off` and `--overlay-identity TEXT`; otherwise
they are recorded as "unknown". Standard library only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from j0 import __version__
from j0.errors import INPUT_LACKS, J0Error
from j0.pins import checkout_revision, load_pins, project_root

J0_KEYS = ("j0", "j0_on", "ctx_noise", "VLLM_DFLASH_CTX_NOISE", "dflash_ctx_noise")
IDENTITY_KEYS = ("overlay_identity", "speculator_identity", "identity")
SPEC_KEYS = ("speculative_config", "speculative-config")


def _walk(obj: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > 6:
        return
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            yield str(key), value
            yield from _walk(value, depth + 1)
    elif isinstance(obj, list):
        for item in obj:
            yield from _walk(item, depth + 1)


def j0_state(value: Any) -> bool | None:
    """True/False from a value that says J0 on or off (True, "on", 1, "1", {"on": true}...)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return {1: True, 0: False}.get(value)
    if isinstance(value, str):
        return {"on": True, "1": True, "true": True, "off": False, "0": False, "false": False}.get(
            value.strip().lower()
        )
    if isinstance(value, Mapping):
        for key in ("on", "enabled", "state", "value"):
            if key in value:
                return j0_state(value[key])
    return None


def read_status(path: Path) -> dict[str, Any]:
    """What a `j0 status --json` file says about J0, the overlay and the speculative config."""
    try:
        status = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise J0Error(f"--status-json {path}: no such file", INPUT_LACKS) from None
    except json.JSONDecodeError as exc:
        raise J0Error(f"--status-json {path}: not JSON ({exc})", INPUT_LACKS) from None
    found: dict[str, Any] = {"file": str(path), "status": status}
    for key, value in _walk(status):
        if key in J0_KEYS and "j0_on" not in found and j0_state(value) is not None:
            found["j0_on"] = j0_state(value)
        elif key in IDENTITY_KEYS and "overlay_identity" not in found and value is not None:
            found["overlay_identity"] = value if isinstance(value, str | Mapping) else str(value)
        elif key in SPEC_KEYS and "speculative_config" not in found and value:
            found["speculative_config"] = value
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
        "server": {"url": url, "vllm_version": server_version},
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
