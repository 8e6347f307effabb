"""What the fuzz properties share: a memory bound on one call, and "a clear refusal or an
answer" (not a test module: the properties import it)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
MEMORY_BOUND = 64 << 20  # what any one parse may allocate (traced): far above a small input's


def bounded(call: Callable[[], T], bound: int = MEMORY_BOUND) -> T:
    """call(), asserting that its traced allocations (Python's and NumPy's) stay under `bound`."""
    tracemalloc.start()
    try:
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < bound, f"allocated {peak} bytes"
    return result


def outcome(call: Callable[[], Any], *refusals: type[BaseException]) -> Any:
    """call()'s result, or the refusal it raised (one of `refusals`, which must carry a message);
    any other exception propagates and fails the property."""
    try:
        return bounded(call)
    except refusals as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        return exc
