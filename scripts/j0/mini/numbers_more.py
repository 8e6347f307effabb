"""The kinds of `j0 mini numbers` blocks for the measurements of issue 54 (j0.mini.numbers holds
the block format, the older kinds and the dispatch):

    positions TRAIN...  the target's held-out loss by position bucket of its window, per `j0 mini
                        train` folder (mini.json's target.heldout_by_position, else
                        logs/target-positions.json; j0.mini.train.positions)
    throughput TRAIN... the training throughput mini.json records: the target's tokens/s,
                        TFLOP/s and MFU (j0.mini.train.flops), the generated rows' rate, each
                        drafter's tokens/s, rows/s, rows drawn and passes over the rows
    ceiling RUN         the oracle acceptance estimate beside the measured one by context bin
                        (mini-run.json's crosscheck.ceiling_by_context; j0.mini.run.ceiling), as
                        mini-run.md shows it (compare.ceiling_lines)
    speed RUN           RUN/speed.json's table as `j0 mini speed` prints it (speed.table_lines),
                        the machine named
    sets SET...         the `j0 mini sets` report over the named set folders (sets.table_lines);
                        a SET may be a .tar.xz (a set folder, or scripts/mini-gpu.sh's packed
                        models/ and run/: j0.mini.numbers.set_folder), each set labelled by its
                        PATH's name

Each table is the function of the module that made the data, so the README's table is what that
command prints. A file or key these kinds need and the data lacks (a folder trained or run before
issue 54) is refused naming the file and what was expected (exit 2). Standard library only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from j0.edge.fields import NUMBER, is_of
from j0.errors import INPUT_LACKS, J0Error
from j0.mini.manifest import MADE_BY, read_manifest_file
from j0.mini.run.run_summary import MINI_RUN_JSON, RunSummary

SINCE = "written since issue 54"


def _f(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _lacks(where: Any, key: str, expected: str) -> J0Error:
    return J0Error(f"{where}: no {key}; expected {expected}", INPUT_LACKS)


def buckets_of(folder: Path) -> list[Any]:
    """The target's held-out loss by position: mini.json's target.heldout_by_position, else
    logs/target-positions.json (as j0.mini.train.positions reads it)."""
    from j0.mini.train.positions import POSITIONS, PositionBucket, read_positions

    manifest = read_manifest_file(folder)
    kept = manifest.target.heldout_by_position if manifest.target is not None else None
    if kept:
        where = f"{manifest.where}: target.heldout_by_position"
        return [PositionBucket.from_json(b, where) for b in kept]
    logs = folder / "logs" / POSITIONS
    found = read_positions(logs)
    if not found:
        raise J0Error(
            f"{manifest.where}: no target.heldout_by_position and no {logs}; expected a folder "
            f"made by `{MADE_BY}` since issue 54 (the target's held-out loss by position)",
            INPUT_LACKS,
        )
    return found


def positions(folders: list[Path]) -> list[str]:
    """One row per training, one column per bucket of positions (from-to of the window): the
    loss as `j0 mini train` prints it, the tokens predicted in brackets."""
    found = {folder: {(b.start, b.to): b for b in buckets_of(folder)} for folder in folders}
    spans = sorted({span for by_span in found.values() for span in by_span})
    lines = [
        "The target's held-out loss predicting the token after each position, by positions "
        "from-to of its window (j0.mini.train.positions); the tokens predicted in brackets.",
        "",
        "| run | " + " | ".join(f"{a}-{b}" for a, b in spans) + " |",
        "|---|" + "---|" * len(spans),
    ]
    for folder, by_span in found.items():
        cells = [
            f"{by_span[s].loss:.3f} ({by_span[s].tokens})" if s in by_span else "n/a" for s in spans
        ]
        lines.append(f"| {folder.name} | " + " | ".join(cells) + " |")
    return lines


def _need(record: Any, key: str, where: str, what: str) -> Any:
    value = record.get(key) if isinstance(record, dict) else getattr(record, key, None)
    if value is None or not is_of(value, NUMBER):
        raise _lacks(where, key, f"a number ({what}, {SINCE})")
    return value


def throughput(folders: list[Path]) -> list[str]:
    """Per training: the target's rate and MFU, the generated rows' rate, each drafter's."""
    lines = [
        "Rates after the first step (compilation and warm-up left out). The target's model "
        "TFLOP/s and MFU against the GPU's peak dense bf16 rate (j0.mini.train.flops; n/a where "
        "the peak is not known, as on a CPU); the drafters' rows drawn and passes over the "
        "generated rows (n/a where they learned from the text).",
        "",
        "| run | model | device | tokens/s | TFLOP/s | MFU | rows/s | rows "
        "| passes over the rows |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for folder in folders:
        m = read_manifest_file(folder)
        trained = m.trained()
        rate = trained.target.throughput
        if not isinstance(rate, dict):
            raise _lacks(m.where, "target.throughput", f"the training's throughput ({SINCE})")
        where = f"{m.where}: target.throughput"
        tokens_s = _need(rate, "tokens_per_s", where, "tokens/s")
        tflops = _need(rate, "tflops", where, "model TFLOP/s")
        mfu = rate.get("mfu")
        device = rate.get("device_name") or m.device or "n/a"
        lines.append(
            f"| {folder.name} | target | {device} | {tokens_s:,.0f} | {tflops} | "
            f"{_f(mfu, '.1%')} | - | - | - |"
        )
        generated = m.generated or {}
        if trained.generated_rows is not None:
            per_s = generated.get("rows_per_s")
            lines.append(
                f"| | generated rows | | - | - | - | {_f(per_s, '')} | {trained.generated_rows} "
                "| - |"
            )
        for init, d in trained.drafters.items():
            where = f"{m.where}: drafters.{init}"
            tokens_s = _need(d, "tokens_per_s", where, "tokens/s")
            rows_s = _need(d, "rows_per_s", where, "rows/s")
            seen = _need(d, "rows_seen", where, "rows drawn")
            lines.append(
                f"| | drafter-{init} | | {tokens_s:,.0f} | - | - | {rows_s} | {seen} | "
                f"{_f(d.passes, '')} |"
            )
    return lines


def summary_of(run: Path) -> RunSummary:
    """RUN/mini-run.json read, or the J0Error (exit 2) naming it where it is not there."""
    path = run / MINI_RUN_JSON
    if not path.is_file():
        raise J0Error(f"{path}: no such file (a numbers block names it)", INPUT_LACKS)
    return RunSummary.read(path)


CEILING_KEYS = ("oracle", "measured", "logp_argmax", "entropy")


def ceiling(run: Path) -> list[str]:
    """mini-run.md's ceiling table: per J0-off setting whose cross-check ran, by context."""
    from j0.mini.run.compare import ceiling_lines

    summary = summary_of(run)
    where = run / MINI_RUN_JSON
    for name, record in summary.records().items():
        table = (record.crosscheck or {}).get("ceiling_by_context")
        if table is None:
            continue
        key = f"settings.{name}.crosscheck.ceiling_by_context"
        if not isinstance(table, dict):
            raise J0Error(f"{where}: {key} is {table!r}, expected an object", INPUT_LACKS)
        for context, row in table.items():
            if not isinstance(row, dict) or not isinstance(row.get("requests"), int):
                raise _lacks(where, f"{key}.{context}.requests", "a whole number")
            for part in CEILING_KEYS:
                if row.get(part) is not None and not is_of(row[part], NUMBER):
                    raise J0Error(
                        f"{where}: {key}.{context}.{part} is {row[part]!r}, expected a number",
                        INPUT_LACKS,
                    )
    lines = ceiling_lines(summary)
    if not lines:
        raise _lacks(
            where,
            "settings.*.crosscheck.ceiling_by_context",
            f"a run whose cross-check ran ({SINCE}: the ceiling beside the measurement)",
        )
    return lines


def speed(run: Path) -> list[str]:
    """`j0 mini speed`'s table of RUN/speed.json (read through its type, SpeedRecord), the
    machine named."""
    from j0.mini.run.speed import table_lines
    from j0.mini.run.speed_record import EXPECTED, SPEED_JSON, SpeedRecord

    path = run / SPEED_JSON
    if not path.is_file():
        raise J0Error(
            f"{path}: no such file; expected {EXPECTED} (a numbers block names it)", INPUT_LACKS
        )
    return table_lines(SpeedRecord.read(path))


def sets(folders: list[tuple[str, Path]]) -> list[str]:
    """`j0 mini sets`' report over the (label, folder) pairs, the recipe that of the first."""
    import dataclasses

    from j0.mini import sets as sets_mod

    found = [dataclasses.replace(sets_mod.read_set(f), label=label) for label, f in folders]
    return sets_mod.table_lines(sets_mod.report(found))
