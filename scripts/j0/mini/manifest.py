"""mini.json, what `j0 mini train` made, as a type owned by its writer (train.py builds a
MiniManifest and writes to_json; `j0 mini run` and `j0 mini numbers` read it with from_json).

The types' annotations say what each key may hold and which keys a reader needs; a file is
checked against them once, where it is read, and refused naming the file, the key, the value
and what was expected (exit 2), instead of a reader crashing on a key it guessed. `j0 mini run`
needs only the sizes (a folder of an older train, or one written by hand, has little else);
`j0 mini numbers` needs the training record too (target, drafters, times), asked for through
`trained()`.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.edge.document import Document, absent, attribute, by_key, needed, table_of
from j0.edge.fields import NUMBER, field_problem, is_of
from j0.errors import INPUT_LACKS, USAGE, J0Error

MINI_JSON = "mini.json"
MADE_BY = "j0 mini train"

SINCE_ISSUE_54 = ("budgets",)  # keys an older mini.json lacks (not written as null)
# What `j0 mini run` reports of the training (mini-run.json's "trained").
TRAINED_KEYS = ("smoke", "seed", "budget_s_per_model", "labels", "gamma", "draft_data")


@dataclass(frozen=True)
class TargetRecord(Document):
    """The target's training. The keys after `seed` are written since issue 54 (older folders
    lack them): the held-out loss by position in the window, the training's throughput
    (j0.mini.train.flops), whether it ran compiled, the first step's time."""

    steps: int
    seconds: float
    last_loss: float
    heldout_loss: float
    seed: int
    heldout_by_position: list[Any] | None = absent()  # [{from, to, tokens, loss}]
    throughput: dict[str, Any] | None = absent()
    compiled: str | None = absent()
    warm_s: float | None = absent()


@dataclass
class SlotScores(Document):
    """Held-out, per slot 1..K-1: accuracy against the text and agreement with the target (a
    drafter's heldout_slots; j0.mini.train.drafter measures it)."""

    accuracy_vs_data: list[float] = needed(default_factory=list)
    agreement_with_target: list[float] = needed(default_factory=list)
    chain_estimate: dict[str, float] = needed(default_factory=dict)


@dataclass(frozen=True)
class ChainEstimate(Document):
    """A drafter's heldout_slots.chain_estimate: the greedy rows expected at k7 and k15."""

    greedy_rows_k7: float
    greedy_rows_k15: float


@dataclass(frozen=True)
class DrafterRecord(Document):
    """One drafter's training: its recipe, seed, steps, time, last loss, and its per-slot
    accuracy on held-out text (heldout_slots: SlotScores as JSON)."""

    recipe: dict[str, Any]
    seed: int
    steps: int
    seconds: float
    last_loss: float
    heldout_slots: dict[str, Any]
    # Written since issue 54: rows drawn, passes over the generated rows, rates after the first
    # step.
    rows_seen: int | None = absent()
    passes: float | None = absent()
    rows_per_s: float | None = absent()
    tokens_per_s: float | None = absent()

    @property
    def slot1_accuracy_vs_data(self) -> float:
        return float(self.heldout_slots["accuracy_vs_data"][0])

    @property
    def slot1_agreement_with_target(self) -> float:
        return float(self.heldout_slots["agreement_with_target"][0])

    @property
    def chain_estimate(self) -> dict[str, float]:
        return dict(self.heldout_slots["chain_estimate"])


@dataclass(frozen=True)
class Trained:
    """What `j0 mini numbers` reads of a training: the target's record, each drafter's, the
    generated rows (None where the drafters learned from the text) and the total time."""

    target: TargetRecord
    drafters: dict[str, DrafterRecord]
    generated_rows: int | None
    total_s: float  # as written (812 stays 812, 812.5 stays 812.5)


@dataclass(frozen=True, kw_only=True)
class MiniManifest(Document):
    """mini.json: its keys in the order train.py writes them; `sizes` the one every reader
    needs."""

    made_by: str = MADE_BY
    smoke: bool | None = absent()
    device: str | None = absent()
    torch: str | None = absent()
    python: str | None = absent()
    seed: int | None = absent()
    budget_s_per_model: float | None = absent()
    budgets: dict[str, Any] | None = absent()  # seconds: target, generate, drafter
    sizes: dict[str, Any]
    labels: str | None = absent()
    gamma: float | None = absent()
    draft_data: str | None = absent()
    sampling: dict[str, Any] | None = None
    generated: dict[str, Any] | None = None
    target: TargetRecord | None = absent()
    drafters: dict[str, DrafterRecord] | None = absent()
    times: dict[str, Any] | None = absent()
    files: dict[str, Any] | None = absent()
    where: str = attribute(default=MINI_JSON)

    def to_json(self) -> dict[str, Any]:
        """mini.json's object, its keys in the type's order."""
        value = {key: getattr(self, key) for key in table_of(MiniManifest)}
        for key in SINCE_ISSUE_54:
            if value[key] is None:
                del value[key]  # a folder trained before it reads back as it was written
        if self.target is not None:
            value["target"] = self.target.to_json()
        if self.drafters is not None:
            value["drafters"] = {name: record.to_json() for name, record in self.drafters.items()}
        return value

    @classmethod
    def from_json(cls, value: Any, where: str) -> MiniManifest:
        """The manifest, or J0Error (exit 2) naming `where`, the key, its value and what was
        expected: the keys as the type says, sizes.draft_seq a whole number >= 1,
        and the target's and drafters' records whole where they are there."""
        if not isinstance(value, dict):
            raise J0Error(f"{where}: expected an object", INPUT_LACKS)
        _refuse(where, "", value, cls)
        draft_seq = value["sizes"].get("draft_seq")
        if not is_of(draft_seq, (int,)) or draft_seq < 1:
            raise J0Error(
                f"{where}: sizes.draft_seq is {draft_seq!r}, expected a whole number >= 1",
                INPUT_LACKS,
            )
        kept = by_key(value, cls)
        if "target" in kept:
            _refuse(where, "target.", kept["target"], TargetRecord)
            kept["target"] = TargetRecord(**by_key(kept["target"], TargetRecord))
        if "drafters" in kept:
            kept["drafters"] = {
                name: _drafter(where, name, record) for name, record in kept["drafters"].items()
            }
        return cls(**kept, where=where)

    @property
    def draft_seq(self) -> int:
        """The drafters' training length (sizes.draft_seq)."""
        return int(self.sizes["draft_seq"])

    def temperature(self) -> float:
        """The miniature's sampling temperature (sampling.temperature; 0, greedy, in folders made
        before it was chosen); a value out of range is a usage error, as it always was."""
        from j0.mini.train.temperature import MAX_TEMPERATURE

        value = self.sampling.get("temperature") if isinstance(self.sampling, dict) else None
        if value is None:
            return 0.0
        if not is_of(value, NUMBER) or not 0 <= value <= MAX_TEMPERATURE:
            raise J0Error(
                f"mini.json: sampling.temperature {value!r}: expected a number from 0 to "
                f"{MAX_TEMPERATURE}",
                USAGE,
            )
        return float(value)

    def trained(self) -> Trained:
        """The training record, or J0Error naming the file and the first key it lacks."""
        for key in ("target", "drafters", "times"):
            if getattr(self, key) is None:
                raise J0Error(
                    f"{self.where}: no {key!r}; expected a folder made by `{MADE_BY}`",
                    INPUT_LACKS,
                )
        assert self.target is not None and self.drafters is not None and self.times is not None
        total = self.times.get("total_s")
        if not is_of(total, NUMBER):
            raise J0Error(
                f"{self.where}: times.total_s is {total!r}, expected a number", INPUT_LACKS
            )
        rows = (self.generated or {}).get("rows")
        return Trained(self.target, self.drafters, rows, total)


def _refuse(where: str, prefix: str, value: Any, kind: type[Document]) -> None:
    if not isinstance(value, dict):
        raise J0Error(f"{where}: {prefix.rstrip('.')} is not an object", INPUT_LACKS)
    if (problem := field_problem(value, table_of(kind))) is not None:
        raise J0Error(
            f"{where}: {prefix}{problem}" if prefix else f"{where}: {problem}", INPUT_LACKS
        )


def _drafter(where: str, name: str, record: Any) -> DrafterRecord:
    prefix = f"drafters.{name}."
    _refuse(where, prefix, record, DrafterRecord)
    _refuse(where, f"{prefix}heldout_slots.", record["heldout_slots"], SlotScores)
    _refuse(
        where,
        f"{prefix}heldout_slots.chain_estimate.",
        record["heldout_slots"]["chain_estimate"],
        ChainEstimate,
    )
    for key in ("accuracy_vs_data", "agreement_with_target"):
        if not record["heldout_slots"][key]:
            raise J0Error(
                f"{where}: {prefix}heldout_slots.{key} is [], expected a list of numbers",
                INPUT_LACKS,
            )
    return DrafterRecord(**by_key(record, DrafterRecord))


def read_manifest_file(folder: Path) -> MiniManifest:
    """FOLDER/mini.json, typed; J0Error (exit 2: the input lacks it) where the folder or the file
    is not there, or it is not JSON or not what `j0 mini train` writes."""
    from j0.edge.fields import read_document

    path = folder / MINI_JSON
    if not folder.is_dir():
        what = "a file" if folder.exists() else "no such folder"
        raise J0Error(f"{folder}: {what}; expected a folder made by `{MADE_BY}`", INPUT_LACKS)
    if not path.is_file():
        raise J0Error(f"{path}: no such file; expected a folder made by `{MADE_BY}`", INPUT_LACKS)
    value = read_document(path, f"the {MINI_JSON} of `{MADE_BY}`")
    return MiniManifest.from_json(value, str(path))
