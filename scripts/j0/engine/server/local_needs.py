"""What serving this machine's vLLM needs, checked before anything heavy starts, each missing
piece one line and exit 69 (`j0 engine-check` and `j0 mini run --here`): an NVIDIA GPU (found
without importing torch), what vLLM's OpenAI server imports (found, not imported), the installed
vLLM against the prefix-safe variant's contract with its engine, and which speculator.py this
Python's vLLM would import (here_identity).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from j0.engine.server.identity_record import IdentityRecord
from j0.errors import UNAVAILABLE, J0Error, parse_json
from j0.terminal import sink


def gpu_present() -> bool:
    """An NVIDIA driver and GPU on this host, found without importing torch."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    return Path("/dev/nvidiactl").exists() or shutil.which("nvidia-smi") is not None


def require_gpu(purpose: str = "j0 engine-check", nothing: str = "nothing was checked") -> None:
    if not gpu_present():
        raise J0Error(
            f"{purpose}: no NVIDIA GPU here (no /dev/nvidiactl, no nvidia-smi): it serves "
            f"vLLM's real engine and needs one; {nothing} (without a GPU, `j0 selfcheck` "
            "checks J0's kernels in Triton's interpreter)",
            UNAVAILABLE,
        )


# What `python -m vllm.entrypoints.cli.main serve` imports before it listens, beyond the
# standard library: vLLM itself and its server's packages (found, not imported).
SERVER_NEEDS = ("vllm", "torch", "transformers", "fastapi", "uvicorn")


def require_server_packages(purpose: str, nothing: str = "nothing was checked") -> None:
    """This Python has vLLM and what its OpenAI server imports, or one line and exit 69."""
    from j0.errors import available

    missing = [name for name in SERVER_NEEDS if not available(name)]
    if missing:
        raise J0Error(
            f"{purpose}: it serves this Python's vLLM (`python -m vllm.entrypoints.cli.main "
            f"serve`), and {sys.executable} lacks {', '.join(missing)}: install vLLM with its "
            "dependencies there (pip install vllm), or run it inside the image; " + nothing,
            UNAVAILABLE,
        )


def require_engine_contract(purpose: str) -> None:
    """The installed vLLM's own source against the prefix-safe variant's contract with its engine
    (j0.engine.source.contract): broken, it is exit 1 before anything is served when the installed
    speculator.py is the variant or an audit (both read req_states from init_speculator's
    frame), and one warning line for the article's file (which does not depend on it)."""
    from j0.article.identity import AUDIT, PREFIX_SAFE, identify
    from j0.engine.source import contract
    from j0.engine.source.base_sources import installed_vllm_dir
    from j0.pins import load_pins

    site = installed_vllm_dir()
    found = contract.problems(site)
    if not found:
        return
    pins = load_pins()
    speculator = site / pins.speculator_relpath
    kind = identify(speculator.read_bytes(), pins).kind if speculator.is_file() else "absent"
    if kind in (PREFIX_SAFE, AUDIT):
        contract.require(site, f"{purpose} ({speculator}: identity={kind})")
    sink.warn(
        f"{purpose}: warning: the installed vLLM breaks the prefix-safe variant's contract "
        f"(the installed speculator.py is identity={kind}, which does not depend on it): "
        + "; ".join(found)
    )


def here_identity(purpose: str, env: dict[str, str] | None = None) -> IdentityRecord:
    """The identity record (`j0 image identity --json`'s, from j0.engine.server.speculator_identity)
    in a process of this Python with `env` (the server's, default this one's): the speculator.py a
    server started the same way would import, as its identity line will name it. One line and
    exit 69 where there is no vLLM to ask."""
    command = [sys.executable, "-m", "j0.engine.server.speculator_identity", "--json"]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    try:
        said = parse_json(done.stdout, "j0 image identity") if done.returncode == 0 else {}
        found: dict[str, Any] = said if isinstance(said, dict) else {}
    except J0Error:
        found = {}
    if "identity" not in found:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise J0Error(
            f"{purpose}: cannot tell which speculator.py this Python's vLLM would import "
            f"({why.removeprefix('j0: error: ')}); nothing was run",
            UNAVAILABLE,
        )
    return IdentityRecord.read(found, f"{purpose}: `j0 image identity --json`")
