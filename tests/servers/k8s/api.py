"""A stand-in for the Kubernetes API server, of ours: tests run the real `kubernetes` Python
client against it (`j0 bench matrix --backend k8s`) without a cluster, and it listens on 127.0.0.1
only. Not Kubernetes: it keeps objects in memory (k8s/objects.py) and plays the Job controller and
the kubelet (k8s/jobs.py) just far enough for `j0 bench matrix --backend k8s` (k8s/routes.py):

    POST /api/v1/namespaces/{ns}/persistentvolumeclaims     create (409 AlreadyExists, as the API)
    POST /api/v1/namespaces/{ns}/configmaps                 create
    GET  /api/v1/namespaces/{ns}/{persistentvolumeclaims|configmaps}/{name}
    POST /apis/batch/v1/namespaces/{ns}/jobs                create; the Job "runs" (below)
    GET  /apis/batch/v1/namespaces/{ns}/jobs/{name}[/status]
    GET  /api/v1/namespaces/{ns}/pods?labelSelector=k=v,...     PodList
    GET  /api/v1/namespaces/{ns}/pods?watch=true&timeoutSeconds=N[&resourceVersion=R]
                                                            watch events, one JSON object a line
                                                            (ADDED for what exists, then changes),
                                                            chunked, closed after N seconds
    GET  /api/v1/namespaces/{ns}/pods/{name}/log?container=C    text/plain

Every request must carry `Authorization: Bearer <token>` (401 otherwise), as a cluster would ask
of a kubeconfig user. Errors are `Status` objects with the API's reason and code.

The Job controller: pods are created for a Job's indexes (completionMode Indexed: 0..completions-1;
otherwise one), at most `parallelism` at a time, named `<job>-<index>-<5 chars>` and labelled
`batch.kubernetes.io/job-name`, `job-name`, `batch.kubernetes.io/job-completion-index` as
Kubernetes 1.29 labels them. Each pod goes Pending -> Running -> Succeeded or Failed; a failed
index gets a new pod up to `backoffLimitPerIndex` (else `backoffLimit`) times. The Job's status
follows (active, succeeded, failed, completedIndexes, failedIndexes as "0-2,5" ranges, and the
conditions Complete or Failed with reason FailedIndexes / BackoffLimitExceeded).

The kubelet is the test's: `kubelet(pod) -> PodResult(exit_code, logs)` runs in the pod's own
thread and decides what the pod's containers did and printed (a test runs the rendered
commands there). Without one, every pod succeeds and prints nothing.

Standalone (standard library only): python3 tests/servers/k8s/api.py --port 0 --token T
prints `k8s_api: serving at http://127.0.0.1:PORT` on its first line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: import this folder as the package it is
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    __package__ = ".".join(Path(__file__).resolve().parts[-3:-1])

from ..base import LOCALHOST, StandInServer
from .jobs import INDEX, JOB_NAME, JobController, Kubelet, PodResult, ranges
from .objects import ApiError, Obj, ObjectStore
from .routes import K8sHandler

__all__ = [
    "INDEX",
    "JOB_NAME",
    "ApiError",
    "K8sApiStandIn",
    "Kubelet",
    "PodResult",
    "main",
    "ranges",
]


class K8sApiStandIn(StandInServer):
    """The server; start() runs it in a thread, stop() ends it. `kubelet` may be set (or
    replaced) before the first Job is created."""

    def __init__(
        self,
        host: str = LOCALHOST,
        port: int = 0,
        *,
        token: str = "standin-token",
        kubelet: Kubelet | None = None,
        pod_start_delay: float = 0.05,
    ) -> None:
        super().__init__(K8sHandler, host, port)
        self.token = token
        self.kubelet: Kubelet = kubelet or (lambda pod: PodResult())
        self.store = ObjectStore()
        self.jobs = JobController(self.store, lambda pod: self.kubelet(pod), pod_start_delay)
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request

    def kubeconfig(self, namespace: str | None = None) -> dict[str, Any]:
        """A kubeconfig (as a dict; write it as JSON, which is YAML) for this server."""
        context: dict[str, str] = {"cluster": "standin", "user": "standin"}
        if namespace:
            context["namespace"] = namespace
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
            "users": [{"name": "standin", "user": {"token": self.token}}],
            "contexts": [{"name": "standin", "context": context}],
            "current-context": "standin",
        }

    # -- the objects (k8s_objects.ObjectStore) --------------------------------------------------

    @property
    def lock(self) -> Any:
        return self.store.lock

    @property
    def version(self) -> int:
        return self.store.version

    @property
    def events(self) -> list[tuple[int, str, Obj]]:
        return self.store.events

    @property
    def objects(self) -> dict[tuple[str, str, str], Obj]:
        return self.store.objects

    def create(self, plural: str, namespace: str, obj: Obj) -> Obj:
        """Keep `obj`; a Job starts running (k8s_jobs.JobController)."""
        created = self.store.create(plural, namespace, obj)
        if plural == "jobs":
            self.jobs.start(namespace, created["metadata"]["name"])
        return created

    def get(self, plural: str, namespace: str, name: str) -> Obj:
        return self.store.get(plural, namespace, name)

    def pods(self, namespace: str, selector: dict[str, str]) -> list[Obj]:
        return self.store.pods(namespace, selector)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", default="standin-token")
    args = parser.parse_args(argv)
    server = K8sApiStandIn(port=args.port, token=args.token)
    print(f"k8s_api: serving at {server.url}", flush=True)
    server.serve_until_interrupted()
    return 0


if __name__ == "__main__":
    sys.exit(main())
