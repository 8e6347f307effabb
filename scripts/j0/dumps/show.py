"""`j0 dumps show`: what a dump folder holds, as tables (rich): the requests the steps form, the
steps of each (prefill chunk, last chunk, decode) with accepted and rejected drafts, J0 on or
off, and every tensor's dtype and shape as the files hold them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.dumps import load


@dataclass
class RequestSummary:
    number: int
    first_step: str
    last_step: str
    steps: int
    positions: tuple[int, int]  # first and last target position
    prefill_chunks: int
    prefill_last: int
    decodes: int
    query_steps: int
    accepted: int  # drafts accepted over the decode steps
    rejected: int
    j0: str  # on | off | mixed
    warmup: bool
    note: str


@dataclass
class Summary:
    root: str
    steps: int
    problems: list[tuple[str, str]]
    missing: list[int]
    j0: str
    num_spec: int | None
    requests: list[RequestSummary]
    layouts: dict[str, Counter[str]] = field(default_factory=dict)  # key -> layout -> steps


def _j0(values: set[bool]) -> str:
    return "mixed" if len(values) > 1 else ("on" if True in values else "off")


def summarize(root: Path) -> Summary:
    dumps = load.load_dir(root, strict=False)
    requests = load.group_requests(dumps.steps)
    out = []
    for req in requests:
        kinds = Counter(req.kinds)
        accepted = rejected = 0
        for step, kind in zip(req.steps, req.kinds, strict=True):
            if kind == load.DECODE:
                accepted += max(0, step.num_valid - 1)
                rejected += step.num_rejected
        note = ""
        if req.warmup:
            note = "start-up warm-up (positions do not start at 0, before the first request)"
        elif req.start_pos != 0:
            note = "starts past 0: prefix-cache hit, or earlier steps not dumped"
        out.append(
            RequestSummary(
                number=req.number,
                first_step=req.first.name,
                last_step=req.last.name,
                steps=len(req.steps),
                positions=(req.start_pos, max(int(s.positions[-1]) for s in req.steps)),
                prefill_chunks=kinds[load.PREFILL_CHUNK],
                prefill_last=kinds[load.PREFILL_LAST],
                decodes=kinds[load.DECODE],
                query_steps=sum(1 for s in req.steps if s.has_query),
                accepted=accepted,
                rejected=rejected,
                j0=_j0({s.ctx_noise for s in req.steps}),
                warmup=req.warmup,
                note=note,
            )
        )
    layouts: dict[str, Counter[str]] = {}
    for step in dumps.steps:
        for key, layout in step.layout.items():
            # Shapes vary with T; show their pattern, not every length.
            layouts.setdefault(key, Counter())[_pattern(key, layout, step)] += 1
    specs = Counter(s.num_spec for s in dumps.steps if s.has_query)
    return Summary(
        root=str(root),
        steps=len(dumps.steps),
        problems=[(p.name, why) for p, why in dumps.problems],
        missing=dumps.missing,
        j0=_j0(dumps.ctx_noise_values),
        num_spec=specs.most_common(1)[0][0] if specs else None,
        requests=out,
        layouts=layouts,
    )


def _pattern(key: str, layout: str, step: load.Step) -> str:
    """'int64 [74]' -> 'int64 [T]' where the length is the step's token count."""
    if key == "ctx_noise":
        return "bool"
    dtype, _, shape = layout.partition(" ")
    dims = [d.strip() for d in shape.strip("[]").split(",") if d.strip()]
    per_token = key in ("positions", "input_ids", "aux")
    named = [
        "T" if per_token and i == 0 and d == str(step.num_tokens) else d for i, d in enumerate(dims)
    ]
    return f"{dtype} [{', '.join(named)}]"


def render(summary: Summary, console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    console.print(
        f"[bold]{escape(summary.root)}[/bold]: {summary.steps} steps, J0 {summary.j0}, "
        f"{summary.num_spec if summary.num_spec is not None else '?'} draft tokens per step, "
        f"{len(summary.requests)} request(s)"
    )
    table = Table(title="requests", title_justify="left")
    columns = ("#", "steps", "first file", "positions", "chunks", "last", "decode", "acc", "rej")
    for col in (*columns, "J0"):
        table.add_column(col, justify="left" if col in ("first file", "J0") else "right")
    for r in summary.requests:
        table.add_row(
            str(r.number),
            str(r.steps),
            r.first_step,
            f"{r.positions[0]}..{r.positions[1]}",
            str(r.prefill_chunks),
            str(r.prefill_last),
            str(r.decodes),
            str(r.accepted),
            str(r.rejected),
            r.j0 + (" [yellow]warm-up[/yellow]" if r.warmup else ""),
        )
    console.print(table)
    for r in summary.requests:
        if r.note:
            console.print(f"request {r.number}: {escape(r.note)}")
    tensors = Table(title="tensors (T: the step's target tokens)", title_justify="left")
    tensors.add_column("key")
    tensors.add_column("dtype [shape]")
    tensors.add_column("steps", justify="right")
    for key in load.ALL_KEYS:
        for layout, n in sorted(summary.layouts.get(key, Counter()).items()):
            tensors.add_row(key, layout, str(n))
    for key in sorted(set(summary.layouts) - set(load.ALL_KEYS)):
        for layout, n in sorted(summary.layouts[key].items()):
            tensors.add_row(key, layout, str(n))
    console.print(tensors)
    if summary.missing:
        console.print(
            f"[red]missing step numbers[/red]: {', '.join(map(str, summary.missing[:20]))}"
        )
    for name, why in summary.problems[:20]:
        console.print(f"[red]not a dump[/red] {escape(name)}: {escape(why)}")


def to_json(summary: Summary) -> dict[str, Any]:
    from dataclasses import asdict

    data = asdict(summary)
    data["layouts"] = {k: dict(v) for k, v in summary.layouts.items()}
    return data
