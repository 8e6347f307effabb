"""The article's server on Kubernetes (deploy/k8s/, written by `j0 deploy render`): a PVC for the
Hub cache and the drafter, a Deployment (an init container runs `j0 drafter fetch` into the PVC;
the server is `j0 serve -- ARGS` with compose's default arguments and switches, one
`nvidia.com/gpu`, /dev/shm in memory, a startup probe on /v1/models allowing an hour for a 27B
load, readiness and liveness on /health) and a ClusterIP Service, in the shape of vLLM's
Kubernetes guide; plus values for the vLLM production-stack Helm chart with our image. Every pod
and container hardened as hardening.py says.

`j0 deploy render [DIR]` (or `python -m j0.kube.serving [DIR]`) rewrites the committed files under
DIR (default deploy/k8s); a test keeps them equal to what this module renders from the pins.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from j0.article.serving import default_image_tag
from j0.compose.server import SERVER_PORT, MatrixPoint, ServerKnobs, server_setting
from j0.kube import hardening
from j0.kube.hardening import HF_TOKEN_SECRET
from j0.kube.literal import check_names, literal, literal_container, literal_containers
from j0.kube.objects import (
    LIVENESS_PROBE,
    READINESS_PROBE,
    STARTUP_PROBE,
    drafter_fetch,
    drafter_fetch_container,
    env_entries,
    meta,
    object_labels,
    pod_spec,
    pvc,
    server_mounts,
    to_yaml,
    volumes,
)
from j0.pins import Pins
from j0.terminal import sink

SERVING_NAME = "j0-vllm"
SERVING_PVC = "j0-cache"
# The serving default: compose.yaml's defaults (15 draft tokens, J0 on, vLLM's prefix caching).
SERVING_SETTING = MatrixPoint(tokens=15, j0=True, prefix_caching=True)


def default_image(pins: Pins) -> str:
    """The tag `j0 image build` gives the image (push it where the cluster pulls from)."""
    return default_image_tag(pins)


def serving_manifests(
    pins: Pins, knobs: ServerKnobs, image: str, namespace: str | None = None
) -> dict[str, dict[str, Any]]:
    """deploy/k8s/serving/: file name -> manifest, every container's values literal (the
    kubelet expands none of them: j0.kube.literal)."""
    check_names(knobs.target_model, pins.drafter_repo, pins.drafter_revision)
    labels = object_labels(SERVING_NAME)
    setting = SERVING_SETTING
    server = {
        "name": "vllm",
        "image": image,
        # compose.serve.yaml's entrypoint and command: j0 serve checks them, logs the switches and
        # execs the image's entrypoint (speculator.py identity line, then `vllm serve ARGS`).
        "command": ["j0", "serve", "--"],
        "args": server_setting(setting, knobs).args(),
        "env": env_entries(server_setting(setting, knobs).env(), token=True),
        "ports": [{"name": "http", "containerPort": SERVER_PORT}],
        "resources": hardening.gpu_resources(1),
        # Root, without capabilities: vLLM's image is made for root (hardening.py says why).
        "securityContext": hardening.container_security(non_root=False),
        "volumeMounts": server_mounts(),
        "startupProbe": STARTUP_PROBE,
        "readinessProbe": READINESS_PROBE,
        "livenessProbe": LIVENESS_PROBE,
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(SERVING_NAME, namespace, labels),
        "spec": {
            "replicas": 1,
            # One GPU server on a ReadWriteOnce volume: stop the old pod before the new one.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app.kubernetes.io/name": SERVING_NAME}},
            "template": {
                "metadata": {"labels": labels},
                "spec": pod_spec(
                    True,
                    initContainers=[drafter_fetch_container(pins, image)],
                    containers=[server],
                    volumes=volumes(SERVING_PVC),
                ),
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(SERVING_NAME, namespace, labels),
        "spec": {
            "type": "ClusterIP",
            "selector": {"app.kubernetes.io/name": SERVING_NAME},
            "ports": [{"name": "http", "port": SERVER_PORT, "targetPort": "http"}],
        },
    }
    return {
        "pvc.yaml": pvc(SERVING_PVC, namespace, "200Gi", "ReadWriteOnce", labels),
        "deployment.yaml": literal_containers(deployment),
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
    check_names(knobs.target_model, pins.drafter_repo, pins.drafter_revision)
    repository, _, tag = image.rpartition(":")
    setting = SERVING_SETTING
    server = server_setting(setting, knobs, drafter_dir=HELM_DRAFTER)
    # The chart adds the model, --port and the prefix-caching flag itself.
    extra = replace(server, port=None, prefix_caching=None).args()[1:]
    env = server_setting(setting, knobs).env()
    return {
        "servingEngineSpec": {
            "modelSpec": [
                {
                    "name": "j0-qwen",
                    "repository": repository,
                    "tag": tag,
                    # The chart places the model and extraArgs in its container's args: literal.
                    "modelURL": literal(knobs.target_model),
                    "replicaCount": 1,
                    "requestCPU": 8,
                    "requestMemory": "64Gi",
                    "requestGPU": 1,
                    "limitCPU": 16,
                    "limitMemory": "160Gi",
                    "pvcStorage": "200Gi",
                    "pvcAccessMode": ["ReadWriteOnce"],
                    "initContainer": literal_container(
                        {
                            **drafter_fetch(pins, image, HELM_DRAFTER),
                            "env": env_entries({"HF_HOME": HELM_DATA}),
                            "resources": hardening.J0_RESOURCES,
                            "mountPvcStorage": True,
                        }
                    ),
                    "vllmConfig": {
                        "enablePrefixCaching": setting.prefix_caching,
                        "extraArgs": [literal(word) for word in extra],
                    },
                    "env": env_entries({"VLLM_DFLASH_CTX_NOISE": env["VLLM_DFLASH_CTX_NOISE"]}),
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


def deploy_files(pins: Pins, knobs: ServerKnobs, image: str) -> dict[str, str]:
    """deploy/k8s/: relative path -> text."""
    serving = serving_manifests(pins, knobs, image)
    files = {f"serving/{name}": to_yaml([doc]) for name, doc in serving.items()}
    files["serving/kustomization.yaml"] = to_yaml([kustomization(list(serving))])
    files["production-stack/values.yaml"] = to_yaml([helm_values(pins, knobs, image)])
    return files


@dataclass(frozen=True)
class DeployRender:
    """What `j0 deploy render` did: the folder, the files it wrote (those whose text changed) and
    every file it renders, relative to the folder, with the sha256 of its text."""

    root: Path
    written: list[Path]
    files: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": str(self.root),
            "written": [str(path) for path in self.written],
            "files": self.files,
        }


def write_deploy(root: Path, pins: Pins) -> DeployRender:
    from j0.edge.atomic import sha256_bytes, write_text_atomic

    knobs = ServerKnobs(target_model=pins.target_model)
    written, files = [], {}
    for rel, text in deploy_files(pins, knobs, default_image(pins)).items():
        path = root / rel
        files[str(rel)] = sha256_bytes(text.encode("utf-8"))
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text)
            written.append(path)
    return DeployRender(root, written, files)


def default_deploy_dir(pins: Pins) -> Path:
    return pins.root / "deploy" / "k8s"


def render_deploy(root: Path | None = None) -> DeployRender:
    """Rewrite deploy/k8s/ (or `root`) from the pins; what was written."""
    from j0.pins import load_pins

    pins = load_pins()
    return write_deploy(default_deploy_dir(pins) if root is None else root, pins)


def main(argv: list[str] | None = None) -> int:
    """`python -m j0.kube.serving [DIR]`, as `j0 deploy render [DIR]`."""
    args = sys.argv[1:] if argv is None else argv
    for path in render_deploy(Path(args[0]) if args else None).written:
        sink.say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
