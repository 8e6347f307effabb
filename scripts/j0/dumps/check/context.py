"""What checking one dump folder carries from request to request in `j0 dumps check`: the seed
and the request slots tried, the findings so far, the mask token, the max_model_len that vLLM's
clamp of the query positions shows, what each slot's history holds, the J0 draw tables, and which
speculator.py ran with the prompts' token ids (for positions no dumped step wrote)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from j0.dumps.check.findings import Findings
from j0.dumps.check.slot_history import SlotHistories

if TYPE_CHECKING:
    import numpy as np


@dataclass
class CheckContext:
    seed: int
    max_slots: int
    mask_token: int | None = None  # given, or settled from the J0-off draft slots
    max_model_len: int | None = None  # when the query positions show vLLM's clamp
    # Which speculator.py ran (article / prefix-safe; None: not known) and the prompts' token ids
    # (own_prefix.py): with both, a prefix-safe run's draws below a request's start are checked.
    variant: str | None = None
    prompts: list[np.ndarray] | None = None
    findings: Findings = field(default_factory=Findings)
    slots: SlotHistories = field(default_factory=SlotHistories)
    _tables: dict[int, np.ndarray] = field(default_factory=dict)

    def draw_table(self, num_spec: int) -> np.ndarray:
        """r[s, k-1] = tl.randint(seed, s * 64 + k) for every slot tried (j0.reference.draws)."""
        if num_spec not in self._tables:
            from j0.reference import draws

            self._tables[num_spec] = draws.draw_table(self.seed, num_spec, self.max_slots)
        return self._tables[num_spec]
