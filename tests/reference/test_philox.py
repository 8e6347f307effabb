"""j0.reference.philox is Triton's tl.randint: Random123's known answers, then Triton itself.

The Triton comparison runs a tiny @triton.jit kernel in a child process with TRITON_INTERPRET=1
(set before Triton is imported, which this test process cannot promise), over many seeds and
offsets of the three integer widths a kernel may pass; the GPU test compiles the same kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from j0.reference import philox

# Random123's known-answer vectors for philox4x32_10 (kat_vectors): counter, key -> output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF,) * 4,
        (0xFFFFFFFF, 0xFFFFFFFF),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("counter", "key", "expected"), KNOWN_ANSWERS)
def test_philox_known_answers(counter: tuple, key: tuple, expected: tuple) -> None:
    words = tuple(np.array([c], dtype=np.uint32) for c in counter)
    got = tuple(int(w[0]) for w in philox.philox4x32(words, key))  # type: ignore[arg-type]
    assert got == expected


def test_randint_is_the_first_word_with_offset_as_counter() -> None:
    offsets = np.array([0, 1, 2**31, 2**32 - 1], dtype=np.uint32)
    words = philox.philox4x32(
        (offsets, np.zeros(4, np.uint32), np.zeros(4, np.uint32), np.zeros(4, np.uint32)),
        (20261031, 0),
    )
    assert (philox.randint(20261031, offsets) == words[0]).all()
    assert philox.randint(5, offsets).dtype == np.uint32


KERNEL_SCRIPT = r"""
import json, sys
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def randint_kernel(out_ptr, offsets_ptr, seed, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.randint(seed, tl.load(offsets_ptr + i)).to(tl.int64))


@triton.jit
def j0_kernel(out_ptr, seed, NUM_K: tl.constexpr):
    # The patched kernel's draw: (req_state_idx * 64 + k) cast to uint32.
    slot = tl.program_id(0)
    k = tl.arange(0, NUM_K)
    r = tl.randint(seed, (slot * 64 + k).to(tl.uint32))
    tl.store(out_ptr + slot * NUM_K + k, r.to(tl.int64))


device = sys.argv[1]
spec = json.load(open(sys.argv[2]))
results = []
for seed, dtype, offsets in spec["runs"]:
    if dtype == "uint32":
        t = torch.tensor(np.asarray(offsets, dtype=np.uint32).view(np.int32)).view(torch.uint32)
    else:
        t = torch.tensor(offsets, dtype=getattr(torch, dtype))
    t = t.to(device)
    out = torch.zeros(len(offsets), dtype=torch.int64, device=device)
    randint_kernel[(1,)](out, t, seed, N=len(offsets))
    results.append(out.cpu().tolist())
j0 = torch.zeros(spec["slots"] * 64, dtype=torch.int64, device=device)
j0_kernel[(spec["slots"],)](j0, spec["j0_seed"], NUM_K=64)
json.dump({"runs": results, "j0": j0.cpu().tolist()}, open(sys.argv[3], "w"))
"""


def _spec(rng: np.random.Generator) -> dict:
    seeds = [0, 1, 20261031, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40 + 7, 2**63 - 1]
    seeds += [int(s) for s in rng.integers(0, 2**63 - 1, size=16, dtype=np.int64)]
    runs = []
    for i, seed in enumerate(seeds):
        edges = [0, 1, 63, 64, 2**31 - 1, 2**31, 2**32 - 1]
        dtype = ("uint32", "int32", "int64")[i % 3]
        n = 256
        if dtype == "uint32":
            offs = edges + [int(x) for x in rng.integers(0, 2**32, size=n - len(edges))]
        elif dtype == "int32":
            offs = [0, 1, -1, 2**31 - 1, -(2**31)]
            offs += [int(x) for x in rng.integers(-(2**31), 2**31, size=n - len(offs))]
        else:
            offs = [0, 1, -1, 2**32, 2**32 + 5, 2**62]
            offs += [int(x) for x in rng.integers(-(2**62), 2**62, size=n - len(offs))]
        runs.append((seed, dtype, offs))
    return {"runs": runs, "slots": 32, "j0_seed": 20261031}


def _expected(spec: dict) -> dict:
    runs = []
    for seed, dtype, offsets in spec["runs"]:
        arr = np.asarray(offsets, dtype=np.int64)
        if dtype in ("uint32", "int32"):  # a 32-bit offset: no high counter word
            arr = arr.astype(np.uint32)
        runs.append(philox.randint(seed, arr).astype(np.int64).tolist())
    slots = np.arange(spec["slots"], dtype=np.int64)[:, None]
    offs = (slots * 64 + np.arange(64)[None, :]).astype(np.uint32)
    j0 = philox.randint(spec["j0_seed"], offs).astype(np.int64).reshape(-1).tolist()
    return {"runs": runs, "j0": j0}


def _run_triton(tmp_path: Path, device: str, env: dict[str, str]) -> tuple[dict, dict]:
    spec = _spec(np.random.default_rng(7))
    script = tmp_path / "randint_kernel.py"
    script.write_text(KERNEL_SCRIPT)
    spec_path, out_path = tmp_path / "spec.json", tmp_path / "out.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.run(
        [sys.executable, str(script), device, str(spec_path), str(out_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out_path.read_text()), _expected(spec)


def _compare(got: dict, want: dict, spec_runs: int) -> None:
    assert len(got["runs"]) == spec_runs
    for i, (g, w) in enumerate(zip(got["runs"], want["runs"], strict=True)):
        assert g == w, (
            f"run {i}: first difference at {next(j for j in range(len(g)) if g[j] != w[j])}"
        )
    assert got["j0"] == want["j0"]


# Slow: Triton's interpreter in a child process (6 s in a fast-subset run of 2026-12-06).
@pytest.mark.slow
def test_randint_equals_triton_interpreter(tmp_path: Path) -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    got, want = _run_triton(tmp_path, "cpu", env)
    _compare(got, want, len(want["runs"]))


@pytest.mark.gpu
def test_randint_equals_triton_compiled(tmp_path: Path) -> None:
    from conftest import cuda_gpu_here

    if not cuda_gpu_here():
        pytest.skip("no CUDA GPU")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    got, want = _run_triton(tmp_path, "cuda", env)
    _compare(got, want, len(want["runs"]))
