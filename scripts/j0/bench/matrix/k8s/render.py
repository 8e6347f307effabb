"""Kubernetes manifests from the pins and the server arguments compose renders (matrix/server.py):

- serving (deploy/k8s/serving/): a PVC for the Hub cache and the drafter, a Deployment (an init
  container runs `j0 drafter fetch` into the PVC; the server is `j0 serve -- ARGS` with one
  `nvidia.com/gpu`, /dev/shm in memory, a startup probe on /v1/models allowing an hour for a 27B
  load, readiness and liveness on /health) and a ClusterIP Service, in the shape of vLLM's
  Kubernetes guide; plus values for the vLLM production-stack Helm chart with our image;
- every pod and container hardened as hardening.py says (security contexts, read-only root
  filesystems with their writable paths mounted, no service-account token, requests and limits,
  Job deadlines);
- the matrix: a prepare Job (drafter fetch, target prefetch into the PVC), a ConfigMap with the
  plan (plan.py) and one Indexed Job, an index per (setting, shard): vLLM as a native sidecar
  (an init container with restartPolicy Always and a startup probe), `j0 bench run` as the main
  container against 127.0.0.1, results on the PVC under the index's setting and shard;
  backoffLimitPerIndex retries an index as itself.

`j0 deploy render [DIR]` (or `python -m j0.bench.matrix.k8s.render [DIR]`) rewrites the
committed files under DIR (default deploy/k8s); a test keeps them equal to what this module
renders from the pins.

PyYAML is imported where YAML is written.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.bench.matrix.k8s import hardening
from j0.bench.matrix.k8s.hardening import HF_TOKEN_SECRET, J0_HF_HOME, J0_HOME
from j0.bench.matrix.k8s.plan import PLAN_FILE, Plan
from j0.bench.matrix.server import (
    DRAFTER_MOUNT,
    HF_HOME,
    SERVER_PORT,
    ServerKnobs,
    server_args,
    server_env,
)
from j0.bench.matrix.settings import Setting
from j0.pins import Pins

PART_OF = "j0"
SERVING_NAME = "j0-vllm"
SERVING_PVC = "j0-cache"
MATRIX_PVC = "j0-matrix"
HUB_CACHE = f"{HF_HOME}/hub"
PLAN_DIR = "/plan"
RESULTS_MOUNT = "/results"
# The server's first start downloads and loads a 27B target: the startup probe allows an hour.
STARTUP_PERIOD_S = 10
STARTUP_BUDGET_S = 3600
POD_PYTHONPATH = "/opt/j0/scripts"  # where docker/Dockerfile copies the j0 package
HEADER = (
    "# Generated from overlay/pins.env by `j0 deploy render` (scripts/j0/bench/matrix/k8s/\n"
    "# render.py): edit that, not this file. tests/bench/test_k8s_render.py checks it is "
    "current.\n"
)
# The serving default: compose.yaml's defaults (15 draft tokens, J0 on, vLLM's prefix caching).
SERVING_SETTING = Setting(num_speculative_tokens=15, j0=True, prefix_caching=True)


def default_image(pins: Pins) -> str:
    """The tag `j0 image build` gives the image (push it where the cluster pulls from)."""
    from j0.image import default_tag

    return default_tag(pins)


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


# --- building blocks ----------------------------------------------------------------------------


def _labels(name: str, **extra: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": PART_OF, **extra}


def _meta(name: str, namespace: str | None, labels: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = labels
    return meta


def _env(values: dict[str, str], token: bool = False) -> list[dict[str, Any]]:
    """Environment entries; `token`: HF_TOKEN from the optional secret as well."""
    entries: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in values.items()]
    return [*entries, hardening.hf_token_env()] if token else entries


def _http_probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


STARTUP_PROBE = _http_probe("/v1/models", STARTUP_PERIOD_S, STARTUP_BUDGET_S // STARTUP_PERIOD_S)
READINESS_PROBE = _http_probe("/health", 5, 3)
LIVENESS_PROBE = _http_probe("/health", 10, 6)


def pvc(name: str, options: K8sOptions, access_mode: str, labels: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": [access_mode],
        "resources": {"requests": {"storage": options.pvc_size}},
    }
    if options.storage_class:
        spec["storageClassName"] = options.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(name, options.namespace, labels),
        "spec": spec,
    }


def _volumes(claim: str) -> list[dict[str, Any]]:
    return [
        {"name": "cache", "persistentVolumeClaim": {"claimName": claim}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        *hardening.scratch_volumes(),
    ]


def _pod_spec(non_root_writers: bool, **spec: Any) -> dict[str, Any]:
    """A pod spec with the pod-level hardening (fsGroup where a non-root container writes)."""
    security = hardening.pod_security()
    if not non_root_writers:
        del security["fsGroup"], security["fsGroupChangePolicy"]
    return {**spec, "automountServiceAccountToken": False, "securityContext": security}


# A container that runs j0 only: HOME and the Hugging Face home in its emptyDir.
J0_ENV = {"HOME": J0_HOME, "HF_HOME": J0_HF_HOME}


def _drafter_fetch(pins: Pins, image: str, directory: str) -> dict[str, Any]:
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
        **_drafter_fetch(pins, image, DRAFTER_MOUNT),
        "env": _env(J0_ENV, token=True),
        "resources": hardening.J0_RESOURCES,
        "securityContext": hardening.container_security(non_root),
        "volumeMounts": [
            {"name": "cache", "mountPath": DRAFTER_MOUNT, "subPath": "drafter"},
            *hardening.j0_scratch_mounts(),
        ],
    }


def _server_mounts() -> list[dict[str, Any]]:
    return [
        {"name": "cache", "mountPath": HUB_CACHE, "subPath": "hub"},
        {"name": "cache", "mountPath": DRAFTER_MOUNT, "subPath": "drafter", "readOnly": True},
        {"name": "dshm", "mountPath": "/dev/shm"},
        *hardening.vllm_scratch_mounts(),
    ]


# --- serving ------------------------------------------------------------------------------------


def serving_manifests(
    pins: Pins, knobs: ServerKnobs, image: str, namespace: str | None = None
) -> dict[str, dict[str, Any]]:
    """deploy/k8s/serving/: file name -> manifest."""
    labels = _labels(SERVING_NAME)
    options = K8sOptions(image=image, namespace=namespace, pvc=SERVING_PVC, pvc_size="200Gi")
    setting = SERVING_SETTING
    server = {
        "name": "vllm",
        "image": image,
        # compose.serve.yaml's entrypoint and command: j0 serve checks them, logs the switches and
        # execs the image's entrypoint (speculator.py identity line, then `vllm serve ARGS`).
        "command": ["j0", "serve", "--"],
        "args": server_args(setting, knobs),
        "env": _env(server_env(setting), token=True),
        "ports": [{"name": "http", "containerPort": SERVER_PORT}],
        "resources": hardening.gpu_resources(1),
        # Root, without capabilities: vLLM's image is made for root (hardening.py says why).
        "securityContext": hardening.container_security(non_root=False),
        "volumeMounts": _server_mounts(),
        "startupProbe": STARTUP_PROBE,
        "readinessProbe": READINESS_PROBE,
        "livenessProbe": LIVENESS_PROBE,
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(SERVING_NAME, namespace, labels),
        "spec": {
            "replicas": 1,
            # One GPU server on a ReadWriteOnce volume: stop the old pod before the new one.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app.kubernetes.io/name": SERVING_NAME}},
            "template": {
                "metadata": {"labels": labels},
                "spec": _pod_spec(
                    True,
                    initContainers=[drafter_fetch_container(pins, image)],
                    containers=[server],
                    volumes=_volumes(SERVING_PVC),
                ),
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(SERVING_NAME, namespace, labels),
        "spec": {
            "type": "ClusterIP",
            "selector": {"app.kubernetes.io/name": SERVING_NAME},
            "ports": [{"name": "http", "port": SERVER_PORT, "targetPort": "http"}],
        },
    }
    return {
        "pvc.yaml": pvc(SERVING_PVC, options, "ReadWriteOnce", labels),
        "deployment.yaml": deployment,
        "service.yaml": service,
    }


def kustomization(files: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(files),
    }


# The production-stack chart mounts its PVC at /data and sets HF_HOME=/data there.
HELM_DATA = "/data"
HELM_DRAFTER = f"{HELM_DATA}/drafter"


def helm_values(pins: Pins, knobs: ServerKnobs, image: str) -> dict[str, Any]:
    """Values for the vLLM production-stack chart (helm/values.yaml of vllm-project/
    production-stack): our image, the drafter fetched by the chart's init container into its
    PVC, and compose's server flags. The chart runs `vllm serve MODEL --host 0.0.0.0 --port 8000
    --(no-)enable-prefix-caching EXTRA_ARGS`, so `j0 serve`'s checks and the identity line do
    not run there; the image's speculator.py is still the patched one."""
    repository, _, tag = image.rpartition(":")
    setting = SERVING_SETTING
    args = server_args(setting, knobs, drafter_dir=HELM_DRAFTER)
    # The chart adds the model, --port and the prefix-caching flag itself.
    extra = _without_option(_without_option(args[1:], "--port"), *PREFIX_FLAGS)
    env = server_env(setting)
    return {
        "servingEngineSpec": {
            "modelSpec": [
                {
                    "name": "j0-qwen",
                    "repository": repository,
                    "tag": tag,
                    "modelURL": knobs.target_model,
                    "replicaCount": 1,
                    "requestCPU": 8,
                    "requestMemory": "64Gi",
                    "requestGPU": 1,
                    "limitCPU": 16,
                    "limitMemory": "160Gi",
                    "pvcStorage": "200Gi",
                    "pvcAccessMode": ["ReadWriteOnce"],
                    "initContainer": {
                        **_drafter_fetch(pins, image, HELM_DRAFTER),
                        "env": _env({"HF_HOME": HELM_DATA}),
                        "resources": hardening.J0_RESOURCES,
                        "mountPvcStorage": True,
                    },
                    "vllmConfig": {
                        "enablePrefixCaching": setting.prefix_caching,
                        "extraArgs": extra,
                    },
                    "env": _env({"VLLM_DFLASH_CTX_NOISE": env["VLLM_DFLASH_CTX_NOISE"]}),
                    "hf_token": {"secretName": HF_TOKEN_SECRET, "secretKey": "token"},
                }
            ],
            # The chart's pod and vLLM container (root: vLLM's image is made for it).
            "securityContext": {"seccompProfile": hardening.RUNTIME_DEFAULT},
            "containerSecurityContext": {
                "runAsNonRoot": False,
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            },
        },
    }


PREFIX_FLAGS = ("--enable-prefix-caching", "--no-enable-prefix-caching")


def _without_option(args: list[str], *names: str) -> list[str]:
    """args less `--name VALUE` (for --port) or a bare `--name` flag (for the prefix flags)."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in names:
            value_follows = arg == "--port" and i + 1 < len(args)
            skip = value_follows
            continue
        out.append(arg)
    return out


# --- the matrix ---------------------------------------------------------------------------------


def _pod_env(values: dict[str, str], token: bool = False) -> list[dict[str, Any]]:
    return _env({"PYTHONPATH": POD_PYTHONPATH, **values}, token)


def matrix_manifests(
    pins: Pins, knobs: ServerKnobs, plan: Plan, options: K8sOptions, parallelism: int
) -> dict[str, dict[str, Any]]:
    """The matrix's objects, in the order they are applied: name -> manifest."""
    run = plan.run
    labels = _labels("j0-matrix", **{"j0/run": run})
    plan_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(run, options.namespace, labels),
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
        "metadata": _meta(f"{run}-prepare", options.namespace, labels),
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": hardening.PREPARE_DEADLINE_S,
            "template": {
                "metadata": {"labels": labels},
                "spec": _pod_spec(
                    False,
                    restartPolicy="Never",
                    initContainers=[drafter_fetch_container(pins, options.image, non_root=False)],
                    containers=[target],
                    volumes=_volumes(options.pvc),
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
            *_server_mounts(),
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
        "metadata": _meta(run, options.namespace, labels),
        "spec": {
            "completionMode": "Indexed",
            "completions": plan.completions,
            "parallelism": max(1, min(parallelism, plan.completions)),
            # A failed index is retried as itself, once, without failing the other indexes.
            "backoffLimitPerIndex": 1,
            "activeDeadlineSeconds": options.deadline_s,
            "template": {
                "metadata": {"labels": labels},
                "spec": _pod_spec(
                    False,
                    restartPolicy="Never",
                    initContainers=[sidecar],
                    containers=[bench],
                    volumes=[
                        *_volumes(options.pvc),
                        {"name": "plan", "configMap": {"name": run}},
                    ],
                ),
            },
        },
    }
    return {
        "pvc": pvc(options.pvc, options, options.access_mode, _labels("j0-matrix")),
        "configmap": plan_map,
        "prepare": prepare,
        "job": job,
    }


# --- YAML ---------------------------------------------------------------------------------------


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


def deploy_files(pins: Pins, knobs: ServerKnobs, image: str) -> dict[str, str]:
    """deploy/k8s/: relative path -> text."""
    serving = serving_manifests(pins, knobs, image)
    files = {f"serving/{name}": to_yaml([doc]) for name, doc in serving.items()}
    files["serving/kustomization.yaml"] = to_yaml([kustomization(list(serving))])
    files["production-stack/values.yaml"] = to_yaml([helm_values(pins, knobs, image)])
    return files


def write_deploy(root: Path, pins: Pins) -> list[Path]:
    from j0.edge.atomic import write_text_atomic

    knobs = ServerKnobs(target_model=pins.target_model)
    written = []
    for rel, text in deploy_files(pins, knobs, default_image(pins)).items():
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text)
            written.append(path)
    return written


def default_deploy_dir(pins: Pins) -> Path:
    return pins.root / "deploy" / "k8s"


def render_deploy(root: Path | None = None) -> list[Path]:
    """Rewrite deploy/k8s/ (or `root`) from the pins; the files that changed."""
    from j0.pins import load_pins

    pins = load_pins()
    return write_deploy(default_deploy_dir(pins) if root is None else root, pins)


def main(argv: list[str] | None = None) -> int:
    """`python -m j0.bench.matrix.k8s.render [DIR]`, as `j0 deploy render [DIR]`."""
    args = sys.argv[1:] if argv is None else argv
    for path in render_deploy(Path(args[0]) if args else None):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
