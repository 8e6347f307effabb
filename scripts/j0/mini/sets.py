"""`j0 mini sets SET...`: verdicts across independently trained model sets (issue 54, item 4).

A model set is one `j0 mini train` (its own --seed) and its `j0 mini run`: a folder holding its
mini.json (in the folder, train/ or models/) and its mini-run.json (in the folder, run/ or
run-summary/). The sets whose training recipe (mini.json's sizes, labels, slot weights, draft data,
budgets and rows asked: everything but the seed and the machine) is the one asked for
(`--recipe-of`, default the first set's) are replications; the others are shown beside them,
labelled as other recipes: evidence of how much the answer depends on the recipe, never pooled.

For every comparison of the runs (j0.mini.run.compare: article, systems, control, ngram, ...), per
draft-token count, over all prompts and per context, each set's own effect (the mean of the
per-prompt paired differences), its 95 % bootstrap interval and its verdict are shown, and the
replications are combined by a random-effects meta-analysis: each set's standard error from its
bootstrap interval (width / (2 x 1.96), clustered by file where its prompts share files); the
between-set variance tau^2 by DerSimonian and Laird; the combined effect the inverse-variance
mean with tau^2 added; its 95 % interval by Hartung and Knapp (Student's t with sets - 1 degrees
of freedom on the weighted spread of the sets' effects, never narrower than the
inverse-variance interval: the modification of Roever et al. 2015 for few studies). The
training seed is thereby a source of variance, not only the prompts.

A comparison is **resolved** only where (1) at least MIN_SETS replications have it, (2) the
combined interval excludes 0, (3) no replication resolves the opposite sign on its own, and (4)
the replications it counts served the same prompts (issue 54: the same prompts served by at least
three sets), each set's prompts known by the sha256 of its prompts.jsonl (j0.mini.set_prompts:
recorded in mini-run.json, or hashed from the prompts.jsonl or run.tar.xz kept with the set); a
set whose prompts are not known cannot be shown to have served the same ones, so it keeps the
comparison open too. Otherwise it is "not resolved", with what would resolve it: more sets (how
many, at the measured spread), the same prompts, or, where sets resolve opposite signs, that the
answer depends on the training seed. The report's Prompts line says whether the replications
served the same prompts, and what the sets of other recipes served beside them.

Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.errors import INPUT_LACKS, USAGE, InputLimit, J0Error, read_json_file
from j0.measure.pairing import t975
from j0.mini import set_prompts
from j0.mini.manifest import MiniManifest
from j0.mini.run.run_summary import RunSummary

MIN_SETS = 3
Z975 = 1.959963984540054
# mini.json's keys that make the recipe (the seed, the machine and what came out are not)
RECIPE_KEYS = ("sizes", "labels", "gamma", "draft_data", "budgets", "budget_s_per_model")
# where a set's files are: a run's folder, a committed results folder, scripts/mini-gpu.sh's
# packed folder (WORK unpacked: models/, run/) or its flat copies (mini-gpu-seedN-mini.json, ...)
MANIFEST_PLACES = ("mini.json", "train/mini.json", "models/mini.json", "mini-gpu-seed*-mini.json")
SUMMARY_PLACES = (
    "mini-run.json",
    "run/mini-run.json",
    "run-summary/mini-run.json",
    "mini-gpu-seed*-mini-run.json",
)


@dataclass(frozen=True)
class ModelSet:
    label: str
    folder: Path
    manifest: MiniManifest
    summary: RunSummary

    @property
    def recipe(self) -> str:
        return recipe_id(self.manifest)

    @property
    def seed(self) -> Any:
        return self.manifest.seed


def recipe_of(manifest: MiniManifest) -> dict[str, Any]:
    """What was asked of the training, the seed left out."""
    recipe = {key: getattr(manifest, key) for key in RECIPE_KEYS}
    recipe["rows_asked"] = (manifest.generated or {}).get("rows_asked")
    recipe["temperature_chosen_by"] = (manifest.sampling or {}).get("chosen_by")
    return recipe


def recipe_id(manifest: MiniManifest) -> str:
    text = json.dumps(recipe_of(manifest), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _first(folder: Path, places: tuple[str, ...], what: str) -> tuple[Path, dict[str, Any]]:
    for place in places:
        found = sorted(folder.glob(place))
        if len(found) > 1:
            names = ", ".join(str(x) for x in found)
            raise J0Error(f"{folder}: {names}: more than one {what}; expected one", USAGE)
        path = found[0] if found else folder / place
        if path.is_file():
            try:
                value = read_json_file(path, limit=InputLimit.ANY)  # bounded
            except J0Error as exc:
                raise J0Error(f"{exc}; expected {what}", INPUT_LACKS) from None
            if not isinstance(value, dict):
                raise J0Error(f"{path}: expected {what} (an object)", INPUT_LACKS)
            return path, value
    raise J0Error(
        f"{folder}: no {' or '.join(places)}; expected a model set's folder ({what})",
        INPUT_LACKS,
    )


def read_set(folder: Path) -> ModelSet:
    """The set in FOLDER: its mini.json and mini-run.json (J0Error naming what is missing)."""
    if not folder.is_dir():
        what = "a file" if folder.exists() else "no such folder"
        raise J0Error(f"{folder}: {what}; expected a model set's folder", INPUT_LACKS)
    path, value = _first(folder, MANIFEST_PLACES, "j0 mini train's mini.json")
    manifest = MiniManifest.from_json(value, str(path))
    path, value = _first(folder, SUMMARY_PLACES, "j0 mini run's mini-run.json")
    summary = RunSummary.checked(value, str(path))
    if summary.comparisons is None:
        raise J0Error(f"{folder}: its mini-run.json holds no comparisons", INPUT_LACKS)
    return ModelSet(folder.name, folder, manifest, summary)


def standard_error(row: dict[str, Any]) -> float | None:
    """A set's standard error of one comparison, from its 95 % bootstrap interval."""
    ci = row.get("ci95")
    if not ci or len(ci) != 2 or not all(isinstance(x, int | float) for x in ci):
        return None
    return (ci[1] - ci[0]) / (2 * Z975)


def combine(effects: list[float], errors: list[float]) -> dict[str, Any]:
    """Random effects over the sets: DerSimonian-Laird tau^2, the inverse-variance mean, and the
    Hartung-Knapp interval (t, k - 1 df), never narrower than the inverse-variance one."""
    k = len(effects)
    if k < 2:
        return {"sets": k, "effect": effects[0] if effects else None, "ci95": None, "tau2": None}
    floor = 1e-12
    w = [1 / max(se * se, floor) for se in errors]
    fixed = sum(wi * y for wi, y in zip(w, effects, strict=True)) / sum(w)
    q = sum(wi * (y - fixed) ** 2 for wi, y in zip(w, effects, strict=True))
    c = sum(w) - sum(wi * wi for wi in w) / sum(w)
    tau2 = max(0.0, (q - (k - 1)) / c) if c > 0 else 0.0
    ws = [1 / max(se * se + tau2, floor) for se in errors]
    mean = sum(wi * y for wi, y in zip(ws, effects, strict=True)) / sum(ws)
    spread = sum(wi * (y - mean) ** 2 for wi, y in zip(ws, effects, strict=True))
    variance = max(spread / ((k - 1) * sum(ws)), 1 / sum(ws))
    half = t975(k - 1) * math.sqrt(variance)
    return {
        "sets": k,
        "effect": mean,
        "ci95": [mean - half, mean + half],
        "tau2": tau2,
        "q": q,
        "se": math.sqrt(variance),
    }


def sign_of(verdict: Any) -> int:
    """+1 / -1 where a set's own verdict resolved the comparison (A > B / A < B), else 0."""
    text = str(verdict or "")
    if not text.startswith("resolved"):
        return 0
    return 1 if " > " in text else -1


def judge(row_sets: list[dict[str, Any]], combined: dict[str, Any]) -> tuple[str, str]:
    """(verdict, what would resolve it) by the rule of the module's docstring."""
    k = combined["sets"]
    signs = {s["label"]: sign_of(s["verdict"]) for s in row_sets}
    ci = combined.get("ci95")
    side = 0 if not ci or ci[0] <= 0 <= ci[1] else (1 if ci[0] > 0 else -1)
    opposite = [label for label, s in signs.items() if s and side and s == -side]
    both = {s for s in signs.values() if s}
    if both == {1, -1}:
        plus = ", ".join(x for x, s in signs.items() if s > 0)
        minus = ", ".join(x for x, s in signs.items() if s < 0)
        return "not resolved", (
            f"the sets resolve opposite signs ({plus}: +; {minus}: -): the answer depends on "
            "the training seed; more sets would estimate the mean over seeds, not remove that"
        )
    if k < MIN_SETS:
        return "not resolved", (
            f"{k} model set{'s' if k != 1 else ''} of this recipe; {MIN_SETS - k} more "
            f"(at least {MIN_SETS}, each its own --seed) are needed to combine"
        )
    if opposite:
        return "not resolved", f"{', '.join(opposite)} resolve(s) the opposite sign"
    if side == 0:
        return "not resolved", f"the combined interval holds 0; {needed(combined)}"
    return ("resolved: A > B" if side > 0 else "resolved: A < B"), ""


def needed(combined: dict[str, Any]) -> str:
    """How many sets of this spread would give an interval that excludes 0 (normal approx)."""
    effect, k = combined.get("effect"), combined["sets"]
    se = combined.get("se")
    if not effect or se is None:
        return "no effect measured: no number of sets resolves a zero effect"
    per_set_sd = se * math.sqrt(k)  # the spread of one set's effect, tau^2 included
    sets = math.ceil((Z975 * per_set_sd / abs(effect)) ** 2)
    return f"about {max(sets, k + 1)} sets at this spread would resolve {effect:+.3f}"


def rows_of(summary: RunSummary) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(draft tokens, comparison, subset) -> the run's comparison (subset: all, context N)."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for tokens, named in ((summary.comparisons or {}).get("by_tokens") or {}).items():
        for name, comparison in named.items():
            if isinstance(comparison.get("all"), dict):
                out[(tokens, name, "all")] = comparison["all"]
            for context, row in (comparison.get("by_context") or {}).items():
                out[(tokens, name, f"context {context}")] = row
    return out


def report(sets: list[ModelSet], recipe_of_label: str | None = None) -> dict[str, Any]:
    """Every comparison row: each set's effect, the replications combined, the verdict."""
    if not sets:
        raise J0Error("j0 mini sets: expected at least one model set's folder", USAGE)
    chosen = next((s for s in sets if s.label == recipe_of_label), None)
    if recipe_of_label is not None and chosen is None:
        raise J0Error(f"--recipe-of {recipe_of_label}: no set of that name", USAGE)
    recipe = (chosen or sets[0]).recipe
    per_set = {s.label: rows_of(s.summary) for s in sets}
    prompts = {s.label: set_prompts.prompts_of(s.folder, s.summary) for s in sets}
    keys = sorted(
        {key for rows in per_set.values() for key in rows},
        key=lambda x: (
            int(x[0]),
            x[1],
            x[2] != "all",
            int(x[2].split()[-1] or 0) if x[2] != "all" else 0,
        ),
    )
    rows = []
    for key in keys:
        entries, effects, errors, counted = [], [], [], []
        for s in sets:
            row = per_set[s.label].get(key)
            if row is None or row.get("effect") is None:
                continue
            replication = s.recipe == recipe
            entry = {
                "label": s.label,
                "replication": replication,
                "effect": row["effect"],
                "ci95": row.get("ci95"),
                "verdict": row.get("verdict"),
                "prompts": row.get("prompts"),
                "units": row.get("units"),
            }
            entries.append(entry)
            se = standard_error(row)
            if replication and se is not None:
                effects.append(float(row["effect"]))
                errors.append(se)
                counted.append(s.label)
        replications = [e for e in entries if e["replication"]]
        combined = combine(effects, errors)
        verdict, resolve = judge(replications, combined)
        if unlike := set_prompts.row_words({label: prompts[label] for label in counted}):
            verdict = "not resolved"  # rule (4): the same prompts, known to be the same
            resolve = "; ".join(x for x in (resolve, unlike) if x)
        others = [e for e in entries if not e["replication"] and sign_of(e["verdict"])]
        if others:
            resolve = "; ".join(
                x
                for x in (
                    resolve,
                    "other recipes resolve it: "
                    + ", ".join(
                        f"{e['label']} {'+' if sign_of(e['verdict']) > 0 else '-'}" for e in others
                    ),
                )
                if x
            )
        names = _names(sets, key)
        if verdict.startswith("resolved"):
            verdict = verdict.replace("A", names[0], 1).replace("B", names[1], 1)
        rows.append(
            {
                "tokens": key[0],
                "comparison": key[1],
                "subset": key[2],
                "sets": entries,
                "combined": combined,
                "verdict": verdict,
                "would_resolve": resolve,
            }
        )
    return {
        "recipe": recipe,
        "recipe_of": (chosen or sets[0]).label,
        "sets": [
            {
                "label": s.label,
                "folder": str(s.folder),
                "seed": s.seed,
                "recipe": s.recipe,
                "replication": s.recipe == recipe,
                "device": s.manifest.device,
                "prompts": prompts[s.label].to_json(),
            }
            for s in sets
        ],
        "prompts_served": set_prompts.line(
            {s.label: prompts[s.label] for s in sets if s.recipe == recipe},
            {s.label: prompts[s.label] for s in sets if s.recipe != recipe},
        ),
        "min_sets": MIN_SETS,
        "rows": rows,
    }


def _names(sets: list[ModelSet], key: tuple[str, str, str]) -> tuple[str, str]:
    for s in sets:
        row = rows_of(s.summary).get(key)
        if row and isinstance(row.get("names"), list) and len(row["names"]) == 2:
            return str(row["names"][0]), str(row["names"][1])
    return "A", "B"


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "n/a"
    ci = entry.get("ci95")
    interval = f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
    mark = "" if str(entry.get("verdict", "")).startswith("not") else " (resolved)"
    return f"{entry['effect']:+.3f}{interval}{mark}"


def markdown(doc: dict[str, Any]) -> str:
    """sets.md: the heading and table_lines."""
    return "\n".join(["# j0 mini sets", "", *table_lines(doc)]) + "\n"


def table_lines(doc: dict[str, Any]) -> list[str]:
    """The report as a table: one column per set, the replications first, then the combined
    effect, the verdict and what would resolve it (`j0 mini numbers`' `sets` block)."""
    sets = doc["sets"]
    ordered = [s for s in sets if s["replication"]] + [s for s in sets if not s["replication"]]
    heads = [
        f"{s['label']} (seed {s['seed']})" if s["replication"] else f"{s['label']} (other recipe)"
        for s in ordered
    ]
    lines = [
        f"Recipe {doc['recipe']} (that of {doc['recipe_of']}): "
        f"{sum(1 for s in sets if s['replication'])} model set(s) of it, each its own "
        "`j0 mini train --seed` and run. Sets of other recipes are shown beside them as "
        "evidence of recipe dependence; they are not replications and are never combined.",
        "",
        doc["prompts_served"],
        "",
        "Each cell: the set's effect (request means paired by prompt), its 95 % bootstrap "
        "interval, and (resolved) where the set resolves it on its own. Combined: random "
        "effects over the replications (DerSimonian-Laird tau^2, Hartung-Knapp interval with "
        f"sets - 1 degrees of freedom). Resolved only where at least {doc['min_sets']} "
        "replications have it, the combined interval excludes 0, no replication resolves "
        "the opposite sign, and the replications it counts served the same prompts.",
        "",
        "| draft tokens | comparison | subset | "
        + " | ".join(heads)
        + " | combined (replications) | tau^2 | verdict | what would resolve it |",
        "|---" * (len(heads) + 7) + "|",
    ]
    for row in doc["rows"]:
        by_label = {e["label"]: e for e in row["sets"]}
        combined = row["combined"]
        ci = combined.get("ci95")
        joined = (
            f"{combined['effect']:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}] ({combined['sets']} sets)"
            if ci
            else (
                f"{combined['effect']:+.3f} (1 set)"
                if combined.get("effect") is not None
                else "n/a"
            )
        )
        tau = f"{combined['tau2']:.4f}" if combined.get("tau2") is not None else "n/a"
        cells = [_cell(by_label.get(s["label"])) for s in ordered]
        lines.append(
            f"| {row['tokens']} | {row['comparison']} | {row['subset']} | "
            + " | ".join(cells)
            + f" | {joined} | {tau} | {row['verdict']} | {row['would_resolve'] or '-'} |"
        )
    return lines
