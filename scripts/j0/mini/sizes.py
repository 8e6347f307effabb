"""What `j0 mini train` makes: the sizes of the tokenizer, the target and the drafters, full (the
recipe for one lent H100 or H200: one model set in about 10 minutes) and smoke (tiny, for CI on a
CPU). Standard library only.

The target trains on windows of `target_seq` tokens, at least the longest context `j0 mini run`
asks about by default (8 x `draft_seq`) plus the tokens it generates (`check_tokens`), so that no
token the run measures lies past the target's own training length (issue 54: 4096 + 256 <= 4608).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SPECIALS = ("<unk>", "<s>", "</s>", "<pad>", "<mask>")  # ids 0-4
EOS_ID = 2
MASK_ID = 4


@dataclass(frozen=True)
class Sizes:
    vocab: int
    corpus_bytes: int  # stop adding training files past this many bytes
    min_heldout_files: int
    layers: int
    hidden: int
    heads: int
    head_dim: int
    kv_heads: int
    mlp: int
    target_seq: int
    target_batch: int
    target_lr: float
    draft_layers: int
    taps: tuple[int, ...]
    block: int
    draft_seq: int
    anchors: int
    draft_batch: int
    draft_lr: float
    eval_batches: int
    budget_s: float  # default seconds per drafter (and per model where no other is given)
    target_budget_s: float  # default seconds of the target's training
    gen_budget_s: float  # default seconds at most for the drafters' generated rows
    position_bucket: int  # the target's held-out loss by position: buckets of this many tokens
    tokenizer_bytes: int  # the tokenizer learns from the first this many bytes of training text
    gen_prompt: int = 64  # --draft-data generated: prompt tokens cut from the training stream
    gen_batch: int = 4096  # rows continued at once
    gen_rows: int = 49152  # --draft-data generated: rows of the target's own text (--rows)
    held_rows: int = 256  # the target's continuations of held-out text: curves and estimates
    check_prompts: int = 128  # the temperature's choice (j0.mini.train.temperature): prompts
    check_tokens: int = 256  # and tokens continued, as many as `j0 mini run` generates

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "taps": list(self.taps)}


FULL = Sizes(
    vocab=4096,
    corpus_bytes=100_000_000,
    min_heldout_files=8,
    layers=6,
    hidden=512,
    heads=4,
    head_dim=128,
    kv_heads=2,
    mlp=1536,
    target_seq=4608,  # 4096 + 256 (the longest default context and its output) + room
    target_batch=16,  # 73,728 tokens a step
    target_lr=1e-3,
    draft_layers=2,
    taps=(1, 4),
    block=16,
    draft_seq=512,
    anchors=48,
    draft_batch=32,
    draft_lr=1e-3,
    eval_batches=8,
    budget_s=100.0,
    target_budget_s=180.0,
    gen_budget_s=80.0,
    position_bucket=512,
    tokenizer_bytes=30_000_000,
)

SMOKE = Sizes(
    vocab=512,
    corpus_bytes=120_000,
    min_heldout_files=1,
    layers=2,
    hidden=64,
    heads=2,
    head_dim=32,
    kv_heads=1,
    mlp=128,
    target_seq=576,  # 8 x 64 + 64: the smoke run's longest context and its output fit
    target_batch=2,
    target_lr=1e-3,
    draft_layers=1,
    taps=(0, 1),
    block=16,
    draft_seq=64,
    anchors=4,
    draft_batch=4,
    draft_lr=1e-3,
    eval_batches=2,
    budget_s=4.0,
    target_budget_s=4.0,
    gen_budget_s=4.0,
    position_bucket=64,
    tokenizer_bytes=120_000,
    gen_prompt=16,
    gen_batch=8,
    gen_rows=16,
    held_rows=4,
    check_prompts=4,
    check_tokens=16,
)

MIN_FILE_BYTES = 3_000
MAX_FILE_BYTES = 300_000
HELDOUT_ONE_IN = 50
