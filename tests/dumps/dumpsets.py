"""The dump sets the `j0 dumps` tests read: made once per test session by simulate.py with the
article's real kernels (and with broken copies of them), plus the recorded engine dumps.

Not a test module: test_dumps_*.py import it. Making the sets takes about 20 s on a quiet 2-core
machine (vLLM's import once, then Triton's interpreter for each kernel call) and minutes on a
busy one, so they are cached by content: under $J0_CACHE/dumpsets/<key> (default ~/.cache/j0),
the key a sha256 of everything the simulation reads (the article's file, the broken edits,
simulate.py, this file, the j0 modules simulate.py imports, the Python and the versions of torch,
triton, numpy and vllm). A run whose inputs are the same bytes copies the cached sets; any change
makes them again. Each test session gets its own copy, so no test can alter the cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import content_cache

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


def cache_key(inputs: list[Path], options: object) -> str:
    """A sha256 of `inputs`' bytes, `options` (JSON), the simulation's code (simulate.py, this
    file, and the j0 code they import: content_cache.j0_code; a change elsewhere in j0 keeps the
    sets) and its stack."""
    own = [HERE / "simulate.py", Path(__file__).resolve()]
    files = [*inputs, *own, *content_cache.j0_code(*own)]
    return content_cache.key(files, options, ("torch", "triton", "numpy", "vllm"))


def make_sets(article_file: Path, workdir: Path) -> Path:
    """The folder holding main-j0-on, main-j0-off, prefix-j0-on, prefix-j0-off and one folder
    per BROKEN name: a copy of the cached sets for these inputs, made first where missing."""
    if "sets" in _CACHE:
        return _CACHE["sets"]
    out = cached_simulation(
        [article_file], BROKEN, workdir, lambda tmp: simulate_sets(article_file, tmp)
    )
    _CACHE["sets"] = out
    return out


def cached_simulation(
    inputs: list[Path], options: object, workdir: Path, make: Callable[[Path], Path]
) -> Path:
    """workdir/sets: a copy of the cached output of `make(tmp) -> folder` for these inputs and
    options (tests/content_cache.py), made where missing."""
    return content_cache.cached_folder("dumpsets", cache_key(inputs, options), workdir, make)


def simulate_sets(article_file: Path, workdir: Path) -> Path:
    """Run simulate.py (in a child process: Triton's interpreter must be set before Triton is
    imported) into workdir/sets."""
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
