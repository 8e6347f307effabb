"""Where the miniature trains: `cuda` when asked or available, else the CPU; bf16 autocast on
CUDA, fp32 on the CPU."""

from __future__ import annotations

import contextlib
from typing import Any

from j0.commands import DEVICES
from j0.errors import UNAVAILABLE, USAGE, J0Error


def pick(device: str) -> str:
    """auto | cpu | cuda -> the torch device name; `cuda` without a GPU is refused (exit 69)."""
    import torch

    if device not in DEVICES:
        raise J0Error(f"--device {device}: expected auto, cpu or cuda", USAGE)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise J0Error("--device cuda: torch finds no CUDA device here", UNAVAILABLE)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device


def autocast(device: str) -> Any:
    """bf16 autocast on CUDA; nothing on the CPU."""
    import torch

    if device == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
