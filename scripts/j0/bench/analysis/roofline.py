"""The decode roofline of speculative decoding at batch 1: acceptance length x bandwidth / bytes.

One verify step reads every weight of the target once and yields `acceptance length` tokens on
average, so a memory-bound decoder cannot beat AL x B / W tokens per second (B the memory
bandwidth, W the target's weight bytes; the drafter's reads, the KV cache and the launch gaps
only lower the real figure). Standard library only.
"""

from __future__ import annotations

import re
from pathlib import Path

from j0.errors import INPUT_LACKS, USAGE, J0Error, parse_json, read_input_text

# Peak memory bandwidth in TB/s (10^12 bytes/s), from NVIDIA's data sheets.
GPU_BANDWIDTH_TBS = {
    "H200": 4.8,  # H200 SXM, 141 GB HBM3e
    "H200 NVL": 4.8,
    "H100 SXM": 3.35,  # 80 GB HBM3
    "H100 NVL": 3.9,
    "H100 PCIe": 2.0,
    "A100 80GB": 2.039,  # SXM4 (the PCIe card: 1.935)
    "A100 80GB PCIe": 1.935,
    "A100 40GB": 1.555,
    "B200": 8.0,
    "RTX PRO 6000 Blackwell": 1.792,  # 96 GB GDDR7, 512-bit
    "L40S": 0.864,
}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower().replace("nvidia", ""))


def bandwidth_tbs(gpu: str) -> float:
    """The bandwidth of a GPU by name ("H200", "nvidia h100-sxm", ...)."""
    wanted = _key(gpu)
    for name, value in GPU_BANDWIDTH_TBS.items():
        if _key(name) == wanted:
            return value
    raise J0Error(
        f"--gpu {gpu!r}: no bandwidth known; known: {', '.join(GPU_BANDWIDTH_TBS)} "
        "(or give --bandwidth TB/S)",
        USAGE,
    )


def weight_bytes_of_index(path: Path) -> int:
    """`metadata.total_size` of a model.safetensors.index.json."""
    index = parse_json(read_input_text(path, "--weights-index"), f"--weights-index {path}")
    size = (index.get("metadata") or {}).get("total_size") if isinstance(index, dict) else None
    if not isinstance(size, int | float) or size <= 0:
        raise J0Error(
            f"--weights-index {path}: no positive metadata.total_size (expected a "
            "model.safetensors.index.json)",
            INPUT_LACKS,
        )
    return int(size)


def roofline_tok_s(acceptance_length: float, bandwidth_tb_s: float, weight_bytes: float) -> float:
    return acceptance_length * bandwidth_tb_s * 1e12 / weight_bytes
