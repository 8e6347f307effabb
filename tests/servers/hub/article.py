"""The Hub stand-in's built-in repo: a JetSpec++-like drafter (config, two safetensors shards,
tokenizer and training files) over five commits, one of them starting with 3147a351 (the
article's) and two sharing the prefix 5eed1234. Part of hub/server.py, our Hugging Face Hub
stand-in on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
from typing import Any

from .repo import FakeCommit, FakeRepo

DEFAULT_REPO_ID = "JetSpec/jetspec-plus-plus-qwen3p8-27b"
MiB = 1 << 20


def fake_commit_id(prefix: str, seed: str) -> str:
    return prefix + hashlib.sha1(seed.encode()).hexdigest()[: 40 - len(prefix)]


def safetensors_bytes(name: str, size: int, seed: int) -> bytes:
    """A valid safetensors file holding one uint8 tensor of `size` random bytes."""
    header = {
        "__metadata__": {"format": "pt"},
        name: {"dtype": "U8", "shape": [size], "data_offsets": [0, size]},
    }
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + random.Random(seed).randbytes(size)


DRAFTER_CONFIG: dict[str, Any] = {
    "architectures": ["DFlashDraftModel"],
    "model_type": "qwen3",
    "block_size": 16,
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "num_hidden_layers": 5,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
    "dflash_config": {
        "mask_token_id": 151669,
        "target_layer_ids": [1, 16, 31, 46, 61],
        "causal_head": True,
    },
}


def article_repo(repo_id: str = DEFAULT_REPO_ID, weight_mb: float = 12.0) -> FakeRepo:
    """A drafter repo whose commit 3147a351… holds two weight shards (the first `weight_mb` MiB,
    big enough for huggingface_hub's 10 MiB download chunks to be resumed with a Range request)."""
    big = int(weight_mb * MiB)
    shard1 = safetensors_bytes("layers.0.weight", big, seed=1)
    shard2 = safetensors_bytes("layers.1.weight", 4096, seed=2)
    index = {
        "metadata": {"total_size": big + 4096},
        "weight_map": {
            "layers.0.weight": "model-00001-of-00002.safetensors",
            "layers.1.weight": "model-00002-of-00002.safetensors",
        },
    }
    config = (json.dumps(DRAFTER_CONFIG, indent=2) + "\n").encode()
    readme = b"# JetSpec++ drafter for Qwen3.8-27B (test fixture)\n"
    article_files = {
        ".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": readme,
        "config.json": config,
        "model-00001-of-00002.safetensors": shard1,
        "model-00002-of-00002.safetensors": shard2,
        "model.safetensors.index.json": (json.dumps(index, indent=2) + "\n").encode(),
        "tokenizer.json": b'{"version": "1.0"}\n',
        "training_args.bin": b"\x00training state\x00",
        "runs/events.txt": b"step 1 loss 2.0\n",
    }
    first = FakeCommit(
        fake_commit_id("", "initial"),
        "initial commit",
        "2026-09-01T10:00:00.000Z",
        None,
        {".gitattributes": article_files[".gitattributes"]},
    )
    article = FakeCommit(
        fake_commit_id("3147a351", "article"),
        "JetSpec++ drafter weights",
        "2026-10-01T10:00:00.000Z",
        first.id,
        article_files,
    )
    later = FakeCommit(
        fake_commit_id("", "readme"),
        "Update README.md",
        "2026-10-20T10:00:00.000Z",
        article.id,
        {**article_files, "README.md": readme + b"\nNow with a longer README.\n"},
    )
    twin_a = FakeCommit(
        fake_commit_id("5eed1234", "twin-a"),
        "experiment A",
        "2026-10-05T10:00:00.000Z",
        article.id,
        article_files,
    )
    twin_b = FakeCommit(
        fake_commit_id("5eed1234", "twin-b"),
        "experiment B",
        "2026-10-06T10:00:00.000Z",
        twin_a.id,
        article_files,
    )
    commits = {c.id: c for c in (first, article, later, twin_a, twin_b)}
    return FakeRepo(
        repo_id,
        commits,
        branches={"main": later.id, "experiments": twin_b.id},
        tags={"v1.0": article.id},
    )
