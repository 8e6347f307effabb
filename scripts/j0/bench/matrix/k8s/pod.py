"""What runs inside the pods of `j0 bench matrix --backend k8s` (in the j0 image):

    python3 -P -m j0.bench.matrix.k8s.pod serve
        the vLLM sidecar of index $JOB_COMPLETION_INDEX: its setting's switches, then
        `j0 serve -- ARGS` (the baseline, which has no --speculative-config that `j0 serve`
        would accept: `vllm serve ARGS`)
    python3 -P -m j0.bench.matrix.k8s.pod bench
        the main container: `j0 bench run` (j0.bench.run, with the index's PointBench) on the
        index's shard against the sidecar, the result written to the PVC and repeated on stdout
        for collection
    python3 -P -m j0.bench.matrix.k8s.pod prefetch MODEL
        the prepare Job: the target's files into the Hub cache on the PVC, once for all indexes

The plan (plan.json and the prompt shards, plan.py) is a ConfigMap mounted at
$J0_PLAN_DIR. Results go to $J0_RESULTS_DIR/<setting>/result-shard-NN.json on the PVC; because a
finished pod's files cannot be read through the API, the bench container also prints the file,
gzipped and base64-encoded between `j0-result-begin PATH SHA256 SIZE` and `j0-result-end PATH`
lines, and the client checks the sha256 of what it decodes from the pod's log.

Standard library only (huggingface_hub, for prefetch, is vLLM's and imported there).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from j0.bench.matrix.k8s.plan import PLAN_FILE, PlanDocument, PlanTask
from j0.bench.matrix.settings import PointBench
from j0.edge import urls
from j0.engine.server.endpoints import wait_for_health
from j0.errors import INPUT_LACKS, J0Error, parse_json

DEFAULT_PLAN_DIR = "/plan"
DEFAULT_SERVER_URL = "http://127.0.0.1:8000"
BEGIN = "j0-result-begin"
END = "j0-result-end"
LINE_WIDTH = 76
# The target's files that vLLM reads (weights as safetensors, config, tokenizer, chat template).
PREFETCH_PATTERNS = ("*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.tiktoken")


# --- the plan ---------------------------------------------------------------------------------


def load_plan(plan_dir: Path) -> PlanDocument:
    path = plan_dir / PLAN_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise J0Error(f"{path}: cannot read the matrix plan: {exc}", INPUT_LACKS) from None
    return PlanDocument.from_json(parse_json(text, str(path)), str(path))


def completion_index(environ: Mapping[str, str]) -> int:
    raw = environ.get("JOB_COMPLETION_INDEX", "")
    if not raw.isdigit():
        raise J0Error(
            f"JOB_COMPLETION_INDEX={raw!r}: expected the index Kubernetes gives the pods of an "
            "Indexed Job",
            INPUT_LACKS,
        )
    return int(raw)


def task_of(plan: PlanDocument, index: int) -> PlanTask:
    indexes = plan.indexes
    if not 0 <= index < len(indexes) or indexes[index].index != index:
        raise J0Error(f"index {index}: not in the plan (0..{len(indexes) - 1})", INPUT_LACKS)
    return indexes[index]


def server_command(plan: PlanDocument, index: int) -> tuple[list[str], dict[str, str]]:
    """The sidecar's program and the environment it adds: `j0 serve -- ARGS` and the switches
    (the baseline: `vllm serve ARGS`, its prefix-caching flag already in ARGS)."""
    server = plan.settings[task_of(plan, index).setting]
    if server.setting.baseline:
        return ["vllm", "serve", *server.server_args], dict(server.server_env)
    return ["j0", "serve", "--", *server.server_args], dict(server.server_env)


def bench_of(
    plan: PlanDocument, index: int, url: str, results_dir: str, prompts_path: str | None
) -> PointBench:
    """The `j0 bench run` of one index."""
    task = task_of(plan, index)
    bench = plan.bench
    if prompts_path is not None:
        dataset, requests = prompts_path, task.requests
    else:
        dataset, requests = bench.dataset, bench.requests
    return PointBench(
        url=url,
        out=Path(f"{results_dir}/{task.out}"),
        label=task.label,
        j0=plan.settings[task.setting].setting.j0,
        dataset=dataset,
        requests=requests,
        max_tokens=bench.max_tokens,
        progress=False,
        repeats=bench.repeats or 1,
        system_prompt=bench.system_prompt,
        # backoffLimitPerIndex retries an index as itself: its run replaces the result that the
        # failed attempt left on the volume (`j0 bench run` refuses an existing --out otherwise)
        force=True,
    )


# --- moving a result through the log ------------------------------------------------------------


def encode_block(name: str, data: bytes) -> str:
    """`data` as the lines that the client finds in the bench container's log."""
    packed = base64.b64encode(gzip.compress(data, mtime=0)).decode("ascii")
    body = [packed[i : i + LINE_WIDTH] for i in range(0, len(packed), LINE_WIDTH)]
    digest = hashlib.sha256(data).hexdigest()
    return "\n".join([f"{BEGIN} {name} {digest} {len(data)}", *body, f"{END} {name}"]) + "\n"


def decode_blocks(log: str) -> dict[str, bytes]:
    """Every complete block in `log`, by name (the last one wins); a block whose bytes do not
    match its sha256 and size is an error."""
    found: dict[str, bytes] = {}
    current: tuple[str, str, int] | None = None
    body: list[str] = []
    for line in log.splitlines():
        if line.startswith(BEGIN + " "):
            parts = line.split()
            if len(parts) != 4 or not parts[3].isdigit():
                raise J0Error(f"malformed result block header {line!r}")
            current, body = (parts[1], parts[2], int(parts[3])), []
        elif current is not None and line == f"{END} {current[0]}":
            name, digest, size = current
            try:
                data = gzip.decompress(base64.b64decode("".join(body), validate=True))
            except (ValueError, OSError, EOFError) as exc:
                raise J0Error(f"result block {name}: cannot decode it: {exc}") from None
            if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
                raise J0Error(
                    f"result block {name}: {len(data)} bytes with sha256 "
                    f"{hashlib.sha256(data).hexdigest()}, expected {size} bytes with {digest}"
                )
            found[name] = data
            current = None
        elif current is not None:
            body.append(line.strip())
    return found


# --- the three programs ---------------------------------------------------------------------------


def wait_for_server(url: str, timeout: float) -> None:
    """The sidecar's startup probe gates this container already; this only bridges a restart."""
    wait_for_health(
        url,
        timeout,
        timed_out=lambda last: (
            f"{urls.redact(url)}/health: no answer within {timeout:.0f} s ({last})"
        ),
        poll=2,
    )


def serve(environ: Mapping[str, str]) -> int:
    plan = load_plan(Path(environ.get("J0_PLAN_DIR", DEFAULT_PLAN_DIR)))
    index = completion_index(environ)
    argv, switches = server_command(plan, index)
    task = task_of(plan, index)
    print(
        f"j0 bench matrix: index {index}: {task.setting} shard {task.shard:02d} of "
        f"{task.shards}: {' '.join(argv)} with "
        + " ".join(f"{k}={v}" for k, v in sorted(switches.items())),
        flush=True,
    )
    # The j0 launcher puts its own PYTHONPATH back; vLLM gets none of ours.
    env = {k: v for k, v in environ.items() if k != "PYTHONPATH"}
    os.execvpe(argv[0], argv, {**env, **switches})
    return 1  # not reached


def bench(environ: Mapping[str, str], out: TextIO = sys.stdout, health_timeout: float = 600) -> int:
    plan_dir = Path(environ.get("J0_PLAN_DIR", DEFAULT_PLAN_DIR))
    results_dir = environ.get("J0_RESULTS_DIR")
    if not results_dir:
        raise J0Error("J0_RESULTS_DIR is not set (the results folder on the PVC)", INPUT_LACKS)
    url = environ.get("J0_SERVER_URL", DEFAULT_SERVER_URL)
    plan = load_plan(plan_dir)
    index = completion_index(environ)
    task = task_of(plan, index)
    wait_for_server(url, health_timeout)
    from j0.bench.run import bench_exit_code

    with tempfile.TemporaryDirectory(prefix="j0-shard-") as tmp:
        prompts_path: str | None = None
        if task.prompts:
            packed = (plan_dir / task.prompts).read_bytes()
            local = Path(tmp) / task.prompts.removesuffix(".gz")
            local.write_bytes(gzip.decompress(packed))
            prompts_path = str(local)
        run = bench_of(plan, index, url, results_dir, prompts_path)
        (Path(results_dir) / task.out).parent.mkdir(parents=True, exist_ok=True)
        shown = " ".join(run.command_line())
        print(f"j0 bench matrix: index {index}: j0 {shown}", file=out, flush=True)
        code = bench_exit_code(run.options())
    result = Path(results_dir) / task.out
    if result.is_file():
        out.write(encode_block(task.out, result.read_bytes()))
        out.flush()
    else:
        print(f"j0 bench matrix: index {index}: no {result}", file=out, flush=True)
        code = code or 1
    return code


def prefetch(model: str) -> int:
    """Download the target's files into the Hub cache (HF_HOME on the PVC), once for all pods."""
    from huggingface_hub import snapshot_download

    path = snapshot_download(repo_id=model, allow_patterns=list(PREFETCH_PATTERNS))
    print(f"j0 bench matrix: {model} in the Hub cache at {path}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if args == ["serve"]:
            return serve(os.environ)
        if args == ["bench"]:
            return bench(os.environ)
        if len(args) == 2 and args[0] == "prefetch":
            return prefetch(args[1])
    except J0Error as exc:
        print(f"j0 bench matrix: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(
        "usage: python3 -m j0.bench.matrix.k8s.pod serve | bench | prefetch MODEL", file=sys.stderr
    )
    return 64


if __name__ == "__main__":
    sys.exit(main())
