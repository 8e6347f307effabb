"""Every setting against the baseline (the same server without speculative decoding, `j0 bench
matrix --baseline`): tok/s, TTFT and ITL beside the baseline's, the speedup paired by prompt, and
the lossless check: each greedy output compared with the baseline's for the same prompt, token by
token (the first token where they part), as Spec-Bench's equal.py and vLLM's tests compare
speculative outputs with plain decoding.

    speedup          mean over prompts of (tok/s of the setting / tok/s of the baseline) for that
                     prompt (each the mean over the prompt's repeats), with a 95 % interval
                     (Student's t); speedup["stats"]: j0.measure.stats' comparison of the ratios
                     with 1 (bootstrap interval, sign-flip test of ratio - 1, verdict)
    speedup_of_means the setting's mean tok/s / the baseline's

Outputs are compared by `output_token_ids` where both requests have them, else by the sha256 of
the output text (equal or not, no position). A request is compared with the baseline's request of
the same prompt and repeat, else of the same prompt's first repeat.

Standard library only.
"""

from __future__ import annotations

from typing import Any

from j0.bench.report.figures import SPEED_KEYS, per_prompt, sources
from j0.bench.report.results_folder import PointResults, prompt_key
from j0.bench.result.request_entry import RequestEntry
from j0.measure import pairing, stats

MISSING = (
    "no baseline setting (a folder `baseline`, as `j0 bench matrix --baseline` writes): no "
    "speedup, and no check of the outputs against decoding without speculation"
)


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where the two token lists part (the shorter one's length when one is a
    prefix of the other), None when they are equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _baseline_request(
    base: dict[tuple[str, int], RequestEntry], entry: RequestEntry
) -> RequestEntry | None:
    key = prompt_key(entry)
    found = base.get((key, entry.repeat))
    if found is None:
        firsts = sorted(r for (k, r) in base if k == key)
        found = base.get((key, firsts[0])) if firsts else None
    return found


def lossless(setting: PointResults, baseline: PointResults) -> dict[str, Any]:
    """Each of the setting's ok requests against the baseline's output for its prompt."""
    base = {(prompt_key(r), r.repeat): r for r in baseline.ok}
    compared = identical = missing = 0
    by_text = False
    differences: list[dict[str, Any]] = []
    for entry in setting.ok:
        other = _baseline_request(base, entry)
        if other is None:
            missing += 1
            continue
        compared += 1
        mine, theirs = entry.output_token_ids, other.output_token_ids
        if mine is not None and theirs is not None:
            at = first_difference(mine, theirs)
            if at is None:
                identical += 1
                continue
            differences.append(
                {
                    "prompt_id": entry.prompt_id,
                    "repeat": entry.repeat,
                    "first_differing_token": at,
                    "token": mine[at] if at < len(mine) else None,
                    "baseline_token": theirs[at] if at < len(theirs) else None,
                }
            )
            continue
        by_text = True
        if entry.output_sha256 and entry.output_sha256 == other.output_sha256:
            identical += 1
        else:
            differences.append(
                {
                    "prompt_id": entry.prompt_id,
                    "repeat": entry.repeat,
                    "first_differing_token": None,
                    "token": None,
                    "baseline_token": None,
                }
            )
    hot = sorted(
        {
            str(d.manifest.block("options").get("temperature"))
            for d in [*setting.docs, *baseline.docs]
            if (d.manifest.block("options").get("temperature") or 0) != 0
        }
    )
    return {
        "note": (
            f"sampled at temperature {', '.join(hot)}: outputs need not agree" if hot else None
        ),
        "compared": compared,
        "identical": identical,
        "missing_in_baseline": missing,
        "compared_by": "output text sha256 (no token ids)" if by_text else "output token ids",
        "lossless": compared > 0 and identical == compared,
        "differences": differences,
    }


def against_baseline(
    settings: list[PointResults], figs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The report's `baseline` block: which setting it is (or why there is none) and every other
    setting against it."""
    found = [s for s in settings if s.baseline]
    if len(found) != 1:
        note = MISSING if not found else f"{len(found)} baseline settings: none is used"
        return {"setting": None, "note": note, "settings": {}}
    (baseline,) = found
    base_fig = figs[baseline.name]
    base_tok_s = per_prompt(baseline, "output_tok_s")
    known = sources(settings)
    compared: dict[str, Any] = {}
    for s in settings:
        if s is baseline:
            continue
        f = figs[s.name]
        ratios = {
            key: (f[key] / base_fig[key] if f[key] is not None and base_fig[key] else None)
            for key in SPEED_KEYS
        }
        tok_s = per_prompt(s, "output_tok_s")
        compared[s.name] = {
            "speedup": {
                **pairing.paired_ratio(tok_s, base_tok_s),
                "stats": stats.compare(
                    tok_s,
                    base_tok_s,
                    sources=known,
                    ratio=True,
                    names=(s.name, baseline.name),
                    delta=None,
                ),
            },
            "speedup_of_means": ratios["output_tok_s"],
            "ttft_ratio": ratios["ttft_ms"],
            "itl_ratio": ratios["itl_ms"],
            "outputs": lossless(s, baseline),
        }
    return {
        "setting": baseline.name,
        "note": None,
        **{f"baseline_{key}": base_fig[key] for key in SPEED_KEYS},
        "settings": compared,
    }
