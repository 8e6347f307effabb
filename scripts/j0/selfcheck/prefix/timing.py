"""`j0 selfcheck --bench` for the prefix-safe variant: what its fill (`fill_ctx_pool_cached_prefix`,
called by propose before prepare_dflash_inputs) adds, per draft step and per admission.

* per step: the fill with every request already in its slot (no admission): a Python loop over
  the batch's requests comparing request ids; no device work. Host time per call, for 1, 4 and 8
  requests.
* per admission: one new request whose first `cached` positions come from the prefix cache
  (512, 4096 and 30000 tokens): one copy of `cached` int32 from vLLM's token store into the
  history row. Host time per call; on CUDA also the copy's GPU time (CUDA events), from a store
  in GPU memory and from pinned host memory (vLLM keeps all_token_ids in host memory by UVA).

Each number is the median of REPEATS measurements (timing.py's). With --device cpu the copies are
CPU memcpy and the times are this machine's: a smoke test of the cost, not the GPU's.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from j0.selfcheck.timing import MAX_MODEL_LEN, MAX_NUM_SEQS, NUM_REQS, REPEATS

FILL = "fill_ctx_pool_cached_prefix"
CACHED = (512, 4096, 30_000)
STEP_CALLS = 2000
ADMISSION_CALLS = 50


def _buffers(device: str, pinned_store: bool) -> tuple[Any, Any]:
    import torch

    pool = torch.zeros((MAX_NUM_SEQS, MAX_MODEL_LEN), dtype=torch.int32, device=device)
    if pinned_store and device == "cuda":
        store = torch.ones((MAX_NUM_SEQS, MAX_MODEL_LEN), dtype=torch.int32).pin_memory()
    else:
        store = torch.ones((MAX_NUM_SEQS, MAX_MODEL_LEN), dtype=torch.int32, device=device)
    return pool, store


def per_step(module: Any, device: str, num_reqs: int) -> dict[str, Any]:
    """The fill on a batch of num_reqs requests that are all in their slots already."""
    import numpy as np

    fill = getattr(module, FILL)
    pool, store = _buffers(device, False)
    ids = [f"req-{i}" for i in range(num_reqs)]
    slots = np.arange(num_reqs, dtype=np.intp)
    computed = np.full(num_reqs, 4096, dtype=np.int32)
    owner: list[str | None] = [None] * MAX_NUM_SEQS
    fill(pool, store, owner, ids, slots, computed, num_reqs)  # admits them once
    host = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(STEP_CALLS):
            fill(pool, store, owner, ids, slots, computed, num_reqs)
        host.append((time.perf_counter() - t0) / STEP_CALLS * 1e6)
    return {
        "what": "per step",
        "num_reqs": num_reqs,
        "cached": 0,
        "store": "-",
        "host_us": statistics.median(host),
        "gpu_us": 0.0 if device == "cuda" else None,
    }


def per_admission(module: Any, device: str, cached: int, pinned_store: bool) -> dict[str, Any]:
    """One request admitted with `cached` positions from the prefix cache: its row is filled."""
    import numpy as np
    import torch

    fill = getattr(module, FILL)
    pool, store = _buffers(device, pinned_store)
    slots = np.asarray([3], dtype=np.intp)
    computed = np.asarray([cached], dtype=np.int32)
    calls = ADMISSION_CALLS if device == "cuda" else 5

    def admit(n: int) -> None:
        fill(pool, store, [None] * MAX_NUM_SEQS, [f"req-{n}"], slots, computed, 1)

    admit(-1)  # warm up
    host, gpu = [], []
    for _ in range(REPEATS if device == "cuda" else 3):
        if device == "cuda":
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        for n in range(calls):
            admit(n)
        host.append((time.perf_counter() - t0) / calls * 1e6)
        if device == "cuda":
            end.record()
            end.synchronize()
            gpu.append(start.elapsed_time(end) * 1e3 / calls)
    if not bool((pool[3, :cached] == 1).all()):
        raise RuntimeError(f"{FILL} did not fill the row it was timed on")
    return {
        "what": "per admission",
        "num_reqs": 1,
        "cached": cached,
        "store": "pinned host" if pinned_store and device == "cuda" else device,
        "host_us": statistics.median(host),
        "gpu_us": statistics.median(gpu) if gpu else None,
    }


def run(module: Any, device: str) -> list[dict[str, Any]]:
    """Every row, or none for a file without the fill (the article's)."""
    if not hasattr(module, FILL):
        return []
    rows = [per_step(module, device, n) for n in NUM_REQS]
    for pinned in (False, True) if device == "cuda" else (False,):
        rows += [per_admission(module, device, n, pinned) for n in CACHED]
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the fill's cost: µs per call."""
    lines = [
        "| prefix-safe fill | requests | cached tokens | token store | host µs | GPU µs |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        gpu = "-" if row["gpu_us"] is None else f"{row['gpu_us']:.2f}"
        lines.append(
            f"| {row['what']} | {row['num_reqs']} | {row['cached']} | {row['store']} "
            f"| {row['host_us']:.2f} | {gpu} |"
        )
    return "\n".join(lines)
