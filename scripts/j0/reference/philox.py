"""Triton's `tl.randint` in NumPy: Philox 4x32 with 10 rounds, laid out as Triton lays it out.

Philox 4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) maps a
128-bit counter and a 64-bit key to 128 random bits. Each round multiplies two of the four
32-bit words by fixed constants and mixes the high and low halves of the products with the
other two words and the key; the key is bumped by two Weyl constants between rounds.

What Triton chooses (triton.language.random, documented behaviour of `tl.randint(seed, offset)`):
  * the key is the 64-bit seed split into (low 32 bits, high 32 bits);
  * the counter is (offset low 32 bits, offset high 32 bits, 0, 0); an offset of 32 bits or
    fewer has a zero high word;
  * `randint` returns the first of the four output words, as uint32.

numpy is imported inside the functions, so that importing this module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

N_ROUNDS = 10

# Round multipliers and Weyl key increments of Philox 4x32 (Random123's constants).
MULT_A = 0xD2511F53  # multiplies counter word 0
MULT_B = 0xCD9E8D57  # multiplies counter word 2
WEYL_A = 0x9E3779B9  # golden ratio, bumps key word 0
WEYL_B = 0xBB67AE85  # sqrt(3) - 1, bumps key word 1

_MASK32 = 0xFFFFFFFF


def _mul_hi_lo(mult: int, word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The high and low 32 bits of mult * word, for uint32 words (computed in uint64)."""
    import numpy as np

    product = word.astype(np.uint64) * np.uint64(mult)
    return (product >> np.uint64(32)).astype(np.uint32), (product & np.uint64(_MASK32)).astype(
        np.uint32
    )


def philox4x32(
    counter: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    key: tuple[int, int],
    rounds: int = N_ROUNDS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Philox 4x32 on arrays of uint32 counter words with a scalar 2x32-bit key."""
    import numpy as np

    x0, x1, x2, x3 = (np.asarray(w, dtype=np.uint32) for w in counter)
    k0, k1 = key[0] & _MASK32, key[1] & _MASK32
    for _ in range(rounds):
        hi_a, lo_a = _mul_hi_lo(MULT_A, x0)
        hi_b, lo_b = _mul_hi_lo(MULT_B, x2)
        x0, x1, x2, x3 = (
            hi_b ^ x1 ^ np.uint32(k0),
            lo_b,
            hi_a ^ x3 ^ np.uint32(k1),
            lo_a,
        )
        k0 = (k0 + WEYL_A) & _MASK32
        k1 = (k1 + WEYL_B) & _MASK32
    return x0, x1, x2, x3


def randint4x(seed: int, offset: Any, rounds: int = N_ROUNDS) -> tuple[np.ndarray, ...]:
    """The four uint32 words `tl.randint4x(seed, offset)` gives for each offset.

    `offset` is an integer or an array of integers; values outside [0, 2**32) are taken as
    64-bit two's complement, the high word going to counter word 1, as Triton does for 64-bit
    offsets. Pass offsets already cast to uint32 to model a kernel's `.to(tl.uint32)`.
    """
    import numpy as np

    wide = np.asarray(offset).astype(np.int64).view(np.uint64)
    lo = (wide & np.uint64(_MASK32)).astype(np.uint32)
    hi = (wide >> np.uint64(32)).astype(np.uint32)
    zero = np.zeros_like(lo)
    seed64 = int(seed) & 0xFFFFFFFFFFFFFFFF
    return philox4x32((lo, hi, zero, zero), (seed64 & _MASK32, seed64 >> 32), rounds)


def randint(seed: int, offset: Any, rounds: int = N_ROUNDS) -> np.ndarray:
    """`tl.randint(seed, offset)`: the first Philox output word, uint32, shaped like offset."""
    return randint4x(seed, offset, rounds)[0]
