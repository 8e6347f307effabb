"""Values placed where Kubernetes reads more than text: a container's `command`, `args` and `env`
values, in which the kubelet expands `$(VAR)` from the container's environment (a TARGET_MODEL of
`$(HF_TOKEN)` became the token, in the pod's log). Every value j0 places there is written with
each `$` doubled (`$$`, Kubernetes' escape: "escaped references will never be expanded"), so the
process gets it as given (`literal_containers`); and a value that names a Hub repo is checked as
one first, by huggingface_hub's own validator (j0.edge.hub_bounds: exit 64 naming the knob).
"""

from __future__ import annotations

from typing import Any

from j0.edge.hub_bounds import checked_repo_id, checked_revision


def literal(value: str) -> str:
    """`value` as Kubernetes passes it on unexpanded: each `$` doubled."""
    return value.replace("$", "$$")


def literal_container(container: dict[str, Any]) -> dict[str, Any]:
    """The container with its command, args and env values written literally (`literal`)."""
    done = dict(container)
    for key in ("command", "args"):
        if key in done:
            done[key] = [literal(str(word)) for word in done[key]]
    if "env" in done:
        done["env"] = [
            {**entry, "value": literal(str(entry["value"]))} if "value" in entry else entry
            for entry in done["env"]
        ]
    return done


def literal_containers(value: Any) -> Any:
    """`value` (a manifest) with every container of every pod spec in it (`containers`,
    `initContainers`) written literally."""
    if isinstance(value, dict):
        return {
            key: [literal_container(c) for c in item]
            if key in ("containers", "initContainers") and isinstance(item, list)
            else literal_containers(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [literal_containers(item) for item in value]
    return value


def check_names(target_model: str, drafter_repo: str, drafter_revision: str) -> None:
    """The values a pod runs by name, checked before they are placed (exit 64 naming the knob)."""
    checked_repo_id(target_model, "TARGET_MODEL")
    checked_repo_id(drafter_repo, "DRAFTER_REPO")
    checked_revision(drafter_revision, "DRAFTER_REVISION")
