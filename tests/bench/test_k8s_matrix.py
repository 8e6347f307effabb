"""`j0 bench matrix --backend k8s`, without a cluster: the real `kubernetes` Python client against
tests/servers/k8s/api.py, a small stand-in of the Kubernetes API of ours on 127.0.0.1 (create the
PVC, ConfigMap and Jobs, watch and list pods, read logs).

The stand-in's kubelet is this module's: for each pod of the Indexed Job it runs the containers'
rendered commands as local processes, as a node would run them: the sidecar
(`python3 -m j0.bench.matrix.k8s.pod serve`, which execs `j0 serve -- ARGS`; here `j0` is
tests/bench/matrix_bin/vllm, which starts our vLLM stand-in tests/servers/vllm/server.py with the
setting the arguments and switches name), its startup probe, then the main container
(`python3 -m j0.bench.matrix.k8s.pod bench`: the real `j0 bench run` on the index's shard), with the
ConfigMap and the PVC as local folders. So sharding, the result's trip through the pod log and the
collection into the results folder are tested on the stand-in server, and each collected request
is compared with what the stand-in that served it did.
"""

from __future__ import annotations

import base64
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from j0.bench.matrix.k8s import pod as k8s_pod
from j0.bench.matrix.k8s.render import POD_PYTHONPATH
from j0.cli import main as j0_main
from j0.errors import J0Error
from servers.base import free_port
from servers.k8s.api import INDEX, K8sApiStandIn, PodResult

ROOT = Path(__file__).resolve().parents[2]
STANDIN_BIN = ROOT / "tests" / "bench" / "matrix_bin" / "vllm"
VLLM_SERVER = ROOT / "tests" / "servers" / "vllm" / "server.py"


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (urllib.error.URLError, OSError):
        return 0, b""


@dataclass
class Node:
    """The kubelet of the stand-in cluster: runs each pod's containers here (see the docstring)."""

    api: K8sApiStandIn
    work: Path
    fail_first: set[int] = field(default_factory=set)  # indexes whose first pod fails
    fail_always: set[int] = field(default_factory=set)
    attempts: dict[int, int] = field(default_factory=dict)
    truth: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # pod -> server records
    pods_seen: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def pvc(self) -> Path:
        return self.work / "pvc"

    def __call__(self, pod: dict[str, Any]) -> PodResult:
        labels = pod["metadata"]["labels"]
        with self.lock:
            self.pods_seen.append(pod)
        if INDEX not in labels:  # the prepare Job: drafter fetch and target prefetch
            names = [c["name"] for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]]
            return PodResult(0, {n: f"{n}: done (stand-in kubelet)\n" for n in names})
        index = int(labels[INDEX])
        with self.lock:
            attempt = self.attempts[index] = self.attempts.get(index, 0) + 1
        if index in self.fail_always or (index in self.fail_first and attempt == 1):
            note = f"stand-in kubelet: attempt {attempt} of index {index} fails\n"
            return PodResult(137, {"bench": note, "vllm": note})
        return self.run(pod, index)

    def mounts(self, pod: dict[str, Any]) -> dict[str, Path]:
        """The pod's volumes as folders: the ConfigMap written out, the PVC's subPaths (and the
        image's j0 package: this checkout's)."""
        name = pod["metadata"]["name"]
        plan_dir = self.work / "pods" / name / "plan"
        plan_dir.mkdir(parents=True)
        (volume,) = [v for v in pod["spec"]["volumes"] if "configMap" in v]
        ns = pod["metadata"]["namespace"]
        config_map = self.api.get("configmaps", ns, volume["configMap"]["name"])
        for key, text in config_map.get("data", {}).items():
            (plan_dir / key).write_text(text)
        for key, data in config_map.get("binaryData", {}).items():
            (plan_dir / key).write_bytes(base64.b64decode(data))
        (self.pvc / "results").mkdir(parents=True, exist_ok=True)
        # The image's copy of the package (docker/Dockerfile) is this checkout's scripts/ here.
        scripts = ROOT / "scripts"
        return {"/plan": plan_dir, "/results": self.pvc / "results", POD_PYTHONPATH: scripts}

    def env(self, container: dict[str, Any], mounts: dict[str, Path], index: int) -> dict[str, str]:
        env = dict(os.environ)
        for item in container.get("env", []):
            if "valueFrom" in item:
                # The stand-in cluster holds no secret: an optional one is left out, as kubelet
                # leaves out an optional secretKeyRef whose secret is absent.
                assert item["valueFrom"]["secretKeyRef"]["optional"] is True, item
                continue
            value = item["value"]
            for mount, local in mounts.items():
                if value == mount or value.startswith(mount + "/"):
                    value = str(local) + value[len(mount) :]
            env[item["name"]] = value
        env["JOB_COMPLETION_INDEX"] = str(index)  # Kubernetes sets it in Indexed Jobs' pods
        return env

    def command(self, container: dict[str, Any]) -> list[str]:
        argv = [*container["command"], *container.get("args", [])]
        return [sys.executable if argv[0] == "python3" else argv[0], *argv[1:]]

    def run(self, pod: dict[str, Any], index: int) -> PodResult:
        name = pod["metadata"]["name"]
        mounts = self.mounts(pod)
        (sidecar,) = pod["spec"]["initContainers"]
        (bench,) = pod["spec"]["containers"]
        assert sidecar["restartPolicy"] == "Always"
        bindir = self.work / "pods" / name / "bin"
        bindir.mkdir()
        (bindir / "j0").symlink_to(STANDIN_BIN)
        (bindir / "vllm").symlink_to(STANDIN_BIN)  # the baseline's sidecar runs `vllm serve`
        port = free_port()
        env = self.env(sidecar, mounts, index)
        env.update(
            PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
            J0_STANDIN_PORT=str(port),
            J0_STANDIN_SERVER=str(VLLM_SERVER),
        )
        server = subprocess.Popen(
            self.command(sidecar), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        try:
            probe = sidecar["startupProbe"]["httpGet"]["path"]
            deadline = time.monotonic() + 30
            while get(f"http://127.0.0.1:{port}{probe}")[0] != 200:
                if server.poll() is not None or time.monotonic() > deadline:
                    out = server.communicate(timeout=10)[0] if server.poll() is not None else ""
                    return PodResult(1, {"vllm": out, "bench": ""})
                time.sleep(0.05)
            env = self.env(bench, mounts, index)
            env["J0_SERVER_URL"] = f"http://127.0.0.1:{port}"  # the pod's localhost:8000
            done = subprocess.run(
                self.command(bench), env=env, capture_output=True, text=True, timeout=120
            )
            status, body = get(f"http://127.0.0.1:{port}/_standin/record")
            if status == 200:
                self.truth[name] = json.loads(body)["requests"]
        finally:
            server.terminate()  # the kubelet stops the sidecar once the main container ended
            sidecar_log = server.communicate(timeout=10)[0]
        return PodResult(done.returncode, {"vllm": sidecar_log, "bench": done.stdout + done.stderr})


@pytest.fixture
def cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[K8sApiStandIn, Node]]:
    api = K8sApiStandIn(token="t0ken-for-the-stand-in")
    node = Node(api, tmp_path / "node")
    api.kubelet = node
    api.start()
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps(api.kubeconfig(namespace="j0-bench")))
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.setenv("J0_K8S_WATCH_S", "1")
    monkeypatch.setenv("J0_IMAGE", "registry.example/j0/vllm-openai:test")
    try:
        yield api, node
    finally:
        api.stop()


def matrix(out: Path, *extra: str) -> int:
    return j0_main(
        ["bench", "matrix", "--backend", "k8s", "--out", str(out), "--dataset", "synthetic:40,80",
         "--requests", "5", "--max-tokens", "24", *extra]
    )  # fmt: skip


def load(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_text())
    return value


@pytest.mark.slow  # whole matrices on the stand-in cluster
def test_sharded_matrix_on_the_stand_in_cluster(
    cluster: tuple[K8sApiStandIn, Node], tmp_path: Path
) -> None:
    api, node = cluster
    node.fail_first = {3}  # k15-j0-on shard 1: its first pod fails, the retry keeps the index
    out = tmp_path / "out"
    assert matrix(out, "--shards", "2", "--gpus", "3") == 0

    record = load(out / "matrix.json")
    assert record["backend"] == "k8s" and record["shards"] == 2
    assert record["prefix_caching"] is False and "off" in record["prefix_caching_note"]
    assert record["k8s"]["namespace"] == "j0-bench"  # the kubeconfig context's
    assert record["k8s"]["job_outcome"] == "Complete"
    prompts = [json.loads(x) for x in (out / "prompts.jsonl").read_text().splitlines()]
    assert len(prompts) == 5
    names = [s["name"] for s in record["settings"]]
    assert names == ["k15-j0-off", "k15-j0-on", "k7-j0-off", "k7-j0-on"]

    # What was created, through the real client: PVC, ConfigMap, prepare Job, then the Job.
    posts = [path.rsplit("/", 1)[-1] for method, path in api.requests if method == "POST"]
    assert posts == ["persistentvolumeclaims", "configmaps", "jobs", "jobs"]
    job = api.get("jobs", "j0-bench", record["k8s"]["job"])
    assert job["spec"]["completions"] == 8 and job["spec"]["parallelism"] == 3

    pods = {p["metadata"]["name"]: p for p in node.pods_seen}
    acceptance: dict[str, float] = {}
    for setting in record["settings"]:
        name = setting["name"]
        assert setting["status"] == "ok", setting
        assert setting["results"] == [
            f"{name}/result-shard-00.json",
            f"{name}/result-shard-01.json",
        ]
        served: list[str] = []
        for shard in setting["shards"]:
            result = load(out / shard["result"])
            assert result["complete"] is True
            # Each request whole, in the shard it was sent to, as the stand-in served it.
            truth = node.truth[shard["pod"]]
            assert len(result["requests"]) == len(truth) == len(shard["prompt_positions"])
            for entry, did in zip(result["requests"], truth, strict=True):
                assert entry["per_step_accepted"] == did["per_step_accepted"]
                assert entry["output_tokens"] == did["output_tokens"]
            served += [entry["prompt_id"] for entry in result["requests"]]
            pod = pods[shard["pod"]]
            assert pod["metadata"]["labels"][INDEX] == str(shard["index"])
            n = len(result["per_position_acceptance"])
            assert n == setting["num_speculative_tokens"], (name, n)
            acceptance[name] = max(acceptance.get(name, 0.0), result["acceptance_length"])
        # The shards together ran every prompt exactly once.
        assert sorted(served) == sorted(p["id"] for p in prompts)
        log = (out / name / "server.log").read_text()
        assert log.count("===== shard ") == 2
        standin = [x for x in log.splitlines() if x.startswith("j0-matrix-standin: ")]
        seen = json.loads(standin[0].removeprefix("j0-matrix-standin: "))
        assert seen["num_speculative_tokens"] == setting["num_speculative_tokens"]
        assert seen["j0"] is setting["j0"]
        assert seen["pythonpath"] is None  # the sidecar hands no PYTHONPATH of ours to `j0`
        assert "j0-result-begin" not in (out / name / "bench-shard-00.log").read_text()
    retried = record["settings"][1]["shards"][1]
    assert retried["index"] == 3 and retried["attempts"] == 2 and retried["status"] == "ok"
    # The stand-in accepts more with J0 on (0.9 vs 0.6): the switch reached each server.
    assert acceptance["k15-j0-on"] > acceptance["k15-j0-off"]
    assert acceptance["k7-j0-on"] > acceptance["k7-j0-off"]
    # `j0 bench report` merges each setting's shards: all five requests, once each.
    assert j0_main(["bench", "report", str(out)]) == 0
    table = (out / "report.md").read_text()
    for setting in record["settings"]:
        j0 = ("on" if setting["j0"] else "off") + " (as run)"  # the matrix read its log
        row = f"| {setting['name']} | {setting['num_speculative_tokens']} | {j0} | off | 5/5 |"
        assert row in table, table
    assert "No baseline: no baseline setting" in table  # said, not left out
    # The results are on the "PVC" too, under the run's name.
    run = record["k8s"]["run"]
    on_pvc = sorted(p.relative_to(node.pvc) for p in (node.pvc / "results" / run).rglob("*.json"))
    assert len(on_pvc) == 8


@pytest.mark.slow  # whole matrices on the stand-in cluster
def test_a_failing_index_fails_its_setting_only(
    cluster: tuple[K8sApiStandIn, Node], tmp_path: Path
) -> None:
    _, node = cluster
    node.fail_always = {0}
    out = tmp_path / "out"
    assert matrix(out, "--tokens", "7") == 1
    record = load(out / "matrix.json")
    off, on = record["settings"]
    assert off["status"] == "failed" and "exited 137" in off["error"]
    assert off["shards"][0]["attempts"] == 2  # backoffLimitPerIndex: one retry
    assert on["status"] == "ok" and on["results"] == ["k7-j0-on/result-shard-00.json"]
    assert record["k8s"]["job_outcome"] == "Failed" and record["k8s"]["failed_indexes"] == "0"


def test_dry_run_renders_and_contacts_no_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    out = tmp_path / "out"
    assert matrix(out, "--dry-run", "--gpus", "8", "--namespace", "research") == 0
    record = load(out / "matrix.json")
    assert {s["status"] for s in record["settings"]} == {"rendered"}
    assert record["shards"] == 2  # 8 GPUs over 4 settings
    text = (out / "k8s" / "matrix.yaml").read_text()
    assert "kind: Job" in text and "namespace: research" in text
    done = subprocess.run(
        [sys.executable, "-m", "kubernetes_validate", "--strict", "--no-warn", "-k", "1.29.0",
         str(out / "k8s" / "matrix.yaml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    plan = json.loads((out / "k8s" / "plan.json").read_text())
    assert len(plan["indexes"]) == 8
    again = tmp_path / "again"  # --json alone: matrix.json on stdout, nothing else there
    capsys.readouterr()
    assert matrix(again, "--dry-run", "--gpus", "8", "--namespace", "research", "--json") == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == load(again / "matrix.json")


def test_no_cluster_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert matrix(tmp_path / "out", "--tokens", "7", "--j0", "on") == 2
    assert "set KUBECONFIG" in capsys.readouterr().err


def test_result_blocks_survive_the_log_and_catch_damage() -> None:
    data = json.dumps({"acceptance_length": 3.25, "requests": list(range(500))}).encode()
    block = k8s_pod.encode_block("k7-j0-on/result-shard-01.json", data)
    log = "j0 bench run output\n" + block + "more output\n"
    assert k8s_pod.decode_blocks(log) == {"k7-j0-on/result-shard-01.json": data}
    lines = block.splitlines()
    assert len(lines) > 4
    middle = len(lines) // 2  # inside the deflate stream, past gzip's unchecked header fields
    body = lines[middle]
    lines[middle] = body[:30] + ("A" if body[30] != "A" else "B") + body[31:]
    with pytest.raises(J0Error, match="result block"):
        k8s_pod.decode_blocks("\n".join(lines) + "\n")
    lines[middle] = body
    # A block cut short (the log ended) is not a result.
    assert k8s_pod.decode_blocks("\n".join(lines[:-1])) == {}


def test_stand_in_requires_the_kubeconfig_token(cluster: tuple[K8sApiStandIn, Node]) -> None:
    api, _ = cluster
    assert get(f"{api.url}/api/v1/namespaces/x/pods")[0] == 401


@pytest.mark.slow  # whole matrices on the stand-in cluster
def test_baseline_and_repeats_on_the_stand_in_cluster(
    cluster: tuple[K8sApiStandIn, Node], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--baseline --repeats 2`: a server without --speculative-config beside k7 J0 off and on.
    The J0-on stand-in is made lossy from output token 5 (J0_STANDIN_LOSSY_J0), so the report's
    comparison with the baseline has something to find. Every figure is computed here from the
    stand-ins' own records (the speedup from the per-request tok/s the results hold)."""
    _, node = cluster
    monkeypatch.setenv("J0_STANDIN_LOSSY_J0", "5")
    out = tmp_path / "out"
    assert matrix(out, "--tokens", "7", "--baseline", "--repeats", "2", "--requests", "4") == 0
    record = load(out / "matrix.json")
    assert [s["name"] for s in record["settings"]] == ["baseline", "k7-j0-off", "k7-j0-on"]
    assert record["baseline"] is True and record["repeats"] == 2
    plan = json.loads((out / "k8s" / "plan.json").read_text())
    assert "--speculative-config" not in plan["settings"]["baseline"]["server_args"]
    assert "--speculative-config" in plan["settings"]["k7-j0-on"]["server_args"]
    # `j0 serve` refuses a server without the drafter: the baseline's sidecar runs `vllm serve`,
    # with the prefix-caching flag `j0 serve` would have made.
    assert plan["settings"]["baseline"]["server_args"][-1] == "--no-enable-prefix-caching"
    log = (out / "baseline" / "server.log").read_text()
    assert ": vllm serve " in log and ": j0 serve " not in log
    (seen,) = [x for x in log.splitlines() if x.startswith("j0-matrix-standin: ")]
    assert json.loads(seen.removeprefix("j0-matrix-standin: "))["prefix_caching"] is False
    truth = {s["name"]: node.truth[s["shards"][0]["pod"]] for s in record["settings"]}
    results = {s["name"]: load(out / s["results"][0]) for s in record["settings"]}
    # The baseline served one token per step and no speculative metrics.
    assert all(not r["per_step_accepted"] for r in truth["baseline"])
    assert results["baseline"]["acceptance_length"] is None
    assert all(r["speculative_decoding"] is None for r in results["baseline"]["requests"])

    # Bins that cut through the steps' contexts, re-binned from the stored steps (no re-run).
    contexts = sorted(c for r in truth["k7-j0-off"] for c in r["step_context_lengths"])
    low, high = contexts[len(contexts) // 3], contexts[2 * len(contexts) // 3]
    assert contexts[0] < low < high
    assert j0_main(["bench", "report", str(out), "--bins", f"{low},{high}"]) == 0
    report = load(out / "report.json")
    assert report["context_bins"] == {"bins": [low, high]}
    for name in ("k7-j0-off", "k7-j0-on"):
        records, got = truth[name], report["settings"][name]
        assert len(records) == 8  # 4 prompts, twice, in the same order
        steps = [a for r in records for a in r["per_step_accepted"]]
        assert got["acceptance_length"] == 1 + sum(steps) / len(steps)
        assert got["acceptance_length_request_mean"] == statistics.mean(
            statistics.mean([1 + a for a in r["per_step_accepted"]]) for r in records
        )
        assert got["acceptance_histogram"] == [steps.count(i) / len(steps) for i in range(8)]
        bins: dict[int, list[list[int]]] = {}
        for r in records:
            mine: dict[int, list[int]] = {}
            for context, a in zip(r["step_context_lengths"], r["per_step_accepted"], strict=True):
                start = 0 if context < low else low if context < high else high
                mine.setdefault(start, []).append(a)
            for start, accepted in mine.items():
                bins.setdefault(start, []).append(accepted)
        assert [
            (b["context_start"], b["num_drafts"], b["acceptance_length"],
             b["acceptance_length_request_mean"]) for b in got["by_context"]
        ] == [
            (start, sum(map(len, v)), 1 + sum(map(sum, v)) / sum(map(len, v)),
             statistics.mean(statistics.mean([1 + a for a in x]) for x in v))
            for start, v in sorted(bins.items())
        ]  # fmt: skip
        assert len(got["by_context"]) >= 2
        per_repeat = []
        for half in (records[:4], records[4:]):
            s = [a for r in half for a in r["per_step_accepted"]]
            per_repeat.append(1 + sum(s) / len(s))
        spread = got["repeats"]["spread"]["acceptance_length"]
        assert got["repeats"]["count"] == 2
        assert spread["mean"] == statistics.fmean(per_repeat)
        assert spread["stdev"] == statistics.stdev(per_repeat)

    # The speedup over the baseline, paired by prompt (tok/s averaged over the two repeats).
    def tok_s(name: str) -> dict[str, float]:
        by_prompt: dict[str, list[float]] = {}
        for r in results[name]["requests"]:
            by_prompt.setdefault(r["prompt_sha256"], []).append(r["output_tok_s"])
        return {k: statistics.fmean(v) for k, v in by_prompt.items()}

    block = report["baseline"]
    assert block["setting"] == "baseline"
    base = tok_s("baseline")
    for name in ("k7-j0-off", "k7-j0-on"):
        ratios = [v / base[k] for k, v in tok_s(name).items()]
        mean = statistics.fmean(ratios)
        half = 3.182 * statistics.stdev(ratios) / math.sqrt(4)
        speedup = dict(block["settings"][name]["speedup"])
        bootstrap = speedup.pop("stats")
        assert speedup == {"n": 4, "mean": mean, "ci95": [mean - half, mean + half]}
        assert bootstrap["effect"] == pytest.approx(mean) and bootstrap["prompts"] == 4
    # The outputs against the baseline's, from the records: J0 off is lossless, J0 on parts at 5.
    base_out = {i: r["output_token_ids"] for i, r in enumerate(truth["baseline"])}
    for name, lossless in (("k7-j0-off", True), ("k7-j0-on", False)):
        outputs = block["settings"][name]["outputs"]
        firsts = []
        for i, r in enumerate(truth[name]):
            pairs_ = zip(r["output_token_ids"], base_out[i], strict=True)
            firsts.append(next((n for n, (a, b) in enumerate(pairs_) if a != b), None))
        assert outputs["lossless"] is lossless and outputs["compared"] == 8
        assert outputs["identical"] == firsts.count(None)
        assert [d["first_differing_token"] for d in outputs["differences"]] == [
            f for f in firsts if f is not None
        ]
    assert firsts == [5] * 8
    table = (out / "report.md").read_text()
    assert "| baseline | none (baseline) | n/a | off | 8/8 |" in table
    assert "| k7-j0-on | " in table and "token 5" in table


def test_a_dry_run_never_replaces_a_users_file_nor_blocks_the_real_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the dry run replaced the user's OUT/prompts.jsonl by its own, and its matrix.json
    then refused the real run ("a matrix ran there already")."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    out = tmp_path / "out"
    out.mkdir()
    (out / "prompts.jsonl").write_text("the user's own prompts\n")
    assert matrix(out, "--dry-run") == 64
    assert "holds files that are not a matrix dry run's (prompts.jsonl)" in capsys.readouterr().err
    assert (out / "prompts.jsonl").read_text() == "the user's own prompts\n"
    assert sorted(p.name for p in out.iterdir()) == ["prompts.jsonl"]
    fresh = tmp_path / "fresh"
    assert matrix(fresh, "--dry-run") == 0
    assert load(fresh / "matrix.json")["dry_run"] is True
    capsys.readouterr()
    matrix(fresh)  # the real run: no cluster here, but the dry run's folder does not stop it
    assert "choose another --out" not in capsys.readouterr().err
    assert load(fresh / "matrix.json")["dry_run"] is False
    (fresh / "notes.txt").write_text("mine\n")  # a user's file beside a matrix's: refused
    assert matrix(fresh, "--dry-run") == 64
    assert "choose another --out" in capsys.readouterr().err
