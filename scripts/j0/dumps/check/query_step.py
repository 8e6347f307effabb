"""One J0 query step as `j0 dumps check` verifies it: the step, L, what the rebuilt history holds
at `r mod L` for every request slot tried, the draft slots' actual tokens, the step's rejected
drafts and a copy of the history it drew from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from j0.dumps import load


@dataclass
class QueryStep:
    step: load.Step
    committed: int  # L
    expected: np.ndarray  # [max_slots, n]: the rebuilt history at r mod L, UNWRITTEN if none
    indices: np.ndarray  # [max_slots, n]: r mod L
    actual: np.ndarray  # [n]: query_ids[1:]
    rejected: dict[int, int]  # position -> rejected draft token of this step
    history: np.ndarray  # the rebuilt history at this step (copy of the first L entries)
