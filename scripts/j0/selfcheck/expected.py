"""What `prepare_dflash_inputs` must write for one simulated step, J0 on and off, built on the
J0 draws of j0.reference.draws and written from vLLM's documented DFlash layout, never by calling
a kernel.

The DFlash layout (vLLM's docstrings in speculator.py): each request gets 1 + num_spec query rows
at positions anchor_pos + k (clamped to max_model_len - 1), the context rows carry the target's
positions (rejected rows: position 0 and no KV slot), the samples are the rows k > 0, and every
per-request buffer is padded to max_num_seqs.

The token at index i of a request is taken from the simulated request's own token sequence
(batches.Request.committed), and the modelled history must agree with it: that is checked here
too, so a fault in this reference shows as an internal error rather than as a verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from j0.reference.draws import Draw, anchor_position, draws
from j0.selfcheck.batches import BatchStep, Case

if TYPE_CHECKING:
    import numpy as np

PAD_SLOT_ID = -1  # vLLM's marker for "no KV-cache slot"


class ReferenceError(AssertionError):
    """The reference contradicts itself: a bug in j0, not in the file under test."""


def update_history(history: np.ndarray, case: Case, step: BatchStep) -> np.ndarray:
    """The history after a step: accepted tokens at their positions, then the anchor."""
    new = history.copy()
    for req in step.requests:
        accepted = req.num_tokens - req.num_rejected
        positions = req.start_pos + _arange(accepted)
        keep = positions < case.max_model_len
        new[req.req_state_idx, positions[keep]] = req.tokens[:accepted][keep]
        apos = anchor_position(req.start_pos, req.num_tokens, req.num_rejected)
        if apos < case.max_model_len:
            new[req.req_state_idx, apos] = req.anchor
        # The history must now hold exactly the request's committed tokens.
        committed = req.committed
        if apos + 1 != len(committed):
            raise ReferenceError(
                f"case {case.index}: slot {req.req_state_idx}: anchor at {apos} but "
                f"{len(committed)} committed tokens"
            )
        if not (new[req.req_state_idx, : len(committed)] == committed).all():
            raise ReferenceError(
                f"case {case.index}: slot {req.req_state_idx}: history != committed tokens"
            )
    return new


def _arange(n: int) -> np.ndarray:
    import numpy as np

    return np.arange(n, dtype=np.int64)


def _slot(block_table_row: np.ndarray, pos: int, block_size: int) -> int:
    """The KV-cache slot of a position: block id * block_size + offset; PAD for the null block."""
    block_no = min(pos // block_size, len(block_table_row) - 1)
    block_id = int(block_table_row[block_no])
    if block_id == 0:
        return PAD_SLOT_ID
    return block_id * block_size + pos % block_size


def expected_outputs(
    case: Case,
    step: BatchStep,
    before: dict[str, np.ndarray],
    seed: int,
    j0: bool,
) -> tuple[dict[str, np.ndarray], dict[tuple[int, int], Draw]]:
    """Every output buffer after the call, starting from `before` (the buffers' garbage).

    Returns the buffers and, with J0 on, the draw behind each (request, slot k > 0).
    """
    out = {name: buf.copy() for name, buf in before.items()}
    nq = case.num_query_per_req
    spec = case.num_spec
    mml = case.max_model_len
    n = step.num_reqs
    used: dict[tuple[int, int], Draw] = {}
    ctx_start = 0
    for i, req in enumerate(step.requests):
        s = req.req_state_idx
        apos = anchor_position(req.start_pos, req.num_tokens, req.num_rejected)
        valid = req.num_tokens - req.num_rejected
        row = step.block_table[i]
        # Context rows: the target's positions and slots; rejected rows get 0 and PAD.
        for j in range(req.num_tokens):
            pos = req.start_pos + j
            if j < valid:
                out["context_positions"][ctx_start + j] = pos
                out["context_slot_mapping"][ctx_start + j] = _slot(row, pos, case.block_size)
            else:
                out["context_positions"][ctx_start + j] = 0
                out["context_slot_mapping"][ctx_start + j] = PAD_SLOT_ID
        ctx_start += req.num_tokens
        # Query rows.
        request_draws = draws(seed, s, spec, len(req.committed)) if j0 else []
        for k in range(nq):
            q = i * nq + k
            pos = apos + k
            if k == 0:
                token = req.anchor
            elif j0:
                draw = request_draws[k - 1]
                token = int(req.committed[draw.index])
                used[(i, k)] = draw
            else:
                token = case.mask_token
            out["input_ids"][q] = token
            out["positions"][q] = min(pos, mml - 1)
            out["is_padding"][q] = False
            out["query_slot_mapping"][q] = _slot(row, pos, case.block_size)
            if k > 0:
                sidx = i * spec + (k - 1)
                out["sample_indices"][sidx] = q
                out["sample_pos"][sidx] = pos
                out["sample_idx_mapping"][sidx] = s
        out["query_start_loc"][i] = i * nq
        out["seq_lens"][i] = min(apos + nq, mml)
        out["temperature"][s] = step.temperature[s]
        out["seeds"][s] = step.seeds[s]
    # Padding up to max_num_seqs / max_num_tokens (CUDA-graph safety).
    out["query_start_loc"][n:] = n * nq
    out["seq_lens"][n:] = 0
    out["sample_indices"][n * spec :] = 0
    out["sample_pos"][n * spec :] = 0
    out["sample_idx_mapping"][n * spec :] = -1
    out["input_ids"][n * nq :] = 0
    out["positions"][n * nq :] = 0
    out["is_padding"][n * nq :] = True
    out["query_slot_mapping"][n * nq :] = PAD_SLOT_ID
    return out, used
