"""Which request slot (req_state_idx) a request's dumped J0 steps belong to: the slot is not
dumped, so every slot tried is scored by how many of the request's checkable draws its Philox
draws explain (matches minus misses; ties broken by fewer misses, then the lowest slot)."""

from __future__ import annotations

from dataclasses import dataclass

from j0.dumps.check.query_step import QueryStep
from j0.dumps.check.slot_history import UNWRITTEN


@dataclass(frozen=True)
class SlotFit:
    """The best slot for a request's draws and how well it fits."""

    slot: int  # the first of the candidates
    candidates: list[int]  # every slot that fits equally well
    matches: int  # checkable draws the slot explains
    misses: int  # checkable draws it does not

    @property
    def unique(self) -> bool:
        return len(self.candidates) == 1

    @property
    def checkable(self) -> bool:
        """False when every draw lands where no dumped step of the request wrote."""
        return self.matches != 0 or self.misses != 0


def infer_slot(queries: list[QueryStep]) -> SlotFit:
    import numpy as np

    known = np.stack([q.expected != UNWRITTEN for q in queries])  # [steps, slots, n]
    hit = np.stack([q.expected == q.actual[None, :] for q in queries]) & known
    matches = hit.sum(axis=(0, 2))
    misses = (known & ~hit).sum(axis=(0, 2))
    score = matches - misses
    best_score = int(score.max())
    tied = np.nonzero(score == best_score)[0]
    fewest = int(misses[tied].min())
    candidates = [int(s) for s in tied if misses[s] == fewest]
    slot = candidates[0]
    return SlotFit(slot, candidates, int(matches[slot]), int(misses[slot]))
