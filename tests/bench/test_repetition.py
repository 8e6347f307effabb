"""j0.measure.repetition: hand-made outputs (text, loops, the loops the H200 miniature's target
wrote) and properties against a brute-force definition of each measure (hypothesis)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from j0.bench.analysis import acceptance
from j0.bench.result.request_entry import RequestEntry
from j0.measure import repetition


def brute_suffix(units: list[int], max_period: int) -> tuple[int, int | None]:
    """Every suffix length and period: the suffix x[n-L:] with x[i] == x[i+p] for all i in it
    (L >= 2p), the longest, then the smallest period."""
    n = len(units)
    best, period = 0, None
    for length in range(n, 0, -1):
        for p in range(1, max_period + 1):
            if 2 * p > length:
                break
            tail = units[n - length :]
            if all(tail[i] == tail[i + p] for i in range(length - p)):
                return length, p
    return best, period


def brute_loop(units: list[int], max_period: int) -> bool:
    n = len(units)
    half = units[n // 2 :]
    for p in range(1, max_period + 1):
        length = brute_suffix_of_period(units, p)
        if length >= len(half) and length >= 2 * p:
            return True
    return False


def brute_suffix_of_period(units: list[int], p: int) -> int:
    n = len(units)
    for length in range(n, 2 * p - 1, -1):
        tail = units[n - length :]
        if all(tail[i] == tail[i + p] for i in range(length - p)):
            return length
    return 0


small = st.lists(st.integers(min_value=0, max_value=2), max_size=40)


@settings(max_examples=300, deadline=None)
@given(small)
def test_the_repeating_suffix_is_the_brute_forces(units: list[int]) -> None:
    assert repetition.repeating_suffix(units) == brute_suffix(units, len(units))


@settings(max_examples=300, deadline=None)
@given(small, st.integers(min_value=1, max_value=8))
def test_the_loop_is_the_brute_forces(units: list[int], max_period: int) -> None:
    assert repetition.is_loop(units, max_period) == brute_loop(units, max_period)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 50), max_size=30),
    st.lists(st.integers(0, 50), min_size=1, max_size=64),
    st.integers(min_value=2, max_value=6),
)
@example(prefix=[0, 1, 1, 0], pattern=[1], times=2)  # found by hypothesis in .ci/run, 2026-12-07
def test_a_pattern_repeated_is_found(prefix: list[int], pattern: list[int], times: int) -> None:
    units = prefix + pattern * times
    length, period = repetition.repeating_suffix(units)
    assert length >= len(pattern) * times
    # the pattern's own period, unless a longer suffix of a longer period takes in the prefix
    # too (prefix 0 1 1 0, pattern 1 twice: 0 1 1 0 1 1 is period 3 over all 6 units)
    assert period is not None and (period <= len(pattern) or length > len(pattern) * times)
    # the smallest period divides the pattern's own length when the pattern fills the suffix
    assert len(pattern) % period == 0 or length > len(pattern) * times
    if len(pattern) * times >= len(units) - len(units) // 2:
        assert repetition.is_loop(units)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=60), st.permutations(list(range(21))))
def test_the_measure_does_not_depend_on_token_names(units: list[int], names: list[int]) -> None:
    renamed = [names[u] for u in units]
    a, b = repetition.measure(units), repetition.measure(renamed)
    assert a == b
    for n in (1, 2, 3):
        value = a[f"distinct_{n}"]
        assert value is None if len(units) < n else 0 < value <= 1


def test_hand_made_outputs() -> None:
    # a period-2 loop over all 256 tokens, as the H200 target wrote (126 steps of one token)
    loop = [17, 42] * 128
    m = repetition.measure(loop)
    assert (m["repeating_suffix"], m["period"], m["loop"]) == (256, 2, True)
    assert m["distinct_1"] == 2 / 256 and m["distinct_2"] == 2 / 255
    # text, then a loop of period 33 covering the last 217 tokens: a loop
    text = list(range(1000, 1039))
    late = text + (list(range(33)) * 7)[:217]
    m = repetition.measure(late)
    assert m["period"] == 33 and m["repeating_suffix"] == 217 and m["loop"]
    # the loop covers less than the second half: no loop
    short = list(range(2000, 2160)) + [5, 6, 7] * 32
    assert repetition.measure(short)["repeating_suffix"] == 96
    assert not repetition.measure(short)["loop"]
    # a period of 65 is beyond the gate's 64
    wide = list(range(65)) * 4
    assert repetition.measure(wide)["period"] == 65 and not repetition.measure(wide)["loop"]
    # text that never repeats
    plain = list(range(256))
    m = repetition.measure(plain)
    assert (m["repeating_suffix"], m["period"], m["loop"], m["distinct_3"]) == (0, None, False, 1)
    # one repeated token at the end is two periods of 1: a suffix of 2, no loop
    assert repetition.repeating_suffix([1, 2, 3, 3]) == (2, 1)
    assert repetition.measure([])["distinct_1"] is None


def test_characters_when_there_are_no_token_ids() -> None:
    m = repetition.of_output(None, "ab" * 20)
    assert m is not None and m["units"] == repetition.CHARACTERS and m["period"] == 2
    assert repetition.of_output([], "") is None
    assert repetition.of_output([3, 3, 3, 3], "x")["units"] == repetition.TOKEN_IDS


def entry(prompt_tokens: int, units: list[int], kind: str = repetition.TOKEN_IDS) -> RequestEntry:
    return RequestEntry.from_json(
        {"ok": True, "prompt_tokens": prompt_tokens, "repetition": repetition.measure(units, kind)}
    )


def test_the_gate_by_context_bin() -> None:
    text = list(range(256))
    loop = [1, 2] * 128
    entries = [entry(100, text) for _ in range(9)] + [entry(120, loop)]  # 9 of 10: passes
    entries += [entry(300, text) for _ in range(8)] + [entry(310, loop) for _ in range(2)]
    entries += [entry(600, list("abcabc"), repetition.CHARACTERS)]
    bins = repetition.gate(entries, acceptance.fixed_bins(256))
    assert [(b["context_start"], b["judged"], b["loops"], b["passed"]) for b in bins] == [
        (0, 10, 1, True),
        (256, 10, 2, False),
        (512, 0, 0, None),
    ]
    assert repetition.gate_verdict(bins) is False
    assert repetition.gate_verdict(bins[:1] + bins[2:]) is True
    assert repetition.gate_verdict(bins[2:]) is None


def test_a_longer_suffix_of_a_longer_period_wins() -> None:
    """The longest repeating suffix, not the planted one: 1 1 at the end is period 1 over 2 units,
    0 1 1 0 1 1 period 3 over all 6."""
    assert repetition.repeating_suffix([0, 1, 1, 0, 1, 1]) == (6, 3)
    assert repetition.repeating_suffix([5, 1, 1, 0, 1, 1]) == (2, 1)  # 1 1 0 once is no repeat
