"""The Kubernetes API stand-in's request handler: every request needs the kubeconfig's bearer
token (401 Status otherwise); paths resolve to (plural, namespace, name, subresource) under
/api/v1 (persistentvolumeclaims, configmaps, pods) and /apis/batch/v1 (jobs); POST creates, GET
reads an object, lists or watches pods (one JSON event a line, chunked), or reads a pod's log.
Part of k8s/api.py, our Kubernetes API stand-in on 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ..base import StandInHandler
from .objects import ApiError, Obj

if TYPE_CHECKING:
    from .api import K8sApiStandIn

PLURALS_V1 = {"persistentvolumeclaims", "configmaps", "pods"}
Route = tuple[str, str, str | None, str | None]  # plural, namespace, name, subresource


class K8sHandler(StandInHandler):
    server: K8sApiStandIn

    def _route(self) -> Route:
        """(plural, namespace, name, subresource) of an API path, or ApiError 404."""
        parts = self.split_path()[0].strip("/").split("/")
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
        if self.bears_token(self.server.token):
            return True
        self.send_json(401, ApiError(401, "Unauthorized", "Unauthorized").status())
        return False

    def do_POST(self) -> None:
        self.server.requests.append(("POST", self.path))
        body = self.read_body()
        if body is None or not self._authorised():
            return
        try:
            plural, namespace, name, _ = self._route()
            if name is not None or plural == "pods":
                raise ApiError(405, "MethodNotAllowed", f"POST {self.path}")
            self.send_json(201, self.server.create(plural, namespace, json.loads(body)))
        except ApiError as exc:
            self.send_json(exc.code, exc.status())

    def do_GET(self) -> None:
        self.server.requests.append(("GET", self.path))
        if not self._authorised():
            return
        query = {k: v[-1] for k, v in self.query_lists().items()}
        try:
            plural, namespace, name, sub = self._route()
            if plural == "pods" and name is None:
                list_pods(self, namespace, query)
            elif name is None:
                raise ApiError(405, "MethodNotAllowed", f"GET {self.path}")
            elif plural == "pods" and sub == "log":
                read_log(self, self.server.get(plural, namespace, name), query.get("container"))
            else:
                obj = self.server.get(plural, namespace, name)
                obj.pop("logs", None)
                self.send_json(200, obj)
        except ApiError as exc:
            self.send_json(exc.code, exc.status())


def list_pods(handler: K8sHandler, namespace: str, query: dict[str, str]) -> None:
    """A PodList of the pods that match ?labelSelector=k=v,..., or with ?watch=true their
    events."""
    selector = dict(
        item.split("=", 1) for item in query.get("labelSelector", "").split(",") if item
    )
    if query.get("watch") in ("true", "1", "True"):
        watch_pods(handler, namespace, selector, query)
        return
    items = handler.server.pods(namespace, selector)
    for item in items:
        item.pop("logs", None)
    handler.send_json(
        200,
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(handler.server.version)},
            "items": items,
        },
    )


def read_log(handler: K8sHandler, pod: Obj, container: str | None) -> None:
    """A container's log as text/plain (?container= may be left out for a pod of one)."""
    logs = pod.get("logs", {})
    if container is None or container not in logs:
        names = [c["name"] for c in pod["spec"].get("containers", [])]
        if container is None and len(names) == 1:
            container = names[0]
        elif container not in logs:
            raise ApiError(400, "BadRequest", f'container "{container}" has no log here')
    data = logs.get(container, "").encode()
    handler.send_body(200, data, {"Content-Type": "text/plain"})


def watch_pods(
    handler: K8sHandler, namespace: str, selector: dict[str, str], query: dict[str, str]
) -> None:
    """Watch events, one JSON object a line: ADDED for what exists (without ?resourceVersion=),
    then every change after it, until ?timeoutSeconds= (30) have passed."""
    server = handler.server
    timeout = float(query.get("timeoutSeconds", "30"))
    since = int(query["resourceVersion"]) if query.get("resourceVersion") else None
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()

    def matches(pod: dict[str, Any]) -> bool:
        labels = pod["metadata"]["labels"]
        return pod["metadata"]["namespace"] == namespace and all(
            labels.get(k) == v for k, v in selector.items()
        )

    def send_event(kind: str, pod: Obj) -> None:
        pod = dict(pod)
        pod.pop("logs", None)
        handler.write_chunk(json.dumps({"type": kind, "object": pod}).encode() + b"\n")

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
            send_event(kind, pod)
        while time.monotonic() < deadline:
            with server.lock:
                fresh = [(v, k, p) for v, k, p in server.events if v > cursor and matches(p)]
                if not fresh:
                    server.lock.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                    continue
                cursor = max(v for v, _, _ in fresh)
            for _, kind, pod in fresh:
                send_event(kind, pod)
        handler.write_chunk(b"")
    except (BrokenPipeError, ConnectionResetError):
        pass
    handler.close_connection = True
