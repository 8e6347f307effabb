"""The paired comparisons of j0.measure.stats as markdown, the same in bench's report.md and mini's
tables: the text that says what the columns mean (STATS_TEXT), the header and one row per
comparison.

Standard library only.
"""

from __future__ import annotations

from typing import Any

from j0.measure import stats

STATS_TEXT = (
    "Paired by prompt: the mean of the per-prompt differences, its 95 % bootstrap percentile "
    f"interval ({stats.RESAMPLES:,} resamples, seeded; where prompts share a source, the sources "
    "are resampled), the two-sided sign-flip test (exact up to "
    f"{stats.EXACT_MAX} units, else a seeded Monte Carlo of {stats.MC_DRAWS:,} draws), the "
    "verdict (**not resolved** while the interval holds 0 or p >= 0.05), the independent "
    "prompts that would "
    "resolve the measured effect at 80 % power (normal approximation from the measured sd) and "
    f"the power the prompts have now for an effect of {stats.DELTA}; Student's t interval beside."
)


def comparison_header(first: str) -> list[str]:
    cols = first.count("|") + 1
    return [
        f"| {first} | prompts (sources) | effect (mean) | 95 % bootstrap | t interval "
        f"| sign-flip p | verdict | sd | prompts for 80 % power | power at {stats.DELTA} |",
        "|" + "---|" * (cols + 9),
    ]


def comparison_row(first: str, c: dict[str, Any], spec: str = ".3f") -> str:
    """One row of comparison_header's table from a j0.measure.stats comparison."""
    if not c["prompts"]:
        return f"| {first} | 0 | n/a (no prompt in both) |" + " |" * 8
    units = f" ({c['units']})" if c["clustered_by_source"] else ""
    ci = c["ci95"]
    boot = "n/a" if ci is None else f"[{format(ci[0], spec)}, {format(ci[1], spec)}]"
    test = c["permutation"]
    how = "exact" if test["method"] == "exact" else f"MC {test['draws']:,}"
    p = "n/a" if test["p_value"] is None else f"{test['p_value']:.4f} ({how})"
    t = c.get("t_ci95")
    t_text = "n/a" if not t else f"[{format(t[0], spec)}, {format(t[1], spec)}]"
    power = c["power_at_delta"]
    effect = format(c["effect"], ("" if c["kind"] == "ratio" else "+") + spec)
    return (
        f"| {first} | {c['prompts']}{units} | {effect} | {boot} | {t_text} | {p} | "
        f"{c['verdict']} | {_fmt(c['sd'])} | {c['prompts_needed_80'] or 'n/a'} | "
        f"{'n/a' if power is None else format(power, '.2f')} |"
    )


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)
