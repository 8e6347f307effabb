"""The cluster side of `j0 bench matrix --backend k8s`, through the `kubernetes` Python client:
connect (KUBECONFIG, ~/.kube/config, or the pod's service account), create the objects, follow
a Job's pods with a watch, read pod logs.

`kubernetes` is imported inside connect(); this module's callers get it from there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0 import errors as optional
from j0.errors import CHECK_FAILED, INPUT_LACKS, J0Error

PURPOSE = "j0 bench matrix --backend k8s"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


@dataclass
class Cluster:
    api_client: Any
    namespace: str
    core: Any
    batch: Any


def connect(namespace: str | None) -> Cluster:
    """The client for $KUBECONFIG (or ~/.kube/config), else the in-cluster service account; the
    namespace is `namespace`, else the context's, else "default"."""
    optional.require("kubernetes", PURPOSE, extra="k8s")
    from kubernetes import client, config

    path = Path(os.environ.get("KUBECONFIG") or "~/.kube/config").expanduser()
    context_namespace = None
    try:
        if path.is_file():
            api_client = config.new_client_from_config(config_file=str(path))
            _, active = config.list_kube_config_contexts(config_file=str(path))
            context_namespace = (active or {}).get("context", {}).get("namespace")
        else:
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
            api_client = client.ApiClient(configuration)
    except config.ConfigException as exc:
        raise J0Error(
            f"no Kubernetes cluster to talk to: {path} does not configure one and this is not a "
            f"pod ({exc}); set KUBECONFIG",
            INPUT_LACKS,
        ) from None
    return Cluster(
        api_client=api_client,
        namespace=namespace or context_namespace or "default",
        core=client.CoreV1Api(api_client),
        batch=client.BatchV1Api(api_client),
    )


def _api_error(exc: Any, what: str) -> J0Error:
    return J0Error(f"{what}: the API answered {exc.status} {exc.reason}: {exc.body!s:.500}")


def create(cluster: Cluster, manifest: dict[str, Any], reuse: bool = False) -> str:
    """Create one object from its manifest; with reuse, an existing one of that name is kept.
    Returns "created" or "exists"."""
    from kubernetes.client.exceptions import ApiException

    kind, name = manifest["kind"], manifest["metadata"]["name"]
    calls: dict[str, Callable[..., Any]] = {
        "PersistentVolumeClaim": cluster.core.create_namespaced_persistent_volume_claim,
        "ConfigMap": cluster.core.create_namespaced_config_map,
        "Job": cluster.batch.create_namespaced_job,
    }
    try:
        calls[kind](cluster.namespace, manifest)
    except ApiException as exc:
        if exc.status == 409 and reuse:
            return "exists"
        raise _api_error(exc, f"creating {kind} {cluster.namespace}/{name}") from None
    return "created"


def job_finished(job: Any) -> str | None:
    """`Complete` or `Failed` once the Job controller says so, else None."""
    for condition in (job.status.conditions if job.status else None) or []:
        if condition.type in ("Complete", "Failed") and condition.status == "True":
            return str(condition.type)
    return None


@dataclass
class PodView:
    name: str
    index: int | None
    phase: str
    created: str
    reason: str = ""


def pod_view(pod: Any) -> PodView:
    labels = pod.metadata.labels or {}
    raw = labels.get(INDEX_LABEL)
    reason = ""
    statuses = [
        *((pod.status.init_container_statuses if pod.status else None) or []),
        *((pod.status.container_statuses if pod.status else None) or []),
    ]
    for status in statuses:
        term = status.state.terminated if status.state else None
        if term is not None and term.exit_code:
            reason = f"{status.name} exited {term.exit_code} ({term.reason or 'Error'})"
            break
    return PodView(
        name=pod.metadata.name,
        index=int(raw) if raw is not None and str(raw).isdigit() else None,
        phase=(pod.status.phase if pod.status else None) or "Pending",
        created=str(pod.metadata.creation_timestamp or ""),
        reason=reason,
    )


@dataclass
class Follower:
    """Follows one Job: a watch on its pods prints every change of a pod's phase; the Job's
    status is read after each watch window. `describe(index)` names an index in the lines."""

    cluster: Cluster
    job: str
    say: Callable[[str], None]
    describe: Callable[[int | None], str] = lambda index: f"index {index}"
    window_s: int = 30
    seen: dict[str, str] = field(default_factory=dict)

    def _note(self, view: PodView) -> bool:
        """Say a pod's new phase; True when it has just ended (the Job may have changed)."""
        if self.seen.get(view.name) == view.phase:
            return False
        self.seen[view.name] = view.phase
        extra = f": {view.reason}" if view.reason else ""
        self.say(f"{self.describe(view.index)}: {view.phase} (pod {view.name}){extra}")
        return view.phase in ("Succeeded", "Failed")

    def wait(self, deadline_s: float | None = None) -> Any:
        """Until the Job is Complete or Failed; returns the Job."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        started = time.monotonic()
        selector = f"{JOB_NAME_LABEL}={self.job}"
        while True:
            try:
                job = self.cluster.batch.read_namespaced_job_status(
                    self.job, self.cluster.namespace
                )
            except ApiException as exc:
                raise _api_error(exc, f"reading Job {self.cluster.namespace}/{self.job}") from None
            state = job_finished(job)
            if state is not None:
                for pod in self.pods():
                    self._note(pod_view(pod))
                return job
            if deadline_s is not None and time.monotonic() - started > deadline_s:
                raise J0Error(
                    f"Job {self.job}: not finished after {deadline_s:.0f} s", CHECK_FAILED
                )
            stream = watch.Watch()
            try:
                for event in stream.stream(
                    self.cluster.core.list_namespaced_pod,
                    self.cluster.namespace,
                    label_selector=selector,
                    timeout_seconds=self.window_s,
                ):
                    if self._note(pod_view(event["object"])):
                        stream.stop()
            except ApiException as exc:
                raise _api_error(exc, f"watching the pods of Job {self.job}") from None

    def pods(self) -> list[Any]:
        pods = self.cluster.core.list_namespaced_pod(
            self.cluster.namespace, label_selector=f"{JOB_NAME_LABEL}={self.job}"
        )
        return list(pods.items)


def pod_log(cluster: Cluster, pod: str, container: str) -> str:
    from kubernetes.client.exceptions import ApiException

    try:
        text = cluster.core.read_namespaced_pod_log(pod, cluster.namespace, container=container)
    except ApiException as exc:
        return f"(no log: the API answered {exc.status} {exc.reason})\n"
    return str(text)
