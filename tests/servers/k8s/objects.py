"""The Kubernetes API stand-in's objects: kept in memory by (kind plural, namespace, name), each
stamped with a uid, a creation time and a resourceVersion from one counter, with every change of a
pod logged as a watch event; errors as the API's `Status` objects. Part of k8s/api.py, our
Kubernetes API stand-in on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

Obj = dict[str, Any]


def now_stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def copy_of(obj: Obj) -> Obj:
    """A deep copy, as a client would get it over the wire."""
    result: Obj = json.loads(json.dumps(obj))
    return result


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def status(self) -> Obj:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


class ObjectStore:
    """The objects and the pod events; `lock` (a Condition) guards both and is notified on every
    pod change."""

    def __init__(self) -> None:
        # (kind plural, namespace, name) -> object
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.events: list[tuple[int, str, Obj]] = []  # (resourceVersion, type, pod)
        self.version = 100
        self.lock = threading.Condition()

    def stamp(self, obj: Obj, namespace: str) -> None:
        """Give `obj` the next resourceVersion (and a uid and creation time); lock held."""
        self.version += 1
        meta = obj.setdefault("metadata", {})
        meta["namespace"] = namespace
        meta.setdefault("uid", f"uid-{self.version}")
        meta.setdefault("creationTimestamp", now_stamp())
        meta["resourceVersion"] = str(self.version)

    def create(self, plural: str, namespace: str, obj: Obj) -> Obj:
        """Keep `obj` (a Job with status {"active": 0}); 409 AlreadyExists as the API says."""
        name = obj.get("metadata", {}).get("name")
        if not name:
            raise ApiError(422, "Invalid", f"{plural}: metadata.name: Required value")
        with self.lock:
            key = (plural, namespace, name)
            if key in self.objects:
                raise ApiError(409, "AlreadyExists", f'{plural} "{name}" already exists')
            self.stamp(obj, namespace)
            self.objects[key] = obj
            if plural == "jobs":
                obj["status"] = {"active": 0}
            return obj

    def get(self, plural: str, namespace: str, name: str) -> Obj:
        with self.lock:
            obj = self.objects.get((plural, namespace, name))
            if obj is None:
                raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
            return copy_of(obj)

    def pods(self, namespace: str, selector: dict[str, str]) -> list[Obj]:
        with self.lock:
            return [
                copy_of(obj)
                for (plural, ns, _), obj in self.objects.items()
                if plural == "pods"
                and ns == namespace
                and all(obj["metadata"]["labels"].get(k) == v for k, v in selector.items())
            ]

    def pod_changed(self, kind: str, pod: Obj) -> None:
        """Log a pod's change (ADDED, MODIFIED) as a watch event; lock held."""
        self.stamp(pod, pod["metadata"]["namespace"])
        self.events.append((self.version, kind, copy_of(pod)))
        self.lock.notify_all()
