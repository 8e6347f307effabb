"""How the vLLM stand-in reads a prompt: whitespace-separated words as tokens, a Qwen3-like chat
template (with `enable_thinking` off, an empty think block), and vLLM's prefix cache over full
16-token blocks (at most len - 1 tokens count as cached: vLLM computes the last token). Part of
vllm/server.py, our vLLM 0.33 stand-in on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from .records import BLOCK_SIZE


def tokenize(text: str) -> list[str]:
    return text.split()


def chat_tokens(messages: list[dict[str, Any]], enable_thinking: bool) -> list[str]:
    """A Qwen3-like chat template over whitespace tokens."""
    tokens: list[str] = []
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        tokens += ["<|im_start|>", str(message.get("role", "user")), "\\n"]
        tokens += tokenize(str(content))
        tokens += ["<|im_end|>", "\\n"]
    tokens += ["<|im_start|>", "assistant", "\\n"]
    if not enable_thinking:
        tokens += ["<think>", "\\n\\n", "</think>", "\\n\\n"]
    return tokens


class PrefixCache:
    """The hashes of the full blocks of every prompt seen (none where caching is off)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._blocks: set[bytes] = set()
        self._lock = threading.Lock()

    def cached_tokens_for(self, tokens: list[str]) -> int:
        """Full blocks already seen (at most len - 1 tokens), then remember this prompt's."""
        if not self.enabled:
            return 0
        hashes = []
        digest = b""
        for start in range(0, len(tokens) - BLOCK_SIZE + 1, BLOCK_SIZE):
            block = "\x00".join(tokens[start : start + BLOCK_SIZE]).encode()
            digest = hashlib.sha256(digest + block).digest()
            hashes.append(digest)
        with self._lock:
            hits = 0
            for h in hashes:
                if h not in self._blocks:
                    break
                hits += 1
            self._blocks.update(hashes)
        cached = hits * BLOCK_SIZE
        limit = ((len(tokens) - 1) // BLOCK_SIZE) * BLOCK_SIZE
        return min(cached, limit)
