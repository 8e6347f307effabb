"""j0.measure.stats against references that are not its code: scipy.stats.permutation_test (the
paired "samples" permutation is the sign flip of the differences) and scipy.stats.bootstrap
(percentile), and small cases worked out by hand (every sign pattern, every resample)."""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from j0.measure import stats

# scipy (about 1 s of CPU to import) only in the tests that use it, and those in one worker (with
# tests/mini/test_sets.py): every worker imported it when it collected this module before.
pytestmark = pytest.mark.xdist_group("scipy")


def sps() -> Any:
    """scipy.stats, imported when first used."""
    from scipy import stats as scipy_stats

    return scipy_stats


# eighths: every sum of them is exact in floating point, so ties are ties in both codes
eighths = st.integers(min_value=-40, max_value=40).map(lambda i: i / 8)


def scipy_sign_flip(diffs: list[float], exact: bool = True) -> float:
    zeros = np.zeros(len(diffs))
    result = sps().permutation_test(
        (np.asarray(diffs), zeros),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf if exact else 20_000,
        alternative="two-sided",
        random_state=1,
    )
    return float(result.pvalue)


@settings(max_examples=60, deadline=None)
@given(st.lists(eighths, min_size=2, max_size=12))
def test_the_exact_p_value_is_scipys(diffs: list[float]) -> None:
    mine = stats.sign_flip(diffs)
    assert mine["method"] == "exact"
    assert mine["p_value"] == pytest.approx(scipy_sign_flip(diffs), abs=1e-12)


def test_the_exact_p_value_at_sixteen_pairs_is_scipys() -> None:
    rng = np.random.default_rng(3)
    diffs = list(np.round(rng.normal(0.08, 0.2, size=16) * 64) / 64)
    mine = stats.sign_flip(diffs)
    assert mine["method"] == "exact" and mine["units"] == 16
    assert mine["p_value"] == pytest.approx(scipy_sign_flip(diffs), abs=1e-12)


def test_the_exact_p_value_at_twenty_pairs_is_every_patterns() -> None:
    rng = np.random.default_rng(3)
    diffs = np.round(rng.normal(0.08, 0.2, size=20) * 64) / 64
    observed = abs(diffs.sum())
    hits = 0
    for chunk in range(4):  # all 2^20 sign patterns, a quarter at a time
        patterns = np.arange(chunk << 18, (chunk + 1) << 18)[:, None] >> np.arange(20) & 1
        hits += int((np.abs((1 - 2 * patterns) @ diffs) >= observed - 1e-12).sum())
    mine = stats.sign_flip(list(diffs))
    assert mine["method"] == "exact" and mine["units"] == 20
    assert mine["p_value"] == hits / 2**20
    assert stats.sign_flip([*diffs, 0.5])["method"] == "monte carlo"


def test_beyond_twenty_units_a_seeded_monte_carlo_near_scipys() -> None:
    rng = np.random.default_rng(4)
    diffs = list(rng.normal(0.05, 0.2, size=48))
    mine = stats.sign_flip(diffs, draws=20_000)
    assert mine["method"] == "monte carlo" and mine["draws"] == 20_000
    theirs = scipy_sign_flip(diffs, exact=False)
    # two Monte Carlo estimates of one p: within 4 of their combined standard errors
    se = math.sqrt(2 * theirs * (1 - theirs) / 20_000)
    assert abs(mine["p_value"] - theirs) < 4 * se + 1e-4
    assert stats.sign_flip(diffs, draws=20_000) == mine  # seeded: the same again


def test_sign_flip_by_hand() -> None:
    # [1, 2, 3]: the 8 patterns' |sums| are 6, 4, 2, 0, 0, 2, 4, 6; >= 6: 2 of 8
    assert stats.sign_flip([1.0, 2.0, 3.0])["p_value"] == 2 / 8
    # [1, 1]: |sums| 2, 0, 0, 2; >= 2: 2 of 4
    assert stats.sign_flip([1.0, 1.0])["p_value"] == 0.5
    # a sum of 0 is never evidence
    assert stats.sign_flip([1.0, -1.0])["p_value"] == 1.0
    # [1, 2, 3, 4, 5] all positive: only the pattern and its negative reach 15
    assert stats.sign_flip([1.0, 2.0, 3.0, 4.0, 5.0])["p_value"] == 2 / 32


def test_the_percentile_is_numpys() -> None:
    rng = np.random.default_rng(5)
    for size in (1, 2, 3, 10, 10_000):
        values = sorted(rng.normal(size=size))
        for q in (0.0, 0.025, 0.5, 0.975, 1.0):
            assert stats.quantile(values, q) == pytest.approx(np.percentile(values, q * 100))


def test_the_bootstrap_interval_is_near_scipys() -> None:
    rng = np.random.default_rng(6)
    diffs = rng.normal(0.1, 0.2, size=48)
    cells = [(float(d), 1) for d in diffs]
    mine = stats.bootstrap(cells)["ci"]
    theirs = (
        sps()
        .bootstrap((diffs,), np.mean, method="percentile", n_resamples=10_000, random_state=7)
        .confidence_interval
    )
    # the endpoints of two 10,000-resample intervals: within a tenth of the standard error
    se = statistics.stdev(diffs) / math.sqrt(len(diffs))
    assert mine[0] == pytest.approx(theirs.low, abs=0.1 * se)
    assert mine[1] == pytest.approx(theirs.high, abs=0.1 * se)
    assert stats.bootstrap(cells)["ci"] == mine  # seeded


def test_the_cluster_bootstrap_of_equal_clusters_is_scipys_of_their_means() -> None:
    rng = np.random.default_rng(8)
    values = rng.normal(0.1, 0.3, size=(16, 3))
    diffs = [float(v) for row in values for v in row]
    labels = [f"file{i:02d}" for i in range(16) for _ in range(3)]
    mine = stats.bootstrap(stats.units(diffs, labels))["ci"]
    means = values.mean(axis=1)
    theirs = (
        sps()
        .bootstrap((means,), np.mean, method="percentile", n_resamples=10_000, random_state=9)
        .confidence_interval
    )
    se = statistics.stdev(means) / math.sqrt(len(means))
    assert mine[0] == pytest.approx(theirs.low, abs=0.1 * se)
    assert mine[1] == pytest.approx(theirs.high, abs=0.1 * se)


def exact_bootstrap_quantiles(values: list[float], qs: tuple[float, ...]) -> list[float]:
    """Every one of the n^n equally likely resamples, its mean, the quantiles of them all."""
    n = len(values)
    means = sorted(
        sum(values[i] for i in pick) / n for pick in itertools.product(range(n), repeat=n)
    )
    return [float(np.percentile(means, q * 100)) for q in qs]


def test_the_bootstrap_by_hand() -> None:
    # [0, 1]: resample means 0 (1/4), 0.5 (1/2), 1 (1/4): the 95 % interval is [0, 1]
    assert stats.bootstrap([(0.0, 1), (1.0, 1)])["ci"] == [0.0, 1.0]
    # five values: the Monte Carlo interval near the exact one over all 3125 resamples
    values = [0.0, 0.25, 0.5, 1.0, 2.0]
    exact = exact_bootstrap_quantiles(values, (0.025, 0.975))
    mine = stats.bootstrap([(v, 1) for v in values], resamples=40_000)["ci"]
    assert mine == pytest.approx(exact, abs=0.06)


def test_prompts_needed_and_power_by_hand() -> None:
    # sd 0.19, effect 0.1: ((1.95996 + 0.84162) * 1.9)^2 = 28.33 -> 29 prompts
    assert stats.prompts_needed(0.19, 0.1) == 29
    # the between-system spread: sd 0.91, effect 0.1 -> 650
    assert stats.prompts_needed(0.91, 0.1) == math.ceil((2.80158 * 9.1) ** 2)
    assert stats.prompts_needed(0.2, 0.0) is None
    # n prompts at exactly the needed count have (about) 80 % power
    assert stats.power_at(0.19, 29, 0.1) == pytest.approx(0.8, abs=0.02)
    # 0.1 * sqrt(12) / 0.19 - 1.95996 = -0.13675; Phi(-0.13675) = 0.4456
    assert stats.power_at(0.19, 12, 0.1) == pytest.approx(0.4456, abs=1e-3)


def test_compare_says_not_resolved_while_the_interval_holds_zero() -> None:
    a = {f"p{i}": 1.5 + (0.1 if i % 2 else -0.1) for i in range(12)}
    b = {f"p{i}": 1.5 for i in range(12)}
    c = stats.compare(a, b, names=("on", "off"))
    assert c["verdict"] == stats.NOT_RESOLVED
    assert c["ci95"][0] < 0 < c["ci95"][1]
    assert c["permutation"]["method"] == "exact"
    up = stats.compare({k: v + 0.3 for k, v in a.items()}, b, names=("on", "off"))
    assert up["verdict"] == "resolved: on > off" and up["ci95"][0] > 0
    assert up["permutation"]["p_value"] == 2 / 2**12
    assert "resolved: on > off" in stats.describe(up)


def test_few_units_never_resolve() -> None:
    # five prompts all +0.5: the interval is [0.5, 0.5], but the exact p is 2/32 = 0.0625
    a = {f"p{i}": 2.0 for i in range(5)}
    c = stats.compare(a, dict.fromkeys(a, 1.5))
    assert c["ci95"] == [0.5, 0.5] and c["permutation"]["p_value"] == 2 / 32
    assert c["verdict"] == stats.NOT_RESOLVED
    six = {f"p{i}": 2.0 for i in range(6)}
    assert stats.compare(six, dict.fromkeys(six, 1.5))["verdict"] == "resolved: A > B"


def test_compare_clusters_prompts_of_one_source() -> None:
    a = {f"f{f}-{i}": 1.0 + 0.1 * f for f in range(4) for i in range(3)}
    b = dict.fromkeys(a, 1.0)
    sources = {k: k.split("-")[0] for k in a}
    c = stats.compare(a, b, sources=sources)
    assert c["clustered_by_source"] and c["units"] == 4 and c["prompts"] == 12
    # the sign-flip over 4 sources: totals 0, 0.3, 0.6, 0.9; only all + or all - reach 1.8,
    # and the 0 of source 0 doubles them: 4 of 16
    assert c["permutation"]["p_value"] == pytest.approx(4 / 16)
    plain = stats.compare(a, b)
    assert not plain["clustered_by_source"] and plain["permutation"]["p_value"] < 0.01


def test_a_ratio_is_compared_with_one() -> None:
    tok_s = {f"p{i}": 100.0 * (1.2 + 0.01 * i) for i in range(30)}
    base = dict.fromkeys(tok_s, 100.0)
    c = stats.compare(tok_s, base, ratio=True, names=("speculative", "baseline"))
    assert c["effect"] == pytest.approx(1.345)
    assert c["ci95"][0] > 1 and c["verdict"] == "resolved: speculative > baseline"
    assert c["permutation"]["method"] == "monte carlo" and c["permutation"]["draws"] == 10_000
