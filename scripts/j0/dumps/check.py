"""`j0 dumps check`: every dumped step against J0's rule, with the selfcheck's reference.

Per request (load.group_requests), in step order, as the patch's kernels see it:

* format: every stepNNNN.pt holds exactly the patch's keys and dtypes; numbers have no gaps;
* counts: a prefill chunk samples nothing and rejects nothing, the chunk that ends the prompt
  samples one token, a decode step samples `T - num_rejected` tokens (vLLM's
  `_get_num_sampled_and_rejected_kernel`: num_rejected = num_logits - num_sampled);
  positions run without a hole; the next step of the request starts at this step's anchor
  position, `last valid position + 1` (reference.anchor_position);
* query block: positions `anchor_pos + k` (vLLM clamps them to max_model_len - 1), slot 0 the
  anchor, which comes back as the next step's first input id;
* J0 on: slot k > 0 holds the committed token at index `r mod L`, `L = last_valid_pos + 2`,
  `r = tl.randint(J0_SEED, req_state_idx * 64 + k)` (j0.reference.philox / reference). The
  committed tokens are rebuilt from the dumps exactly as the patch's `_ctx_pool_write_kernel`
  writes them: each step's inputs except the rejected ones at their positions, then the anchor
  (the next step's first input). The request slot is not dumped: every slot up to --max-slots
  is tried and the one the draws follow is reported. A draw at a position that no dumped step
  of this request wrote (a prefix-cache hit, a request whose first steps ran in batches, the
  start-up warm-up) reads whatever the slot's history held: it is UNVERIFIABLE, never a pass;
* J0 off: slot k > 0 holds the mask token (given, or the one value those slots hold).

Outcomes: PASS (exit 0), FAIL (exit 1, the first failures named: step file, slot, expected,
actual, why), UNVERIFIABLE (exit 2 unless allow_unverifiable: nothing failed, but some draws
could not be checked), and exit 2 for a folder that is not a dump folder or has nothing to check.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j0.dumps import load
from j0.errors import CHECK_FAILED, INPUT_LACKS, OK

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MAX_SLOTS = 1024  # request slots tried (vLLM's max_num_seqs is at most this in practice)
FAIL, UNVERIFIABLE, NOTE = "fail", "unverifiable", "note"
UNWRITTEN = -1
MAX_LISTED = 200  # unverifiable draws listed per request in the JSON report
MAX_POSITION = 1 << 26  # positions past this are refused rather than allocated for


@dataclass
class Finding:
    level: str  # fail | unverifiable | note
    check: str  # format, counts, positions, anchor, query-positions, j0-draw, mask, ...
    step: str  # the step file ("" for the whole folder)
    why: str
    slot: int | None = None  # query slot k
    expected: Any = None
    actual: Any = None
    request: int | None = None

    def text(self) -> str:
        where = self.step or "(folder)"
        if self.slot is not None:
            where += f" slot {self.slot}"
        values = ""
        if self.expected is not None or self.actual is not None:
            values = f": expected {self.expected}, actual {self.actual}"
        return f"{where} [{self.check}]{values}: {self.why}"


@dataclass
class RequestReport:
    number: int
    first_step: str
    last_step: str
    steps: int
    start_pos: int
    kinds: dict[str, int]
    status: str  # checked | warm-up | skipped
    j0: bool | None = None
    slot: int | None = None  # the inferred request slot (req_state_idx)
    slot_candidates: list[int] = field(default_factory=list)  # when several fit equally
    draws: int = 0  # J0 draws (or mask slots with J0 off) looked at
    verified: int = 0
    mismatched: int = 0
    unverifiable: int = 0
    stale_matches: int = 0  # unverifiable draws equal to what an earlier request left there
    # The first unverifiable draws: {"step", "slot", "index", "actual"} (JSON report only).
    unverifiable_draws: list[dict[str, Any]] = field(default_factory=list)
    query_steps: int = 0
    accepted: int = 0
    rejected: int = 0
    note: str = ""


@dataclass
class CheckReport:
    root: str
    verdict: str  # PASS | FAIL | UNVERIFIABLE | NOTHING TO CHECK
    exit_code: int
    seed: int
    j0: str  # on | off | mixed
    num_spec: int | None
    mask_token: int | None
    mask_token_source: str
    steps: int
    requests: list[RequestReport]
    findings: list[Finding]
    max_model_len: int | None = None  # when the query positions show vLLM's clamp

    def counts(self) -> dict[str, int]:
        return dict(Counter(f.level for f in self.findings))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["finding_counts"] = self.counts()
        return data


# --- The J0 draws of every request slot ---------------------------------------------------------


def draw_table(seed: int, num_spec: int, max_slots: int) -> np.ndarray:
    """r[s, k-1] = tl.randint(seed, s * 64 + k) as uint32, for slots 0..max_slots-1 (philox.py)."""
    from j0.reference import draws

    return draws.draw_table(seed, num_spec, max_slots)


def reference_indices(seed: int, slot: int, num_spec: int, committed: int) -> list[int]:
    """The reference's own `r mod L` for one slot (j0.reference.draws.draws)."""
    from j0.reference import draws as reference

    return [d.index for d in reference.draws(seed, slot, num_spec, committed)]


# --- Checking -------------------------------------------------------------------------------------


@dataclass
class _QueryStep:
    step: load.Step
    committed: int  # L
    expected: np.ndarray  # [max_slots, n]: the rebuilt history at r mod L, UNWRITTEN if none
    indices: np.ndarray  # [max_slots, n]: r mod L
    actual: np.ndarray  # [n]: query_ids[1:]
    rejected: dict[int, int]  # position -> rejected draft token of this step
    history: np.ndarray  # the rebuilt history at this step (copy of the first L entries)


class Checker:
    def __init__(
        self,
        dumps: load.DumpSet,
        seed: int,
        skip_requests: int = 0,
        mask_token: int | None = None,
        max_slots: int = DEFAULT_MAX_SLOTS,
    ) -> None:
        self.dumps = dumps
        self.seed = seed
        self.skip_requests = skip_requests
        self.mask_token = mask_token
        self.max_slots = max_slots
        self.findings: list[Finding] = []
        self.max_model_len: int | None = None
        self.slot_history: dict[int, np.ndarray] = {}  # slot -> what dumped requests left there
        self.slot_writer: dict[int, np.ndarray] = {}  # slot -> which request wrote each entry
        self._tables: dict[int, np.ndarray] = {}

    def _table(self, num_spec: int) -> np.ndarray:
        if num_spec not in self._tables:
            self._tables[num_spec] = draw_table(self.seed, num_spec, self.max_slots)
        return self._tables[num_spec]

    def add(self, level: str, check: str, step: load.Step | None, why: str, **kw: Any) -> None:
        self.findings.append(Finding(level, check, step.name if step else "", why, **kw))

    # -- the folder

    def run(self, allow_unverifiable: bool = False) -> CheckReport:
        dumps = self.dumps
        for path, why in dumps.problems:
            self.findings.append(Finding(FAIL, "format", path.name, why))
        for number in dumps.missing:
            self.findings.append(
                Finding(
                    FAIL,
                    "format",
                    f"step{number:04d}.pt",
                    "missing: the patch numbers its dumps without gaps",
                )
            )
        requests = load.group_requests(dumps.steps)
        j0_values = dumps.ctx_noise_values
        j0 = "mixed" if len(j0_values) > 1 else ("on" if True in j0_values else "off")
        if len(j0_values) > 1:
            first = dumps.steps[0]
            other = next(s for s in dumps.steps if s.ctx_noise != first.ctx_noise)
            self.add(
                FAIL,
                "ctx_noise",
                other,
                f"ctx_noise is {other.ctx_noise} here but {first.ctx_noise} in {first.name}: "
                "one server has one VLLM_DFLASH_CTX_NOISE",
                expected=first.ctx_noise,
                actual=other.ctx_noise,
            )
        spec_counts = Counter(s.num_spec for s in dumps.steps if s.has_query)
        num_spec = spec_counts.most_common(1)[0][0] if spec_counts else None
        for s in dumps.steps:
            if s.has_query and s.num_spec != num_spec:
                self.add(
                    FAIL,
                    "format",
                    s,
                    f"a query block of {s.num_spec + 1} slots; the other steps have "
                    f"{num_spec + 1} (num_speculative_tokens + 1)",
                    expected=num_spec,
                    actual=s.num_spec,
                )
        checked = [r for r in requests if not r.warmup and r.number >= self.skip_requests]
        mask_source = self._settle_mask_token(checked)
        reports = []
        for req in requests:
            report = self._request_report(req)
            if req.warmup:
                report.status = "warm-up"
                report.note = (
                    f"starts at position {req.start_pos} before any request that starts at 0: "
                    "vLLM's start-up warm-up (CUDA graphs); its J0 slots read whatever the "
                    "history held, not checked"
                )
            elif req.number < self.skip_requests:
                report.status = "skipped"
                report.note = "--skip-requests"
            else:
                self._check_request(req, report, num_spec)
            reports.append(report)
        return self._verdict(reports, j0, num_spec, mask_source, allow_unverifiable)

    def _settle_mask_token(self, checked: list[load.Request]) -> str:
        values = Counter(
            int(t)
            for r in checked
            for s in r.steps
            if s.has_query and not s.ctx_noise
            for t in s.query_ids[1:]
        )
        if self.mask_token is not None:
            return "given"
        if not values:
            return "none"
        self.mask_token = values.most_common(1)[0][0]
        return "inferred: the one value of the J0-off draft slots"

    def _request_report(self, req: load.Request) -> RequestReport:
        kinds = Counter(req.kinds)
        report = RequestReport(
            number=req.number,
            first_step=req.first.name,
            last_step=req.last.name,
            steps=len(req.steps),
            start_pos=req.start_pos,
            kinds=dict(kinds),
            status="checked",
            j0=req.first.ctx_noise,
            query_steps=sum(1 for s in req.steps if s.has_query),
        )
        for step, kind in zip(req.steps, req.kinds, strict=True):
            if kind == load.DECODE:
                report.accepted += max(0, step.num_valid - 1)
                report.rejected += step.num_rejected
        return report

    # -- one request

    def _check_request(
        self, req: load.Request, report: RequestReport, num_spec: int | None
    ) -> None:
        import numpy as np

        if req.start_pos != 0 and req.first.ctx_noise:
            report.note = (
                f"starts at position {req.start_pos}: its earlier tokens were never dumped "
                "(a prefix-cache hit, or steps that ran with other requests); J0 draws below "
                f"position {req.start_pos} cannot be checked"
            )
        top = max(int(s.positions.max()) for s in req.steps) + (num_spec or 0) + 2
        if top > MAX_POSITION:
            worst = max(req.steps, key=lambda s: int(s.positions.max()))
            self.add(
                FAIL,
                "positions",
                worst,
                f"a target position beyond {MAX_POSITION} (no model context is that long); "
                "the request is not checked further",
                actual=int(worst.positions.max()),
                request=req.number,
            )
            return
        history = np.full(top + 1, UNWRITTEN, dtype=np.int64)
        queries: list[_QueryStep] = []
        table = self._table(num_spec) if num_spec and req.first.ctx_noise else None
        for i, step in enumerate(req.steps):
            kind = req.kinds[i]
            nxt = req.steps[i + 1] if i + 1 < len(req.steps) else None
            self._check_counts(req, step, kind, i)
            anchor = self._check_continuity(req, step, nxt)
            # What _ctx_pool_write_kernel writes: the valid inputs, then the anchor.
            valid = step.num_valid
            keep = step.positions[:valid] >= 0
            history[step.positions[:valid][keep]] = step.input_ids[:valid][keep]
            apos = step.anchor_pos
            if anchor is not None and apos >= 0:
                history[apos] = anchor
            if not step.has_query:
                continue
            self._check_query_positions(req, step)
            if step.ctx_noise and table is not None and step.num_spec == num_spec:
                committed = apos + 1  # L = last_valid_pos + 2
                indices = table % committed
                expected = history[indices]
                rejected = {
                    int(p): int(t)
                    for p, t in zip(step.positions[valid:], step.input_ids[valid:], strict=True)
                }
                queries.append(
                    _QueryStep(
                        step,
                        committed,
                        expected,
                        indices,
                        step.query_ids[1:],
                        rejected,
                        history[:committed].copy(),
                    )
                )
            elif not step.ctx_noise:
                self._check_mask(req, step, report)
        if queries:
            self._check_draws(req, report, queries, history)

    def _check_counts(self, req: load.Request, step: load.Step, kind: str, i: int) -> None:
        import numpy as np

        if int(step.positions[0]) < 0:
            self.add(
                FAIL,
                "positions",
                step,
                "a target position is never negative",
                expected=">= 0",
                actual=int(step.positions[0]),
                request=req.number,
            )
        expected_pos = step.positions[0] + np.arange(step.num_tokens)
        if not (step.positions == expected_pos).all():
            j = int(np.nonzero(step.positions != expected_pos)[0][0])
            self.add(
                FAIL,
                "positions",
                step,
                f"target position {j} of the step is not {int(expected_pos[j])}: one request's "
                "positions run without a hole",
                expected=int(expected_pos[j]),
                actual=int(step.positions[j]),
                request=req.number,
            )
        if kind == load.PREFILL_CHUNK and step.num_rejected != 0:
            self.add(
                FAIL,
                "counts",
                step,
                "a prefill chunk (num_sampled 0) has no drafts to reject",
                expected=0,
                actual=step.num_rejected,
                request=req.number,
            )
        elif kind == load.PREFILL_LAST and (step.num_sampled, step.num_rejected) != (1, 0):
            self.add(
                FAIL,
                "counts",
                step,
                "the chunk that ends a prompt samples one token and rejects none "
                "(num_sampled, num_rejected)",
                expected=(1, 0),
                actual=(step.num_sampled, step.num_rejected),
                request=req.number,
            )
        elif kind == load.DECODE and step.num_sampled + step.num_rejected != step.num_tokens:
            self.add(
                FAIL,
                "counts",
                step,
                f"a decode step of {step.num_tokens} tokens (the anchor and "
                f"{step.num_tokens - 1} drafts) must have num_sampled + num_rejected = "
                f"{step.num_tokens}",
                expected=step.num_tokens,
                actual=step.num_sampled + step.num_rejected,
                request=req.number,
            )

    def _check_continuity(
        self, req: load.Request, step: load.Step, nxt: load.Step | None
    ) -> int | None:
        """Check the hand-over to the next step; return the anchor token the history gets."""
        from j0.reference import draws as reference

        apos = reference.anchor_position(int(step.positions[0]), step.num_tokens, step.num_rejected)
        if nxt is None:
            return int(step.query_ids[0]) if step.has_query else None
        start = int(nxt.positions[0])
        if start != apos:
            self.add(
                FAIL,
                "positions",
                nxt,
                f"the request's next step must start at the anchor position of {step.name} "
                f"(last valid position {step.last_valid_pos} + 1, with num_rejected "
                f"{step.num_rejected})",
                expected=apos,
                actual=start,
                request=req.number,
            )
        token = int(nxt.input_ids[0])
        if step.has_query and int(step.query_ids[0]) != token:
            self.add(
                FAIL,
                "anchor",
                step,
                f"slot 0 (the anchor: the bonus or next prefill token) must come back as the "
                f"first input id of {nxt.name}",
                slot=0,
                expected=token,
                actual=int(step.query_ids[0]),
                request=req.number,
            )
        return token

    def _check_query_positions(self, req: load.Request, step: load.Step) -> None:
        import numpy as np

        apos = step.anchor_pos
        want = apos + np.arange(step.num_spec + 1)
        got = step.query_positions
        if (got == want).all():
            return
        # vLLM clamps query positions to max_model_len - 1: a constant tail at or past the anchor.
        clamp = int(got[-1])
        clamped = np.minimum(want, clamp)
        if clamp >= apos and (got == clamped).all() and (self.max_model_len in (None, clamp + 1)):
            self.max_model_len = clamp + 1
            return
        k = int(np.nonzero(got != want)[0][0])
        self.add(
            FAIL,
            "query-positions",
            step,
            f"query slot k sits at the anchor position {apos} + k (last valid position "
            f"{step.last_valid_pos} + 1)",
            slot=k,
            expected=int(want[k]),
            actual=int(got[k]),
            request=req.number,
        )

    def _check_mask(self, req: load.Request, step: load.Step, report: RequestReport) -> None:
        for k, token in enumerate(step.query_ids[1:], start=1):
            report.draws += 1
            if int(token) == self.mask_token:
                report.verified += 1
                continue
            report.mismatched += 1
            self.add(
                FAIL,
                "mask",
                step,
                "J0 off (ctx_noise false): every draft slot holds the mask token "
                "(parallel_drafting_token_id)",
                slot=k,
                expected=self.mask_token,
                actual=int(token),
                request=req.number,
            )

    def _check_draws(
        self,
        req: load.Request,
        report: RequestReport,
        queries: list[_QueryStep],
        history: np.ndarray,
    ) -> None:
        import numpy as np

        known = np.stack([q.expected != UNWRITTEN for q in queries])  # [steps, slots, n]
        hit = np.stack([q.expected == q.actual[None, :] for q in queries]) & known
        matches = hit.sum(axis=(0, 2))
        misses = (known & ~hit).sum(axis=(0, 2))
        score = matches - misses
        best_score = int(score.max())
        tied = np.nonzero(score == best_score)[0]
        fewest = int(misses[tied].min())
        tied = [int(s) for s in tied if misses[s] == fewest]
        slot = tied[0]
        report.draws = sum(len(q.actual) for q in queries)
        if int(matches[slot]) == 0 and int(misses[slot]) == 0:
            # Nothing verifiable for any slot: every draw landed where the dumps never wrote.
            report.unverifiable = report.draws
            self.add(
                UNVERIFIABLE,
                "j0-draw",
                queries[0].step,
                f"all {report.draws} J0 draws of {req.label()} land on positions that no dumped "
                f"step of it wrote (it starts at position {req.start_pos}); request slot unknown",
                request=req.number,
            )
            return
        report.slot = slot
        report.slot_candidates = tied if len(tied) > 1 else []
        report.verified = int(matches[slot])
        report.mismatched = int(misses[slot])
        report.unverifiable = report.draws - report.verified - report.mismatched
        if report.mismatched:
            self.add(
                FAIL,
                "j0-draw",
                queries[0].step,
                f"no request slot in 0..{self.max_slots - 1} makes the J0 draws of {req.label()} "
                f"follow the rule; the closest, slot {slot}, explains {report.verified} of "
                f"{report.verified + report.mismatched} checkable draws (failures below use it; "
                "a server with more request slots needs a larger --max-slots)",
                request=req.number,
            )
        stale = self.slot_history.get(slot) if len(tied) == 1 else None
        writers = self.slot_writer.get(slot)
        stale_from: Counter[int] = Counter()
        first_unverifiable: Finding | None = None
        unwritten_reads: dict[int, tuple[int, str, int]] = {}  # index -> (token, step, slot)
        n_unverifiable_steps = 0
        for q_i, q in enumerate(queries):
            # The reference itself names the indices for this slot (the table is its mirror).
            indices = reference_indices(self.seed, slot, len(q.actual), q.committed)
            if indices != [int(x) for x in q.indices[slot]]:
                raise RuntimeError("j0 bug: the draw table disagrees with the reference")
            step_unverifiable = 0
            for k, (idx, actual) in enumerate(zip(indices, q.actual, strict=True), start=1):
                want = int(q.expected[slot, k - 1])
                if want == UNWRITTEN:
                    step_unverifiable += 1
                    if len(report.unverifiable_draws) < MAX_LISTED:
                        report.unverifiable_draws.append(
                            {"step": q.step.name, "slot": k, "index": idx, "actual": int(actual)}
                        )
                    # Nothing writes a position below the request's first one while it runs, so
                    # two draws of the same index must read the same token.
                    earlier = unwritten_reads.setdefault(idx, (int(actual), q.step.name, k))
                    if earlier[0] != int(actual):
                        self.add(
                            FAIL,
                            "j0-draw",
                            q.step,
                            f"draws index {idx}, which no dumped step of {req.label()} wrote, "
                            f"as {earlier[1]} slot {earlier[2]} did, and reads another token: "
                            "the history cannot change at a position the request never writes",
                            slot=k,
                            expected=earlier[0],
                            actual=int(actual),
                            request=req.number,
                        )
                    held = None
                    if stale is not None and idx < len(stale) and stale[idx] != UNWRITTEN:
                        held = int(stale[idx])
                        if held == int(actual):
                            report.stale_matches += 1
                            stale_from[int(writers[idx])] += 1  # type: ignore[index]
                    if first_unverifiable is None:
                        first_unverifiable = Finding(
                            UNVERIFIABLE,
                            "j0-draw",
                            q.step.name,
                            f"draws index {idx} (r mod L, L = {q.committed}), a position no "
                            f"dumped step of {req.label()} wrote: the kernel read whatever "
                            f"request slot {slot}'s history held there"
                            + (
                                f" (it held {held}, from request {int(writers[idx])})"  # type: ignore[index]
                                if held is not None
                                else ""
                            ),
                            slot=k,
                            expected="unknown",
                            actual=int(actual),
                            request=req.number,
                        )
                    continue
                if want == int(actual):
                    continue
                self.add(
                    FAIL,
                    "j0-draw",
                    q.step,
                    f"request slot {slot}: r = Philox({self.seed}, {slot}*64+{k}) mod L = "
                    f"{q.committed} gives index {idx}, whose committed token is {want}; "
                    + self._explain(int(actual), idx, q, queries[q_i + 1 :], history),
                    slot=k,
                    expected=want,
                    actual=int(actual),
                    request=req.number,
                )
            n_unverifiable_steps += int(step_unverifiable > 0)
        if first_unverifiable is not None:
            first_unverifiable.why += (
                f"; {report.unverifiable} of {report.draws} draws in {n_unverifiable_steps} "
                "steps are unverifiable"
                + (
                    f", {report.stale_matches} of them equal to what earlier dumped requests "
                    f"left in slot {slot}'s history ("
                    + ", ".join(f"request {w}: {n}" for w, n in sorted(stale_from.items()))
                    + "): stale history, as after a prefix-cache hit"
                    if stale_from
                    else ""
                )
            )
            self.findings.append(first_unverifiable)
        if len(tied) == 1:
            for store, values in (
                (self.slot_history, history),
                (self.slot_writer, np.full(len(history), req.number, dtype=np.int64)),
            ):
                row = store.get(slot, np.full(0, UNWRITTEN, dtype=np.int64))
                if len(row) < len(history):
                    row = np.concatenate([row, np.full(len(history) - len(row), UNWRITTEN)])
                written = history != UNWRITTEN
                row[: len(history)][written] = values[written]
                store[slot] = row

    @staticmethod
    def _explain(
        actual: int, idx: int, q: _QueryStep, later: list[_QueryStep], history: np.ndarray
    ) -> str:
        """Why a slot holds `actual`: a rejected draft, a future token, another index, ..."""
        import numpy as np

        past = np.nonzero(q.history == actual)[0]
        for pos, tok in sorted(q.rejected.items()):
            if tok == actual and not len(past):
                return f"it holds the rejected draft at position {pos} of this step"
        if len(past):
            return f"it holds the committed token at index {int(past[0])}, not at {idx}"
        future = np.nonzero(history[q.committed :] == actual)[0]
        if len(future):
            pos = int(future[0]) + q.committed
            return f"it holds a future token: committed later at position {pos} >= L"
        for other in later:
            if actual in other.rejected.values():
                return "it holds a token that only a later step drafted"
        return "that token is nowhere among the request's committed tokens"

    # -- the verdict

    def _verdict(
        self,
        reports: list[RequestReport],
        j0: str,
        num_spec: int | None,
        mask_source: str,
        allow_unverifiable: bool,
    ) -> CheckReport:
        levels = Counter(f.level for f in self.findings)
        checked = [r for r in reports if r.status == "checked"]
        draws = sum(r.draws for r in checked)
        query_steps = sum(r.query_steps for r in checked)
        if levels[FAIL]:
            verdict, code = "FAIL", CHECK_FAILED
        elif not checked or query_steps == 0:
            verdict, code = "NOTHING TO CHECK", INPUT_LACKS
        elif levels[UNVERIFIABLE] or sum(r.unverifiable for r in checked):
            verdict = "UNVERIFIABLE"
            code = OK if allow_unverifiable else INPUT_LACKS
        elif draws == 0:
            verdict, code = "NOTHING TO CHECK", INPUT_LACKS
        else:
            verdict, code = "PASS", OK
        return CheckReport(
            root=str(self.dumps.root),
            verdict=verdict,
            exit_code=code,
            seed=self.seed,
            j0=j0,
            num_spec=num_spec,
            mask_token=self.mask_token,
            mask_token_source=mask_source,
            steps=len(self.dumps.steps),
            requests=reports,
            findings=self.findings,
            max_model_len=self.max_model_len,
        )


def check_dir(
    root: Path,
    seed: int,
    skip_requests: int = 0,
    mask_token: int | None = None,
    max_slots: int = DEFAULT_MAX_SLOTS,
    allow_unverifiable: bool = False,
) -> CheckReport:
    """Check a dump folder. Raises J0Error (exit 2) when it is not a dump folder."""
    dumps = load.load_dir(root, strict=True)
    checker = Checker(dumps, seed, skip_requests, mask_token, max_slots)
    return checker.run(allow_unverifiable)
