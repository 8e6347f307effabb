"""`j0 bench report DIR`: one table and three plots (with their CSV) over the settings in DIR.

DIR/<setting>/result.json (compose) or DIR/<setting>/result-shard-NN.json (sharded runs, merged
here per setting by request: a prompt measured in two shards is kept once, from the first).
A setting's draft tokens, J0 state and prefix caching come from DIR/matrix.json where there is
one, else from the result's manifest and responses, else from a name like `k15-j0-on`.
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.atomic import write_bytes_atomic, write_text_atomic
from j0.bench import pairing, results, roofline
from j0.bench.results import BenchResult
from j0.engine import spec_counts
from j0.errors import INPUT_LACKS, J0Error, require

_NAME = re.compile(r"k(?P<k>\d+).*?j0[-_]?(?P<j0>on|off)", re.IGNORECASE)


@dataclass
class Setting:
    name: str
    files: list[Path]
    requests: list[dict[str, Any]] = field(default_factory=list)
    docs: list[BenchResult] = field(default_factory=list)
    k: int | None = None
    j0: str = "unknown"
    prefix_caching: str = "unknown"
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("ok")]


def _request_key(entry: dict[str, Any]) -> str:
    return str(entry.get("prompt_sha256") or entry.get("prompt_id"))


def find_settings(folder: Path) -> list[Setting]:
    if not folder.is_dir():
        raise J0Error(f"{folder}: no such folder", INPUT_LACKS)
    settings = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        files = [sub / "result.json"] if (sub / "result.json").is_file() else []
        files += sorted(sub.glob("result-shard-*.json"))
        if files:
            settings.append(Setting(sub.name, files))
    if not settings:
        raise J0Error(
            f"{folder}: no <setting>/result.json or <setting>/result-shard-NN.json inside",
            INPUT_LACKS,
        )
    matrix = _matrix_settings(folder)
    for setting in settings:
        _merge(setting)
        _describe(setting, matrix.get(setting.name))
    return settings


def _matrix_settings(folder: Path) -> dict[str, dict[str, Any]]:
    path = folder / "matrix.json"
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return {}
    items = doc.get("settings", []) if isinstance(doc, dict) else []
    return {str(s["name"]): s for s in items if isinstance(s, dict) and "name" in s}


def _merge(setting: Setting) -> None:
    seen: set[str] = set()
    for path in setting.files:
        doc = results.read_result(path)
        setting.docs.append(doc)
        for entry in doc.requests:
            key = _request_key(entry)
            if key in seen:
                setting.notes.append(f"{path.name}: request {entry.get('prompt_id')} seen before")
                continue
            seen.add(key)
            setting.requests.append(entry)
        if not doc.complete:
            setting.notes.append(f"{path.name}: incomplete run ({doc.error})")
        status = doc.metrics_crosscheck.get("status")
        if status == "mismatch":
            setting.notes.append(f"{path.name}: per-request metrics and /metrics deltas differ")


def _describe(setting: Setting, matrix: dict[str, Any] | None) -> None:
    if matrix:
        setting.k = matrix.get("num_speculative_tokens")
        if "j0" in matrix:
            setting.j0 = "on" if matrix["j0"] in (True, "on", 1) else "off"
        if "prefix_caching" in matrix:
            setting.prefix_caching = "on" if matrix["prefix_caching"] else "off"
    manifest = setting.docs[0].manifest
    if setting.j0 == "unknown" and manifest.get("j0") in ("on", "off"):
        setting.j0 = manifest["j0"]
    if setting.k is None:
        ks = {
            (r.get("speculative_decoding") or {}).get("num_spec_tokens") for r in setting.requests
        } - {None}
        if len(ks) == 1:
            setting.k = int(ks.pop())
    match = _NAME.search(setting.name)
    if match:
        if setting.k is None:
            setting.k = int(match["k"])
        if setting.j0 == "unknown":
            setting.j0 = match["j0"].lower()


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def figures(setting: Setting) -> dict[str, Any]:
    ok = setting.ok
    counts, _ = results.pooled(ok)
    fig = (
        spec_counts.figures(counts)
        if counts
        else {"acceptance_length": None, "acceptance_rate": None, "per_position_acceptance": []}
    )
    itl_weighted = [
        (r["itl_ms_mean"], max(r.get("num_chunks", 2) - 1, 1))
        for r in ok
        if r.get("itl_ms_mean") is not None
    ]
    weight = sum(w for _, w in itl_weighted)
    return {
        **fig,
        "requests": len(setting.requests),
        "requests_ok": len(ok),
        "output_tok_s": _mean([r["output_tok_s"] for r in ok if r.get("output_tok_s")]),
        "ttft_ms": _mean([r["ttft_ms"] for r in ok if r.get("ttft_ms") is not None]),
        "itl_ms": sum(v * w for v, w in itl_weighted) / weight if weight else None,
        "flags": sum(len(r.get("flags") or []) for r in setting.requests),
    }


def _per_prompt(setting: Setting, key: str) -> dict[str, float]:
    values = {}
    for r in setting.ok:
        value = r.get(key)
        if value is None and key == "acceptance_length":
            counts = results.entry_counts(r)
            value = spec_counts.acceptance_length(counts) if counts else None
        if value is not None:
            values[_request_key(r)] = float(value)
    return values


def pairs(settings: list[Setting]) -> list[dict[str, Any]]:
    """J0 on minus off for every draft-token count that has both."""
    out = []
    for k in sorted({s.k for s in settings if s.k is not None}):
        on = [s for s in settings if s.k == k and s.j0 == "on"]
        off = [s for s in settings if s.k == k and s.j0 == "off"]
        if len(on) != 1 or len(off) != 1:
            continue
        out.append(
            {
                "k": k,
                "on": on[0].name,
                "off": off[0].name,
                "acceptance_length": pairing.paired_difference(
                    _per_prompt(on[0], "acceptance_length"),
                    _per_prompt(off[0], "acceptance_length"),
                ),
                "output_tok_s": pairing.paired_difference(
                    _per_prompt(on[0], "output_tok_s"), _per_prompt(off[0], "output_tok_s")
                ),
            }
        )
    return out


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _diff(d: dict[str, Any], spec: str) -> str:
    if d["mean"] is None:
        return "n/a (no prompt in both)"
    ci = d["ci95"]
    span = (
        f" [{format(ci[0], spec)}, {format(ci[1], spec)}]" if ci else " (one prompt: no interval)"
    )
    return f"{d['mean']:+{spec}}{span}, n={d['n']}"


def markdown(
    settings: list[Setting],
    figs: dict[str, dict[str, Any]],
    paired: list[dict[str, Any]],
    roof: dict[str, Any],
) -> str:
    lines = [
        "# j0 bench report",
        "",
        "Acceptance length = 1 + accepted / drafts and acceptance rate = accepted / draft tokens, "
        "pooled over each setting's requests from the server's per-request metrics; tok/s is the "
        "mean over requests of (output tokens - 1) / decode time; TTFT the mean; ITL the mean gap "
        "between streamed chunks (one engine step each).",
        "",
        "| setting | draft tokens | J0 | prefix caching | requests | acceptance length | "
        "acceptance rate | tok/s | TTFT (ms) | ITL (ms) | flagged |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in settings:
        f = figs[s.name]
        rate = None if f["acceptance_rate"] is None else f["acceptance_rate"] * 100
        lines.append(
            f"| {s.name} | {s.k or '?'} | {s.j0} | {s.prefix_caching} | "
            f"{f['requests_ok']}/{f['requests']} | {_fmt(f['acceptance_length'])} | "
            f"{_fmt(rate, '.1f')} % | {_fmt(f['output_tok_s'], '.1f')} | "
            f"{_fmt(f['ttft_ms'], '.1f')} | {_fmt(f['itl_ms'], '.2f')} | {f['flags']} |"
        )
    lines += ["", "## J0 on minus off (paired by prompt, 95 % interval over prompts)", ""]
    if paired:
        lines += ["| draft tokens | acceptance length | tok/s |", "|---|---|---|"]
        lines += [
            f"| {p['k']} | {_diff(p['acceptance_length'], '.3f')} | "
            f"{_diff(p['output_tok_s'], '.1f')} |"
            for p in paired
        ]
    else:
        lines.append("No draft-token count has both a J0 on and a J0 off setting.")
    lines += [
        "",
        "## Plots",
        "",
        "- `acceptance_vs_context.png` (`.csv`): acceptance length per context-length bin",
        "- `per_position.png` (`.csv`): fraction of drafts accepted past each position",
        f"- `throughput.png` (`.csv`): tok/s and the decode roofline ({roof['text']})",
        "",
    ]
    notes = [f"- {s.name}: {n}" for s in settings for n in s.notes]
    if any(s.prefix_caching == "on" and s.j0 == "on" for s in settings):
        notes.append(
            "- prefix caching was on with J0 on: cached prompt positions take J0 "
            "tokens from another request's history (see flagged requests)"
        )
    if notes:
        lines += ["## Notes", "", *notes, ""]
    return "\n".join(lines)


def _csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buffer.getvalue()


def plots(
    settings: list[Setting],
    figs: dict[str, dict[str, Any]],
    roof: dict[str, Any],
    bin_size: int,
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
        pairs_ = [
            (r["prompt_tokens"], r["per_step_accepted"])
            for r in s.ok
            if "per_step_accepted" in r and r.get("prompt_tokens") is not None
        ]
        bins = spec_counts.by_context(pairs_, bin_size)
        for b in bins:
            rows.append({"setting": s.name, **b})
        if bins:
            ax.plot(
                [(b["context_start"] + b["context_end"]) / 2 for b in bins],
                [b["acceptance_length"] for b in bins],
                marker="o",
                label=s.name,
            )
    ax.set_xlabel(f"context length (tokens, bins of {bin_size})")
    ax.set_ylabel("acceptance length")
    ax.grid(alpha=0.3)
    if rows:
        ax.legend()
    save(fig, "acceptance_vs_context", rows)

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
    save(fig, "per_position", rows)

    rows = []
    fig, ax = plt.subplots(figsize=(7, 4))
    names = [s.name for s in settings]
    tok_s = [figs[n]["output_tok_s"] or 0.0 for n in names]
    ax.bar(names, tok_s, color="tab:blue", label="measured tok/s (mean over requests)")
    for i, n in enumerate(names):
        al = figs[n]["acceptance_length"]
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
    save(fig, "throughput", rows)
    return written


def main(
    folder: Path,
    *,
    out: Path | None = None,
    gpu: str | None = None,
    bandwidth_tbs: float | None = None,
    weights_index: Path | None = None,
    weight_bytes: float | None = None,
    bin_size: int = 512,
) -> int:
    settings = find_settings(folder)
    out = out or folder
    bandwidth = (
        bandwidth_tbs
        if bandwidth_tbs is not None
        else (roofline.bandwidth_tbs(gpu) if gpu else None)
    )
    weights = (
        float(weight_bytes)
        if weight_bytes is not None
        else (float(roofline.weight_bytes_of_index(weights_index)) if weights_index else None)
    )
    if bandwidth and weights:
        where = f" ({gpu})" if gpu else ""
        text = f"{bandwidth:g} TB/s{where}, {weights / 1e9:.2f} GB of weights"
    else:
        text = "not drawn: give --gpu or --bandwidth, and --weights-index or --weight-bytes"
    roof = {"bandwidth_tbs": bandwidth, "weight_bytes": weights, "text": text}
    figs = {s.name: figures(s) for s in settings}
    paired = pairs(settings)
    written = plots(settings, figs, roof, bin_size, out)
    report_md = out / "report.md"
    write_text_atomic(report_md, markdown(settings, figs, paired, roof))
    summary = {
        "settings": {
            s.name: {
                "k": s.k,
                "j0": s.j0,
                "prefix_caching": s.prefix_caching,
                "files": [p.name for p in s.files],
                **figs[s.name],
            }
            for s in settings
        },
        "j0_on_minus_off": paired,
        "roofline": roof,
    }
    write_text_atomic(out / "report.json", json.dumps(summary, indent=1) + "\n")
    print(report_md.read_text())
    print(f"wrote {report_md}, {out / 'report.json'} and {len(written)} plot files in {out}")
    return 0
