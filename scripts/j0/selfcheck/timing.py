"""`j0 selfcheck --bench`: what J0 costs per draft step in `prepare_dflash_inputs`.

For decode batches of 1, 4 and 8 requests (max_num_seqs 8) with 7 and 15 draft tokens, each call
is timed with J0 off (`ctx_pool=None`: vLLM's one kernel) and on (the history write kernel plus
the draw). Two numbers per call:

* GPU time: CALLS_PER_GRAPH calls captured in one CUDA graph, the graph replayed between two CUDA
  events; the elapsed time over the number of calls. Graph replay removes the host's launch gaps,
  so this is the kernels' own time.
* host time: wall time of a loop of plain (eager) calls, without synchronising inside the loop,
  over the number of calls: the Python and launch cost the CPU pays per draft step.

Each number is the median of REPEATS measurements. With --device cpu the "GPU" column is empty and
the host time is Triton's interpreter, one call per cell: a smoke test, not a measurement.
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from j0.selfcheck.batches import BatchStep, Case

MAX_NUM_SEQS = 8
MAX_MODEL_LEN = 32_768
MAX_NUM_TOKENS = 8_192
BLOCK_SIZE = 16
NUM_REQS = (1, 4, MAX_NUM_SEQS)
NUM_SPEC = (7, 15)
CALLS_PER_GRAPH = 20
REPEATS = 15
HOST_CALLS = 200


def decode_case(num_reqs: int, num_spec: int, seed: int = 0) -> tuple[Case, BatchStep]:
    """A decode step of num_reqs requests in shuffled slots, contexts of 1k..30k tokens."""
    import numpy as np

    from j0.selfcheck import batches

    rng = np.random.default_rng([seed, num_reqs, num_spec])
    slots = rng.permutation(MAX_NUM_SEQS)[:num_reqs]
    requests = []
    for slot in slots:
        start = int(rng.integers(1_000, 30_000))
        tokens = rng.integers(1, batches.VOCAB, size=num_spec + 1).astype(np.int32)
        rejected = int(rng.integers(0, num_spec + 1))
        anchor = int(rng.integers(1, batches.VOCAB))
        committed = np.zeros(start + num_spec + 1 - rejected + 1, dtype=np.int32)
        requests.append(
            batches.BatchRow(
                req_state_idx=int(slot),
                kind=batches.DECODE,
                start_pos=start,
                tokens=tokens,
                num_rejected=rejected,
                num_sampled=num_spec + 1 - rejected,
                anchor=anchor,
                committed=committed,
            )
        )
    step = batches.BatchStep(
        requests=tuple(requests),
        last_sampled=rng.integers(1, batches.VOCAB, size=MAX_NUM_SEQS),
        next_prefill=rng.integers(1, batches.VOCAB, size=MAX_NUM_SEQS).astype(np.int32),
        temperature=rng.uniform(0, 1, size=MAX_NUM_SEQS).astype(np.float32),
        seeds=rng.integers(0, 2**31, size=MAX_NUM_SEQS),
        block_table=rng.integers(
            1, 100_000, size=(MAX_NUM_SEQS, MAX_MODEL_LEN // BLOCK_SIZE)
        ).astype(np.int32),
        pad_tokens=0,
        pad_ids=np.zeros(0, dtype=np.int32),
    )
    case = batches.Case(
        index=1_000_000 + num_reqs * 100 + num_spec,
        seed=seed,
        max_num_seqs=MAX_NUM_SEQS,
        num_spec=num_spec,
        max_model_len=MAX_MODEL_LEN,
        block_size=BLOCK_SIZE,
        max_num_tokens=MAX_NUM_TOKENS,
        pool_pad=0,
        mask_token=batches.VOCAB + 1,
        chunk_cap=0,
        steps=(step,),
    )
    return case, step


def _time_one(module: Any, case: Case, step: BatchStep, device: str, j0: bool) -> dict[str, Any]:
    import torch

    from j0.selfcheck import batches
    from j0.selfcheck import kernels as selfcheck

    inputs = selfcheck.make_inputs(module, case, step, device)
    before = batches.initial_outputs(case, 0)
    pool = (
        torch.zeros((case.max_num_seqs, case.max_model_len), dtype=torch.int32, device=device)
        if j0
        else None
    )
    outputs = selfcheck.make_outputs(module, case, before, device)

    def call() -> None:
        selfcheck.call_prepare_into(module, case, inputs, outputs, pool)

    cuda = device == "cuda"
    if cuda:
        call()  # compile, warm up
    # On the CPU Triton's interpreter has nothing to compile or warm: the one timed call is the
    # smoke test's only call (a warm-up would double the interpreter's time and measure nothing).
    host_calls = HOST_CALLS if cuda else 1
    repeats = REPEATS if cuda else 1
    for _ in range(3 if cuda else 0):
        call()
    if cuda:
        torch.cuda.synchronize()
    host: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(host_calls):
            call()
        t1 = time.perf_counter()
        if cuda:
            torch.cuda.synchronize()
        host.append((t1 - t0) / host_calls * 1e6)
    row: dict[str, Any] = {
        "num_reqs": step.num_reqs,
        "num_spec": case.num_spec,
        "j0": j0,
        "host_us": statistics.median(host),
        "host_us_all": host,
        "gpu_us": None,
        "gpu_us_all": None,
    }
    if cuda:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(CALLS_PER_GRAPH):
                call()
        graph.replay()
        torch.cuda.synchronize()
        gpu: list[float] = []
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                graph.replay()
            end.record()
            end.synchronize()
            gpu.append(start.elapsed_time(end) * 1e3 / (10 * CALLS_PER_GRAPH))
        row["gpu_us"] = statistics.median(gpu)
        row["gpu_us_all"] = gpu
    return row


def config() -> dict[str, Any]:
    """The sizes every bench row was measured at."""
    return {
        "max_num_seqs": MAX_NUM_SEQS,
        "max_model_len": MAX_MODEL_LEN,
        "max_num_tokens": MAX_NUM_TOKENS,
        "block_size": BLOCK_SIZE,
        "calls_per_graph": CALLS_PER_GRAPH,
        "graph_replays_per_sample": 10,
        "host_calls_per_sample": HOST_CALLS,
        "samples": REPEATS,
        "statistic": "median",
    }


def run(module: Any, device: str) -> list[dict[str, Any]]:
    rows = []
    for num_spec in NUM_SPEC:
        for num_reqs in NUM_REQS:
            case, step = decode_case(num_reqs, num_spec)
            for j0 in (False, True):
                rows.append({**_time_one(module, case, step, device, j0), **config()})
    return rows


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table: per (requests, draft tokens), µs per call, J0 off -> on."""
    lines = [
        "| requests | draft tokens | GPU µs off | GPU µs on | GPU Δ | host µs off | host µs on "
        "| host Δ |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    pairs: dict[tuple[int, int], dict[bool, dict[str, Any]]] = {}
    for row in rows:
        pairs.setdefault((row["num_reqs"], row["num_spec"]), {})[row["j0"]] = row
    for (num_reqs, num_spec), pair in sorted(pairs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        off, on = pair[False], pair[True]
        gpu_delta = (
            on["gpu_us"] - off["gpu_us"] if on["gpu_us"] is not None and off["gpu_us"] else None
        )
        lines.append(
            f"| {num_reqs} | {num_spec} | {_fmt(off['gpu_us'])} | {_fmt(on['gpu_us'])} "
            f"| {_fmt(gpu_delta)} | {_fmt(off['host_us'])} | {_fmt(on['host_us'])} "
            f"| {_fmt(on['host_us'] - off['host_us'])} |"
        )
    return "\n".join(lines)
