"""The Kubernetes API stand-in's Job controller and kubelet, just far enough for
`j0 bench matrix --backend k8s`: pods for a Job's indexes (completionMode Indexed:
0..completions-1; otherwise one), at most `parallelism` at a time, named `<job>-<index>-<5 chars>`
and labelled as Kubernetes 1.29 labels them; each goes Pending -> Running -> Succeeded or Failed
as the test's kubelet decides; a failed index gets a new pod up to `backoffLimitPerIndex` (else
`backoffLimit`) times; the Job's status follows. Part of k8s/api.py, our Kubernetes API stand-in
on 127.0.0.1.
"""

from __future__ import annotations

import random
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .objects import Obj, ObjectStore, copy_of, now_stamp

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


def container_statuses(pod: Obj, exit_code: int) -> Obj:
    """A finished pod's init containers (all 0) and containers (all `exit_code`)."""

    def status(container: Obj, code: int) -> Obj:
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


def job_status(
    job: Obj, done: list[int], failed: list[int], counts: dict[str, int], active: int | None
) -> None:
    """Write the Job's status from its indexes' outcomes so far; lock held."""
    status = job.setdefault("status", {})
    if active is not None:
        status["active"] = active
    status["succeeded"] = counts["succeeded"]
    status["failed"] = counts["failed"]
    if job["spec"].get("completionMode") == "Indexed":
        status["completedIndexes"] = ranges(done)
        if "backoffLimitPerIndex" in job["spec"]:
            status["failedIndexes"] = ranges(failed)


class JobController:
    """Runs each created Job in a thread of its own, each pod in one more (the kubelet's)."""

    def __init__(self, store: ObjectStore, kubelet: Kubelet, pod_start_delay: float) -> None:
        self.store = store
        self.kubelet = kubelet
        self.pod_start_delay = pod_start_delay
        self._rng = random.Random(0)

    def start(self, namespace: str, name: str) -> None:
        threading.Thread(target=self._run_job, args=(namespace, name), daemon=True).start()

    def _new_pod(self, job: Obj, index: int | None) -> Obj:
        meta = job["metadata"]
        template = copy_of(job["spec"]["template"])
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
        with self.store.lock:
            pod["metadata"]["namespace"] = meta["namespace"]
            self.store.objects[("pods", meta["namespace"], name)] = pod
            self.store.pod_changed("ADDED", pod)
        return pod

    def _run_pod(self, job: Obj, index: int | None) -> int:
        store = self.store
        pod = self._new_pod(job, index)
        time.sleep(self.pod_start_delay)
        with store.lock:
            pod["status"] = {"phase": "Running", "startTime": now_stamp()}
            store.pod_changed("MODIFIED", pod)
        try:
            result = self.kubelet(copy_of(pod))
        except Exception as exc:  # a broken kubelet fails the pod, visibly
            result = PodResult(1, {"error": f"stand-in kubelet raised {exc!r}\n"})
        with store.lock:
            pod["logs"] = dict(result.logs)
            phase = "Succeeded" if result.exit_code == 0 else "Failed"
            pod["status"] = {
                "phase": phase,
                "startTime": pod["status"]["startTime"],
                **container_statuses(pod, result.exit_code),
            }
            store.pod_changed("MODIFIED", pod)
        return result.exit_code

    def _run_job(self, namespace: str, name: str) -> None:
        store = self.store
        with store.lock:
            job = store.objects[("jobs", namespace, name)]
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
                with store.lock:
                    counts["succeeded" if code == 0 else "failed"] += 1
                    if code == 0:
                        done.append(index)
                        job_status(job, done, failed, counts, active=None)
                        return
                    job_status(job, done, failed, counts, active=None)
            with store.lock:
                failed.append(index)
                job_status(job, done, failed, counts, active=None)

        threads: list[threading.Thread] = []
        while pending or any(t.is_alive() for t in threads):
            threads = [t for t in threads if t.is_alive()]
            while pending and len(threads) < parallelism:
                thread = threading.Thread(target=one, args=(pending.pop(0),), daemon=True)
                thread.start()
                threads.append(thread)
            with store.lock:
                job_status(job, done, failed, counts, active=len(threads))
            time.sleep(0.02)
        with store.lock:
            job_status(job, done, failed, counts, active=0)
            conditions = []
            if failed:
                reason = "FailedIndexes" if indexed else "BackoffLimitExceeded"
                conditions.append(
                    {"type": "Failed", "status": "True", "reason": reason, "message": reason}
                )
            else:
                conditions.append({"type": "Complete", "status": "True"})
            job["status"]["conditions"] = conditions
            job["status"]["completionTime"] = now_stamp()
            store.stamp(job, namespace)
