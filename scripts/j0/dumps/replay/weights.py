"""Single tensors from a model folder's safetensors, found by name through the index, never the
whole model: the target's `embed_tokens` and `lm_head` for the reference drafter.

torch and safetensors are imported inside the functions (keeps `j0 --help` fast).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from j0.errors import INPUT_LACKS, J0Error, read_json_file

if TYPE_CHECKING:
    import torch

INDEX_NAME = "model.safetensors.index.json"

# Where the input embedding and the output head sit in a target's checkpoint, most usual first
# (dense Qwen3; multimodal wrappers that keep the language model one level down).
EMBED_NAMES = (
    "model.embed_tokens.weight",
    "model.language_model.embed_tokens.weight",
    "language_model.model.embed_tokens.weight",
    "embed_tokens.weight",
)
LM_HEAD_NAMES = (
    "lm_head.weight",
    "model.lm_head.weight",
    "language_model.lm_head.weight",
)


@dataclass(frozen=True)
class TensorIndex:
    """Which safetensors file of `folder` holds each tensor name."""

    folder: Path
    files: dict[str, Path]

    def find(self, candidates: tuple[str, ...], suffix: str) -> str | None:
        """The first of `candidates` present, else the one name ending with `suffix` (an MTP
        head's copy, `mtp.*`, is not the target's); None when absent, an error when ambiguous."""
        for name in candidates:
            if name in self.files:
                return name
        matches = sorted(
            n for n in self.files if n.endswith(suffix) and not n.startswith(("mtp.", "model.mtp."))
        )
        if len(matches) > 1:
            raise J0Error(
                f"{self.folder}: several tensors end with {suffix!r} ({', '.join(matches[:6])}); "
                "cannot tell which one is the target's",
                INPUT_LACKS,
            )
        return matches[0] if matches else None

    def read(self, name: str) -> torch.Tensor:
        """One tensor, read alone from its file (safetensors reads only that tensor's bytes)."""
        from safetensors import safe_open

        path = self.files[name]
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            return handle.get_tensor(name)


def tensor_index(folder: Path) -> TensorIndex:
    """The tensor -> file map: from `model.safetensors.index.json`'s weight_map where there is one,
    else from the headers of the folder's `*.safetensors` files."""
    if not folder.is_dir():
        raise J0Error(f"{folder}: not a folder (expected a model folder with safetensors)", 2)
    index_path = folder / INDEX_NAME
    if index_path.is_file():
        index = read_json_file(index_path)  # bounded; a J0Error (exit 2) naming it
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict):
            raise J0Error(
                f"{index_path}: not a safetensors index with a weight_map object", INPUT_LACKS
            )
        files = {name: folder / file for name, file in weight_map.items()}
        for path in sorted(set(files.values())):
            if not path.is_file():
                raise J0Error(f"{index_path}: names {path.name}, which is not in {folder}", 2)
        return TensorIndex(folder, files)
    from safetensors import safe_open

    shards = sorted(folder.glob("*.safetensors"))
    if not shards:
        raise J0Error(
            f"{folder}: no {INDEX_NAME} and no *.safetensors file (expected the model's "
            "weights in safetensors format)",
            INPUT_LACKS,
        )
    files: dict[str, Path] = {}
    for path in shards:
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            files.update(dict.fromkeys(handle.keys(), path))
    return TensorIndex(folder, files)


def read_config(folder: Path) -> dict[str, object]:
    path = folder / "config.json"
    if not os.path.lexists(path):
        raise J0Error(f"{path}: missing (expected the model's config.json)", INPUT_LACKS)
    config = read_json_file(path)  # a regular file under its limit, JSON, bounded
    if not isinstance(config, dict):
        raise J0Error(f"{path}: expected a JSON object, found {type(config).__name__}", 2)
    return config


def _tied(config: dict[str, object]) -> bool:
    text = config.get("text_config")
    if "tie_word_embeddings" in config:
        return bool(config["tie_word_embeddings"])
    if isinstance(text, dict) and "tie_word_embeddings" in text:
        return bool(text["tie_word_embeddings"])
    return False  # Qwen3Config's default


@dataclass
class TargetHeads:
    """The target's input embedding and output head, and where they came from."""

    embed: torch.Tensor
    lm_head: torch.Tensor
    embed_source: str
    lm_head_source: str


def read_target_heads(target: Path) -> TargetHeads:
    """`embed_tokens` and `lm_head` read alone from the target's safetensors; a target with tied
    word embeddings and no `lm_head` tensor uses `embed_tokens` for both, as vLLM does."""
    config = read_config(target)
    index = tensor_index(target)
    embed_name = index.find(EMBED_NAMES, ".embed_tokens.weight")
    if embed_name is None:
        raise J0Error(
            f"{target}: no embed_tokens tensor in the safetensors (looked for "
            f"{', '.join(EMBED_NAMES)} and any name ending with .embed_tokens.weight)",
            INPUT_LACKS,
        )
    embed = index.read(embed_name)
    head_name = index.find(LM_HEAD_NAMES, ".lm_head.weight")
    if head_name is None:
        if not _tied(config):
            raise J0Error(
                f"{target}: no lm_head tensor in the safetensors and config.json does not tie "
                "the word embeddings (tie_word_embeddings is not true)",
                INPUT_LACKS,
            )
        lm_head, head_source = embed, f"{embed_name} (tie_word_embeddings)"
    else:
        lm_head, head_source = (
            index.read(head_name),
            f"{head_name} in {index.files[head_name].name}",
        )
    if embed.dim() != 2 or lm_head.dim() != 2 or embed.shape[1] != lm_head.shape[1]:
        raise J0Error(
            f"{target}: embed_tokens {tuple(embed.shape)} and lm_head {tuple(lm_head.shape)} "
            "are not two [vocab, hidden] matrices of one hidden size",
            INPUT_LACKS,
        )
    return TargetHeads(
        embed, lm_head, f"{embed_name} in {index.files[embed_name].name}", head_source
    )
