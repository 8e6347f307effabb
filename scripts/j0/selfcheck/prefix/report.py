"""`j0 selfcheck --prefix-cache`'s verdict: run the prefix-cache batteries on a loaded file and
write the result (code, message, counts) the worker prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from j0.selfcheck.kernels import DEVIATES, OK
from j0.selfcheck.prefix.check import (
    FILL,
    KNOWN_BEHAVIOUR,
    PrefixOutcome,
    describe_foreign,
    run_battery,
)


def _is_articles_file(path: Path) -> bool:
    from j0.article.identity import ARTICLE, identify
    from j0.pins import load_pins

    return identify(path.read_bytes(), load_pins()).kind == ARTICLE


def verdict(outcome: PrefixOutcome, path: Path, device: str, has_fill: bool) -> tuple[int, str]:
    """The exit code and the message for one file's outcome."""
    lines = "\n  ".join(r.line() for r in outcome.results)
    hits = sum("hit)" in r.label for r in outcome.results)
    controls = len(outcome.results) - hits
    if outcome.ok:
        return OK, (
            f"J0 reads each request's own committed tokens under prefix caching: "
            f"{len(outcome.results)} sessions ({hits} with a prefix-cache hit, {controls} "
            f"no-hit controls), {outcome.steps} steps, J0 off and on, on {device}\n  {lines}"
        )
    if outcome.controls_failed:
        first = outcome.controls_failed[0]
        assert first.mismatch is not None
        return DEVIATES, (
            f"J0 deviates, even without a prefix-cache hit: {first.mismatch.text()}\n  {lines}"
        )
    first = outcome.hits_failed[0]
    assert first.mismatch is not None
    foreign = describe_foreign(first.foreign) or first.mismatch.text()
    if _is_articles_file(path):
        why = KNOWN_BEHAVIOUR
    elif not has_fill:
        why = (
            f"The file has no {FILL}: like the article's file, it writes the history only from "
            "scheduled tokens (the known behaviour of the article's file)."
        )
    else:
        why = f"The file has {FILL}, but a draw still reads a token that is not the request's."
    return DEVIATES, (
        f"J0 deviates under prefix caching, {first.label}: {foreign}\n  {lines}\n  "
        f"The no-hit controls pass: without a hit this file's J0 is as the reference says.\n  {why}"
    )


def check_prefix_cache(
    module: Any, path: Path, device: str, seed: int, j0_seed: int, result: Any
) -> None:
    """Run the batteries and fill in the worker's Result (code, message, counts, mismatch)."""
    from j0.selfcheck import wiring

    has_fill = hasattr(module, FILL)
    if has_fill:
        problem = wiring.check_prefix_safe(module)
        if problem is not None:
            result.code = DEVIATES
            result.message = f"J0 deviates: the prefix-safe fill's wiring: {problem}"
            return
    outcome = run_battery(module, device, seed, j0_seed)
    result.cases_run = len(outcome.results)
    result.steps_run = outcome.steps
    result.requests_run = sum(r.requests for r in outcome.results)
    result.code, result.message = verdict(outcome, path, device, has_fill)
    if result.code != OK:
        failed = outcome.controls_failed or outcome.hits_failed
        result.mismatch = {"scenario": failed[0].label, **failed[0].foreign}
        result.replay = (
            f"j0 selfcheck --speculator {path} --prefix-cache --seed {seed} --device {device}"
        )
