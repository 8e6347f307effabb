"""An independent reference of what `prepare_dflash_inputs` must write, J0 on and off.

Written from the seed's prose and vLLM's documented DFlash layout, never by calling a kernel:

J0 (the seed, "VLLM_DFLASH_CTX_NOISE=1"):
* slot 0 of each request's query block stays the anchor: the bonus token when the step sampled
  (num_sampled > 0), else the next prefill token (chunked prefill);
* slot k > 0 takes the committed token at index r mod L, where L is the number of committed
  tokens including the anchor and r = tl.randint(J0_SEED, req_state_idx * 64 + k) as uint32
  (Philox, j0.reference.philox);
* a [max_num_seqs, max_model_len] int32 history holds the committed tokens: each step writes its
  accepted (not rejected) target tokens at their positions and the anchor after them, before the
  draw; nothing else is written, and the history persists across steps.
With J0 off, slots k > 0 hold the mask token (parallel_drafting_token_id) and no history exists.

The simulated kernel outputs built on these draws (the DFlash layout) are in
j0.selfcheck.expected; `j0 dumps check` reads real dumps against the same draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from j0.reference import philox

if TYPE_CHECKING:
    import numpy as np

OFFSET_STRIDE = 64  # J0's Philox offset is req_state_idx * 64 + k


@dataclass(frozen=True)
class Draw:
    """How the reference filled one query slot k > 0 with J0 on."""

    r: int  # the Philox draw
    committed: int  # L
    index: int  # r mod L


def anchor_position(start_pos: int, num_tokens: int, num_rejected: int) -> int:
    """The anchor sits right after the last accepted target token (start + accepted - 1)."""
    return start_pos + (num_tokens - num_rejected)


def draws(seed: int, req_state_idx: int, num_spec: int, committed: int) -> list[Draw]:
    """The J0 draws for slots 1..num_spec of one request."""
    import numpy as np

    ks = np.arange(1, num_spec + 1, dtype=np.int64)
    offsets = (req_state_idx * OFFSET_STRIDE + ks).astype(np.uint32)
    r = philox.randint(seed, offsets)
    return [Draw(int(x), committed, int(x) % committed) for x in r]


def draw_table(seed: int, num_spec: int, max_slots: int) -> np.ndarray:
    """r[s, k-1] = tl.randint(seed, s * 64 + k) as uint32, for slots 0..max_slots-1, as int64."""
    import numpy as np

    slots = np.arange(max_slots, dtype=np.int64)[:, None]
    ks = np.arange(1, num_spec + 1, dtype=np.int64)[None, :]
    offsets = (slots * OFFSET_STRIDE + ks).astype(np.uint32)
    return philox.randint(seed, offsets).astype(np.int64)
