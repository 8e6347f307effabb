"""`j0 dumps compare A B`: two dump sets of the same prompts, step by step.

Typical pairs: J0 off against J0 on (speculative decoding is lossless, so the committed tokens
and the target's taps on them must agree, while the draft inputs and proposals differ), and
vLLM's dumps against a reference's (`j0 dumps replay` writes its draft tokens as a dump set).

Steps are paired by request (in folder order, load.group_requests) and by the position they start
at, so that a difference in acceptance, which shifts every later step, does not misalign the rest.
What is compared:

* committed tokens: the target's inputs minus the rejected drafts, position by position, and
  the positions of each paired step's query block: must be equal;
* `aux` on committed rows: max absolute and relative error, and how many elements exceed the
  bf16-aware tolerance |a - b| <= rtol * (max(|a|, |b|) + rms(row of B)). bfloat16 keeps 8
  significant bits, so one rounding moves a value by up to 2^-8 of it and neighbouring values are
  2^-7 apart; the default rtol = 2^-6 allows two such steps. The rms term covers cancellation
  near zero. Rows of rejected drafts are reported apart: their inputs may differ;
* draft tokens: agreement per draft position over the paired query steps (reported, not failed:
  bf16 ties and different J0 inputs make them differ legitimately); query ids per slot too.

Exit 0: committed tokens, query positions and aux agree; 1: they do not; 2: not a dump folder
or nothing in common to compare.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from j0.dumps import load
from j0.errors import CHECK_FAILED, INPUT_LACKS, OK, J0Error

if TYPE_CHECKING:
    import numpy as np

DEFAULT_RTOL = 2.0**-6
SHOW_DIFFERENCES = 12


@dataclass
class StepPair:
    request: int
    step_a: str
    step_b: str
    start: int
    num_valid: tuple[int, int]
    committed_equal: bool
    draft_inputs_equal: bool  # the rejected drafts fed to the target
    counts_equal: bool  # num_rejected and num_sampled
    query_positions_equal: bool | None
    query_ids_agree: list[bool] | None
    drafts_agree: list[bool] | None
    aux_max_abs: float | None
    aux_max_rel: float | None
    aux_over_tolerance: int | None
    aux_elements: int | None


@dataclass
class Difference:
    what: str
    step_a: str
    step_b: str
    detail: str

    def text(self) -> str:
        return f"{self.step_a} / {self.step_b} [{self.what}]: {self.detail}"


@dataclass
class CompareReport:
    a: str
    b: str
    rtol: float
    verdict: str  # SAME | DIFFERENT | PARTIAL (steps unpaired, files unread) | NOTHING IN COMMON
    exit_code: int
    requests: tuple[int, int]
    pairs: list[StepPair]
    unpaired_a: list[str]
    unpaired_b: list[str]
    differences: list[Difference]
    draft_agreement: list[float] = field(default_factory=list)  # per draft position 1..n
    query_id_agreement: list[float] = field(default_factory=list)  # per query slot 0..n
    aux_max_abs: float | None = None
    aux_max_rel: float | None = None
    aux_over_tolerance: int = 0
    aux_elements: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _aux_errors(
    a: load.Step, b: load.Step, rows: int, rtol: float
) -> tuple[float, float, int, int] | str | None:
    """(max abs error, max relative error, elements over the tolerance, elements) of the committed
    rows' taps; a sentence where they cannot be compared element by element (other shapes); None
    where either side has no taps. A NaN or an infinity on either side counts as over the
    tolerance (it is a difference, whatever the other side holds)."""
    import numpy as np

    if a.aux is None or b.aux is None or rows == 0:
        return None
    fa = a.aux_float()[:rows].astype(np.float64)
    fb = b.aux_float()[:rows].astype(np.float64)
    if fa.shape != fb.shape:
        return f"the committed rows' taps are {list(fa.shape)} in A, {list(fb.shape)} in B"
    finite = np.isfinite(fa) & np.isfinite(fb)
    bad = int((~finite).sum())
    fa, fb = np.where(finite, fa, 0.0), np.where(finite, fb, 0.0)
    err = np.abs(fa - fb)
    rms = np.sqrt((fb**2).mean(axis=1, keepdims=True))
    scale = np.maximum(np.abs(fa), np.abs(fb)) + rms
    over = int((err > rtol * scale).sum()) + bad
    rel = err / np.maximum(np.abs(fb), rms + np.finfo(np.float64).tiny)
    max_abs, max_rel = float(err.max()), float(rel.max())
    if bad:
        max_abs = max_rel = float("inf")
    return max_abs, max_rel, over, int(err.size)


def _agree(x: np.ndarray | None, y: np.ndarray | None) -> list[bool] | None:
    if x is None or y is None or len(x) != len(y):
        return None
    return [bool(u == v) for u, v in zip(x, y, strict=True)]


def _pair_steps(
    ra: load.Request, rb: load.Request, rtol: float, diffs: list[Difference]
) -> tuple[list[StepPair], list[str], list[str]]:
    by_start = {int(s.positions[0]): s for s in rb.steps}
    used: set[str] = set()
    pairs = []
    unpaired_a = []
    for a in ra.steps:
        b = by_start.get(int(a.positions[0]))
        if b is None:
            unpaired_a.append(a.name)
            continue
        used.add(b.name)
        valid = min(a.num_valid, b.num_valid)
        committed_equal = bool(
            (a.positions[:valid] == b.positions[:valid]).all()
            and (a.input_ids[:valid] == b.input_ids[:valid]).all()
        )
        if not committed_equal:
            j = int(
                next(
                    i
                    for i in range(valid)
                    if a.positions[i] != b.positions[i] or a.input_ids[i] != b.input_ids[i]
                )
            )
            diffs.append(
                Difference(
                    "committed",
                    a.name,
                    b.name,
                    f"position {int(a.positions[j])}: token {int(a.input_ids[j])} in A, "
                    f"{int(b.input_ids[j])} (position {int(b.positions[j])}) in B",
                )
            )
        same_shape = a.num_tokens == b.num_tokens
        draft_inputs_equal = same_shape and bool((a.input_ids == b.input_ids).all())
        qpos = None
        if a.query_positions is not None and b.query_positions is not None:
            qpos = len(a.query_positions) == len(b.query_positions) and bool(
                (a.query_positions == b.query_positions).all()
            )
            if not qpos and a.num_valid == b.num_valid:
                diffs.append(
                    Difference(
                        "query-positions",
                        a.name,
                        b.name,
                        f"{a.query_positions.tolist()} in A, {b.query_positions.tolist()} in B",
                    )
                )
            elif not qpos:
                qpos = None  # different acceptance: the anchors differ, nothing to compare
        aux_found = _aux_errors(a, b, valid, rtol)
        if isinstance(aux_found, str):
            diffs.append(Difference("aux", a.name, b.name, aux_found))
        aux = aux_found if isinstance(aux_found, tuple) else None
        if aux is not None and aux[2] > 0:
            diffs.append(
                Difference(
                    "aux",
                    a.name,
                    b.name,
                    f"{aux[2]} of {aux[3]} elements of the committed rows exceed the tolerance "
                    f"(max abs {aux[0]:.4g}, max rel {aux[1]:.4g}, rtol {rtol:.4g})",
                )
            )
        pairs.append(
            StepPair(
                request=ra.number,
                step_a=a.name,
                step_b=b.name,
                start=int(a.positions[0]),
                num_valid=(a.num_valid, b.num_valid),
                committed_equal=committed_equal,
                draft_inputs_equal=draft_inputs_equal,
                counts_equal=(a.num_rejected, a.num_sampled) == (b.num_rejected, b.num_sampled),
                query_positions_equal=qpos,
                query_ids_agree=_agree(a.query_ids, b.query_ids),
                drafts_agree=_agree(a.draft_tokens, b.draft_tokens),
                aux_max_abs=None if aux is None else aux[0],
                aux_max_rel=None if aux is None else aux[1],
                aux_over_tolerance=None if aux is None else aux[2],
                aux_elements=None if aux is None else aux[3],
            )
        )
    unpaired_b = [s.name for s in rb.steps if s.name not in used]
    return pairs, unpaired_a, unpaired_b


def _pair_requests(
    reqs_a: list[load.Request], reqs_b: list[load.Request]
) -> list[tuple[load.Request | None, load.Request | None]]:
    """Requests in order; B's request pairs with A's when one of its steps starts at the same
    position with the same first input id as one of A's (a set without the context-only steps,
    as a reference writes it, or without a request that had only such steps, still pairs)."""
    out: list[tuple[load.Request | None, load.Request | None]] = []
    j = 0
    for ra in reqs_a:
        keys = {(int(s.positions[0]), int(s.input_ids[0])) for s in ra.steps}
        for jj in range(j, len(reqs_b)):
            rb = reqs_b[jj]
            if any((int(s.positions[0]), int(s.input_ids[0])) in keys for s in rb.steps):
                out += [(None, r) for r in reqs_b[j:jj]]
                out.append((ra, rb))
                j = jj + 1
                break
        else:
            out.append((ra, None))
    out += [(None, r) for r in reqs_b[j:]]
    return out


def _rate(columns: list[list[bool]]) -> list[float]:
    if not columns:
        return []
    width = min(len(c) for c in columns)
    return [sum(c[j] for c in columns) / len(columns) for j in range(width)]


def _missing(
    dumps_a: load.DumpSet,
    dumps_b: load.DumpSet,
    unpaired_a: list[str],
    unpaired_b: list[str],
    notes: list[str],
) -> list[str]:
    """Why SAME cannot be said although every pair agrees: steps of one set with no partner in
    the other, or files that could not be read. Context-only steps (no query) of one set are
    expected to be missing from the other when that set has none at all, as a reference writes
    it: those are noted, not counted."""
    problems = [f"{len(dumps_a.problems) + len(dumps_b.problems)} files not read"] * bool(
        dumps_a.problems or dumps_b.problems
    )
    for side, dumps, unpaired, other in (
        ("A", dumps_a, unpaired_a, dumps_b),
        ("B", dumps_b, unpaired_b, dumps_a),
    ):
        names = set(unpaired)
        reference_like = all(s.has_query for s in other.steps)
        context_only = {s.name for s in dumps.steps if s.name in names and not s.has_query}
        expected = context_only if reference_like else set()
        if expected:
            notes.append(
                f"{len(expected)} context-only steps of {side} have no partner: the other set "
                "has no context-only steps (a reference set)"
            )
        if left := sorted(names - expected):
            problems.append(
                f"{len(left)} steps of {side} have no partner ({', '.join(left[:5])}"
                + (", ..." if len(left) > 5 else "")
                + ")"
            )
    return problems


def compare_dirs(a: Path, b: Path, rtol: float = DEFAULT_RTOL) -> CompareReport:
    """Compare two dump folders (read leniently: B may lack aux or the context-only steps)."""
    dumps_a = load.load_dir(a, strict=False)
    dumps_b = load.load_dir(b, strict=False)
    reqs_a = load.group_requests(dumps_a.steps, consecutive=False)
    reqs_b = load.group_requests(dumps_b.steps, consecutive=False)
    diffs: list[Difference] = []
    pairs: list[StepPair] = []
    unpaired_a: list[str] = []
    unpaired_b: list[str] = []
    notes = []
    for ra, rb in _pair_requests(reqs_a, reqs_b):
        if ra is None or rb is None:
            only = ra or rb
            assert only is not None
            side = "A" if ra is not None else "B"
            notes.append(f"{only.label()} is only in {side}")
            (unpaired_a if side == "A" else unpaired_b).extend(s.name for s in only.steps)
            continue
        if ra.start_pos != rb.start_pos:
            notes.append(
                f"request {ra.number} starts at position {ra.start_pos} in A, {rb.start_pos} in B"
            )
        p, ua, ub = _pair_steps(ra, rb, rtol, diffs)
        pairs += p
        unpaired_a += ua
        unpaired_b += ub
    for _path, why in [*dumps_a.problems, *dumps_b.problems]:
        notes.append(f"not read: {why}")
    drafts = [p.drafts_agree for p in pairs if p.drafts_agree is not None]
    queries = [p.query_ids_agree for p in pairs if p.query_ids_agree is not None]
    with_aux = [p for p in pairs if p.aux_max_abs is not None]
    missing = _missing(dumps_a, dumps_b, unpaired_a, unpaired_b, notes)
    if not pairs:
        verdict, code = "NOTHING IN COMMON", INPUT_LACKS
    elif diffs:
        verdict, code = "DIFFERENT", CHECK_FAILED
    elif missing:
        verdict, code = "PARTIAL", INPUT_LACKS
        notes.append("PARTIAL: " + "; ".join(missing) + ": what was paired agrees")
    else:
        verdict, code = "SAME", OK
    if pairs and not with_aux:
        notes.append("aux not compared: absent in A or B")
    return CompareReport(
        a=str(a),
        b=str(b),
        rtol=rtol,
        verdict=verdict,
        exit_code=code,
        requests=(len(reqs_a), len(reqs_b)),
        pairs=pairs,
        unpaired_a=unpaired_a,
        unpaired_b=unpaired_b,
        differences=diffs,
        draft_agreement=_rate(drafts),  # type: ignore[arg-type]
        query_id_agreement=_rate(queries),  # type: ignore[arg-type]
        aux_max_abs=max((p.aux_max_abs for p in with_aux), default=None),  # type: ignore[type-var]
        aux_max_rel=max((p.aux_max_rel for p in with_aux), default=None),  # type: ignore[type-var]
        aux_over_tolerance=sum(p.aux_over_tolerance or 0 for p in with_aux),
        aux_elements=sum(p.aux_elements or 0 for p in with_aux),
        notes=notes,
    )


# --- Output -----------------------------------------------------------------------------------


def render(report: CompareReport, console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    console.print(f"[bold]A[/bold] {escape(report.a)}\n[bold]B[/bold] {escape(report.b)}")
    n_pairs = len(report.pairs)

    def count(attr: str) -> str:
        values = [getattr(p, attr) for p in report.pairs if getattr(p, attr) is not None]
        return f"{sum(map(bool, values))}/{len(values)}"

    table = Table(title="paired steps", title_justify="left")
    table.add_column("what")
    table.add_column("result", justify="right")
    table.add_row("requests (A, B)", f"{report.requests[0]}, {report.requests[1]}")
    table.add_row("steps paired", str(n_pairs))
    table.add_row(
        "steps only in A / only in B", f"{len(report.unpaired_a)} / {len(report.unpaired_b)}"
    )
    table.add_row("committed tokens equal", count("committed_equal"))
    table.add_row("query positions equal", count("query_positions_equal"))
    table.add_row("rejected-draft inputs equal", count("draft_inputs_equal"))
    table.add_row("num_rejected, num_sampled equal", count("counts_equal"))
    if report.aux_max_abs is not None:
        table.add_row(
            "aux (committed rows) max abs / max rel",
            f"{report.aux_max_abs:.4g} / {report.aux_max_rel:.4g}",
        )
        table.add_row(
            f"aux elements over tolerance (rtol {report.rtol:.4g})",
            f"{report.aux_over_tolerance}/{report.aux_elements}",
        )
    else:
        table.add_row("aux", "not compared")
    console.print(table)
    if report.draft_agreement:
        agree = Table(title="agreement per position (paired query steps)", title_justify="left")
        agree.add_column("")
        n = len(report.query_id_agreement)
        for j in range(n):
            agree.add_column(str(j), justify="right")
        agree.add_row("query ids", *(f"{x:.0%}" for x in report.query_id_agreement))
        agree.add_row("draft tokens", "", *(f"{x:.0%}" for x in report.draft_agreement))
        console.print(agree)
    for d in report.differences[:SHOW_DIFFERENCES]:
        console.print(f"[red]DIFF[/red] {escape(d.text())}")
    if len(report.differences) > SHOW_DIFFERENCES:
        console.print(f"... and {len(report.differences) - SHOW_DIFFERENCES} more (--json)")
    for note in report.notes:
        console.print(f"note: {escape(note)}")
    style = {"SAME": "bold green", "DIFFERENT": "bold red"}.get(report.verdict, "bold yellow")
    console.print(
        f"[{style}]{report.verdict}[/{style}]: {n_pairs} paired steps, "
        f"{len(report.differences)} difference(s) (exit {report.exit_code})",
        highlight=False,
    )


def write_plots(report: CompareReport, out: Path) -> list[Path]:
    """agreement.png (per draft position), errors.png (aux error per step), and their CSVs."""
    import csv
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from j0.edge.atomic import write_bytes_atomic, write_text_atomic

    if not report.pairs:
        raise J0Error("nothing to plot: no paired steps", INPUT_LACKS)
    out.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig: Any, name: str) -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        write_bytes_atomic(out / name, buf.getvalue())
        written.append(out / name)

    def save_csv(name: str, header: list[str], rows: list[list[Any]]) -> None:
        text = io.StringIO()
        writer = csv.writer(text)
        writer.writerow(header)
        writer.writerows(rows)
        write_text_atomic(out / name, text.getvalue())
        written.append(out / name)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    positions = list(range(1, len(report.draft_agreement) + 1))
    ax.bar(positions, report.draft_agreement, color="#3b7dd8")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("draft position")
    ax.set_ylabel("draft tokens equal (fraction)")
    ax.set_title("draft-token agreement per position, A vs B")
    ax.set_xticks(positions or [1])
    save(fig, "agreement.png")
    save_csv(
        "agreement.csv",
        ["draft_position", "agreement"],
        [[j, f"{x:.6f}"] for j, x in zip(positions, report.draft_agreement, strict=True)],
    )

    fig, ax = plt.subplots(figsize=(7, 3.5))
    steps = [p for p in report.pairs if p.aux_max_abs is not None]
    xs = list(range(len(steps)))
    floor = 2.0**-30  # log axis: exact agreement drawn at the floor
    ax.plot(xs, [max(p.aux_max_abs or 0.0, floor) for p in steps], label="max abs error")
    ax.plot(xs, [max(p.aux_max_rel or 0.0, floor) for p in steps], label="max rel error")
    ax.axhline(report.rtol, color="grey", linestyle="--", label=f"rtol {report.rtol:.3g}")
    ax.set_yscale("log")
    ax.set_xlabel("paired step")
    ax.set_ylabel("aux error (committed rows)")
    ax.set_title("aux error per step, A vs B" + ("" if steps else " (aux absent)"))
    ax.legend(loc="best", fontsize="small")
    save(fig, "errors.png")
    save_csv(
        "errors.csv",
        ["step_a", "step_b", "aux_max_abs", "aux_max_rel", "aux_over_tolerance"],
        [[p.step_a, p.step_b, p.aux_max_abs, p.aux_max_rel, p.aux_over_tolerance] for p in steps],
    )
    return written
