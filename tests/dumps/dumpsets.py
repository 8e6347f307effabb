"""The dump sets the `j0 dumps` tests read: made once per test session by simulate.py with the
article's real kernels (and with broken copies of them), plus the recorded engine dumps.

Not a test module: test_dumps_*.py import it. Making the sets takes about 20 s on 2 CPU cores
(vLLM's import once, then Triton's interpreter for each kernel call); the result is cached for
the session in one place, whichever module asks first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ENGINE = ROOT / "tests" / "data" / "engine-h200"
ENGINE_PREFIX = ROOT / "tests" / "data" / "engine-h200-prefix-cache" / "dumps"
ENGINE_GRAPHS = ROOT / "tests" / "data" / "engine-h200-graphs-k15"
MASK = 4999  # simulate.MASK

# Broken kernels whose faults show in the dumps' query ids: (name, text, replacement). Each is a
# copy of the article's file with one edit; `j0 dumps check` must fail each one's dumps.
BROKEN = [
    ("other-seed", "tl.randint(20261031,", "tl.randint(20261032,"),
    ("L-one-short", "committed = last_valid_pos + 2", "committed = last_valid_pos + 1"),
    ("offset-63", "req_state_idx * 64 + query_off", "req_state_idx * 63 + query_off"),
    (
        "slot-0-drawn",
        "use_noise = is_query & (query_off > 0)",
        "use_noise = is_query & (query_off >= 0)",
    ),
    (
        "L-ignores-rejections",
        "committed = last_valid_pos + 2",
        "committed = tl.load(target_positions_ptr + ctx_end - 1) + 2",
    ),
    (
        "history-row-by-batch-index",
        "ctx_pool_ptr + req_state_idx.to(tl.int64) * ctx_pool_stride + ridx",
        "ctx_pool_ptr + req_idx.to(tl.int64) * ctx_pool_stride + ridx",
    ),
]

_CACHE: dict[str, Path] = {}


def make_sets(article_file: Path, workdir: Path) -> Path:
    """Run simulate.py once (in a child process: Triton's interpreter must be set before Triton
    is imported); return the folder holding main-j0-on, main-j0-off, prefix-j0-on,
    prefix-j0-off and one folder per BROKEN name."""
    if "sets" in _CACHE:
        return _CACHE["sets"]
    from j0.selfcheck.kernels import INTERPRETER_ENV

    text = article_file.read_text()
    broken = workdir / "broken"
    broken.mkdir(parents=True, exist_ok=True)
    variants = []
    for name, old, new in BROKEN:
        assert text.count(old) == 1, f"{name}: {old!r} is not once in the article's file"
        path = broken / f"{name}.py"
        path.write_text(text.replace(old, new))
        variants += ["--variant", f"{name}={path}"]
    out = workdir / "sets"
    env = {**os.environ, **INTERPRETER_ENV, "VLLM_LOGGING_LEVEL": "ERROR"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "simulate.py"),
            *("--speculator", str(article_file), "--out", str(out)),
            *variants,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    _CACHE["sets"] = out
    return out


def copy_set(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def edit_step(path: Path, change: Any) -> None:
    """Load one dump with torch, let `change(dict)` alter it, save it back (a tampered copy)."""
    import torch

    data = torch.load(path, weights_only=True)
    change(data)
    torch.save(data, path)


def load_step(path: Path) -> dict[str, Any]:
    import torch

    return torch.load(path, weights_only=True)
