"""Means over prompts with a 95 % interval (Student's t over the prompts): J0 on minus off paired
by prompt, and a setting's speedup over the baseline (the mean of per-prompt ratios); and the
sampling seed of a prompt's request, the same in every setting so that paired settings draw the
target's samples alike (request_seed: bench run and mini).

Standard library only.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

# Student's t, two-sided 95 % (0.975 quantile), for 1..30 degrees of freedom.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    # Cornish-Fisher expansion: within 1e-4 of the exact quantile beyond 30 degrees of freedom
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_interval(values: Sequence[float]) -> dict[str, Any]:
    """{n, mean, ci95}: the mean of `values` and its 95 % interval (none for one value)."""
    result: dict[str, Any] = {"n": len(values), "mean": None, "ci95": None}
    if not values:
        return result
    mean = statistics.fmean(values)
    result["mean"] = mean
    if len(values) >= 2:
        half = t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
        result["ci95"] = [mean - half, mean + half]
    return result


def paired_difference(on: Mapping[str, float], off: Mapping[str, float]) -> dict[str, Any]:
    """Mean of on[p] - off[p] over the prompts p in both, and its 95 % interval."""
    return mean_interval([on[k] - off[k] for k in on if k in off])


def paired_ratio(setting: Mapping[str, float], base: Mapping[str, float]) -> dict[str, Any]:
    """Mean of setting[p] / base[p] over the prompts p in both (base[p] > 0), and its 95 %
    interval: a speedup paired by prompt."""
    return mean_interval([setting[k] / base[k] for k in setting if base.get(k)])


def request_seed(seed: int | None, prompt_id: str) -> int | None:
    """The sampling seed of the request for `prompt_id` in a run of `--seed SEED`: the same
    prompt gets the same seed in every setting (paired settings draw the target's samples with
    the same seed), different prompts different seeds; None without --seed."""
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}:{prompt_id}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF
