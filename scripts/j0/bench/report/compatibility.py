"""Whether two settings' runs can be compared: the fields of their manifests that must agree
(results.BenchResult.setup(): model, engine, endpoint and thinking, temperature, max_tokens,
dataset, speculative config, drafter) and their prompt sets, and the differences where they do
not.

A field a manifest does not know (None, "unknown") is not compared. A setting's shards are read
together: a field whose shards disagree is a difference too. The prompt sets are the sha256 of
every request's prompt (failed requests included); a setting whose run did not finish
(`complete: false`) may hold fewer prompts, so then only prompts the other setting lacks count.

`j0 bench report` refuses a J0 on/off pair with differences (exit 2: the folder lacks a
like-for-like pair), and a setting that differs from the baseline in anything but the speculative
config and the drafter, unless --allow-mismatch, which keeps the pairs and writes the differences
as a warning into report.md and report.json. Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from j0.bench.report.results_folder import PointResults, prompt_key
from j0.errors import INPUT_LACKS, J0Error


@dataclass(frozen=True)
class SetupDifference:
    """One field two settings disagree on: each setting's values and its files."""

    field: str
    left: str
    left_values: list[Any]
    left_files: list[str]
    right: str
    right_values: list[Any]
    right_files: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            self.left: {"values": self.left_values, "files": self.left_files},
            self.right: {"values": self.right_values, "files": self.right_files},
        }

    def text(self) -> str:
        def side(name: str, values: list[Any], files: list[str]) -> str:
            shown = " | ".join(json.dumps(v) for v in values)
            return f"{name} {shown} ({', '.join(files)})"

        return (
            f"{self.field}: {side(self.left, self.left_values, self.left_files)} vs "
            f"{side(self.right, self.right_values, self.right_files)}"
        )


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def setup_values(setting: PointResults) -> dict[str, dict[str, tuple[Any, list[str]]]]:
    """field -> {value's JSON: (value, the files that record it)} over the setting's files."""
    found: dict[str, dict[str, tuple[Any, list[str]]]] = {}
    for path, doc in zip(setting.files, setting.docs, strict=True):
        for name, value in doc.setup().items():
            if value is None:
                continue
            _, files = found.setdefault(name, {}).setdefault(_key(value), (value, []))
            files.append(str(path))
    return found


def prompt_set(setting: PointResults) -> set[str]:
    return {prompt_key(r) for doc in setting.docs for r in doc.requests}


def _prompt_difference(a: PointResults, b: PointResults) -> SetupDifference | None:
    mine, theirs = prompt_set(a), prompt_set(b)
    finished_a = all(doc.complete for doc in a.docs)
    finished_b = all(doc.complete for doc in b.docs)
    extra_a = mine - theirs if finished_b else set()  # b did not finish: it may lack prompts
    extra_b = theirs - mine if finished_a else set()
    if not extra_a and not extra_b:
        return None

    def said(prompts: set[str], extra: set[str], other: str) -> list[Any]:
        return [f"{len(prompts)} prompts, {len(extra)} of them not in {other}"]

    return SetupDifference(
        "prompt set",
        a.name,
        said(mine, extra_a, b.name),
        [str(p) for p in a.files],
        b.name,
        said(theirs, extra_b, a.name),
        [str(p) for p in b.files],
    )


# What a setting without speculative decoding (the baseline) lacks by design.
SPECULATIVE_FIELDS = frozenset(
    {
        "speculative_method",
        "speculative_drafter",
        "num_speculative_tokens",
        "num_speculative_tokens_seen",
        "drafter_repo",
        "drafter_revision",
    }
)


def differences(
    a: PointResults, b: PointResults, ignore: frozenset[str] = frozenset()
) -> list[SetupDifference]:
    """Every field (and the prompt set) on which settings `a` and `b` differ, but `ignore`."""
    mine, theirs = setup_values(a), setup_values(b)
    found = []
    for name in [*mine, *(n for n in theirs if n not in mine)]:
        left, right = mine.get(name, {}), theirs.get(name, {})
        if name in ignore or not left or not right:
            continue  # one side does not know
        if set(left) == set(right) and len(left) == 1:
            continue
        found.append(
            SetupDifference(
                name,
                a.name,
                [v for v, _ in left.values()],
                sorted({f for _, files in left.values() for f in files}),
                b.name,
                [v for v, _ in right.values()],
                sorted({f for _, files in right.values() for f in files}),
            )
        )
    prompts = _prompt_difference(a, b)
    return [*found, prompts] if prompts else found


def check(
    settings: list[PointResults],
    pairs: list[dict[str, Any]],
    baseline: dict[str, Any],
    allow: bool,
) -> list[str]:
    """Each J0 on/off pair's differences into pair["mismatch"], and each setting's differences
    from the baseline (all but the speculative fields) into baseline["settings"][name]
    ["mismatch"] (lists, empty where the runs agree). A J0Error (exit 2) listing them where any
    differ and `allow` is false; else the warnings the report carries."""
    by_name = {s.name: s for s in settings}
    warnings: list[str] = []
    for pair in pairs:
        found = differences(by_name[pair["on"]], by_name[pair["off"]])
        pair["mismatch"] = [d.to_json() for d in found]
        warnings += [
            f"J0 on/off pair for {pair['k']} draft tokens ({pair['on']} vs {pair['off']}) "
            f"differs in {d.text()}"
            for d in found
        ]
    if baseline.get("setting") is not None:
        base = by_name[baseline["setting"]]
        for name, compared in baseline["settings"].items():
            found = differences(by_name[name], base, SPECULATIVE_FIELDS)
            compared["mismatch"] = [d.to_json() for d in found]
            warnings += [
                f"{name} against the baseline {base.name} differs in {d.text()}" for d in found
            ]
    if warnings and not allow:
        raise J0Error(
            "refusing to pair runs measured under different setups (give --allow-mismatch to "
            "pair them anyway, with a warning in the report):\n  " + "\n  ".join(warnings),
            INPUT_LACKS,
        )
    return warnings
