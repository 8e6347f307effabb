"""`j0 bench report DIR`'s work: read the settings, compute the figures (re-binned by context
length as asked: --bin-size N, or --bins a,b,c), compare with the baseline, check that each J0
on/off pair, and each setting and the baseline, were measured under one setup (compatibility;
refused before anything is written, unless --allow-mismatch), then write report.md, report.json
and the plots with their CSV.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.bench.analysis import acceptance, roofline
from j0.bench.report.baseline import against_baseline
from j0.bench.report.compatibility import check as check_compatibility
from j0.bench.report.figures import figures, pairs
from j0.bench.report.markdown import markdown
from j0.bench.report.plots import PLOT_STEMS, plots
from j0.bench.report.results_folder import find_settings
from j0.edge.atomic import check_output_folder, refuse_own_inputs, write_text_atomic
from j0.errors import require, require_input_file
from j0.terminal import sink


@dataclass(frozen=True)
class ReportOptions:
    """`j0 bench report`'s flags (`--bandwidth` is bandwidth_tbs; `--bins` the edges)."""

    folder: Path
    out: Path | None = None
    gpu: str | None = None
    bandwidth_tbs: float | None = None
    weights_index: Path | None = None
    weight_bytes: float | None = None
    bin_size: int = 512
    bins: list[int] | None = None
    allow_mismatch: bool = False


@dataclass(frozen=True)
class ReportOutcome:
    report_md: Path
    report_json: Path
    written: list[Path]
    summary: dict[str, Any]


def _roofline(opts: ReportOptions) -> dict[str, Any]:
    bandwidth = (
        opts.bandwidth_tbs
        if opts.bandwidth_tbs is not None
        else (roofline.bandwidth_tbs(opts.gpu) if opts.gpu else None)
    )
    weights = (
        float(opts.weight_bytes)
        if opts.weight_bytes is not None
        else (
            float(roofline.weight_bytes_of_index(opts.weights_index))
            if opts.weights_index
            else None
        )
    )
    if bandwidth and weights:
        where = f" ({opts.gpu})" if opts.gpu else ""
        text = f"{bandwidth:g} TB/s{where}, {weights / 1e9:.2f} GB of weights"
    else:
        text = "not drawn: give --gpu or --bandwidth, and --weights-index or --weight-bytes"
    return {"bandwidth_tbs": bandwidth, "weight_bytes": weights, "text": text}


def outputs_of(out: Path) -> list[tuple[str, Path]]:
    """Every file the report writes into `out`."""
    names = ["report.md", "report.json"]
    names += [f"{stem}.{kind}" for stem in PLOT_STEMS for kind in ("png", "csv")]
    return [("the report's", out / name) for name in names]


def run_report(opts: ReportOptions) -> ReportOutcome:
    for module in ("numpy", "matplotlib"):  # the intervals, the plots: before anything is read
        require(module, "j0 bench report", extra="bench")
    if opts.out is not None:
        check_output_folder(opts.out, "--out")
    if opts.weights_index is not None:
        require_input_file(opts.weights_index, "--weights-index")
    settings = find_settings(opts.folder)
    out = opts.out or opts.folder
    inputs = [("the result file", path) for s in settings for path in s.files]
    inputs.append(("the matrix record", opts.folder / "matrix.json"))
    if opts.weights_index is not None:
        inputs.append(("--weights-index", opts.weights_index))
    refuse_own_inputs(outputs_of(out), inputs)
    roof = _roofline(opts)
    if opts.bins:
        bin_of = acceptance.edge_bins(opts.bins)
        bins_text = "bins at " + ", ".join(str(e) for e in opts.bins)
        binning: dict[str, Any] = {"bins": list(opts.bins)}
    else:
        bin_of = acceptance.fixed_bins(opts.bin_size)
        bins_text = f"bins of {opts.bin_size}"
        binning = {"bin_size": opts.bin_size}
    figs = {s.name: figures(s, bin_of) for s in settings}
    paired = pairs(settings)
    baseline = against_baseline(settings, figs)
    # refused before anything is written
    warnings = check_compatibility(settings, paired, baseline, opts.allow_mismatch)
    written = plots(settings, figs, roof, bins_text, out)
    report_md = out / "report.md"
    write_text_atomic(
        report_md, markdown(settings, figs, paired, baseline, roof, bins_text, warnings)
    )
    summary = {
        "warnings": warnings,
        "settings": {
            s.name: {
                "k": s.k,
                "j0": s.j0,
                "j0_as": s.j0_as,
                "prefix_caching": s.prefix_caching,
                "baseline": s.baseline,
                "files": [p.name for p in s.files],
                **figs[s.name],
            }
            for s in settings
        },
        "context_bins": binning,
        "baseline": baseline,
        "j0_on_minus_off": paired,
        "roofline": roof,
    }
    report_json = out / "report.json"
    write_text_atomic(report_json, json.dumps(summary, indent=1) + "\n")
    return ReportOutcome(report_md, report_json, written, summary)


def said(done: ReportOutcome) -> str:
    """What `j0 bench report` prints: report.md, then where the files went."""
    return (
        f"{done.report_md.read_text()}\n"
        f"wrote {done.report_md}, {done.report_json} and {len(done.written)} plot files in "
        f"{done.report_md.parent}"
    )


def say(done: ReportOutcome) -> None:
    sink.say(said(done))


def main(
    folder: Path,
    *,
    out: Path | None = None,
    gpu: str | None = None,
    bandwidth_tbs: float | None = None,
    weights_index: Path | None = None,
    weight_bytes: float | None = None,
    bin_size: int = 512,
    bins: list[int] | None = None,
    allow_mismatch: bool = False,
) -> int:
    """`j0 bench report FOLDER` as a function for other commands (the signature it had before
    ReportOptions): the report written and printed; 0."""
    say(
        run_report(
            ReportOptions(
                folder=folder,
                out=out,
                gpu=gpu,
                bandwidth_tbs=bandwidth_tbs,
                weights_index=weights_index,
                weight_bytes=weight_bytes,
                bin_size=bin_size,
                bins=bins,
                allow_mismatch=allow_mismatch,
            )
        )
    )
    return 0
