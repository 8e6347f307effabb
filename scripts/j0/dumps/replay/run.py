"""`j0 dumps replay DIR --drafter D --target T`: run the DFlash authors' reference drafter on every
dumped query step and say, per query slot, how often it drafts what vLLM drafted.

For each request (positions restart at 0) the committed context's taps (`aux`, the rows that were
not rejected) are accumulated from the dumps since the request's first chunk and fed, with the
dumped query ids and positions, to `DFlashDraftModel` (j0.dumps.replay.model). The reference's
draft tokens are written as a dump set (same file names and keys, `draft_tokens` replaced) that
`j0 dumps compare` reads. Where the two differ, the reference's logit margins say whether it was
a near tie (top1 - top2, and the reference's top1 logit minus its logit for vLLM's token).

torch is imported inside the functions (keeps `j0 --help` fast).
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j0.edge.atomic import claimed, write_bytes_atomic
from j0.errors import INPUT_LACKS, USAGE, J0Error

if TYPE_CHECKING:
    import torch

    from j0.dumps.load import Request, Step
    from j0.dumps.replay.model import Reference

NOT_REPLAYED = -1  # draft token written for query steps the reference could not replay
# A disagreement whose reference logit gap to vLLM's token is at most this is a near tie: two
# bf16 implementations may break it either way (bf16 keeps 8 significant bits: about 0.4 % of
# a logit). Larger gaps are reported as real disagreements.
TIE_RELATIVE = 2.0**-7
TIE_ABSOLUTE = 1e-3
SHOW_DISAGREEMENTS = 20


@dataclass
class Disagreement:
    file: str
    slot: int  # query slot k = 1..N: draft token k, at query_positions[k]
    vllm: int
    reference: int
    top1_minus_top2: float  # the reference's own margin
    gap_to_vllm: float  # reference logit of its top1 minus its logit of vLLM's token
    near_tie: bool


@dataclass
class StepReplay:
    file: str
    request: int
    kind: str  # "query" or "context"
    replayed: bool
    reason: str = ""
    vllm: list[int] = field(default_factory=list)
    reference: list[int] = field(default_factory=list)
    margins: list[float] = field(default_factory=list)


@dataclass
class ReplayReport:
    dump_dir: str
    out_dir: str
    reference: dict[str, Any]
    steps: list[StepReplay]
    disagreements: list[Disagreement]

    def per_slot(self) -> list[dict[str, Any]]:
        counts: dict[int, list[int]] = {}
        for step in self.steps:
            if step.replayed:
                for k, (a, b) in enumerate(zip(step.vllm, step.reference, strict=True), 1):
                    agree_total = counts.setdefault(k, [0, 0])
                    agree_total[0] += int(a == b)
                    agree_total[1] += 1
        ties: dict[int, int] = {}
        for d in self.disagreements:
            ties[d.slot] = ties.get(d.slot, 0) + int(d.near_tie)
        return [
            {
                "slot": k,
                "agree": a,
                "total": t,
                "fraction": a / t if t else None,
                "near_ties": ties.get(k, 0),
            }
            for k, (a, t) in sorted(counts.items())
        ]

    @property
    def exit_code(self) -> int:
        """0 when every disagreement is a near tie, else 1."""
        return 1 if self.real_disagreements else 0

    @property
    def replayed_a_query(self) -> bool:
        """Whether any query step could be replayed (none: nothing was checked)."""
        return any(s.replayed for s in self.steps if s.kind == "query")

    @property
    def real_disagreements(self) -> int:
        return sum(not d.near_tie for d in self.disagreements)

    def to_json(self) -> dict[str, Any]:
        replayed = [s for s in self.steps if s.replayed and s.kind == "query"]
        total = sum(len(s.vllm) for s in replayed)
        agree = sum(a == b for s in replayed for a, b in zip(s.vllm, s.reference, strict=True))
        return {
            "dump_dir": self.dump_dir,
            "out_dir": self.out_dir,
            "reference": self.reference,
            "query_steps": sum(s.kind == "query" for s in self.steps),
            "replayed_steps": len(replayed),
            "agree": agree,
            "total": total,
            "near_tie_disagreements": len(self.disagreements) - self.real_disagreements,
            "real_disagreements": self.real_disagreements,
            "per_slot": self.per_slot(),
            "disagreements": [asdict(d) for d in self.disagreements],
            "skipped": [
                {"file": s.file, "reason": s.reason}
                for s in self.steps
                if s.kind == "query" and not s.replayed
            ],
            "steps": [asdict(s) for s in self.steps],
        }

    def lines(self) -> list[str]:
        ref = self.reference
        out = [
            f"reference: dflash {ref['dflash_version']} DFlashDraftModel, {ref['dtype']} on "
            f"{ref['device']}, {'causal' if ref['causal'] else 'NON-causal'} draft block "
            f"({ref['causal_decided_by']}; set as is_causal={ref['causal']} for the dflash "
            f"package), mask token {ref['mask_token_id']}",
            f"  embed_tokens: {ref['sources']['embed_tokens']}",
            f"  lm_head:      {ref['sources']['lm_head']}",
        ]
        summary = self.to_json()
        out.append(
            f"{summary['replayed_steps']} of {summary['query_steps']} query steps replayed; "
            f"reference dump set: {self.out_dir}"
        )
        for s in self.steps:
            if s.kind == "query" and not s.replayed:
                out.append(f"  not replayed: {s.file}: {s.reason}")
        if summary["total"]:
            out.append("query slot   agree / total   fraction   near ties")
            for row in summary["per_slot"]:
                out.append(
                    f"{row['slot']:>10}   {row['agree']:>5} / {row['total']:<5}   "
                    f"{row['fraction']:>8.4f}   {row['near_ties']:>9}"
                )
            out.append(
                f"all slots: {summary['agree']} / {summary['total']} agree "
                f"({summary['agree'] / summary['total']:.4f}); disagreements: "
                f"{summary['near_tie_disagreements']} near ties, {self.real_disagreements} not"
            )
        for d in self.disagreements[:SHOW_DISAGREEMENTS]:
            out.append(
                f"  {d.file} slot {d.slot}: vLLM {d.vllm}, reference {d.reference} "
                f"(reference top1-top2 {d.top1_minus_top2:.4g}, its logit gap to vLLM's token "
                f"{d.gap_to_vllm:.4g}: {'near tie' if d.near_tie else 'NOT a near tie'})"
            )
        if len(self.disagreements) > SHOW_DISAGREEMENTS:
            out.append(f"  ... {len(self.disagreements) - SHOW_DISAGREEMENTS} more in the JSON")
        return out


def load_requests(dump_dir: Path) -> tuple[list[Request], list[Step]]:
    """The dump set's steps (j0.dumps.load, lenient: reference sets load too) cut into requests;
    a file that is not a dump stops the replay, naming it."""
    from j0.dumps.load import group_requests, load_dir

    dumps = load_dir(dump_dir, strict=False)
    if dumps.problems:
        _, why = dumps.problems[0]
        raise J0Error(
            f"{dump_dir}: {len(dumps.problems)} file(s) are not dumps the replay can read; "
            f"first: {why}",
            INPUT_LACKS,
        )
    for step in dumps.steps:
        if step.aux is None:
            raise J0Error(f"{step.path}: no aux (the drafter's input taps)", INPUT_LACKS)
    return group_requests(dumps.steps), dumps.steps


def _near_tie(logits: torch.Tensor, vllm_token: int, ref_token: int) -> tuple[float, bool]:
    gap = float(logits[ref_token] - logits[vllm_token])
    scale = float(logits[ref_token].abs())
    return gap, gap <= max(TIE_ABSOLUTE, TIE_RELATIVE * scale)


def _start_reason(request: Request) -> str:
    if request.warmup:
        return (
            f"{request.label()} starts at position {request.start_pos}: vLLM's start-up "
            "warm-up, whose context was never dumped"
        )
    return (
        f"{request.label()} starts at position {request.start_pos}, not 0: its earlier "
        "context was not dumped (a prefix-cache hit, or steps run in batches of several)"
    )


def replay_steps(
    requests: list[Request], reference: Reference
) -> tuple[list[StepReplay], list[Disagreement], dict[str, list[int]]]:
    """Replay every query step; returns the per-step results, the disagreements and, by file
    name, the reference's draft tokens (NOT_REPLAYED where it could not run)."""
    import torch

    from j0.dumps.replay.model import RequestContext

    results: list[StepReplay] = []
    disagreements: list[Disagreement] = []
    tokens: dict[str, list[int]] = {}
    for request in requests:
        context = RequestContext(reference)
        reason = "" if request.start_pos == 0 else _start_reason(request)
        next_position = request.start_pos
        for step in request.steps:
            if step.aux.dim() != 2 or step.aux.shape[1] != reference.fc_input:
                raise J0Error(
                    f"{step.path}: aux is {list(step.aux.shape)}, the drafter's fc layer takes "
                    f"{reference.fc_input} features per token (another drafter or target?)",
                    INPUT_LACKS,
                )
            valid = step.num_valid
            committed = [int(p) for p in step.positions[: max(valid, 0)]]
            expected = list(range(next_position, next_position + valid))
            if not reason and (valid <= 0 or committed != expected):
                reason = (
                    f"{step.name}: committed positions {committed[:3]}... do not continue the "
                    f"request's context at position {next_position}"
                )
            next_position = (committed[-1] + 1) if committed else next_position
            if not reason:
                context.add_context(step.aux[:valid], torch.as_tensor(step.positions[:valid]))
            if not step.has_query:
                results.append(StepReplay(step.name, request.number, "context", not reason, reason))
                continue
            if step.draft_tokens is None or step.query_positions is None:
                raise J0Error(
                    f"{step.path}: query_ids without draft_tokens and query_positions", INPUT_LACKS
                )
            vllm_tokens = [int(t) for t in step.draft_tokens]
            query_positions = [int(p) for p in step.query_positions]
            if not reason and query_positions[0] != next_position:
                reason = (
                    f"{step.name}: query position {query_positions[0]} does not follow the "
                    f"context (next position {next_position})"
                )
            if reason:
                results.append(
                    StepReplay(step.name, request.number, "query", False, reason, vllm_tokens)
                )
                tokens[step.name] = [NOT_REPLAYED] * len(vllm_tokens)
                continue
            logits = context.draft_logits(
                torch.as_tensor(step.query_ids), torch.as_tensor(step.query_positions)
            )
            # argmax as vLLM's greedy draft sampling and dflash_generate take it (the first index
            # of a tie); topk only for the margins.
            ref_tokens = logits.argmax(dim=-1).tolist()
            top2 = logits.topk(2, dim=-1)
            margins = (top2.values[:, 0] - top2.values[:, 1]).tolist()
            results.append(
                StepReplay(
                    step.name, request.number, "query", True, "", vllm_tokens, ref_tokens, margins
                )
            )
            tokens[step.name] = ref_tokens
            for k, (v, r) in enumerate(zip(vllm_tokens, ref_tokens, strict=True), 1):
                if v != r:
                    if 0 <= v < logits.shape[1]:
                        gap, tie = _near_tie(logits[k - 1], v, r)
                    else:
                        gap, tie = float("inf"), False
                    disagreements.append(Disagreement(step.name, k, v, r, margins[k - 1], gap, tie))
    return results, disagreements, tokens


def write_reference_dumps(out_dir: Path, steps: list[Step], tokens: dict[str, list[int]]) -> None:
    """Every input file under its name in out_dir, `draft_tokens` replaced by the reference's
    (same dtype and shape); files are written atomically and never over an existing one."""
    import torch

    from j0.dumps.load import read_file

    for step in steps:
        data = dict(read_file(step.path))
        if step.name in tokens:
            old = data["draft_tokens"]
            data["draft_tokens"] = torch.tensor(tokens[step.name], dtype=old.dtype).reshape(
                old.shape
            )
        buffer = io.BytesIO()
        torch.save(data, buffer)
        write_bytes_atomic(out_dir / step.name, buffer.getvalue(), replace_existing=False)


def default_out(dump_dir: Path) -> Path:
    return dump_dir.parent / f"{dump_dir.name}-reference"


def replay(dump_dir: Path, drafter: Path, target: Path, device: str, out_dir: Path) -> ReplayReport:
    # --out is claimed until the last write: a second replay into it is refused (exit 64), and
    # whether it is empty is judged under the claim.
    with claimed(out_dir, "--out"):
        if out_dir.exists() and any(out_dir.iterdir()):
            raise J0Error(
                f"{out_dir}: exists and is not empty; the reference dump set is never written "
                "over other files (choose another --out or remove it)",
                USAGE,
            )
        return replay_into(dump_dir, drafter, target, device, out_dir)


def replay_into(
    dump_dir: Path, drafter: Path, target: Path, device: str, out_dir: Path
) -> ReplayReport:
    """The replay, into `out_dir` (claimed and judged empty by `replay`)."""
    from importlib.metadata import version

    from j0.dumps.replay.model import load_reference

    requests, steps = load_requests(dump_dir)
    reference = load_reference(drafter, target, device)
    results, disagreements, tokens = replay_steps(requests, reference)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_reference_dumps(out_dir, steps, tokens)
    facts = {
        "dflash_version": version("dflash"),
        "drafter": str(drafter),
        "target": str(target),
        "dtype": reference.dtype,
        "device": reference.device,
        "causal": reference.causal,
        "causal_decided_by": reference.causal_decided_by,
        "mask_token_id": reference.mask_token_id,
        "sources": reference.sources,
    }
    return ReplayReport(str(dump_dir), str(out_dir), facts, results, disagreements)


@dataclass(frozen=True)
class ReplayOptions:
    """`j0 dumps replay`'s flags (cli.py): the dump folder, the two model folders, the device and
    where the reference's dump set goes (None: beside the folder, default_out)."""

    folder: Path
    drafter: Path
    target: Path
    device: str = "cpu"
    out: Path | None = None


def run_replay(options: ReplayOptions) -> ReplayReport:
    """Replay the folder's dumps on the reference drafter; the report says what agreed (its
    exit_code: 0 when every disagreement is a near tie, else 1). J0Error before any work where a
    model folder is missing or the `dumps` extra is not installed."""
    from j0.errors import require

    for module in ("torch", "transformers", "safetensors"):
        require(module, "j0 dumps replay", "dumps")
    for flag, folder in (("--drafter", options.drafter), ("--target", options.target)):
        if not folder.is_dir():
            raise J0Error(f"{flag} {folder}: not a folder (expected the model's folder)", USAGE)
    out_dir = options.out if options.out is not None else default_out(options.folder)
    return replay(options.folder, options.drafter, options.target, options.device, out_dir)
