"""History bookkeeping for `j0 dumps check`: the committed tokens that the dumped requests left in
each request slot's history (the patch's [max_num_seqs, max_model_len] pool), and which request
wrote each entry. A later request in the same slot that draws where its own dumped steps never
wrote reads these: stale history, as after a prefix-cache hit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

UNWRITTEN = -1  # a history entry that no dumped step wrote


@dataclass
class SlotHistories:
    """slot -> the history its dumped requests left, and slot -> the request behind each entry."""

    tokens: dict[int, np.ndarray] = field(default_factory=dict)
    writers: dict[int, np.ndarray] = field(default_factory=dict)

    def record(self, slot: int, history: np.ndarray, request: int) -> None:
        """Lay one request's rebuilt history over what the slot held (its written entries only)."""
        import numpy as np

        for store, values in (
            (self.tokens, history),
            (self.writers, np.full(len(history), request, dtype=np.int64)),
        ):
            row = store.get(slot, np.full(0, UNWRITTEN, dtype=np.int64))
            if len(row) < len(history):
                row = np.concatenate([row, np.full(len(history) - len(row), UNWRITTEN)])
            written = history != UNWRITTEN
            row[: len(history)][written] = values[written]
            store[slot] = row
