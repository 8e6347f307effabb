"""`j0 mini numbers README.md`: the tables of a results README written from the data stored
beside it, so that no figure there is typed by hand. A block is

    <!-- numbers: KIND PATH [PATH ...] -->
    (the table, written by this command)
    <!-- /numbers -->

with PATH relative to the README's folder:

    training PATH...   per `j0 mini train` folder (its mini.json): the target's steps and
                       held-out loss, per drafter its held-out slot-1 accuracy against the text
                       and agreement with the target, the chain estimates (k = 7 / 15, greedy
                       rows) and the total time
    engine RUN         per setting of a `j0 mini run` folder: acceptance length pooled and the
                       request mean, overall and by prompt context, from its result files
    comparisons RUN    the named comparisons of j0.mini.run.compare (request means paired by prompt,
                       j0.measure.stats: bootstrap interval, sign-flip p, verdict, prompts needed)
    gate RUN           the repetition gate of every setting's outputs, by prompt context
    checks RUN         each setting's check lines (cross-check, dumps check)
    positions TRAIN... the target's held-out loss by position in its window, per training
    throughput TRAIN.. the trainings' throughput: tokens/s, MFU, rows/s, passes over the rows
    ceiling RUN        the oracle acceptance estimate beside the measured one, by context
    speed RUN          `j0 mini speed`'s table (RUN/speed.json), the machine named
    sets SET...        `j0 mini sets`' report over the named model sets

(the last five in j0.mini.numbers_more: the measurements of issue 54, each table made by the
function of the module that made its data).

Prompts without a `prompt_source` in a folder without prompts.json (the first layout of
`j0 mini run`: prompt i of every length cut from held-out file i) are grouped by that file, their
index. Without --write the command checks: exit 1 when a block differs from what the data gives
(the difference printed), 0 when all agree. Standard library only.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.edge.atomic import write_text_atomic
from j0.errors import CHECK_FAILED, INPUT_LACKS, OK, J0Error, require_input_file
from j0.mini import numbers_more as more
from j0.mini.manifest import read_manifest_file
from j0.mini.run.setting_record import SETTING_JSON, PointRecord

BLOCK = re.compile(
    r"(?P<head><!-- numbers: (?P<spec>[^>]*?) -->\n)(?P<body>.*?)(?P<tail><!-- /numbers -->)",
    re.DOTALL,
)
KINDS = (
    "training",
    "engine",
    "comparisons",
    "gate",
    "checks",
    "positions",
    "throughput",
    "ceiling",
    "speed",
    "sets",
)


def _f(value: Any, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def training(folders: list[Path]) -> list[str]:
    lines = [
        "| run | target steps | target held-out loss | generated rows | drafter | steps "
        "| last loss "
        "| slot-1 accuracy vs text | slot-1 agreement with target "
        "| chain estimate k=7 / k=15 (the target's rows) | total (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for folder in folders:
        m = read_manifest_file(folder).trained()
        first = True
        for init, d in m.drafters.items():
            chain = d.chain_estimate
            rows = "none" if m.generated_rows is None else m.generated_rows
            head = (
                f"| {folder.name} | {m.target.steps} | {m.target.heldout_loss:.3f} | {rows} "
                if first
                else "| | | | "
            )
            lines.append(
                f"{head}| {init} | {d.steps} | {d.last_loss:.4f} | "
                f"{d.slot1_accuracy_vs_data:.3f} | "
                f"{d.slot1_agreement_with_target:.3f} | {chain['greedy_rows_k7']:.2f} / "
                f"{chain['greedy_rows_k15']:.2f} | {m.total_s if first else ''} |"
            )
            first = False
    return lines


def settings_of(run: Path) -> dict[str, PointRecord]:
    """The settings of a run folder by their names (drafter-mask/k7-j0-on[-seedS], ngram/kK,
    baseline): each one's setting.json, or for a run from before setting.json, what its
    folder's name says (PointRecord.from_folder_name)."""
    found: dict[str, PointRecord] = {}
    for path in sorted(run.rglob("result.json")):
        name = path.parent.relative_to(run).as_posix()
        described = path.parent / SETTING_JSON
        if described.is_file():
            found[name] = PointRecord.read(described)
        elif (named := PointRecord.from_folder_name(name)) is not None:
            found[name] = named
    return found


# What one regenerate() has read, by path: a README's blocks read the same runs (three blocks
# of one run read its 60 result files once, not three times). Emptied when regenerate() ends.
_READ: dict[tuple[str, Path], Any] = {}


def _once(kind: str, path: Path, read: Any) -> Any:
    key = (kind, path.resolve())
    if key not in _READ:
        _READ[key] = read()
    return _READ[key]


def _data(run: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return _once("data", run, lambda: _read_data(run))  # type: ignore[no-any-return]


def _read_data(run: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    from j0.mini.run import compare

    settings = settings_of(run)
    data = compare.load(run, settings, None)
    if not (run / "prompts.json").is_file():  # the first layout: prompt i from held-out file i
        for d in data.values():
            d["source"] = {p: f"held-out file {p.rsplit('-', 1)[-1]}" for p in d["source"]}
    return settings, data


def _contexts(data: dict[str, Any]) -> list[int]:
    return sorted({c for d in data.values() for c in d["context"].values() if c is not None})


def engine(run: Path) -> list[str]:
    from j0.bench import pooled, read_result
    from j0.engine.figures import spec_counts

    settings, data = _data(run)
    contexts = _contexts(data)
    lines = [
        "Acceptance length **pooled** (1 + accepted / verify steps over the requests) and the "
        "**request mean** (the mean over requests of each request's own), overall and by the "
        "prompts' context length.",
        "",
        "| setting | requests | pooled | request mean | "
        + " | ".join(f"pooled {c} | request mean {c}" for c in contexts)
        + " |",
        "|---|---|---|---|" + "---|---|" * len(contexts),
    ]
    for name in settings:
        if name not in data:
            continue
        path = run / name / "result.json"
        doc = _once("result", path, lambda p=path: read_result(p))
        ok = [e for e in doc.requests if e.ok]
        cells = []
        for c in [None, *contexts]:
            mine = [e for e in ok if c is None or data[name]["context"].get(str(e.prompt_id)) == c]
            counts, _ = pooled(mine)
            length = spec_counts.acceptance_length(counts) if counts and counts.drafts else None
            own = data[name]["length"]
            lengths = [own[str(e.prompt_id)] for e in mine if str(e.prompt_id) in own]
            mean = sum(lengths) / len(lengths) if lengths else None
            cells += [_f(length), _f(mean)]
        lines.append(f"| {name} | {len(ok)} | " + " | ".join(cells) + " |")
    return lines


def comparisons(run: Path) -> list[str]:
    from j0.measure.stats_table import comparison_header, comparison_row
    from j0.mini.run import compare

    settings, data = _data(run)
    contexts = _contexts(data)
    comps = compare.comparisons(data, settings, contexts, [])
    lines = [
        "Request means paired by prompt id; the effect's 95 % bootstrap interval (10,000 "
        "resamples, seeded, resampling the prompts' source files where prompts share one), the "
        "sign-flip p (exact to 20 units), the verdict (not resolved while the interval holds 0 "
        "or p >= 0.05), the prompts that would resolve the measured effect at 80 % power and "
        "the power now for 0.1.",
        "",
        *comparison_header("draft tokens | comparison | subset"),
    ]
    for k, block in comps["by_tokens"].items():
        for key, c in block.items():
            lines.append(comparison_row(f"{k} | {key} | all", c["all"]))
            for ctx, cc in c["by_context"].items():
                lines.append(comparison_row(f"{k} | {key} | context {ctx}", cc))
    for name, c in comps["speedup"].items():
        lines.append(comparison_row(f"- | speedup {name} | all", c))
    return lines


def gate(run: Path) -> list[str]:
    from j0.mini.run import compare

    _, data = _data(run)
    g = compare.gate(data, _contexts(data))
    return [
        f"Rule: {g['rule']}; judged on the target's outputs ({g['target_outputs']}), the other "
        "settings' bins in brackets.",
        "",
        *compare.gate_table(g),
    ]


def checks(run: Path) -> list[str]:
    lines = []
    for name, s in more.summary_of(run).records().items():
        lines += [f"- {name}: {line}" for line in s.lines or []]
    return lines


_UNPACKED: dict[Path, Path] = {}
_EXTRACTED: dict[Path, Path] = {}


def unpacked(path: Path, spec: str) -> Path:
    """PATH itself where it is a folder; where it is a `.tar.xz` archive of one folder (a run
    kept compressed: 2 MB in the place of 23), that folder unpacked once per process into a
    temporary folder (tarfile's `data` filter: no links out, no absolute paths)."""
    if path.is_dir():
        return path
    key = path.resolve()
    if key not in _UNPACKED:
        target = extracted(path, spec)
        tops = [p for p in target.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise J0Error(
                f"{path}: expected an archive of one folder, found {len(tops)}", INPUT_LACKS
            )
        _UNPACKED[key] = tops[0]
    return _UNPACKED[key]


def extracted(path: Path, spec: str) -> Path:
    """The temporary folder the `.tar.xz` at PATH is unpacked into (once per process), or the
    J0Error (exit 2) naming the archive and what was expected."""
    if not (path.is_file() and path.name.endswith(".tar.xz")):
        raise J0Error(
            f"{path}: no such folder or .tar.xz archive (the numbers block {spec!r})", INPUT_LACKS
        )
    key = path.resolve()
    if key not in _EXTRACTED:
        import atexit
        import lzma
        import shutil
        import tarfile
        import tempfile

        target = Path(tempfile.mkdtemp(prefix="j0-numbers-"))
        atexit.register(shutil.rmtree, target, True)
        try:
            with tarfile.open(path, "r:xz") as archive:
                archive.extractall(target, filter="data")
        except tarfile.FilterError as exc:  # ../, absolute paths, links out: nothing written out
            raise J0Error(
                f"{path}: refused, a member would land outside the folder it unpacks into "
                f"({exc}); expected a .tar.xz of one folder, its members inside it",
                INPUT_LACKS,
            ) from None
        except (tarfile.TarError, lzma.LZMAError, EOFError, KeyError) as exc:
            # KeyError: tarfile's "linkname ... not found", a hard link to no member
            raise J0Error(
                f"{path}: not a readable .tar.xz ({type(exc).__name__}: {exc}); expected an xz "
                f"archive of one folder (the numbers block {spec!r})",
                INPUT_LACKS,
            ) from None
        except OSError as exc:  # members that cannot all be made (a file where a folder goes)
            raise J0Error(
                f"{path}: cannot unpack it into {target} ({exc.strerror}: {exc.filename}); "
                f"expected an archive of one folder (the numbers block {spec!r})",
                INPUT_LACKS,
            ) from None
        _EXTRACTED[key] = target
    return _EXTRACTED[key]


def set_folder(path: Path, spec: str) -> Path:
    """A model set's folder (a `sets` block): PATH itself, or what its `.tar.xz` unpacks into
    where a set's mini.json is there (scripts/mini-gpu.sh packs models/ and run/ side by side),
    else the archive's one folder."""
    from j0.mini.sets import MANIFEST_PLACES

    if path.is_dir():
        return path
    root = extracted(path, spec)
    if any(any(root.glob(place)) for place in MANIFEST_PLACES):
        return root
    return unpacked(path, spec)


def block(spec: str, folder: Path) -> str:
    kind, *paths = spec.split()
    if kind not in KINDS or not paths:
        raise J0Error(
            f"numbers block {spec!r}: expected one of {', '.join(KINDS)} and a path", INPUT_LACKS
        )
    if kind == "sets":  # each set labelled by its PATH's name
        named = [
            (Path(p).name.removesuffix(".tar.xz"), set_folder(folder / p, spec)) for p in paths
        ]
        return "\n".join(more.sets(named)) + "\n"
    where = [unpacked(folder / p, spec) for p in paths]
    made = {
        "training": lambda: training(where),
        "engine": lambda: engine(where[0]),
        "comparisons": lambda: comparisons(where[0]),
        "gate": lambda: gate(where[0]),
        "checks": lambda: checks(where[0]),
        "positions": lambda: more.positions(where),
        "throughput": lambda: more.throughput(where),
        "ceiling": lambda: more.ceiling(where[0]),
        "speed": lambda: more.speed(where[0]),
    }[kind]()
    return "\n".join(made) + "\n"


def regenerate(text: str, folder: Path) -> str:
    try:
        return BLOCK.sub(
            lambda m: m["head"] + block(m["spec"], folder) + m["tail"],
            text,
        )
    finally:
        _READ.clear()


@dataclass(frozen=True)
class NumbersOutcome:
    """What `j0 mini numbers` found: whether README's blocks held what the data makes (before any
    --write), the difference where they did not, and whether they were written."""

    readme: Path
    write: bool
    agrees: bool
    diff: list[str]

    @property
    def exit_code(self) -> int:
        return OK if self.write or self.agrees else CHECK_FAILED

    @property
    def text(self) -> str:
        if self.write:
            return f"{self.readme}: the numbers written from the data"
        if self.agrees:
            return f"{self.readme}: every number agrees with the data"
        return "\n".join(self.diff)

    def to_json(self) -> dict[str, Any]:
        return {
            "readme": str(self.readme),
            "agrees": self.agrees,
            "written": self.write and not self.agrees,
            "diff": self.diff,
        }


def check_numbers(readme: Path, write: bool = False) -> NumbersOutcome:
    """README's blocks made again from their data; with `write`, written where they differ."""
    text = require_input_file(readme, "README").read_text()  # a folder or nothing: 2, not 70
    if not BLOCK.search(text):
        raise J0Error(f"{readme}: no <!-- numbers: ... --> block in it", INPUT_LACKS)
    made = regenerate(text, readme.parent)
    if write and made != text:
        write_text_atomic(readme, made)
    diff = difflib.unified_diff(
        text.splitlines(), made.splitlines(), str(readme), "from the data", lineterm=""
    )
    return NumbersOutcome(readme, write, made == text, [] if made == text else list(diff))


def run(readme: Path, write: bool = False, say: Any = print) -> int:
    outcome = check_numbers(readme, write)
    say(outcome.text)
    return outcome.exit_code
