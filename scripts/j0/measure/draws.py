"""The random draws of j0.measure.stats, many at once, equal bit for bit to the standard library's.

    stream(seed)            a Mersenne Twister (numpy's MT19937) in the state of
                            random.Random(seed): the same 32-bit outputs, in the same order
    choices(seed, g, k, n)  n rows of random.Random(seed).choices(range(g), k=k), drawn in turn
                            from one generator (floor(random() * g), random() from two outputs)
    bit_rows(seed, g, n)    n rows of the g bits of random.Random(seed).getrandbits(g), drawn in
                            turn (32 bits per output, least significant word first, the last
                            output's top bits)
    row_sums(weights, xs)   per row r, math.fsum of xs[j] taken weights[r, j] times: the exact
                            sum, correctly rounded (the values as integers over one power of two,
                            summed in int64 limbs of 30 bits, divided once)

A loop of random.Random and math.fsum over 10,000 resamples of 144 prompts takes about half a
second a comparison; these take milliseconds, with the same numbers (tests/bench/test_draws.py
holds them to the loops).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np

_LIMB = 30


def stream(seed: int) -> np.random.MT19937:
    """numpy's MT19937 in random.Random(seed)'s state."""
    _version, internal, _gauss = random.Random(seed).getstate()
    generator = np.random.MT19937()
    generator.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.array(internal[:-1], dtype=np.uint32), "pos": internal[-1]},
    }
    return generator


def _uniforms(generator: np.random.MT19937, n: int) -> np.ndarray:
    """n of random.random(): (a >> 5) * 2^26 + (b >> 6), over 2^53."""
    raw = generator.random_raw(2 * n).reshape(n, 2)
    a = (raw[:, 0] >> np.uint64(5)).astype(np.float64)
    b = (raw[:, 1] >> np.uint64(6)).astype(np.float64)
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


def choices(seed: int, g: int, k: int, n: int) -> np.ndarray:
    """(n, k) indices: row r is the r-th random.Random(seed).choices(range(g), k=k)."""
    u = _uniforms(stream(seed), n * k)
    return np.floor(u * float(g)).astype(np.int64).reshape(n, k)


def bit_rows(seed: int, g: int, n: int) -> np.ndarray:
    """(n, g) of 0/1: row r, column i is bit i of the r-th random.Random(seed).getrandbits(g)."""
    words = (g - 1) // 32 + 1
    raw = stream(seed).random_raw(n * words).reshape(n, words)
    last = g - 32 * (words - 1)
    if last < 32:
        raw[:, -1] >>= np.uint64(32 - last)
    shifts = np.arange(32, dtype=np.uint64)
    bits = (raw[:, :, None] >> shifts) & np.uint64(1)
    return bits.reshape(n, words * 32)[:, :g].astype(np.int64)


def counts(indices: np.ndarray, g: int) -> np.ndarray:
    """(n, g): how often each of range(g) is in each row of indices."""
    n = indices.shape[0]
    flat = (indices + np.arange(n, dtype=np.int64)[:, None] * g).ravel()
    return np.bincount(flat, minlength=n * g).reshape(n, g)


def row_sums(weights: np.ndarray, xs: Sequence[float]) -> list[float]:
    """Per row of weights (n, g) of non-negative ints: math.fsum of xs[j] repeated weights[r, j]
    times, the same float. Non-finite values: math.fsum itself, row by row."""
    if not all(math.isfinite(x) for x in xs):
        return [math.fsum(x * int(w) for x, w in zip(xs, row, strict=True)) for row in weights]
    parts = [(int(m * 2**53), e - 53) for m, e in map(math.frexp, xs)]
    low = min((e for m, e in parts if m), default=0)
    scaled = [0 if not m else m << (e - low) if m > 0 else -((-m) << (e - low)) for m, e in parts]
    width = max((abs(s).bit_length() for s in scaled), default=0)
    limbs = max(1, -(-width // _LIMB))
    mask = (1 << _LIMB) - 1
    table = np.array(
        [
            [(abs(s) >> (_LIMB * k) & mask) * (1 if s >= 0 else -1) for k in range(limbs)]
            for s in scaled
        ],
        dtype=np.int64,
    ).reshape(len(xs), limbs)
    totals = np.asarray(weights, dtype=np.int64) @ table
    columns = totals.T.tolist()
    exact = columns[0]
    for k, column in enumerate(columns[1:], start=1):
        exact = [e + (c << (_LIMB * k)) for e, c in zip(exact, column, strict=True)]
    # int / int is correctly rounded (subnormal and huge sums too), as math.fsum's result is
    if low < 0:
        scale = 1 << -low
        return [e / scale for e in exact]
    return [float(e << low) for e in exact]
