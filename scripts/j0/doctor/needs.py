"""What serving the target takes on one GPU: weights, KV cache at --max-num-seqs 4, J0's history.

From the target's and the drafter's config.json (layers, KV heads, head dim, dtype, context length)
and the weights' file sizes where they are known (the Hub's listing, or the files on disk); else
from stated estimates, which every figure then says it is. Standard library only.

KV cache per token, as vLLM allocates it (one K and one V vector per attention layer and KV head):
    2 * kv_heads * head_dim * bytes(kv dtype)   per full-attention layer,
sliding-window layers count at most their window, linear-attention / mamba layers keep a
per-request state that is not counted here. The draft's layers share the pool (vLLM 0.33 gives
every attention layer, the draft's included, the same number of blocks), with the draft's KV dtype
"auto" (its own BF16). J0's history is max_num_seqs * max_model_len * 4 bytes (the patch).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GIB = 1 << 30
BF16_BYTES = 2
# Activations, CUDA graphs, the CUDA context and allocator slack, on top of weights and KV cache:
# a stated allowance, not a measurement (vLLM profiles the real figure at start-up).
OVERHEAD_BYTES = 4 * GIB
# Used only where the target's config.json cannot be read; said so wherever it is used.
ASSUMED_SHAPE = {"layers": 64, "kv_heads": 8, "head_dim": 128, "max_len": 32768}
ASSUMED_DRAFTER_LAYERS = 5  # the JetSpec++ drafter's (its config.json, once fetched)
# The README's figures, in decimal GB as it states them: the drafter "about 3 GB" (5 layers of the
# target's width, BF16), vLLM's CUDA image "tens of GB unpacked" (25 GB assumed: CUDA, torch,
# FlashInfer and vLLM's kernels); with the target's 54 GB, the README's "about 82 GB" (the disk
# check warns where less than 10 GiB would be left after them).
ASSUMED_DRAFTER_BYTES = 3 * 10**9
ASSUMED_IMAGE_BYTES = 25 * 10**9

_DTYPE_BYTES = {
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "bf16": 2,
    "fp16": 2,
    "float32": 4,
    "float": 4,
}


def params_from_name(repo_id: str) -> float | None:
    """`Qwen/Qwen3.8-27B` -> 27e9 (the last `<number>B` in the name)."""
    found = re.findall(r"(?<![\d.])(\d+(?:\.\d+)?)[Bb](?![A-Za-z])", repo_id.split("/")[-1])
    return float(found[-1]) * 1e9 if found else None


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """A multimodal config keeps the language model's fields in text_config."""
    inner = config.get("text_config")
    return inner if isinstance(inner, Mapping) else config


def dtype_bytes(name: str | None, default: int = BF16_BYTES) -> int:
    if not name:
        return default
    name = str(name).removeprefix("torch.").lower()
    if name.startswith("fp8"):
        return 1
    return _DTYPE_BYTES.get(name, default)


@dataclass(frozen=True)
class Attention:
    """The KV-carrying shape of a model, and how it was found."""

    full_layers: int
    sliding_layers: int
    window: int
    kv_heads: int
    head_dim: int
    model_dtype_bytes: int
    max_len: int
    source: str
    notes: tuple[str, ...] = ()

    def per_token(self, kv_bytes: int, length: int) -> float:
        """KV bytes per token of context, averaged over `length` tokens."""
        vector = 2 * self.kv_heads * self.head_dim * kv_bytes
        sliding = self.sliding_layers * min(self.window, length) / max(length, 1)
        return vector * (self.full_layers + sliding)


def attention_from_config(config: Mapping[str, Any], source: str) -> Attention:
    """Read the attention shape; ValueError when a needed field is missing or not a number."""
    cfg = text_config(config)
    notes: list[str] = []

    def number(*keys: str) -> int | None:
        for key in keys:
            value = cfg.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    layers = number("num_hidden_layers", "n_layer", "num_layers")
    heads = number("num_attention_heads", "n_head")
    if layers is None or heads is None:
        raise ValueError("no num_hidden_layers / num_attention_heads")
    kv_heads = number("num_key_value_heads", "num_kv_heads") or heads
    head_dim = number("head_dim")
    if head_dim is None:
        hidden = number("hidden_size", "n_embd")
        if hidden is None:
            raise ValueError("no head_dim and no hidden_size")
        head_dim = hidden // heads
    window = number("sliding_window") or 0
    types = cfg.get("layer_types")
    full, sliding = layers, 0
    if isinstance(types, list) and types:
        full = sum(1 for t in types if t == "full_attention")
        sliding = sum(1 for t in types if t == "sliding_attention")
        others = len(types) - full - sliding
        if not window:  # sliding layers without a window keep every token
            full, sliding = full + sliding, 0
        if others:
            notes.append(f"{others} of {len(types)} layers keep a per-request state (not counted)")
    elif number("full_attention_interval"):
        interval = number("full_attention_interval") or 1
        full = layers // interval
        notes.append(f"{layers - full} of {layers} layers are linear attention (not counted)")
    else:
        notes.append(
            f"{source} names no layer types: all {layers} layers counted as full attention, an "
            "upper bound for a model that mixes in linear-attention layers"
        )
    max_len = number("max_position_embeddings", "max_seq_len", "seq_length") or 0
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or config.get("torch_dtype")
    return Attention(
        full, sliding, window, kv_heads, head_dim, dtype_bytes(dtype), max_len, source, tuple(notes)
    )


def assumed_drafter(target: Attention) -> Attention:
    return Attention(
        ASSUMED_DRAFTER_LAYERS,
        0,
        0,
        target.kv_heads,
        target.head_dim,
        BF16_BYTES,
        target.max_len,
        f"an assumption ({ASSUMED_DRAFTER_LAYERS} layers shaped like the target's), the "
        "drafter's config.json being unreadable",
    )


def assumed_attention() -> Attention:
    shape = ASSUMED_SHAPE
    return Attention(
        shape["layers"],
        0,
        0,
        shape["kv_heads"],
        shape["head_dim"],
        BF16_BYTES,
        shape["max_len"],
        "an assumption ({layers} layers, {kv_heads} KV heads, head dim {head_dim}, BF16, "
        "{max_len} tokens: a dense 27-32B layout, every layer full attention: an upper bound), "
        "the target's config.json being unreadable".format(**shape),
    )


@dataclass(frozen=True)
class Sized:
    """A byte count and where it came from."""

    bytes: int
    source: str


@dataclass
class Needs:
    """GPU memory for the article's server on one GPU."""

    weights: Sized
    drafter_weights: Sized
    target: Attention
    drafter: Attention
    kv_dtype: str
    max_model_len: int
    max_len_source: str
    max_num_seqs: int
    notes: list[str] = field(default_factory=list)

    @property
    def kv_bytes(self) -> int:
        if self.kv_dtype in ("", "auto"):
            return self.target.model_dtype_bytes
        return dtype_bytes(self.kv_dtype)

    def kv_per_token(self, length: int | None = None) -> float:
        length = length or self.max_model_len
        # The draft's "kv_cache_dtype":"auto": its own dtype (BF16), whatever the target's.
        draft = self.drafter.per_token(self.drafter.model_dtype_bytes, length)
        return self.target.per_token(self.kv_bytes, length) + draft

    def kv_cache(self, sequences: int, length: int | None = None) -> float:
        length = length or self.max_model_len
        return self.kv_per_token(length) * length * sequences

    @property
    def j0_history(self) -> int:
        return self.max_num_seqs * self.max_model_len * 4

    @property
    def fixed(self) -> float:
        """Everything but the KV cache."""
        return self.weights.bytes + self.drafter_weights.bytes + OVERHEAD_BYTES + self.j0_history

    def longest_context(self, budget: float, sequences: int) -> int:
        """The longest max_model_len whose KV cache for `sequences` fits in `budget`."""
        room = budget - self.weights.bytes - self.drafter_weights.bytes - OVERHEAD_BYTES
        per_token = self.kv_per_token() * sequences + self.max_num_seqs * 4
        return max(0, int(room // per_token)) if per_token else 0

    def summary(self) -> str:
        assumed = [a.source for a in (self.target, self.drafter) if a.source.startswith("an ")]
        layout = f"; KV layout: {'; '.join(assumed)}" if assumed else ""
        return (
            f"target weights {gib(self.weights.bytes)} ({self.weights.source}), drafter "
            f"{gib(self.drafter_weights.bytes)} ({self.drafter_weights.source}), KV cache "
            f"{gib(self.kv_cache(self.max_num_seqs))} for {self.max_num_seqs} x "
            f"{self.max_model_len} tokens ({self.max_len_source}; {self.kv_per_token() / 1024:.0f}"
            f" KiB/token, {self.kv_dtype or 'auto'}), J0 history {gib(self.j0_history)}, "
            f"{gib(OVERHEAD_BYTES)} allowance for activations and CUDA graphs{layout}"
        )


def gib(value: float) -> str:
    """Bytes for a reader: GiB with one decimal, MiB below 1 GiB."""
    if abs(value) < 10 * (1 << 20):
        return f"{value / (1 << 20):.1f} MiB"
    if abs(value) < GIB:
        return f"{value / (1 << 20):.0f} MiB"
    return f"{value / GIB:.1f} GiB"


def max_model_len(setting: str, attention: Attention) -> tuple[int, str]:
    """MAX_MODEL_LEN as vLLM reads it: `auto` (or -1) is the model's own length (then shortened
    to what fits, vLLM 0.33's auto-fit); a number, with vLLM's k/K suffixes, is that length."""
    text = setting.strip() or "auto"
    if text in ("auto", "-1"):
        return attention.max_len, f"MAX_MODEL_LEN=auto: the model's {attention.max_len}"
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text)
    if match is None:
        raise ValueError(f"MAX_MODEL_LEN={setting!r}: expected auto or a number of tokens")
    number, unit = match.groups()
    scale = {"": 1, "k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2}[unit]
    return int(float(number) * scale), f"MAX_MODEL_LEN={setting}"
