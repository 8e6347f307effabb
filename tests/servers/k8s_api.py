"""A small stand-in of the Kubernetes API on 127.0.0.1, of ours, for testing the real `kubernetes`
Python client without a cluster. Not Kubernetes: it keeps objects in memory and plays the Job
controller and the kubelet just far enough for `j0 bench matrix --backend k8s`:

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

Standalone (standard library only): python3 tests/servers/k8s_api.py --port 0 --token T
prints `k8s_api: serving at http://127.0.0.1:PORT` on its first line.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

JOB_NAME = "batch.kubernetes.io/job-name"
INDEX = "batch.kubernetes.io/job-completion-index"


@dataclass
class PodResult:
    exit_code: int = 0
    logs: dict[str, str] = field(default_factory=dict)


Kubelet = Callable[[dict[str, Any]], PodResult]


def ranges(values: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the Job status' form for index sets)."""
    out: list[str] = []
    values = sorted(set(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        out.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(out)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class K8sApiStandIn(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str = "standin-token",
        kubelet: Kubelet | None = None,
        pod_start_delay: float = 0.05,
    ) -> None:
        super().__init__((host, port), _Handler)
        self.token = token
        self.kubelet = kubelet or (lambda pod: PodResult())
        self.pod_start_delay = pod_start_delay
        # (kind plural, namespace, name) -> object
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.events: list[tuple[int, str, dict[str, Any]]] = []  # (resourceVersion, type, pod)
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request
        self.version = 100
        self.lock = threading.Condition()
        self._rng = random.Random(0)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> K8sApiStandIn:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self) -> K8sApiStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

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

    # -- objects ------------------------------------------------------------------------------

    def _stamp(self, obj: dict[str, Any], namespace: str) -> None:
        self.version += 1
        meta = obj.setdefault("metadata", {})
        meta["namespace"] = namespace
        meta.setdefault("uid", f"uid-{self.version}")
        meta.setdefault("creationTimestamp", _now())
        meta["resourceVersion"] = str(self.version)

    def create(self, plural: str, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        name = obj.get("metadata", {}).get("name")
        if not name:
            raise ApiError(422, "Invalid", f"{plural}: metadata.name: Required value")
        with self.lock:
            key = (plural, namespace, name)
            if key in self.objects:
                raise ApiError(409, "AlreadyExists", f'{plural} "{name}" already exists')
            self._stamp(obj, namespace)
            self.objects[key] = obj
            if plural == "jobs":
                obj["status"] = {"active": 0}
                threading.Thread(target=self._run_job, args=(namespace, name), daemon=True).start()
            return obj

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        with self.lock:
            obj = self.objects.get((plural, namespace, name))
            if obj is None:
                raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
            return json.loads(json.dumps(obj))

    def pods(self, namespace: str, selector: dict[str, str]) -> list[dict[str, Any]]:
        with self.lock:
            return [
                json.loads(json.dumps(obj))
                for (plural, ns, _), obj in self.objects.items()
                if plural == "pods"
                and ns == namespace
                and all(obj["metadata"]["labels"].get(k) == v for k, v in selector.items())
            ]

    def _pod_changed(self, kind: str, pod: dict[str, Any]) -> None:
        # called with the lock held
        self._stamp(pod, pod["metadata"]["namespace"])
        self.events.append((self.version, kind, json.loads(json.dumps(pod))))
        self.lock.notify_all()

    # -- the Job controller and the kubelet ------------------------------------------------------

    def _new_pod(self, job: dict[str, Any], index: int | None) -> dict[str, Any]:
        meta = job["metadata"]
        template = json.loads(json.dumps(job["spec"]["template"]))
        suffix = "".join(self._rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))
        labels = dict(template.get("metadata", {}).get("labels", {}))
        labels.update({JOB_NAME: meta["name"], "job-name": meta["name"]})
        annotations: dict[str, str] = {}
        if index is not None:
            labels[INDEX] = str(index)
            annotations[INDEX] = str(index)
        name = f"{meta['name']}-{index if index is not None else 0}-{suffix}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": template["spec"],
            "status": {"phase": "Pending"},
        }
        with self.lock:
            pod["metadata"]["namespace"] = meta["namespace"]
            self.objects[("pods", meta["namespace"], name)] = pod
            self._pod_changed("ADDED", pod)
        return pod

    def _container_statuses(self, pod: dict[str, Any], exit_code: int) -> dict[str, Any]:
        def status(container: dict[str, Any], code: int) -> dict[str, Any]:
            return {
                "name": container["name"],
                "image": container.get("image", ""),
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                    }
                },
            }

        spec = pod["spec"]
        return {
            "initContainerStatuses": [status(c, 0) for c in spec.get("initContainers", [])],
            "containerStatuses": [status(c, exit_code) for c in spec.get("containers", [])],
        }

    def _run_pod(self, job: dict[str, Any], index: int | None) -> int:
        pod = self._new_pod(job, index)
        time.sleep(self.pod_start_delay)
        with self.lock:
            pod["status"] = {"phase": "Running", "startTime": _now()}
            self._pod_changed("MODIFIED", pod)
        try:
            result = self.kubelet(json.loads(json.dumps(pod)))
        except Exception as exc:  # a broken kubelet fails the pod, visibly
            result = PodResult(1, {"error": f"stand-in kubelet raised {exc!r}\n"})
        with self.lock:
            pod["logs"] = dict(result.logs)
            phase = "Succeeded" if result.exit_code == 0 else "Failed"
            pod["status"] = {
                "phase": phase,
                "startTime": pod["status"]["startTime"],
                **self._container_statuses(pod, result.exit_code),
            }
            self._pod_changed("MODIFIED", pod)
        return result.exit_code

    def _run_job(self, namespace: str, name: str) -> None:
        with self.lock:
            job = self.objects[("jobs", namespace, name)]
            spec = job["spec"]
        indexed = spec.get("completionMode") == "Indexed"
        completions = int(spec.get("completions", 1))
        parallelism = max(1, int(spec.get("parallelism", 1)))
        retries = int(spec.get("backoffLimitPerIndex", spec.get("backoffLimit", 6)))
        pending = list(range(completions))
        done: list[int] = []
        failed: list[int] = []
        counts = {"succeeded": 0, "failed": 0}

        def one(index: int) -> None:
            for _attempt in range(retries + 1):
                code = self._run_pod(job, index if indexed else None)
                with self.lock:
                    counts["succeeded" if code == 0 else "failed"] += 1
                    if code == 0:
                        done.append(index)
                        self._job_status(job, done, failed, counts, active=None)
                        return
                    self._job_status(job, done, failed, counts, active=None)
            with self.lock:
                failed.append(index)
                self._job_status(job, done, failed, counts, active=None)

        threads: list[threading.Thread] = []
        while pending or any(t.is_alive() for t in threads):
            threads = [t for t in threads if t.is_alive()]
            while pending and len(threads) < parallelism:
                thread = threading.Thread(target=one, args=(pending.pop(0),), daemon=True)
                thread.start()
                threads.append(thread)
            with self.lock:
                self._job_status(job, done, failed, counts, active=len(threads))
            time.sleep(0.02)
        with self.lock:
            self._job_status(job, done, failed, counts, active=0)
            conditions = []
            if failed:
                reason = "FailedIndexes" if indexed else "BackoffLimitExceeded"
                conditions.append(
                    {"type": "Failed", "status": "True", "reason": reason, "message": reason}
                )
            else:
                conditions.append({"type": "Complete", "status": "True"})
            job["status"]["conditions"] = conditions
            job["status"]["completionTime"] = _now()
            self._stamp(job, namespace)

    def _job_status(
        self,
        job: dict[str, Any],
        done: list[int],
        failed: list[int],
        counts: dict[str, int],
        active: int | None,
    ) -> None:
        status = job.setdefault("status", {})
        if active is not None:
            status["active"] = active
        status["succeeded"] = counts["succeeded"]
        status["failed"] = counts["failed"]
        if job["spec"].get("completionMode") == "Indexed":
            status["completedIndexes"] = ranges(done)
            if "backoffLimitPerIndex" in job["spec"]:
                status["failedIndexes"] = ranges(failed)


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> dict[str, Any]:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


PLURALS_V1 = {"persistentvolumeclaims", "configmaps", "pods"}


class _Handler(BaseHTTPRequestHandler):
    server: K8sApiStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send_json(self, code: int, value: dict[str, Any]) -> None:
        body = json.dumps(value).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self) -> tuple[str, str, str | None, str | None]:
        """(plural, namespace, name, subresource) of an API path, or ApiError 404."""
        parts = urlsplit(self.path).path.strip("/").split("/")
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
        elif parts[:3] == ["apis", "batch", "v1"]:
            rest = parts[3:]
        else:
            raise ApiError(404, "NotFound", f"the server could not find {self.path}")
        if len(rest) < 3 or rest[0] != "namespaces":
            raise ApiError(404, "NotFound", f"the server could not find {self.path}")
        namespace, plural = rest[1], rest[2]
        known = PLURALS_V1 if parts[0] == "api" else {"jobs"}
        if plural not in known:
            raise ApiError(404, "NotFound", f"the server could not find {self.path}")
        name = rest[3] if len(rest) > 3 else None
        sub = rest[4] if len(rest) > 4 else None
        return plural, namespace, name, sub

    def _authorised(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.server.token}":
            return True
        self._send_json(401, ApiError(401, "Unauthorized", "Unauthorized").status())
        return False

    def do_POST(self) -> None:
        self.server.requests.append(("POST", self.path))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if not self._authorised():
            return
        try:
            plural, namespace, name, _ = self._route()
            if name is not None or plural == "pods":
                raise ApiError(405, "MethodNotAllowed", f"POST {self.path}")
            obj = json.loads(body)
            self._send_json(201, self.server.create(plural, namespace, obj))
        except ApiError as exc:
            self._send_json(exc.code, exc.status())

    def do_GET(self) -> None:
        self.server.requests.append(("GET", self.path))
        if not self._authorised():
            return
        query = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
        try:
            plural, namespace, name, sub = self._route()
            if plural == "pods" and name is None:
                selector = dict(
                    item.split("=", 1) for item in query.get("labelSelector", "").split(",") if item
                )
                if query.get("watch") in ("true", "1", "True"):
                    self._watch(namespace, selector, query)
                    return
                items = self.server.pods(namespace, selector)
                for item in items:
                    item.pop("logs", None)
                self._send_json(
                    200,
                    {
                        "kind": "PodList",
                        "apiVersion": "v1",
                        "metadata": {"resourceVersion": str(self.server.version)},
                        "items": items,
                    },
                )
                return
            if name is None:
                raise ApiError(405, "MethodNotAllowed", f"GET {self.path}")
            obj = self.server.get(plural, namespace, name)
            if plural == "pods" and sub == "log":
                container = query.get("container")
                logs = obj.get("logs", {})
                if container is None or container not in logs:
                    names = [c["name"] for c in obj["spec"].get("containers", [])]
                    if container is None and len(names) == 1:
                        container = names[0]
                    elif container not in logs:
                        raise ApiError(
                            400, "BadRequest", f'container "{container}" has no log here'
                        )
                data = logs.get(container, "").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            obj.pop("logs", None)
            self._send_json(200, obj)
        except ApiError as exc:
            self._send_json(exc.code, exc.status())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _watch(self, namespace: str, selector: dict[str, str], query: dict[str, str]) -> None:
        server = self.server
        timeout = float(query.get("timeoutSeconds", "30"))
        since = int(query["resourceVersion"]) if query.get("resourceVersion") else None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def matches(pod: dict[str, Any]) -> bool:
            labels = pod["metadata"]["labels"]
            return pod["metadata"]["namespace"] == namespace and all(
                labels.get(k) == v for k, v in selector.items()
            )

        with server.lock:
            if since is None:
                initial = [("ADDED", p) for p in server.pods(namespace, selector)]
                cursor = server.version
            else:
                initial = []
                cursor = since
        deadline = time.monotonic() + timeout
        try:
            for kind, pod in initial:
                pod.pop("logs", None)
                self._chunk(json.dumps({"type": kind, "object": pod}).encode() + b"\n")
            while time.monotonic() < deadline:
                with server.lock:
                    fresh = [(v, k, p) for v, k, p in server.events if v > cursor and matches(p)]
                    if not fresh:
                        server.lock.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                        continue
                    cursor = max(v for v, _, _ in fresh)
                for _, kind, pod in fresh:
                    pod = dict(pod)
                    pod.pop("logs", None)
                    self._chunk(json.dumps({"type": kind, "object": pod}).encode() + b"\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", default="standin-token")
    args = parser.parse_args(argv)
    server = K8sApiStandIn(port=args.port, token=args.token)
    print(f"k8s_api: serving at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
