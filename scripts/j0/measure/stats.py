"""Comparisons that say when they cannot decide: two result sets paired by prompt, a
permutation test, a bootstrap interval, a verdict and the number of prompts the measured effect
would need.

    differences       one per prompt in both sets: a[p] - b[p] (acceptance length, tok/s), or
                      a[p] / b[p] - 1 for a ratio (a speedup); the effect is their mean
    sources           where prompts share a source (a file, a document: the request entries'
                      `prompt_source`), the source is the unit: its prompts' differences are
                      flipped together and resampled together (a cluster), because prompts of one
                      source are not independent samples
    sign-flip test    H0: each unit's total difference is as likely + as -. The p-value is the
                      share of the 2^G sign patterns of the G units' totals whose |sum| is at
                      least the observed |sum| (two-sided): exact (enumerated, meet in the middle)
                      for G <= 20, else a seeded Monte Carlo of MC_DRAWS patterns,
                      p = (1 + hits) / (1 + draws) (scipy.stats.permutation_test's convention)
    bootstrap         RESAMPLES resamples of the units with replacement (seeded), the statistic
                      the mean difference per prompt of each resample (sum of the drawn units'
                      totals / their prompts); the 95 % percentile interval, quantiles by linear
                      interpolation (numpy.percentile's default, as scipy.stats.bootstrap takes
                      them)
    verdict           "not resolved" while the interval holds 0 or the sign-flip p is 0.05 or
                      more (with few units the percentile bootstrap is too narrow, and the
                      exact test cannot go below 2 / 2^G: fewer than 6 units never resolve);
                      else which side is larger
    prompts needed    independent prompts (one per source) that would resolve the measured
                      effect at 80 % power, two-sided 5 %: ((z_0.975 + z_0.8) sd / |effect|)^2,
                      sd the measured standard deviation of the per-prompt differences (normal
                      approximation); and the power those prompts have now for an effect of
                      `delta` (0.1 acceptance length by default)

tests/bench/test_stats.py checks the p-values and intervals against scipy.stats. The draws are
random.Random(SEED)'s, made many at once with numpy (j0.measure.draws: the same numbers as the
loops over random.Random and math.fsum that tests/bench/test_draws.py runs beside them).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from j0.measure import pairing

RESAMPLES = 10_000
EXACT_MAX = 20  # units; beyond this many the sign-flip test is a Monte Carlo
MC_DRAWS = 10_000
SEED = 0
ALPHA = 0.05
POWER = 0.8
DELTA = 0.1  # the effect item 3 of issue 29 asks the power for (acceptance length)
NOT_RESOLVED = "not resolved"


def paired(
    a: Mapping[str, float], b: Mapping[str, float], sources: Mapping[str, str] | None = None
) -> tuple[list[str], list[float], list[str]]:
    """The prompts in both (sorted), a - b for each, and each one's source (its own key where
    none is known)."""
    keys = sorted(k for k in a if k in b)
    known = sources or {}
    return keys, [a[k] - b[k] for k in keys], [str(known.get(k) or f"prompt:{k}") for k in keys]


def units(values: Sequence[float], labels: Sequence[str]) -> list[tuple[float, int]]:
    """(total, prompts) per source, in sorted source order."""
    found: dict[str, list[float]] = {}
    for value, label in zip(values, labels, strict=True):
        found.setdefault(label, []).append(value)
    return [(math.fsum(found[k]), len(found[k])) for k in sorted(found)]


def _signed_sums(values: Sequence[float]) -> list[float]:
    sums = [0.0]
    for v in values:
        sums = [s + v for s in sums] + [s - v for s in sums]
    return sums


def sign_flip(
    totals: Sequence[float],
    *,
    exact_max: int = EXACT_MAX,
    draws: int = MC_DRAWS,
    seed: int = SEED,
) -> dict[str, Any]:
    """The two-sided sign-flip test of the units' totals: {p_value, method, units, draws}."""
    g = len(totals)
    if g == 0:
        return {"p_value": None, "method": None, "units": 0, "draws": None, "seed": None}
    observed = abs(math.fsum(totals))
    # ties within rounding count as ties (sums in another order may differ in the last bits)
    threshold = observed - 1e-9 * max(1.0, math.fsum(abs(t) for t in totals))
    if threshold <= 0:
        method = "exact" if g <= exact_max else "monte carlo"
        return {
            "p_value": 1.0,
            "method": method,
            "units": g,
            "draws": None if g <= exact_max else draws,
            "seed": None if g <= exact_max else seed,
        }
    if g <= exact_max:
        half = g // 2
        left, right = _signed_sums(totals[:half]), sorted(_signed_sums(totals[half:]))
        hits = 0
        for s in left:
            hits += len(right) - bisect.bisect_left(right, threshold - s)
            hits += bisect.bisect_right(right, -threshold - s)
        return {
            "p_value": hits / 2**g,
            "method": "exact",
            "units": g,
            "draws": None,
            "seed": None,
        }
    from j0.measure import draws as drawn

    # each draw: the sum of the units whose bit of random.Random(seed).getrandbits(g) is set
    total = math.fsum(totals)
    flipped = drawn.row_sums(drawn.bit_rows(seed, g, draws), list(totals))
    hits = sum(1 for f in flipped if abs(total - 2.0 * f) >= threshold)
    return {
        "p_value": (1 + hits) / (1 + draws),
        "method": "monte carlo",
        "units": g,
        "draws": draws,
        "seed": seed,
    }


def quantile(ordered: Sequence[float], q: float) -> float:
    """numpy.percentile's default (linear) of a sorted sequence, q in [0, 1]."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bootstrap(
    cells: Sequence[tuple[float, int]],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = 1 - ALPHA,
) -> dict[str, Any]:
    """The percentile interval of the mean difference per prompt, resampling the units."""
    g = len(cells)
    if g == 0:
        return {"ci": None, "resamples": resamples, "seed": seed}
    import numpy as np

    from j0.measure import draws

    # each resample: random.Random(seed + 1).choices(range(g), k=g), the drawn units' exact sum
    # (math.fsum's) over their prompts
    times = draws.counts(draws.choices(seed + 1, g, g, resamples), g)
    sums = draws.row_sums(times, [c[0] for c in cells])
    prompts = (times @ np.array([c[1] for c in cells], dtype=np.int64)).tolist()
    stats = sorted(total / n for total, n in zip(sums, prompts, strict=True))
    tail = (1 - level) / 2
    ci = [quantile(stats, tail), quantile(stats, 1 - tail)]
    return {"ci": ci, "resamples": resamples, "seed": seed}


def normal_quantile(p: float) -> float:
    return statistics.NormalDist().inv_cdf(p)


def prompts_needed(sd: float | None, effect: float | None, power: float = POWER) -> int | None:
    """Independent prompts that detect `effect` at `power`, two-sided ALPHA (normal approx)."""
    if sd is None or effect is None or effect == 0:
        return None
    if sd == 0:
        return 2
    z = normal_quantile(1 - ALPHA / 2) + normal_quantile(power)
    return max(2, math.ceil((z * sd / abs(effect)) ** 2))


def power_at(sd: float | None, n: int, delta: float) -> float | None:
    """The power of n independent prompts for an effect `delta`, two-sided ALPHA (normal)."""
    if sd is None or n < 2:
        return None
    if sd == 0:
        return 1.0
    z = abs(delta) * math.sqrt(n) / sd - normal_quantile(1 - ALPHA / 2)
    return statistics.NormalDist().cdf(z)


def verdict(
    ci: Sequence[float] | None, names: tuple[str, str] = ("A", "B"), p: float | None = 0.0
) -> str:
    if not ci or ci[0] <= 0 <= ci[1] or p is None or p >= ALPHA:
        return NOT_RESOLVED
    a, b = names
    return f"resolved: {a} > {b}" if ci[0] > 0 else f"resolved: {a} < {b}"


def compare(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    sources: Mapping[str, str] | None = None,
    ratio: bool = False,
    names: tuple[str, str] = ("A", "B"),
    delta: float | None = DELTA,
    resamples: int = RESAMPLES,
    exact_max: int = EXACT_MAX,
    draws: int = MC_DRAWS,
    seed: int = SEED,
) -> dict[str, Any]:
    """A against B, paired by prompt: the effect (mean of a - b, or of a / b for a ratio), its
    bootstrap interval, the sign-flip p-value, the verdict and the prompts needed."""
    if ratio:
        keys = sorted(k for k in a if b.get(k))
        a = {k: a[k] / b[k] - 1.0 for k in keys}
        b = dict.fromkeys(keys, 0.0)
    keys, diffs, labels = paired(a, b, sources)
    cells = units(diffs, labels)
    clustered = len(cells) < len(diffs)
    shift = 1.0 if ratio else 0.0
    n = len(diffs)
    mean = math.fsum(diffs) / n if n else None
    sd = statistics.stdev(diffs) if n >= 2 else None
    interval = bootstrap(cells, resamples=resamples, seed=seed) if n >= 2 else {"ci": None}
    ci = interval["ci"]
    test = sign_flip([c[0] for c in cells], exact_max=exact_max, draws=draws, seed=seed)
    t_ci = pairing.mean_interval(diffs)["ci95"] if n >= 2 else None
    return {
        "kind": "ratio" if ratio else "difference",
        "names": list(names),
        "prompts": n,
        "units": len(cells),
        "clustered_by_source": clustered,
        "effect": None if mean is None else mean + shift,
        "mean_difference": mean,
        "sd": sd,
        "ci95": None if ci is None else [ci[0] + shift, ci[1] + shift],
        "t_ci95": None if t_ci is None else [t_ci[0] + shift, t_ci[1] + shift],
        "bootstrap": {
            "method": "percentile",
            "resamples": interval.get("resamples"),
            "seed": interval.get("seed"),
            "unit": "source" if clustered else "prompt",
        },
        "permutation": test,
        "verdict": verdict(ci, names, test["p_value"]),
        "prompts_needed_80": prompts_needed(sd, mean),
        "delta": delta,
        "power_at_delta": None if delta is None else power_at(sd, n, delta),
    }


def describe(c: dict[str, Any], spec: str = ".3f") -> str:
    """One line: effect [interval], p, verdict, prompts needed."""
    if not c["prompts"]:
        return "no prompt in both"
    effect = format(c["effect"], ("" if c["kind"] == "ratio" else "+") + spec)
    ci = c["ci95"]
    span = f" [{format(ci[0], spec)}, {format(ci[1], spec)}]" if ci else " (no interval)"
    test = c["permutation"]
    how = "exact" if test["method"] == "exact" else f"Monte Carlo, {test['draws']} draws"
    p = "n/a" if test["p_value"] is None else f"{test['p_value']:.4f}"
    unit = f", {c['units']} sources" if c["clustered_by_source"] else ""
    needed = c["prompts_needed_80"]
    need = f"{needed} prompts for 80 % power" if needed else "no effect measured"
    return (
        f"{effect}{span}, n={c['prompts']}{unit}, sign-flip p={p} ({how}); {c['verdict']}; {need}"
    )
