"""Values placed where Kubernetes reads more than text: a container's `command`, `args` and `env`
values, in which the kubelet expands `$(VAR)` from the container's environment (a TARGET_MODEL of
`$(HF_TOKEN)` became the token, in the pod's log). Every value j0 places there is written with
each `$` doubled (`$$`, Kubernetes' escape: "escaped references will never be expanded"), so the
process gets it as given (`literal_containers`); and a value that names a Hub repo is checked as
one first, by huggingface_hub's own validator (`checked_repo_id`: exit 64 naming the knob).

huggingface_hub is imported inside checked_repo_id (the `deploy` and `k8s` extras bring it).
"""

from __future__ import annotations

import re
from typing import Any

from j0.errors import USAGE, J0Error

# A git revision as a pin names one: a commit (prefix), a branch or a tag.
REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,254}")


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


def checked_repo_id(value: str, knob: str) -> str:
    """`value` where huggingface_hub takes it for a repo id ("org/name"), else exit 64 naming
    `knob` (TARGET_MODEL, DRAFTER_REPO) and what was expected."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise J0Error(
            f"{knob} {value!r}: expected a Hugging Face model id (ORG/NAME, letters, digits, "
            f"'-', '_', '.'); huggingface_hub refuses it: {reason}",
            USAGE,
        ) from None
    if not value:
        raise J0Error(f"{knob} '': expected a Hugging Face model id (ORG/NAME)", USAGE)
    return value


def checked_revision(value: str, knob: str) -> str:
    """`value` where it can name a git revision (a commit, a branch, a tag), else exit 64."""
    if not REVISION.fullmatch(value) or ".." in value:
        raise J0Error(
            f"{knob} {value!r}: expected a revision (a commit, a branch or a tag: letters, "
            "digits, '.', '_', '-', '/')",
            USAGE,
        )
    return value


def check_names(target_model: str, drafter_repo: str, drafter_revision: str) -> None:
    """The values a pod runs by name, checked before they are placed (exit 64 naming the knob)."""
    checked_repo_id(target_model, "TARGET_MODEL")
    checked_repo_id(drafter_repo, "DRAFTER_REPO")
    checked_revision(drafter_revision, "DRAFTER_REVISION")
