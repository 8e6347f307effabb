"""report.md: the settings' table, the acceptance histogram, acceptance by context length (both
definitions, in the bins asked for), the spread over repeats, the baseline comparison (speedup
and the lossless check) and J0 on minus off.

Standard library only.
"""

from __future__ import annotations

from typing import Any

from j0.bench.report.results_folder import PointResults
from j0.measure import repetition, stats
from j0.measure.stats_table import STATS_TEXT, comparison_header, comparison_row

DEFINITIONS = (
    "Acceptance length (pooled) = 1 + accepted / verify steps over all steps of a setting's "
    "requests, from the server's per-request metrics: the figure of vLLM's /metrics and `vllm "
    "bench serve`. Acceptance length (request mean) = the mean over requests of each request's "
    "mean per-step acceptance length: the figure of the DFlash paper and the `dflash` package's "
    "benchmark. Acceptance rate = accepted / draft tokens. tok/s is the mean over requests of "
    "(output tokens - 1) / decode time; TTFT the mean; ITL the mean gap between streamed chunks "
    "(one engine step each). J0 is as run where the server's log or `j0 status --json` showed "
    "the file that ran (`j0 bench run --log`, `--status-json`, the matrix's server logs); as "
    "asked (`--j0`, the setting's name) otherwise: not verified."
)

J0_AS = {"run": "as run", "asked": "as asked, not verified"}


def j0_cell(setting: PointResults) -> str:
    """The settings table's J0: the state and how it is known."""
    if setting.baseline:
        return setting.j0
    return f"{setting.j0} ({J0_AS.get(setting.j0_as or '', 'not verified')})"


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def _interval(d: dict[str, Any], spec: str, signed: bool = True) -> str:
    if d["mean"] is None:
        return "n/a (no prompt in both)"
    ci = d["ci95"]
    span = (
        f" [{format(ci[0], spec)}, {format(ci[1], spec)}]" if ci else " (one prompt: no interval)"
    )
    mean = format(d["mean"], ("+" if signed else "") + spec)
    return f"{mean}{span}, n={d['n']}"


def settings_table(settings: list[PointResults], figs: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| setting | draft tokens | J0 | prefix caching | requests | acceptance length (pooled) "
        "| acceptance length (request mean) | acceptance rate | tok/s | TTFT (ms) | ITL (ms) "
        "| flagged | excluded |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in settings:
        f = figs[s.name]
        rate = None if f["acceptance_rate"] is None else f["acceptance_rate"] * 100
        k = "none (baseline)" if s.baseline else (s.k or "?")
        lines.append(
            f"| {s.name} | {k} | {j0_cell(s)} | {s.prefix_caching} | "
            f"{f['requests_ok']}/{f['requests']} | {_fmt(f['acceptance_length'])} | "
            f"{_fmt(f['acceptance_length_request_mean'])} | "
            f"{_fmt(rate, '.1f')} % | {_fmt(f['output_tok_s'], '.1f')} | "
            f"{_fmt(f['ttft_ms'], '.1f')} | {_fmt(f['itl_ms'], '.2f')} | {f['flags']} | "
            f"{f['requests_excluded']} |"
        )
    return lines


def excluded_section(settings: list[PointResults]) -> list[str]:
    """The requests kept out of the figures, each with its reasons."""
    total = sum(len(s.excluded) for s in settings)
    if not total:
        return []
    lines = [
        "",
        f"## Requests kept out of the figures ({total})",
        "",
        "Their metrics are outside the possible ranges (a negative or fractional count, more "
        "tokens accepted than drafted, an acceptance rate outside [0, 1], NaN, ...): the figures "
        "above pool the other requests.",
        "",
    ]
    for s in settings:
        lines += [
            f"- {s.name}: {e['file']} request {e['request']} ({e['prompt_id']}): "
            + "; ".join(e["reasons"])
            for e in s.excluded
        ]
    return lines


def histogram_table(settings: list[PointResults], figs: dict[str, dict[str, Any]]) -> list[str]:
    speculative = [s for s in settings if figs[s.name]["acceptance_histogram"]]
    if not speculative:
        return ["No setting has per-step acceptance."]
    width = max(len(figs[s.name]["acceptance_histogram"]) for s in speculative)
    lines = [
        "| setting | " + " | ".join(str(i) for i in range(width)) + " |",
        "|---|" + "---|" * width,
    ]
    for s in speculative:
        h = figs[s.name]["acceptance_histogram"]
        cells = [f"{h[i] * 100:.1f}" if i < len(h) else "" for i in range(width)]
        lines.append(f"| {s.name} | " + " | ".join(cells) + " |")
    return lines


def context_table(settings: list[PointResults], figs: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| setting | context (tokens) | steps | requests | acceptance length (pooled) | "
        "acceptance length (request mean) |",
        "|---|---|---|---|---|---|",
    ]
    for s in settings:
        for b in figs[s.name]["by_context"]:
            end = "" if b["context_end"] is None else b["context_end"]
            lines.append(
                f"| {s.name} | {b['context_start']} to {end or '...'} | {b['num_drafts']} | "
                f"{b['requests']} | {b['acceptance_length']:.3f} | "
                f"{b['acceptance_length_request_mean']:.3f} |"
            )
    return lines


REPETITION_TEXT = (
    "A loop: the output's second half lies in a suffix that repeats with a period of at most "
    f"{repetition.LOOP_PERIOD} tokens (two periods at least). Gate: at least "
    f"{repetition.GATE_SHARE:.0%} of a bin's outputs are no loop (judged on token ids only). "
    "distinct-n: distinct n-grams / n-grams of an output; repeating suffix: the longest suffix "
    f"that repeats with a period up to {repetition.SEARCH_PERIOD}. Means over the bin's outputs."
)


def repetition_table(settings: list[PointResults], figs: dict[str, dict[str, Any]]) -> list[str]:
    rows = [(s, b) for s in settings for b in figs[s.name].get("repetition_by_context") or []]
    if not rows:
        return ["No output carries a repetition measure (results written before it existed)."]
    lines = [
        REPETITION_TEXT,
        "",
        "| setting | context (tokens) | outputs (on token ids) | loops | without a loop | gate "
        "| distinct-1 | distinct-2 | distinct-3 | repeating suffix |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s, b in rows:
        end = "..." if b["context_end"] is None else b["context_end"]
        clean = b["share_without_loop"]
        gate = {True: "pass", False: "**fail**", None: "not judged"}[b["passed"]]
        lines.append(
            f"| {s.name} | {b['context_start']} to {end} | {b['outputs']} ({b['judged']}) | "
            f"{b['loops']} | {'n/a' if clean is None else format(clean, '.1%')} | {gate} | "
            f"{_fmt(b['mean_distinct_1'])} | {_fmt(b['mean_distinct_2'])} | "
            f"{_fmt(b['mean_distinct_3'])} | {_fmt(b['mean_repeating_suffix'], '.1f')} |"
        )
    return lines


def repeats_table(settings: list[PointResults], figs: dict[str, dict[str, Any]]) -> list[str]:
    repeated = [s for s in settings if figs[s.name]["repeats"]["count"] >= 2]
    if not repeated:
        return ["Each setting ran its prompts once (`--repeats N` for a spread over repeats)."]
    lines = [
        "| setting | repeats | acceptance length (pooled) | acceptance length (request mean) "
        "| tok/s | TTFT (ms) | ITL (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in repeated:
        rep = figs[s.name]["repeats"]

        def cell(key: str, spec: str, rep: dict[str, Any] = rep) -> str:
            d = rep["spread"][key]
            if d["mean"] is None:
                return "n/a"
            return (
                f"{format(d['mean'], spec)} ± {_fmt(d['stdev'], spec)} "
                f"(min {format(d['min'], spec)}, max {format(d['max'], spec)})"
            )

        lines.append(
            f"| {s.name} | {rep['count']} | {cell('acceptance_length', '.3f')} | "
            f"{cell('acceptance_length_request_mean', '.3f')} | {cell('output_tok_s', '.1f')} | "
            f"{cell('ttft_ms', '.1f')} | {cell('itl_ms', '.2f')} |"
        )
    return lines


def _difference(d: dict[str, Any]) -> str:
    at = d["first_differing_token"]
    where = "differs" if at is None else f"token {at}"
    return f"{d['prompt_id']} (repeat {d['repeat']}): {where}"


def _speedup(speedup: dict[str, Any]) -> str:
    c = speedup.get("stats")
    if not c or not c["prompts"]:
        return _interval(speedup, ".3f", signed=False)
    ci = c["ci95"]
    span = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else " (no interval)"
    return f"{c['effect']:.3f}{span}, n={c['prompts']}, {c['verdict']}"


def baseline_section(block: dict[str, Any]) -> list[str]:
    if block["setting"] is None:
        return [f"No baseline: {block['note']}."]
    lines = [
        f"Baseline `{block['setting']}` (no speculative decoding): "
        f"{_fmt(block['baseline_output_tok_s'], '.1f')} tok/s, TTFT "
        f"{_fmt(block['baseline_ttft_ms'], '.1f')} ms, ITL {_fmt(block['baseline_itl_ms'], '.2f')} "
        "ms. Speedup = mean over prompts of the setting's tok/s / the baseline's for that prompt, "
        "its 95 % bootstrap interval and verdict (not resolved while the interval holds 1; "
        "j0.measure.stats, as below); outputs compared token by token with the baseline's "
        "(greedy decoding is lossless only if they agree).",
        "",
        "| setting | speedup (paired) | tok/s ratio | TTFT ratio | ITL ratio | outputs equal to "
        "baseline | first differing token |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in block["settings"].items():
        out = c["outputs"]
        firsts = ", ".join(_difference(d) for d in out["differences"][:5])
        firsts += " ..." if len(out["differences"]) > 5 else ""
        lines.append(
            f"| {name} | {_speedup(c['speedup'])} | "
            f"{_fmt(c['speedup_of_means'])} | {_fmt(c['ttft_ratio'])} | {_fmt(c['itl_ratio'])} | "
            f"{out['identical']}/{out['compared']} ({out['compared_by']}) | {firsts or 'none'} |"
        )
    notes = [(name, c["outputs"]) for name, c in block["settings"].items()]
    lines += [f"\n- {name}: {out['note']}" for name, out in notes if out.get("note")]
    lines += [
        f"\n- {name}: {out['missing_in_baseline']} requests have no baseline request of "
        "their prompt"
        for name, out in notes
        if out["missing_in_baseline"]
    ]
    return lines


def markdown(
    settings: list[PointResults],
    figs: dict[str, dict[str, Any]],
    paired: list[dict[str, Any]],
    baseline: dict[str, Any],
    roof: dict[str, Any],
    bins_text: str,
    warnings: list[str] | None = None,
) -> str:
    lines = ["# j0 bench report", ""]
    if warnings:
        lines += [
            "**Warning: runs measured under different setups are paired here "
            "(--allow-mismatch); their differences are not J0's:**",
            "",
            *[f"- {w}" for w in warnings],
            "",
        ]
    lines += [DEFINITIONS, "", *settings_table(settings, figs), *excluded_section(settings)]
    lines += ["", "## Acceptance histogram (% of verify steps with i accepted drafts)", ""]
    lines += histogram_table(settings, figs)
    lines += ["", f"## Acceptance length by context length ({bins_text})", ""]
    lines += context_table(settings, figs)
    lines += ["", f"## Repetition of the outputs by context length ({bins_text})", ""]
    lines += repetition_table(settings, figs)
    lines += ["", "## Over repeats (mean ± sample standard deviation, min, max)", ""]
    lines += repeats_table(settings, figs)
    lines += ["", "## Against the baseline", ""]
    lines += baseline_section(baseline)
    lines += ["", "## J0 on minus off (paired by prompt)", ""]
    mismatched = [p for p in paired if p.get("mismatch")]
    if mismatched:
        names = ", ".join(f"{p['on']} vs {p['off']}" for p in mismatched)
        lines += [f"**Warning: measured under different setups (see the top): {names}.**", ""]
    if paired:
        lines += [STATS_TEXT, "", *comparison_header("draft tokens | J0 on | J0 off")]
        lines += [
            comparison_row(f"{p['k']} | {p['on']} | {p['off']}", p["acceptance_length"]["stats"])
            for p in paired
        ]
        lines += ["", "Output tok/s, on minus off:", ""]
        lines += [
            f"- k={p['k']}, {p['on']}: {stats.describe(p['output_tok_s']['stats'], '.1f')} "
            f"(t interval {_interval(p['output_tok_s'], '.1f')})"
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
