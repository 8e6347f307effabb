"""The Kubernetes backend of `j0 bench matrix`: render, apply, follow, collect.

Rendered manifests go to OUT/k8s/ (`--dry-run` stops there). Then, with the `kubernetes`
client: the PVC (kept if it exists), the plan's ConfigMap, the prepare Job (drafter and target
into the PVC; followed to its end), the Indexed Job (followed pod by pod); then every index's
result is read back from its pod's log into OUT/<setting>/result-shard-NN.json (checked against
the sha256 the pod printed), the sidecars' logs into OUT/<setting>/server.log. The results also
stay on the PVC under results/<run>/.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.bench.matrix.k8s import client
from j0.bench.matrix.k8s.plan import PLAN_FILE, Plan
from j0.bench.matrix.k8s.pod import BEGIN, END, decode_blocks
from j0.bench.matrix.k8s.render import K8sOptions, matrix_manifests
from j0.bench.matrix.layout import SERVER_LOG, PointRun, judge_ran, now
from j0.compose.server import ServerKnobs
from j0.edge.atomic import write_text_atomic
from j0.errors import CHECK_FAILED, J0Error
from j0.kube.objects import to_yaml
from j0.pins import Pins

MANIFEST_DIR = "k8s"
MANIFEST_FILE = "matrix.yaml"


def run_name() -> str:
    """A Job name (63 characters at most, DNS-1123) that tells runs apart."""
    return time.strftime("j0-matrix-%Y%m%d-%H%M%S")


def write_manifests(out: Path, manifests: dict[str, dict[str, Any]], plan: Plan) -> Path:
    folder = out / MANIFEST_DIR
    path = folder / MANIFEST_FILE
    header = (
        f"# j0 bench matrix --backend k8s: run {plan.run}, {plan.completions} indexes.\n"
        "# Apply in this order (the prepare Job must finish before the matrix Job starts):\n"
        f"#   kubectl apply -f {MANIFEST_FILE}   # or let `j0 bench matrix --backend k8s` do it\n"
    )
    write_text_atomic(path, to_yaml(list(manifests.values()), header=header))
    write_text_atomic(folder / PLAN_FILE, manifests["configmap"]["data"][PLAN_FILE])
    return path


def strip_blocks(log: str) -> str:
    """The bench container's log without the result blocks (which are kept as files)."""
    kept: list[str] = []
    inside = False
    for line in log.splitlines():
        if line.startswith(BEGIN + " "):
            inside = True
            kept.append(line.replace(BEGIN, "(result block:", 1) + ")")
        elif inside and line.startswith(END + " "):
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept) + ("\n" if kept else "")


@dataclass
class K8sBackend:
    pins: Pins
    knobs: ServerKnobs
    out: Path
    options: K8sOptions
    parallelism: int
    say: Callable[[str], None]
    cluster: client.Cluster | None = None
    window_s: int = 30

    def render(self, plan: Plan) -> dict[str, dict[str, Any]]:
        return matrix_manifests(self.pins, self.knobs, plan, self.options, self.parallelism)

    def apply_and_follow(
        self, plan: Plan, manifests: dict[str, dict[str, Any]], runs: Sequence[PointRun]
    ) -> dict[str, Any]:
        """Create the objects, follow both Jobs, collect; returns what matrix.json records."""
        cluster = self.cluster or client.connect(self.options.namespace)
        ns = cluster.namespace
        self.say(f"cluster namespace {ns}, run {plan.run}")
        state = client.create(cluster, manifests["pvc"], reuse=True)
        self.say(f"PersistentVolumeClaim {manifests['pvc']['metadata']['name']}: {state}")
        for key in ("configmap", "prepare"):
            client.create(cluster, manifests[key])
            self.say(f"{manifests[key]['kind']} {manifests[key]['metadata']['name']}: created")
        prepare = manifests["prepare"]["metadata"]["name"]
        follower = client.Follower(
            cluster, prepare, self.say, lambda _: "prepare", window_s=self.window_s
        )
        job = follower.wait()
        if client.job_finished(job) != "Complete":
            logs = []
            for pod in follower.pods():
                for container in ("drafter", "target"):
                    text = client.pod_log(cluster, pod.metadata.name, container)
                    logs.append(f"--- {pod.metadata.name} {container}\n{text}")
            write_text_atomic(self.out / MANIFEST_DIR / "prepare.log", "".join(logs))
            raise J0Error(
                f"the prepare Job {prepare} failed (drafter fetch or target download); its pods' "
                f"logs are in {self.out / MANIFEST_DIR / 'prepare.log'}",
                CHECK_FAILED,
            )
        client.create(cluster, manifests["job"])
        self.say(
            f"Job {plan.run}: created ({plan.completions} indexes, {self.parallelism} at once)"
        )
        tasks = plan.document.indexes

        def describe(index: int | None) -> str:
            if index is None or not 0 <= index < len(tasks):
                return f"index {index}"
            task = tasks[index]
            return f"index {index} ({task.setting} shard {task.shard:02d})"

        follower = client.Follower(cluster, plan.run, self.say, describe, self.window_s)
        job = follower.wait()
        self.collect(cluster, plan, follower.pods(), runs)
        return {
            "namespace": ns,
            "run": plan.run,
            "job": plan.run,
            "job_outcome": client.job_finished(job),
            "completed_indexes": job.status.completed_indexes if job.status else None,
            "failed_indexes": job.status.failed_indexes if job.status else None,
        }

    def collect(
        self,
        cluster: client.Cluster,
        plan: Plan,
        pods: Sequence[Any],
        runs: Sequence[PointRun],
    ) -> None:
        """Each index's result and logs from its last succeeded pod (else its last pod)."""
        by_index: dict[int, list[client.PodView]] = {}
        for pod in pods:
            view = client.pod_view(pod)
            if view.index is not None:
                by_index.setdefault(view.index, []).append(view)
        by_setting = {run.setting.name: run for run in runs}
        server_logs: dict[str, list[str]] = {name: [] for name in by_setting}
        for task in plan.document.indexes:
            index, name, shard = task.index, task.setting, task.shard
            run = by_setting[name]
            views = sorted(
                by_index.get(index, []), key=lambda v: (v.phase == "Succeeded", v.created)
            )
            entry: dict[str, Any] = {
                "index": index,
                "shard": shard,
                "prompt_positions": task.prompt_positions,
                "attempts": len(views),
                "pod": None,
                "status": "missing",
                "result": None,
            }
            run.entry.shards.append(entry)
            if not views:
                continue
            chosen = views[-1]
            entry["pod"] = chosen.name
            entry["status"] = "ok" if chosen.phase == "Succeeded" else "failed"
            if chosen.reason:
                entry["error"] = chosen.reason
            bench_log = client.pod_log(cluster, chosen.name, "bench")
            server_log = client.pod_log(cluster, chosen.name, "vllm")
            server_logs[name].append(
                f"===== shard {shard:02d} (index {index}, pod {chosen.name}, {chosen.phase})\n"
                + server_log
            )
            write_text_atomic(
                self.out / name / f"bench-shard-{shard:02d}.log", strip_blocks(bench_log)
            )
            try:
                blocks = decode_blocks(bench_log)
            except J0Error as exc:
                entry["status"] = "failed"
                entry["error"] = str(exc)
                continue
            data = blocks.get(task.out)
            if data is None:
                if entry["status"] == "ok":
                    entry["status"] = "failed"
                    entry["error"] = f"no result block for {task.out} in the bench log"
                continue
            write_text_atomic(self.out / task.out, data.decode("utf-8"))
            entry["result"] = task.out
            run.entry.results.append(task.out)
        for name, run in by_setting.items():
            shard_logs = server_logs[name]
            write_text_atomic(self.out / name / SERVER_LOG, "".join(shard_logs))
            run.entry.server_log = f"{name}/{SERVER_LOG}"
            bad = [s for s in run.entry.shards if s["status"] != "ok"]
            run.entry.status = "failed" if bad else "ok"
            if bad:
                run.entry.error = "; ".join(
                    f"shard {s['shard']:02d}: {s.get('error') or s['status']}" for s in bad
                )
            judge_ran(run, shard_logs)  # each shard's server: J0 as its log shows it
            run.entry.finished = now()
