"""Training throughput: the model FLOPs of one trained token and the model FLOPs utilisation
(MFU) they give at a measured rate against the GPU's peak dense bf16 rate.

The count is the usual one for a decoder (Kaplan et al. 2020; PaLM's appendix): a trained token
costs 6 FLOPs per weight that multiplies it (forward 2, backward 4: every linear layer and the
output head, not the embedding lookup), plus attention's two matrix products, QK^T and AV, each
2 x seq x heads x head_dim FLOPs per token forward, halved for a causal mask (a token attends to
half the window on average), times 3 for forward and backward. Norms, activations and the
optimiser are left out, as MFU leaves them out. Standard library only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from j0.mini.sizes import Sizes

# Peak dense bf16 tensor-core rates (no sparsity), TFLOP/s, from NVIDIA's data sheets, by a
# piece of the name torch reports (the first that matches wins: the SXM boards, whose names
# torch gives as "NVIDIA H100 80GB HBM3" and "NVIDIA H200").
PEAK_BF16_TFLOPS = (
    ("H200", 989.4),
    ("H100 PCIe", 756.0),
    ("H100 NVL", 835.5),
    ("H100", 989.4),
    ("A100", 312.0),
)


def linear_weights(sizes: Sizes, layers: int | None = None, head: bool = True) -> int:
    """Weights that multiply each token: attention's q, k, v, o and the MLP's gate, up and down
    in every layer, and the output head (`head`)."""
    attention = sizes.hidden * sizes.head_dim * (2 * sizes.heads + 2 * sizes.kv_heads)
    mlp = 3 * sizes.hidden * sizes.mlp
    count = (layers or sizes.layers) * (attention + mlp)
    return count + (sizes.vocab * sizes.hidden if head else 0)


def target_flops_per_token(sizes: Sizes, seq: int | None = None) -> float:
    """Model FLOPs of one trained token of the target on windows of `seq` (target_seq)."""
    window = seq or sizes.target_seq
    attention = 2 * 2 * (window / 2) * sizes.heads * sizes.head_dim * sizes.layers
    return 6.0 * linear_weights(sizes) + 3.0 * attention


def peak_tflops(device_name: str | None) -> float | None:
    """The GPU's peak dense bf16 rate by its name, or None (unknown: no MFU then)."""
    if not device_name:
        return None
    for piece, peak in PEAK_BF16_TFLOPS:
        if piece in device_name:
            return peak
    return None


@dataclass(frozen=True)
class Throughput:
    """What a training loop did per second: tokens, model FLOPs and the share of the peak."""

    tokens: int  # tokens trained on, the timed steps only
    seconds: float  # the timed steps' wall time (compilation and warm-up steps left out)
    tokens_per_s: float
    flops_per_token: float
    tflops: float  # model TFLOP/s achieved
    device_name: str | None
    peak_tflops: float | None  # the GPU's dense bf16 peak (None: not known)
    mfu: float | None  # tflops / peak_tflops

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def throughput(
    tokens: int,
    seconds: float,
    flops_per_token: float,
    device_name: str | None,
    peak: float | None = None,
) -> Throughput:
    """The rates of `tokens` trained in `seconds`; `peak` (TFLOP/s) in the place of the table's."""
    rate = tokens / seconds if seconds > 0 else 0.0
    achieved = rate * flops_per_token / 1e12
    top = peak if peak is not None else peak_tflops(device_name)
    return Throughput(
        tokens=tokens,
        seconds=round(seconds, 2),
        tokens_per_s=round(rate, 1),
        flops_per_token=flops_per_token,
        tflops=round(achieved, 2),
        device_name=device_name,
        peak_tflops=top,
        mfu=round(achieved / top, 4) if top else None,
    )


def device_name(device: str) -> str | None:
    """torch's name of the CUDA device (None on the CPU)."""
    if device != "cuda":
        return None
    import torch

    return str(torch.cuda.get_device_name())
