"""Make step dumps the way the patched `DFlashSpeculator.propose` makes them, with the article's
real kernels, for simulated requests (test code).

Each step runs the article's `prepare_dflash_inputs` (its file imported as vLLM's module, Triton's
interpreter on the CPU; j0.selfcheck.kernels builds the call as `propose` does) with a persistent
`[max_num_seqs, max_model_len]` int32 history (J0 on) or none (J0 off). Steps with exactly one
request are saved as `stepNNNN.pt` with the patch's keys and dtypes: `positions` and `input_ids`
are the batch's own tensors, `query_ids` / `query_positions` the kernel's output buffers, so every
J0 draw in the files is the kernel's, not ours. What the kernels do not make is simulated:

* the target: each request has a true continuation; a decode step accepts the drafts that match
  it and samples the next true token (so J0 on and off commit the same tokens: lossless);
* the drafter: proposes the true tokens for a planned number of positions, then tokens made from
  a hash of its query ids (so J0 on and off propose differently after those);
* `aux`: bf16 rows made from a hash of (token, position), so equal inputs give equal taps.

Scenarios (as vLLM schedules them; vllm/v1/core/sched/scheduler.py `_drafts_unused`: no query
pass for a non-final prefill chunk or a step that ends the request):
  main    the start-up warm-up of vllm/v1/worker/gpu/warmup.py (4 requests of range(9) batched,
          decodes of 4, 2, 2 and then 1 request; twice; dumped steps start at 12 and 13) ->
          request A in slot 2 (prompt 40 in chunks 16+16+8, decodes with 0..7 accepted, a last
          context-only step) -> request B in slot 3 (prompt of 3 tokens, decodes); 7 draft
          tokens, max_model_len 128
  prefix  15 draft tokens, max_model_len 64 (query positions clamp): request C in slot 1, then
          the same prompt again with its first 32 tokens "from the prefix cache" (never scheduled,
          so never written to the history), in the same slot
  prefix-aba  the same, with a request D of another prompt in slot 1 between C and C again

A speculator.py with the prefix-safe fill (`fill_ctx_pool_cached_prefix`, the variant's) gets it
called before each step as its `propose` calls it: the owner of each slot, the batch's request
names and computed counts, and vLLM's per-slot token store (all_token_ids), into which each
request's prompt is written when it is first scheduled (vLLM's add_request). Beside each J0-on
folder, <folder>-prompts.json holds the requests' prompt token ids, in order (what
`j0 dumps check --prompts` reads).

Run: python simulate.py --speculator FILE --out DIR  (sets TRITON_INTERPRET=1 itself only if the
caller did; the test passes j0.selfcheck.kernels.INTERPRETER_ENV). Writes DIR/<scenario>-j0-on
and DIR/<scenario>-j0-off.
"""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

VOCAB = 5000
MASK = 4999  # the drafter's mask_token_id (parallel_drafting_token_id); never a real token here
AUX_WIDTH = 2 * 32  # two target taps of hidden size 32


def _hash(*parts: Any) -> int:
    data = ",".join(str(int(p)) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "little")


@dataclass
class Req:
    name: str
    slot: int
    prompt: np.ndarray  # int32
    truth: np.ndarray  # the target's greedy continuation
    seq: list[int] = field(default_factory=list)  # committed tokens, anchor last
    computed: int = 0  # target tokens processed (position of the next one)
    drafts: np.ndarray | None = None  # the drafter's last proposals
    generated: int = 0  # tokens taken from `truth`

    @property
    def prefilling(self) -> bool:
        return self.computed < len(self.prompt)


@dataclass
class Part:
    """One request's share of a step: what make_inputs needs (batches.Request's fields)."""

    req: Req
    kind: str
    start: int
    tokens: np.ndarray
    num_rejected: int
    num_sampled: int
    anchor: int


class Engine:
    def __init__(self, module: Any, num_spec: int, max_model_len: int, j0: bool, out: Path):
        import torch

        from j0.selfcheck import batches

        self.module = module
        self.batches = batches
        self.case = batches.Case(
            index=0,
            seed=0,
            max_num_seqs=4,
            num_spec=num_spec,
            max_model_len=max_model_len,
            block_size=16,
            max_num_tokens=256,
            pool_pad=0,
            mask_token=MASK,
            chunk_cap=64,
        )
        self.j0 = j0
        self.pool = (
            torch.zeros((4, max_model_len), dtype=torch.int32) if j0 else None
        )  # the patch's self.ctx_pool
        self.last_sampled = np.zeros(4, dtype=np.int64)
        self.next_prefill = np.zeros(4, dtype=np.int32)
        self.out = out
        self.dump_count = 0
        self.calls = 0
        # vLLM's RequestState.all_token_ids and the variant's owner list (used only with a fill).
        self.all_token_ids = torch.zeros((4, max_model_len), dtype=torch.int32)
        self.owner: list[str | None] = [None] * 4
        self.admitted: list[Req] = []

    # -- the scheduler's pieces

    def prefill(self, req: Req, n: int) -> Part:
        from j0.selfcheck.batches import PREFILL_CHUNK, PREFILL_LAST

        start = req.computed
        tokens = req.prompt[start : start + n].astype(np.int32)
        req.seq = [*req.seq[:start], *(int(t) for t in tokens)]
        req.computed = start + n
        if req.prefilling:
            anchor = int(req.prompt[req.computed])
            self.next_prefill[req.slot] = anchor
            return Part(req, PREFILL_CHUNK, start, tokens, 0, 0, anchor)
        anchor = int(req.truth[0])
        req.generated = 1
        req.seq.append(anchor)
        self.last_sampled[req.slot] = anchor
        return Part(req, PREFILL_LAST, start, tokens, 0, 1, anchor)

    def decode(self, req: Req, accept: int, spec: bool = True) -> Part:
        from j0.selfcheck.batches import DECODE

        anchor_pos = len(req.seq) - 1
        room = self.case.max_model_len - 1 - anchor_pos  # target positions stay < max_model_len
        drafts = req.drafts if (spec and req.drafts is not None) else np.zeros(0, np.int64)
        drafts = drafts[: max(0, min(len(drafts), room))]
        accept = min(accept, len(drafts))
        # The drafter was told (plan) to get `accept` right; check the truth agrees.
        truth = req.truth[req.generated : req.generated + accept]
        assert (drafts[:accept] == truth).all(), "simulator: planned acceptance not drafted"
        tokens = np.concatenate([[req.seq[-1]], drafts]).astype(np.int32)
        req.seq += [int(t) for t in drafts[:accept]]
        bonus = int(req.truth[req.generated + accept])
        req.generated += accept + 1
        req.seq.append(bonus)
        req.computed = anchor_pos + accept + 1
        self.last_sampled[req.slot] = bonus
        return Part(req, DECODE, anchor_pos, tokens, len(drafts) - accept, accept + 1, bonus)

    # -- one step: the kernels, then the dump

    def run(self, parts: list[Part], query: bool = True, plan: list[int] | None = None) -> None:
        import torch

        batches = self.batches
        case = self.case
        max_blocks = case.max_blocks
        block_rows = np.stack(
            [1 + p.req.slot * max_blocks + np.arange(max_blocks) for p in parts]
            + [np.ones(max_blocks, dtype=np.int64)] * (case.max_num_seqs - len(parts))
        ).astype(np.int32)
        step = batches.BatchStep(
            requests=tuple(
                batches.BatchRow(
                    req_state_idx=p.req.slot,
                    kind=p.kind,
                    start_pos=p.start,
                    tokens=p.tokens,
                    num_rejected=p.num_rejected,
                    num_sampled=p.num_sampled,
                    anchor=p.anchor,
                    committed=np.asarray(p.req.seq, dtype=np.int32),
                )
                for p in parts
            ),
            last_sampled=self.last_sampled.copy(),
            next_prefill=self.next_prefill.copy(),
            temperature=np.zeros(case.max_num_seqs, dtype=np.float32),
            seeds=np.zeros(case.max_num_seqs, dtype=np.int64),
            block_table=block_rows,
            pad_tokens=0,
            pad_ids=np.zeros(0, dtype=np.int32),
        )
        from j0.selfcheck.kernels import call_prepare, make_inputs

        self._admit_and_fill(parts)
        inputs = make_inputs(self.module, case, step, "cpu")
        before = batches.initial_outputs(case, self.calls)
        outputs = call_prepare(self.module, case, inputs, before, "cpu", self.pool)
        self.calls += 1
        nq = case.num_query_per_req
        proposals = []
        for i, p in enumerate(parts):
            qids = outputs.bufs["input_ids"][i * nq : (i + 1) * nq].numpy()
            proposals.append(self._draft(p.req, qids, plan[i] if plan else 0))
            p.req.drafts = proposals[-1]
        if len(parts) != 1:
            return  # the patch dumps single-request steps only
        p = parts[0]
        batch = inputs.input_batch
        t = p.tokens.shape[0]
        dump: dict[str, Any] = {
            "positions": batch.positions[:t].cpu(),
            "input_ids": batch.input_ids[:t].cpu(),
            "aux": self._aux(p.tokens, p.start + np.arange(t)),
            "num_rejected": inputs.num_rejected[:1].cpu(),
            "num_sampled": inputs.num_sampled[:1].cpu(),
            "ctx_noise": self.j0,
        }
        if query:
            dump["query_ids"] = outputs.bufs["input_ids"][:nq].cpu()
            dump["query_positions"] = outputs.bufs["positions"][:nq].cpu()
            dump["draft_tokens"] = torch.from_numpy(proposals[0].reshape(1, -1).copy())
        self.out.mkdir(parents=True, exist_ok=True)
        torch.save(dump, self.out / f"step{self.dump_count:04d}.pt")
        self.dump_count += 1

    def _admit_and_fill(self, parts: list[Part]) -> None:
        """vLLM's add_request for requests scheduled for the first time (the prompt into
        all_token_ids), then the variant's fill as its propose calls it (J0 on only)."""
        import torch

        for p in parts:
            if all(p.req is not r for r in self.admitted):
                self.admitted.append(p.req)
                n = len(p.req.prompt)
                self.all_token_ids[p.req.slot, :n] = torch.from_numpy(p.req.prompt.astype(np.int32))
        fill = getattr(self.module, "fill_ctx_pool_cached_prefix", None)
        if fill is None or self.pool is None:
            return
        slots = np.asarray([p.req.slot for p in parts], dtype=np.intp)
        computed = np.asarray([p.start for p in parts], dtype=np.int32)
        names = [p.req.name for p in parts]
        fill(self.pool, self.all_token_ids, self.owner, names, slots, computed, len(parts))

    def write_prompts(self) -> None:
        """OUT-prompts.json beside the dump folder (not in it: the folder holds dumps only): the
        prompt token ids of every request, in the order first scheduled."""
        import json

        if self.j0 and self.dump_count:
            prompts = [
                {"name": r.name, "prompt_token_ids": [int(t) for t in r.prompt]}
                for r in self.admitted
            ]
            path = self.out.with_name(self.out.name + "-prompts.json")
            path.write_text(json.dumps(prompts) + "\n")

    def _draft(self, req: Req, query_ids: np.ndarray, right: int) -> np.ndarray:
        """The drafter: `right` true tokens, then tokens from a hash of its query ids."""
        n = self.case.num_spec
        truth = req.truth[req.generated : req.generated + n]
        out = np.empty(n, dtype=np.int64)
        for j in range(n):
            if j < right and j < len(truth):
                out[j] = truth[j]
            else:
                tok = 1 + _hash(*query_ids.tolist(), j) % (VOCAB - 2)
                if j < len(truth) and tok == truth[j]:
                    tok = 1 + (tok % (VOCAB - 2))
                out[j] = tok
        return out

    @staticmethod
    def _aux(tokens: np.ndarray, positions: np.ndarray) -> Any:
        import torch

        rows = [
            np.random.default_rng([int(t), int(p), 7]).standard_normal(AUX_WIDTH)
            for t, p in zip(tokens, positions, strict=True)
        ]
        return torch.tensor(np.stack(rows), dtype=torch.float32).to(torch.bfloat16)


def _req(name: str, slot: int, prompt_len: int, seed: int, prompt: np.ndarray | None = None) -> Req:
    rng = np.random.default_rng([seed, prompt_len, slot])
    if prompt is None:
        prompt = rng.integers(1, MASK, size=prompt_len).astype(np.int32)
    truth = rng.integers(1, MASK, size=400).astype(np.int64)
    return Req(name, slot, prompt.copy(), truth)


def warmup(engine: Engine, round_no: int) -> None:
    """vllm/v1/worker/gpu/warmup.py `_warmup_kernels` (run twice, with CUDA graphs only): 4
    requests of prompt range(9) prefilled together, a decode of all 4, two of requests 0 and 1
    (with and without drafts), then of request 0 alone with and without drafts: only those last
    two steps have one request, so only they are dumped. With every draft rejected, request 0's
    anchor then sits at 12, then 13: as in the H200 run with CUDA graphs."""
    reqs = [
        _req(f"warmup{round_no}-{i}", i, 9, 100 + round_no, np.arange(9, dtype=np.int32))
        for i in range(4)
    ]
    engine.run([engine.prefill(r, 9) for r in reqs])
    engine.run([engine.decode(r, 0) for r in reqs])
    engine.run([engine.decode(reqs[0], 0), engine.decode(reqs[1], 0, spec=False)])
    engine.run([engine.decode(reqs[0], 0, spec=False), engine.decode(reqs[1], 0, spec=False)])
    engine.run([engine.decode(reqs[0], 0)])
    engine.run([engine.decode(reqs[0], 0, spec=False)])


def main_scenario(engine: Engine) -> None:
    warmup(engine, 0)
    warmup(engine, 1)
    a = _req("A", 2, 40, 1)
    engine.run([engine.prefill(a, 16)], query=False)  # chunks: no drafts needed, no query
    engine.run([engine.prefill(a, 16)], query=False)
    accepts = [0, 3, 7, 0, 2, 5, 1, 0, 7, 4]
    engine.run([engine.prefill(a, 8)], plan=[accepts[0]])
    for i, acc in enumerate(accepts):
        nxt = accepts[i + 1] if i + 1 < len(accepts) else 0
        engine.run([engine.decode(a, acc)], plan=[nxt])
    # The step that samples the last token (max_tokens): vLLM proposes no drafts after it.
    engine.run([engine.decode(a, 0)], query=False)
    b = _req("B", 3, 3, 2)
    accepts = [7, 0, 1, 6, 0, 3]
    engine.run([engine.prefill(b, 3)], plan=[accepts[0]])
    for i, acc in enumerate(accepts):
        nxt = accepts[i + 1] if i + 1 < len(accepts) else 0
        engine.run([engine.decode(b, acc)], plan=[nxt])


def prefix_scenario(engine: Engine) -> None:
    c = _req("C", 1, 48, 3)
    accepts = [2, 0, 5, 1]
    engine.run([engine.prefill(c, 48)], plan=[accepts[0]])
    for i, acc in enumerate(accepts):
        engine.run([engine.decode(c, acc)], plan=[accepts[i + 1] if i + 1 < len(accepts) else 0])
    again = _req("C-again", 1, 48, 3)
    again.computed = 32  # a prefix-cache hit: the first 32 prompt tokens are never scheduled
    again.seq = [int(t) for t in again.prompt[:32]]
    accepts = [1, 0, 3, 0]
    engine.run([engine.prefill(again, 16)], plan=[accepts[0]])
    for i, acc in enumerate(accepts):
        nxt = accepts[i + 1] if i + 1 < len(accepts) else 0
        engine.run([engine.decode(again, acc)], plan=[nxt])


def prefix_aba_scenario(engine: Engine) -> None:
    """C, then D (another prompt) in the same slot, then C again with a prefix-cache hit."""
    c = _req("C", 1, 48, 3)
    engine.run([engine.prefill(c, 48)], plan=[2])
    for acc, nxt in ((2, 0), (0, 5), (5, 0)):
        engine.run([engine.decode(c, acc)], plan=[nxt])
    d = _req("D", 1, 40, 9)
    engine.run([engine.prefill(d, 40)], plan=[1])
    for acc, nxt in ((1, 3), (3, 0), (0, 0)):
        engine.run([engine.decode(d, acc)], plan=[nxt])
    again = _req("C-again", 1, 48, 3)
    again.computed = 32  # a prefix-cache hit: the first 32 prompt tokens are never scheduled
    again.seq = [int(t) for t in again.prompt[:32]]
    engine.run([engine.prefill(again, 16)], plan=[1])
    for acc, nxt in ((1, 0), (0, 3), (3, 0)):
        engine.run([engine.decode(again, acc)], plan=[nxt])


SCENARIOS = {
    "main": (main_scenario, 7, 128),
    "prefix": (prefix_scenario, 15, 64),
    "prefix-aba": (prefix_aba_scenario, 15, 64),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--speculator", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="also run the main scenario, J0 on, with this (broken) speculator.py into OUT/NAME",
    )
    args = parser.parse_args()
    from j0.selfcheck.kernels import load_speculator

    module = load_speculator(args.speculator)
    for name in args.scenario or sorted(SCENARIOS):
        fn, num_spec, mml = SCENARIOS[name]
        for j0 in (True, False):
            out = args.out / f"{name}-j0-{'on' if j0 else 'off'}"
            engine = Engine(module, num_spec, mml, j0, out)
            fn(engine)
            engine.write_prompts()
            print(f"{out}: {engine.dump_count} dumps of {engine.calls} steps")
    for spec in args.variant:
        name, _, path = spec.partition("=")
        engine = Engine(load_speculator(Path(path)), 7, 128, True, args.out / name)
        main_scenario(engine)
        print(f"{args.out / name}: {engine.dump_count} dumps of {engine.calls} steps")


if __name__ == "__main__":
    main()
