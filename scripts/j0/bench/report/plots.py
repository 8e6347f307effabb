"""The report's plots, each with the CSV of its points beside it: acceptance length against
context length (pooled, solid; request mean, dashed), per-position acceptance, and tok/s against
the decode roofline (acceptance length x memory bandwidth / weight bytes). matplotlib is imported
where it is used.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from j0.bench.analysis import roofline
from j0.bench.report.results_folder import PointResults
from j0.edge.atomic import write_bytes_atomic, write_text_atomic
from j0.errors import require

# The plots' file names (each STEM.png with STEM.csv beside it), in the order they are drawn.
PLOT_STEMS = ("acceptance_vs_context", "per_position", "throughput")


def _csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buffer.getvalue()


def plots(
    settings: list[PointResults],
    figs: dict[str, dict[str, Any]],
    roof: dict[str, Any],
    bins_text: str,
    out: Path,
) -> list[Path]:
    matplotlib = require("matplotlib", "j0 bench report", extra="bench")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []

    def save(fig: Any, stem: str, rows: list[dict[str, Any]]) -> None:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        write_bytes_atomic(out / f"{stem}.png", buffer.getvalue())
        write_text_atomic(out / f"{stem}.csv", _csv(rows))
        written.extend([out / f"{stem}.png", out / f"{stem}.csv"])

    rows: list[dict[str, Any]] = []
    fig, ax = plt.subplots(figsize=(7, 4))
    for s in settings:
        bins = figs[s.name]["by_context"]
        for b in bins:
            rows.append({"setting": s.name, **b})
        if bins:
            middles = [
                b["context_start"]
                if b["context_end"] is None
                else (b["context_start"] + b["context_end"]) / 2
                for b in bins
            ]
            line = ax.plot(
                middles, [b["acceptance_length"] for b in bins], marker="o", label=f"{s.name}"
            )
            ax.plot(
                middles,
                [b["acceptance_length_request_mean"] for b in bins],
                marker="x",
                linestyle="--",
                color=line[0].get_color(),
                label=f"{s.name} (request mean)",
            )
    ax.set_xlabel(f"context length (tokens, {bins_text})")
    ax.set_ylabel("acceptance length")
    ax.grid(alpha=0.3)
    if rows:
        ax.legend()
    save(fig, PLOT_STEMS[0], rows)

    rows = []
    fig, ax = plt.subplots(figsize=(7, 4))
    for s in settings:
        per_pos = figs[s.name]["per_position_acceptance"]
        rows += [{"setting": s.name, "position": i, "acceptance": p} for i, p in enumerate(per_pos)]
        if per_pos:
            ax.plot(range(len(per_pos)), per_pos, marker="o", label=s.name)
    ax.set_xlabel("draft position")
    ax.set_ylabel("drafts accepted past this position")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    if rows:
        ax.legend()
    save(fig, PLOT_STEMS[1], rows)

    rows = []
    fig, ax = plt.subplots(figsize=(7, 4))
    names = [s.name for s in settings]
    baselines = {s.name for s in settings if s.baseline}
    tok_s = [figs[n]["output_tok_s"] or 0.0 for n in names]
    ax.bar(names, tok_s, color="tab:blue", label="measured tok/s (mean over requests)")
    for i, n in enumerate(names):
        al = 1.0 if n in baselines else figs[n]["acceptance_length"]  # one token per step
        limit = (
            roofline.roofline_tok_s(al, roof["bandwidth_tbs"], roof["weight_bytes"])
            if al is not None and roof["weight_bytes"] and roof["bandwidth_tbs"]
            else None
        )
        rows.append(
            {
                "setting": n,
                "acceptance_length": al,
                "tok_s": figs[n]["output_tok_s"],
                "roofline_tok_s": limit,
            }
        )
        if limit is not None:
            ax.hlines(
                limit,
                i - 0.4,
                i + 0.4,
                colors="tab:red",
                label="roofline: AL x bandwidth / weight bytes" if i == 0 else None,
            )
    ax.set_ylabel("output tokens per second (single stream)")
    ax.set_title(roof["text"], fontsize=8)
    ax.tick_params(axis="x", labelrotation=20)
    ax.legend(fontsize=8)
    save(fig, PLOT_STEMS[2], rows)
    return written
