"""The training curves of `j0 mini train`, plotted from its logs (OUT/logs/NAME.jsonl: a line
every 10 steps with the training loss, and for the drafters the held-out rows' loss every 100):
OUT/logs/curves.png, the target's loss and each drafter's training and held-out loss against the
step, and, where OUT/logs/target-positions.json is there, the target's held-out loss by position
in its window (a loss that rises past some position says the target does not cover contexts that
long). The logs are the data; the plot is made from them and again by `j0 mini curves OUT`."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from j0.edge.atomic import write_bytes_atomic
from j0.errors import INPUT_LACKS, J0Error, parse_json, read_input_text
from j0.mini.train.positions import POSITIONS, read_positions


def read_log(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(read_input_text(path, "").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = parse_json(line, f"{path}:{number}")
        except J0Error as exc:
            raise J0Error(f"{exc}; expected a log line", 2) from None
        if not isinstance(row, dict) or not isinstance(row.get("step"), int):
            raise J0Error(f"{path}:{number}: no whole-number 'step'; expected a log line", 2)
        rows.append(row)
    return rows


def series(rows: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    points = [(r["step"], float(r[key])) for r in rows if isinstance(r.get(key), int | float)]
    return [p[0] for p in points], [p[1] for p in points]


def plot_curves(logs: Path) -> Path:
    """logs/curves.png from logs/target.jsonl and logs/drafter-*.jsonl."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = logs / "target.jsonl"
    drafters = sorted(logs.glob("drafter-*.jsonl"))
    if not target.is_file() and not drafters:
        raise J0Error(f"{logs}: no target.jsonl or drafter-*.jsonl; expected OUT/logs", INPUT_LACKS)
    buckets = read_positions(logs / POSITIONS)
    fig, axes = plt.subplots(1, 3 if buckets else 2, figsize=(16.5 if buckets else 11, 4))
    left, right = axes[0], axes[1]
    if target.is_file():
        steps, loss = series(read_log(target), "loss")
        left.plot(steps, loss, label="training")
        steps, held = series(read_log(target), "heldout_loss")
        if steps:
            left.plot(steps, held, "o-", label="held out")
    left.set(title="target", xlabel="step", ylabel="loss")
    left.legend()
    for path in drafters:
        rows = read_log(path)
        name = path.stem.removeprefix("drafter-")
        steps, loss = series(rows, "loss")
        (line,) = right.plot(steps, loss, label=f"{name}: training")
        steps, held = series(rows, "heldout_loss")
        if steps:
            right.plot(steps, held, "o--", color=line.get_color(), label=f"{name}: held-out rows")
    right.set(title="drafters (weighted slot loss)", xlabel="step", ylabel="loss")
    right.legend()
    if buckets:
        middle = [(b.start + b.to) / 2 for b in buckets]
        axes[2].step(
            [b.start for b in buckets] + [buckets[-1].to],
            [b.loss for b in buckets] + [buckets[-1].loss],
            where="post",
        )
        axes[2].plot(middle, [b.loss for b in buckets], "o")
        axes[2].set(
            title="target: held-out loss by position",
            xlabel="position in the window (tokens)",
            ylabel="loss",
        )
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    out = logs / "curves.png"
    write_bytes_atomic(out, buffer.getvalue())
    return out
