"""The battery of `j0 selfcheck`: simulated serving sessions, cut into the batches that vLLM's
DFlash speculator hands to `prepare_dflash_inputs`, one batch per draft step.

Each case is a short session of a few requests that live in a few of `max_num_seqs` request
slots (batch order differs from slot order; slots are reused after a request finishes). Every
request keeps its true token sequence, so the reference can name "the committed token at index
i" without looking at any kernel's history. A step schedules some requests:

* a prefill chunk: the next `n` prompt tokens; a chunk that does not finish the prompt has no
  sampled token and its anchor is the next prompt token (`next_prefill_tokens`); the last chunk
  samples the first output token, the anchor;
* a decode step: the anchor of the previous step plus `d` draft tokens (0 <= d <= the number of
  speculative tokens), of which `num_rejected` are rejected; the target's sample at the first
  rejected slot (or after the last draft) becomes the new anchor (`last_sampled`).

Contexts range from a single prompt token to anchors at `max_model_len - 1`, and requests run for
several steps so that the history carries over between calls. Everything is NumPy and derives
from `(seed, case index)` alone, so one case can be replayed on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

VOCAB = 151_000  # token ids are drawn from [1, VOCAB)
PREFILL_CHUNK = "prefill-chunk"  # a chunk that does not end the prompt: anchor = next prompt token
PREFILL_LAST = "prefill-last"  # the chunk that ends the prompt: anchor = first sampled token
DECODE = "decode"  # anchor + drafts, some rejected: anchor = the target's new sample


@dataclass(frozen=True)
class BatchRow:
    """One request's part of one step (one row of the batch)."""

    req_state_idx: int  # the request slot (row of the history)
    kind: str
    start_pos: int  # position of the first target token of this step
    tokens: Any  # np.ndarray[int32]: the target's input ids for this request in this step
    num_rejected: int
    num_sampled: int
    anchor: int  # the token vLLM puts at the anchor position (bonus or next prefill token)
    committed: Any  # np.ndarray[int32]: every committed token of the request, anchor included

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class BatchStep:
    """One call of prepare_dflash_inputs: the batch and every per-slot input array."""

    requests: tuple[BatchRow, ...]
    last_sampled: Any  # np.ndarray[int64] [max_num_seqs]; garbage where no request samples
    next_prefill: Any  # np.ndarray[int32] [max_num_seqs]; garbage where unused
    temperature: Any  # np.ndarray[float32] [max_num_seqs]
    seeds: Any  # np.ndarray[int64] [max_num_seqs]
    block_table: Any  # np.ndarray[int32] [max_num_seqs, max_blocks], rows in batch order
    pad_tokens: int  # padded target tokens after the batch's real ones (garbage ids)
    pad_ids: Any  # np.ndarray[int32] [pad_tokens]

    @property
    def num_reqs(self) -> int:
        return len(self.requests)

    @property
    def num_tokens(self) -> int:
        return sum(r.num_tokens for r in self.requests)


@dataclass(frozen=True)
class Case:
    """A session: fixed sizes, the steps, and the garbage the buffers start with."""

    index: int
    seed: int
    max_num_seqs: int
    num_spec: int  # draft tokens per step (7 or 15): num_query_per_req = num_spec + 1
    max_model_len: int
    block_size: int
    max_num_tokens: int
    pool_pad: int  # extra columns per history row (0: contiguous, as vLLM allocates it)
    mask_token: int  # parallel_drafting_token_id
    chunk_cap: int  # the longest prefill chunk
    steps: tuple[BatchStep, ...] = field(default_factory=tuple)

    @property
    def num_query_per_req(self) -> int:
        return self.num_spec + 1

    @property
    def max_blocks(self) -> int:
        return -(-self.max_model_len // self.block_size)

    @property
    def pool_pitch(self) -> int:
        return self.max_model_len + self.pool_pad

    def describe(self) -> str:
        kinds: dict[str, int] = {}
        for step in self.steps:
            for req in step.requests:
                kinds[req.kind] = kinds.get(req.kind, 0) + 1
        parts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        return (
            f"case {self.index}: max_num_seqs={self.max_num_seqs} num_spec={self.num_spec} "
            f"max_model_len={self.max_model_len} block_size={self.block_size} "
            f"pool_pad={self.pool_pad} steps={len(self.steps)} ({parts})"
        )


def rng_for(seed: int, case_index: int, stream: int = 0) -> np.random.Generator:
    import numpy as np

    return np.random.default_rng([seed, case_index, stream])


def initial_pool(case: Case) -> np.ndarray:
    """The history storage before the first step: one guard row above and below the
    [max_num_seqs, max_model_len] pool, pool_pad extra columns, all random tokens (not zeros,
    so that reading a never-written entry shows)."""
    import numpy as np

    rng = rng_for(case.seed, case.index, 1)
    shape = (case.max_num_seqs + 2, case.pool_pitch)
    return rng.integers(1, VOCAB, size=shape, dtype=np.int64).astype(np.int32)


def pool_view(storage: Any, case: Case) -> Any:
    """The [max_num_seqs, max_model_len] pool inside the storage (NumPy array or torch tensor)."""
    return storage[1 : 1 + case.max_num_seqs, : case.max_model_len]


OUTPUT_SPECS: dict[str, tuple[str, str]] = {
    # name: (dtype, size) where size is "tokens" (max_num_tokens), "reqs" (max_num_seqs),
    # "reqs+1" or "samples" (max_num_seqs * num_spec); dtypes as vLLM allocates them.
    "input_ids": ("int32", "tokens"),
    "positions": ("int64", "tokens"),
    "is_padding": ("bool", "tokens"),
    "query_start_loc": ("int32", "reqs+1"),
    "seq_lens": ("int32", "reqs"),
    "query_slot_mapping": ("int64", "tokens"),
    "context_positions": ("int64", "tokens"),
    "context_slot_mapping": ("int64", "tokens"),
    "sample_indices": ("int64", "samples"),
    "sample_pos": ("int64", "samples"),
    "sample_idx_mapping": ("int64", "samples"),
    "temperature": ("float32", "reqs"),
    "seeds": ("int64", "reqs"),
}


def initial_outputs(case: Case, step_no: int) -> dict[str, np.ndarray]:
    """Every output buffer before a step, filled with garbage so unwritten entries show."""
    import numpy as np

    rng = rng_for(case.seed, case.index, 1000 + step_no)
    sizes = {
        "tokens": case.max_num_tokens,
        "reqs": case.max_num_seqs,
        "reqs+1": case.max_num_seqs + 1,
        "samples": case.max_num_seqs * case.num_spec,
    }
    out: dict[str, np.ndarray] = {}
    for name, (dtype, size) in OUTPUT_SPECS.items():
        n = sizes[size]
        if dtype == "bool":
            out[name] = rng.integers(0, 2, size=n).astype(bool)
        elif dtype == "float32":
            out[name] = rng.uniform(-9.0, -1.0, size=n).astype(np.float32)
        else:
            out[name] = rng.integers(-(2**20), 2**20, size=n).astype(dtype)
    return out


@dataclass
class _Live:
    """A request during the simulation."""

    slot: int
    prompt: Any  # np.ndarray[int32]
    seq: list[int]  # committed tokens so far (prompt tokens computed + generated, anchor last)
    computed: int  # tokens the target has processed (= position of the next target token)
    finished: bool = False

    @property
    def prefilling(self) -> bool:
        return self.computed < len(self.prompt)


THEMES = ("mixed", "short", "long", "decode")


@dataclass(frozen=True)
class _Theme:
    """What a case stresses; case i has theme THEMES[i % 4]."""

    max_num_seqs: tuple[int, ...]
    max_model_len: tuple[int, ...]
    chunk_cap: tuple[int, ...]
    prompt_mix: tuple[float, float]  # chances of a few-token and of a medium prompt; rest long
    pool_pad: tuple[int, ...]  # 0 = contiguous; n > 0 = n extra columns (then 1..n at random)
    finish_chance: float


_THEMES = {
    # a bit of everything
    "mixed": _Theme(
        (1, 2, 3, 4, 5, 8), (48, 100, 256, 640), (32, 128), (0.4, 0.4), (0, 0, 8), 0.15
    ),
    # a few committed tokens: r mod L is small; query positions run past max_model_len
    "short": _Theme((2, 3, 4), (12, 20, 32), (2, 4, 8), (1.0, 0.0), (0, 3), 0.1),
    # contexts near max_model_len, reached in big prefill chunks; a padded history row pitch
    "long": _Theme((2, 3, 4), (1024, 1500, 2048), (400, 512), (0.1, 0.1), (8, 8, 0), 0.05),
    # many requests in high request slots, decode steps with 0..N rejected
    "decode": _Theme((8, 12, 16), (64, 200, 400), (64, 256), (0.4, 0.6), (0, 0, 5), 0.2),
}


def _prompt_len(rng: np.random.Generator, theme: _Theme, max_model_len: int) -> int:
    roll = rng.random()
    few, medium = theme.prompt_mix
    if roll < few:
        n = int(rng.integers(1, 9))  # a few tokens: r mod L is small
    elif roll < few + medium:
        n = int(rng.integers(9, max(10, max_model_len // 2)))
    else:
        n = max_model_len - int(rng.integers(1, 48))  # near max_model_len
    return max(1, min(n, max_model_len - 1))


def _pick_slot(rng: np.random.Generator, free: list[int]) -> int:
    nonzero = [s for s in free if s != 0]
    if nonzero and rng.random() < 0.9:
        return int(rng.choice(nonzero))
    return int(rng.choice(free))


def make_case(seed: int, index: int) -> Case:
    """The case `index` of the battery drawn from `seed`."""
    import numpy as np

    rng = rng_for(seed, index)
    theme = _THEMES[THEMES[index % len(THEMES)]]
    max_num_seqs = int(rng.choice(theme.max_num_seqs))
    num_spec = int(rng.choice([7, 15]))
    max_model_len = int(rng.choice(theme.max_model_len))
    block_size = int(rng.choice([16, 32, 64]))
    chunk_cap = int(rng.choice(theme.chunk_cap))
    pad = int(rng.choice(theme.pool_pad))
    nq = num_spec + 1
    # The scheduler's token budget: a chunk plus a decode step for every other request.
    budget = chunk_cap + nq * max_num_seqs
    max_num_tokens = budget + int(rng.integers(0, 24))
    case = Case(
        index=index,
        seed=seed,
        max_num_seqs=max_num_seqs,
        num_spec=num_spec,
        max_model_len=max_model_len,
        block_size=block_size,
        max_num_tokens=max_num_tokens,
        pool_pad=int(rng.integers(1, pad + 1)) if pad else 0,
        mask_token=int(rng.integers(VOCAB, VOCAB + 5000)),
        chunk_cap=chunk_cap,
    )
    steps = []
    live: list[_Live] = []
    free = list(range(max_num_seqs))
    num_steps = int(rng.integers(3, 10))
    for _ in range(num_steps):
        # Admit new requests into free slots.
        while free and (not live or rng.random() < 0.5):
            slot = _pick_slot(rng, free)
            free.remove(slot)
            n = _prompt_len(rng, theme, max_model_len)
            prompt = rng.integers(1, VOCAB, size=n, dtype=np.int64).astype(np.int32)
            live.append(_Live(slot=slot, prompt=prompt, seq=[], computed=0))
        order = [int(i) for i in rng.permutation(len(live))]
        count = int(rng.integers(1, len(live) + 1))
        chosen = [live[i] for i in order[:count]]
        step = _make_step(rng, case, chosen, budget)
        steps.append(step)
        for req in list(live):
            at_end = not req.prefilling and len(req.seq) >= max_model_len
            if at_end or (not req.prefilling and rng.random() < theme.finish_chance):
                live.remove(req)
                free.append(req.slot)
    return Case(**{**case.__dict__, "steps": tuple(steps)})


def _make_step(rng: np.random.Generator, case: Case, chosen: list[_Live], budget: int) -> BatchStep:
    import numpy as np

    n_slots = case.max_num_seqs
    last_sampled = rng.integers(1, VOCAB, size=n_slots, dtype=np.int64)
    next_prefill = rng.integers(1, VOCAB, size=n_slots, dtype=np.int64).astype(np.int32)
    requests: list[BatchRow] = []
    left = budget
    for req in chosen:
        if left <= 0:
            break
        if req.prefilling:
            part = _prefill(rng, case, req, left, last_sampled, next_prefill)
        else:
            part = _decode(rng, case, req, left, last_sampled)
        if part is None:
            continue
        requests.append(part)
        left -= part.num_tokens
    if not requests:  # every chosen request was at the end: schedule nothing new, retry one
        raise RuntimeError("battery generator scheduled an empty step")
    pad = int(rng.choice([0, 0, int(rng.integers(1, 8))]))
    blocks = rng.integers(1, 60_000, size=(n_slots, case.max_blocks), dtype=np.int64)
    blocks[rng.random(blocks.shape) < 0.05] = 0  # null blocks (evicted sliding-window entries)
    return BatchStep(
        requests=tuple(requests),
        last_sampled=last_sampled,
        next_prefill=next_prefill,
        temperature=rng.uniform(0.0, 2.0, size=n_slots).astype(np.float32),
        seeds=rng.integers(0, 2**40, size=n_slots, dtype=np.int64),
        block_table=blocks.astype(np.int32),
        pad_tokens=pad,
        pad_ids=rng.integers(1, VOCAB, size=pad, dtype=np.int64).astype(np.int32),
    )


def _prefill(
    rng: np.random.Generator,
    case: Case,
    req: _Live,
    left: int,
    last_sampled: np.ndarray,
    next_prefill: np.ndarray,
) -> BatchRow:
    import numpy as np

    remaining = len(req.prompt) - req.computed
    cap = max(1, min(remaining, case.chunk_cap, left - 1))
    if rng.random() < 0.6:
        n = cap  # finish the prompt if the budget allows
    else:
        n = int(rng.integers(1, cap + 1))
    start = req.computed
    tokens = req.prompt[start : start + n].copy()
    req.seq.extend(int(t) for t in tokens)
    req.computed = start + n
    if req.computed < len(req.prompt):
        kind, num_sampled = PREFILL_CHUNK, 0
        anchor = int(req.prompt[req.computed])
        next_prefill[req.slot] = anchor
    else:
        kind, num_sampled = PREFILL_LAST, 1
        anchor = int(rng.integers(1, VOCAB))
        last_sampled[req.slot] = anchor
    committed = np.asarray([*req.seq, anchor], dtype=np.int32)
    if kind == PREFILL_LAST:
        req.seq.append(anchor)
    return BatchRow(
        req_state_idx=req.slot,
        kind=kind,
        start_pos=start,
        tokens=tokens,
        num_rejected=0,
        num_sampled=num_sampled,
        anchor=anchor,
        committed=committed,
    )


def _decode(
    rng: np.random.Generator, case: Case, req: _Live, left: int, last_sampled: np.ndarray
) -> BatchRow | None:
    import numpy as np

    anchor_pos = len(req.seq) - 1  # the previous step's anchor, now the target's first input
    room = case.max_model_len - 1 - anchor_pos  # target positions must stay < max_model_len
    if room < 1 or left < 1:
        return None  # the request is at max_model_len: nothing more to decode
    d_max = min(case.num_spec, room, left - 1)
    roll = rng.random()
    d = d_max if roll < 0.7 else int(rng.integers(0, d_max + 1))
    drafts = rng.integers(1, VOCAB, size=d, dtype=np.int64).astype(np.int32)
    # The new anchor lands at anchor_pos + accepted + 1 and must stay < max_model_len.
    min_rej = max(0, d - (case.max_model_len - 2 - anchor_pos))
    roll = rng.random()
    if roll < 0.25:
        rej = min_rej
    elif roll < 0.45:
        rej = d
    else:
        rej = int(rng.integers(min_rej, d + 1))
    accepted = d - rej
    tokens = np.concatenate([[req.seq[-1]], drafts]).astype(np.int32)
    req.seq.extend(int(t) for t in drafts[:accepted])
    anchor = int(rng.integers(1, VOCAB))
    req.seq.append(anchor)
    req.computed = anchor_pos + accepted + 1
    last_sampled[req.slot] = anchor
    return BatchRow(
        req_state_idx=req.slot,
        kind=DECODE,
        start_pos=anchor_pos,
        tokens=tokens,
        num_rejected=rej,
        num_sampled=accepted + 1,
        anchor=anchor,
        committed=np.asarray(req.seq, dtype=np.int32),
    )


def battery(seed: int, cases: int) -> list[Case]:
    return [make_case(seed, i) for i in range(cases)]
