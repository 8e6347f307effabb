"""The building blocks of j0's Kubernetes objects, shared by the serving manifests (serving.py,
`j0 deploy`) and the matrix's Jobs (`j0 bench matrix --backend k8s`): labels and metadata,
environment entries, the server's probes and mounts, the PVC, the hardened pod spec
(hardening.py), the drafter-fetch container, and the YAML they are written as.

PyYAML is imported where YAML is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from j0.compose.server import DRAFTER_MOUNT, HF_HOME
from j0.kube import hardening
from j0.kube.hardening import J0_HF_HOME, J0_HOME
from j0.pins import Pins

PART_OF = "j0"
HUB_CACHE = f"{HF_HOME}/hub"
STARTUP_PERIOD_S = 10
STARTUP_BUDGET_S = 3600
HEADER = (
    "# Generated from overlay/pins.env by `j0 deploy render` (scripts/j0/kube/serving.py):\n"
    "# edit that, not this file. tests/bench/test_k8s_render.py checks it is current.\n"
)


def object_labels(name: str, **extra: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": PART_OF, **extra}


def meta(name: str, namespace: str | None, labels: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = labels
    return meta


def env_entries(values: dict[str, str], token: bool = False) -> list[dict[str, Any]]:
    """Environment entries; `token`: HF_TOKEN from the optional secret as well."""
    entries: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in values.items()]
    return [*entries, hardening.hf_token_env()] if token else entries


def http_probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


STARTUP_PROBE = http_probe("/v1/models", STARTUP_PERIOD_S, STARTUP_BUDGET_S // STARTUP_PERIOD_S)
READINESS_PROBE = http_probe("/health", 5, 3)
LIVENESS_PROBE = http_probe("/health", 10, 6)


def pvc(
    name: str,
    namespace: str | None,
    size: str,
    access_mode: str,
    labels: dict[str, str],
    storage_class: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": [access_mode],
        "resources": {"requests": {"storage": size}},
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta(name, namespace, labels),
        "spec": spec,
    }


def volumes(claim: str) -> list[dict[str, Any]]:
    return [
        {"name": "cache", "persistentVolumeClaim": {"claimName": claim}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        *hardening.scratch_volumes(),
    ]


def pod_spec(non_root_writers: bool, **spec: Any) -> dict[str, Any]:
    """A pod spec with the pod-level hardening (fsGroup where a non-root container writes)."""
    security = hardening.pod_security()
    if not non_root_writers:
        del security["fsGroup"], security["fsGroupChangePolicy"]
    return {**spec, "automountServiceAccountToken": False, "securityContext": security}


# A container that runs j0 only: HOME and the Hugging Face home in its emptyDir.
J0_ENV = {"HOME": J0_HOME, "HF_HOME": J0_HF_HOME}


def drafter_fetch(pins: Pins, image: str, directory: str) -> dict[str, Any]:
    """The container that runs `j0 drafter fetch` of the pinned drafter into `directory`."""
    return {
        "name": "drafter",
        "image": image,
        "command": ["j0", "drafter", "fetch"],
        "args": [
            "--repo-id",
            pins.drafter_repo,
            "--revision",
            pins.drafter_revision,
            "--dir",
            directory,
        ],
    }


def drafter_fetch_container(pins: Pins, image: str, non_root: bool = True) -> dict[str, Any]:
    """`j0 drafter fetch` of the pinned drafter into the PVC (compose's drafter service); as
    J0_UID where `non_root` (the serving PVC, whose fsGroup the storage applies)."""
    return {
        **drafter_fetch(pins, image, DRAFTER_MOUNT),
        "env": env_entries(J0_ENV, token=True),
        "resources": hardening.J0_RESOURCES,
        "securityContext": hardening.container_security(non_root),
        "volumeMounts": [
            {"name": "cache", "mountPath": DRAFTER_MOUNT, "subPath": "drafter"},
            *hardening.j0_scratch_mounts(),
        ],
    }


def server_mounts() -> list[dict[str, Any]]:
    return [
        {"name": "cache", "mountPath": HUB_CACHE, "subPath": "hub"},
        {"name": "cache", "mountPath": DRAFTER_MOUNT, "subPath": "drafter", "readOnly": True},
        {"name": "dshm", "mountPath": "/dev/shm"},
        *hardening.vllm_scratch_mounts(),
    ]


def to_yaml(documents: Sequence[dict[str, Any]], header: str = HEADER) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # write shared blocks out in full, no &anchors

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    body = "---\n".join(
        yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=1 << 16, allow_unicode=True)
        for doc in documents
    )
    return header + body
