"""Training by time: a learning rate that warms up linearly over the first 3 % of the budget and
then follows a cosine down to FLOOR x the peak at the end of it (the schedule ends with the
budget, and the last minutes still learn: a cosine to 0 spent them at a rate near nothing); the
training log (one JSON line per logged step, with the learning rate); the progress: a bar (tqdm,
in seconds of the budget) on a terminal, plain lines where standard error is a file or a pipe (a
log: a line each tenth of the budget, and one at the end).

The schedule's clock starts after the first step (`Clock.warmed`): that step compiles (torch.compile
where it is on) and is not training time at the schedule's rate; the budget holds it all the same.
The throughput counts the steps after it."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from j0.terminal import sink

WARMUP_FRACTION = 0.03
FLOOR = 0.1  # the learning rate at the end of the budget, as a share of the peak
LOG_EVERY = 10
PLAIN_LINES = 10  # progress lines over a budget, where standard error is not a terminal


def lr_at(base: float, elapsed: float, budget: float, floor: float = FLOOR) -> float:
    """The rate `elapsed` seconds into a schedule of `budget` seconds: linear warm-up over
    WARMUP_FRACTION, then a cosine from `base` to `floor` x `base` at the budget's end."""
    fraction = min(max(elapsed / budget, 0.0), 1.0) if budget > 0 else 1.0
    if fraction < WARMUP_FRACTION:
        return base * max(fraction / WARMUP_FRACTION, 0.01)
    rest = (fraction - WARMUP_FRACTION) / (1.0 - WARMUP_FRACTION)
    return base * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * rest)))


class Clock:
    """The budget, the log file and the progress bar of one model's training."""

    def __init__(self, name: str, budget: float, log: Path, progress: bool = True) -> None:
        from tqdm import tqdm

        self.name = name
        self.budget = budget
        self.started = time.monotonic()
        self.log = log.open("w")
        # j0's entry point escapes control characters on its streams, a bar's "\r" among them:
        # the bar goes to the terminal itself (its text is ours), a file gets plain lines
        terminal = getattr(sys.stderr, "wrapped", sys.stderr)
        self.plain = progress and not terminal.isatty()
        self.next_line = budget / PLAIN_LINES
        self.bar: Any = tqdm(
            total=round(budget),
            desc=name,
            unit="s",
            file=terminal,
            disable=not progress or self.plain,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} s {postfix}",
        )
        self.steps = 0
        self.last_loss = float("nan")
        self.warm_s: float | None = None  # the first step's time (compilation), once known
        self.timed_tokens = 0  # tokens of the steps after the first

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def warmed(self) -> None:
        """The first step is done: the schedule and the throughput start now."""
        if self.warm_s is None:
            self.warm_s = self.elapsed

    def lr(self, base: float) -> float:
        """The learning rate now: the schedule over what the budget leaves after the first step."""
        if self.warm_s is None:
            return base * 0.01
        return lr_at(base, self.elapsed - self.warm_s, self.budget - self.warm_s)

    def timed(self) -> tuple[int, float]:
        """(tokens, seconds) of the steps after the first."""
        if self.warm_s is None:
            return 0, 0.0
        return self.timed_tokens, self.elapsed - self.warm_s

    def running(self) -> bool:
        return self.elapsed < self.budget

    def record(self, loss: float, tokens: int = 0, **extra: float) -> None:
        """One step done: its loss, the tokens it trained on, what else the log line holds."""
        self.steps += 1
        self.last_loss = loss
        if self.warm_s is None:
            self.warmed()
        else:
            self.timed_tokens += tokens
        if self.steps % LOG_EVERY == 1 or not self.running():
            line = {"step": self.steps, "loss": round(loss, 5), "seconds": round(self.elapsed, 2)}
            self.log.write(json.dumps({**line, **extra}) + "\n")
            self.log.flush()
            self.bar.n = min(round(self.elapsed), self.bar.total)
            self.bar.set_postfix_str(f"step {self.steps} loss {loss:.3f}")
            if self.plain and self.running() and self.elapsed >= self.next_line:
                self.next_line += self.budget / PLAIN_LINES
                self.say(
                    f"{self.elapsed:.0f}/{self.budget:.0f} s, step {self.steps}, loss {loss:.3f}"
                )

    def say(self, text: str) -> None:
        sink.warn(f"{self.name}: {text}", flush=True)

    def close(self) -> float:
        self.bar.n = self.bar.total
        self.bar.close()
        self.log.close()
        if self.plain:
            self.say(f"{self.steps} steps in {self.elapsed:.0f} s, loss {self.last_loss:.3f}")
        return self.elapsed
