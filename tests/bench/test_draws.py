"""j0.measure.draws against the standard library's loops that it replaces, written out here:
random.Random(seed).choices / getrandbits, one row at a time, and math.fsum. Equal as floats and
ints, not near: the comparisons' intervals and p-values must not move by a bit."""

from __future__ import annotations

import math
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from j0.measure import draws

seeds = st.integers(min_value=0, max_value=2**40)
# finite floats of every exponent, zeros and subnormals included
values = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


@settings(max_examples=40, deadline=None)
@given(seeds, st.integers(min_value=1, max_value=300), st.integers(min_value=1, max_value=20))
def test_choices_are_the_standard_librarys(seed: int, g: int, n: int) -> None:
    rng = random.Random(seed)
    loops = [rng.choices(range(g), k=g) for _ in range(n)]
    assert draws.choices(seed, g, g, n).tolist() == loops


@settings(max_examples=40, deadline=None)
@given(seeds, st.integers(min_value=1, max_value=200), st.integers(min_value=1, max_value=20))
def test_bit_rows_are_getrandbits(seed: int, g: int, n: int) -> None:
    rng = random.Random(seed)
    patterns = [rng.getrandbits(g) for _ in range(n)]
    loops = [[bits >> i & 1 for i in range(g)] for bits in patterns]
    assert draws.bit_rows(seed, g, n).tolist() == loops


@settings(max_examples=80, deadline=None)
@given(st.lists(values, min_size=1, max_size=40), st.data())
def test_row_sums_are_fsum(xs: list[float], data: st.DataObject) -> None:
    rows = data.draw(
        st.lists(
            st.lists(st.integers(min_value=0, max_value=5), min_size=len(xs), max_size=len(xs)),
            min_size=1,
            max_size=6,
        )
    )
    weights = np.array(rows, dtype=np.int64)
    loops = [math.fsum(x for x, w in zip(xs, row, strict=True) for _ in range(w)) for row in rows]
    mine = draws.row_sums(weights, xs)
    assert [m.hex() for m in mine] == [x.hex() for x in loops]


def test_sums_that_cancel_and_subnormal_sums_are_fsums() -> None:
    xs = [1e300, -1e300, 5e-324, 1.0, -1.0, 2.5e-308, 1e-16]
    rows = [
        [1, 1, 1, 0, 0, 0, 0],
        [0, 0, 3, 0, 0, 1, 0],
        [0, 0, 0, 1, 0, 0, 3],
        [1, 1, 0, 1, 1, 0, 0],
    ]
    loops = [math.fsum(x for x, w in zip(xs, row, strict=True) for _ in range(w)) for row in rows]
    assert draws.row_sums(np.array(rows), xs) == loops
    assert loops[0] == 5e-324 and loops[3] == 0.0


def test_counts_count() -> None:
    indices = np.array([[0, 0, 2], [1, 2, 2]])
    assert draws.counts(indices, 3).tolist() == [[2, 0, 1], [0, 1, 2]]
