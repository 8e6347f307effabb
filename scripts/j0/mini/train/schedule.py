"""Training by time: a learning rate that warms up linearly over the first 3 % of the budget and
then follows a cosine to 0 at the end of it; the training log (one JSON line per logged step);
the progress bar (tqdm, in seconds of the budget)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

WARMUP_FRACTION = 0.03
LOG_EVERY = 10


def lr_at(base: float, elapsed: float, budget: float) -> float:
    fraction = min(max(elapsed / budget, 0.0), 1.0)
    if fraction < WARMUP_FRACTION:
        return base * max(fraction / WARMUP_FRACTION, 0.01)
    rest = (fraction - WARMUP_FRACTION) / (1.0 - WARMUP_FRACTION)
    return base * 0.5 * (1.0 + math.cos(math.pi * rest))


class Clock:
    """The budget, the log file and the progress bar of one model's training."""

    def __init__(self, name: str, budget: float, log: Path, progress: bool = True) -> None:
        from tqdm import tqdm

        self.budget = budget
        self.started = time.monotonic()
        self.log = log.open("w")
        self.bar: Any = tqdm(
            total=round(budget),
            desc=name,
            unit="s",
            disable=not progress,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} s {postfix}",
        )
        self.steps = 0
        self.last_loss = float("nan")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def running(self) -> bool:
        return self.elapsed < self.budget

    def record(self, loss: float, **extra: float) -> None:
        self.steps += 1
        self.last_loss = loss
        if self.steps % LOG_EVERY == 1 or not self.running():
            line = {"step": self.steps, "loss": round(loss, 5), "seconds": round(self.elapsed, 2)}
            self.log.write(json.dumps({**line, **extra}) + "\n")
            self.log.flush()
            self.bar.n = min(round(self.elapsed), self.bar.total)
            self.bar.set_postfix_str(f"step {self.steps} loss {loss:.3f}")

    def close(self) -> float:
        self.bar.n = self.bar.total
        self.bar.close()
        self.log.close()
        return self.elapsed
