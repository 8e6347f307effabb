"""The matrix's Kubernetes objects (`j0 bench matrix --backend k8s`), on the building blocks of
j0.kube (the same as the serving manifests of `j0 deploy`): a prepare Job (drafter fetch, target
prefetch into the PVC), a ConfigMap with the plan (plan.py) and one Indexed Job, an index per
(setting, shard): vLLM as a native sidecar (an init container with restartPolicy Always and a
startup probe), `j0 bench run` as the main container against 127.0.0.1, results on the PVC under
the index's setting and shard; backoffLimitPerIndex retries an index as itself. Every pod and
container hardened as j0.kube.hardening says.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from j0.bench.matrix.k8s.plan import PLAN_FILE, Plan
from j0.compose.server import HF_HOME, SERVER_PORT, ServerKnobs
from j0.kube import hardening
from j0.kube.hardening import J0_HF_HOME, J0_HOME
from j0.kube.literal import check_names, literal_containers
from j0.kube.objects import (
    J0_ENV,
    READINESS_PROBE,
    STARTUP_PROBE,
    drafter_fetch_container,
    env_entries,
    meta,
    object_labels,
    pod_spec,
    pvc,
    server_mounts,
    volumes,
)
from j0.pins import Pins

MATRIX_PVC = "j0-matrix"
PLAN_DIR = "/plan"
RESULTS_MOUNT = "/results"
POD_PYTHONPATH = "/opt/j0/scripts"  # where docker/Dockerfile copies the j0 package


@dataclass(frozen=True)
class K8sOptions:
    image: str
    namespace: str | None = None
    pvc: str = MATRIX_PVC
    pvc_size: str = "300Gi"
    access_mode: str = "ReadWriteMany"
    storage_class: str | None = None
    gpus_per_server: int = 1
    deadline_s: int = hardening.MATRIX_DEADLINE_S  # the matrix Job's activeDeadlineSeconds


def _pod_env(values: dict[str, str], token: bool = False) -> list[dict[str, Any]]:
    return env_entries({"PYTHONPATH": POD_PYTHONPATH, **values}, token)


def matrix_manifests(
    pins: Pins, knobs: ServerKnobs, plan: Plan, options: K8sOptions, parallelism: int
) -> dict[str, dict[str, Any]]:
    """The matrix's objects, in the order they are applied: name -> manifest; the names a pod
    runs checked, every container's values literal (the kubelet expands none: j0.kube.literal)."""
    check_names(knobs.target_model, pins.drafter_repo, pins.drafter_revision)
    run = plan.run
    labels = object_labels("j0-matrix", **{"j0/run": run})
    plan_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(run, options.namespace, labels),
        "data": {PLAN_FILE: json.dumps(plan.value, indent=1) + "\n"},
    }
    if plan.prompt_files:
        plan_map["binaryData"] = {
            name: base64.b64encode(data).decode("ascii")
            for name, data in sorted(plan.prompt_files.items())
        }
    target = {
        "name": "target",
        "image": options.image,
        "command": ["python3", "-P", "-m", "j0.bench.matrix.k8s.pod"],
        "args": ["prefetch", knobs.target_model],
        "env": _pod_env(J0_ENV, token=True),
        "resources": hardening.J0_RESOURCES,
        # Root without capabilities: it writes the ReadWriteMany PVC (hardening.py says why).
        "securityContext": hardening.container_security(non_root=False),
        "volumeMounts": [
            {"name": "cache", "mountPath": f"{J0_HF_HOME}/hub", "subPath": "hub"},
            *hardening.j0_scratch_mounts(),
        ],
    }
    prepare = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(f"{run}-prepare", options.namespace, labels),
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": hardening.PREPARE_DEADLINE_S,
            "template": {
                "metadata": {"labels": labels},
                "spec": pod_spec(
                    False,
                    restartPolicy="Never",
                    initContainers=[drafter_fetch_container(pins, options.image, non_root=False)],
                    containers=[target],
                    volumes=volumes(options.pvc),
                ),
            },
        },
    }
    sidecar = {
        "name": "vllm",
        "image": options.image,
        # A native sidecar: it starts before the main container, which waits for its startup
        # probe, and it is stopped once the main container has finished.
        "restartPolicy": "Always",
        "command": ["python3", "-P", "-m", "j0.bench.matrix.k8s.pod"],
        "args": ["serve"],
        "env": _pod_env({"J0_PLAN_DIR": PLAN_DIR, "HF_HOME": HF_HOME}, token=True),
        "ports": [{"name": "http", "containerPort": SERVER_PORT}],
        "resources": hardening.gpu_resources(options.gpus_per_server),
        "securityContext": hardening.container_security(non_root=False),
        "volumeMounts": [
            *server_mounts(),
            {"name": "plan", "mountPath": PLAN_DIR, "readOnly": True},
        ],
        "startupProbe": STARTUP_PROBE,
        "readinessProbe": READINESS_PROBE,
    }
    bench = {
        "name": "bench",
        "image": options.image,
        "command": ["python3", "-P", "-m", "j0.bench.matrix.k8s.pod"],
        "args": ["bench"],
        "env": _pod_env(
            {
                "J0_PLAN_DIR": PLAN_DIR,
                "J0_RESULTS_DIR": f"{RESULTS_MOUNT}/{run}",
                "J0_SERVER_URL": f"http://127.0.0.1:{SERVER_PORT}",
                "HOME": J0_HOME,
            }
        ),
        "resources": hardening.J0_RESOURCES,
        "securityContext": hardening.container_security(non_root=False),
        "volumeMounts": [
            {"name": "plan", "mountPath": PLAN_DIR, "readOnly": True},
            {"name": "cache", "mountPath": RESULTS_MOUNT, "subPath": "results"},
            *hardening.j0_scratch_mounts(),
        ],
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(run, options.namespace, labels),
        "spec": {
            "completionMode": "Indexed",
            "completions": plan.completions,
            "parallelism": max(1, min(parallelism, plan.completions)),
            # A failed index is retried as itself, once, without failing the other indexes.
            "backoffLimitPerIndex": 1,
            "activeDeadlineSeconds": options.deadline_s,
            "template": {
                "metadata": {"labels": labels},
                "spec": pod_spec(
                    False,
                    restartPolicy="Never",
                    initContainers=[sidecar],
                    containers=[bench],
                    volumes=[
                        *volumes(options.pvc),
                        {"name": "plan", "configMap": {"name": run}},
                    ],
                ),
            },
        },
    }
    return {
        "pvc": pvc(
            options.pvc,
            options.namespace,
            options.pvc_size,
            options.access_mode,
            object_labels("j0-matrix"),
            options.storage_class,
        ),
        "configmap": plan_map,
        "prepare": literal_containers(prepare),
        "job": literal_containers(job),
    }
