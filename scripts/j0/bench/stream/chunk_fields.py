"""The fields `j0 bench run` reads from a server's answer (a streamed chunk or a whole JSON
body), each checked for the type vLLM 0.33 gives it before it is used: a field of another type
(a token count that is a string, NaN or Infinity, `choices` that is not a list, `usage` that is
not an object, ...) raises BadAnswer naming the field and the value, and the request it came in
is recorded as failed with that reason; it never ends the run.

Counts are whole numbers from 0 to MAX_COUNT; the per-step arrays and the widths they imply are
bounded too, so a hostile answer cannot make the figures allocate without limit. Ranges beyond
these bounds (an acceptance rate over 1, more accepted than drafted) are the result checks'
business, not this module's.

Standard library only.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_COUNT = 1 << 40  # far above any token count (vLLM's max_model_len is at most millions)
MAX_SPEC_TOKENS = 4096  # draft tokens per step: vLLM's speculators use up to tens
INT_SPEC_FIELDS = ("num_spec_tokens", "num_spec_steps", "num_accepted_draft_tokens",
                   "num_draft_tokens")  # fmt: skip
FLOAT_SPEC_FIELDS = ("mean_acceptance_length", "draft_acceptance_rate")
LIST_SPEC_FIELDS = ("per_step_accepted", "per_step_drafted", "acceptance_histogram")


class BadAnswer(ValueError):
    """A field of the server's answer that is not what vLLM sends there."""


def _no_constant(name: str) -> Any:
    raise BadAnswer(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadAnswer(f"the number {text[:40]} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def parse(data: bytes, what: str) -> Any:
    """`data` (one event's JSON, or a whole body) as JSON: UTF-8, no NaN/Infinity, no number
    beyond a float's range; BadAnswer otherwise."""
    try:
        return _DECODER.decode(data.decode("utf-8"))
    except BadAnswer as exc:
        raise BadAnswer(f"{what}: {exc}") from None
    except UnicodeDecodeError:
        raise BadAnswer(f"{what} is not UTF-8: {data[:120]!r}") from None
    except (ValueError, RecursionError) as exc:
        raise BadAnswer(f"{what} is not JSON ({exc}): {data[:120]!r}") from None


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def count(value: Any, where: str, most: int = MAX_COUNT) -> int | None:
    """A whole number from 0 to `most`, or None (absent or null)."""
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= most:
        raise BadAnswer(f"{where} is {_shown(value)}; expected a whole number from 0 to {most}")
    return value


def mapping(value: Any, where: str) -> dict[str, Any] | None:
    """An object, or None (absent or null)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadAnswer(f"{where} is {_shown(value)}; expected an object")
    return value


def text(value: Any, where: str) -> str:
    """A string, or "" for absent or null."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadAnswer(f"{where} is {_shown(value)}; expected a string")
    return value


def choices(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    """The chunk's `choices`: a list of objects (empty in vLLM's final usage chunk)."""
    if "choices" not in chunk:
        raise BadAnswer(f"an answer without `choices`: {_shown(chunk)}")
    value = chunk["choices"]
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise BadAnswer(f"choices is {_shown(value)}; expected a list of objects")
    return value


def token_ids(choice: dict[str, Any]) -> list[int] | None:
    """A choice's `token_ids` (vLLM's return_token_ids), or None."""
    ids = choice.get("token_ids")
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(type(t) is int and 0 <= t <= MAX_COUNT for t in ids):
        raise BadAnswer(f"choices[].token_ids is {_shown(ids)}; expected a list of token ids")
    return ids


def choice_text(choice: dict[str, Any]) -> str:
    """The text a choice adds: reasoning then content of its delta or message, else `text`."""
    part = mapping(choice.get("delta"), "choices[].delta") or mapping(
        choice.get("message"), "choices[].message"
    )
    if part is not None:
        reasoning = part.get("reasoning") or part.get("reasoning_content")
        return text(reasoning, "reasoning") + text(part.get("content"), "content")
    return text(choice.get("text"), "choices[].text")


def finish_reason(choice: dict[str, Any]) -> str | None:
    return text(choice.get("finish_reason"), "choices[].finish_reason") or None


def usage(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """`usage`'s counts (prompt, completion, cached) as sent, each None or a finite number that
    can be held, or None where the chunk has none. A count of another type (a string, true) is
    refused here; a negative or fractional one passes, to be flagged by the result's checks
    (j0.engine.figures.spec_ranges) and kept out of the figures."""
    value = mapping(chunk.get("usage"), "usage")
    if value is None:
        return None
    details = mapping(value.get("prompt_tokens_details"), "usage.prompt_tokens_details") or {}
    counts = {
        "prompt_tokens": value.get("prompt_tokens"),
        "completion_tokens": value.get("completion_tokens"),
        "cached_tokens": details.get("cached_tokens"),
    }
    for key, number in counts.items():
        where = "usage.prompt_tokens_details." if key == "cached_tokens" else "usage."
        _number(number, where + key, MAX_COUNT)
    return counts


def whole(value: Any) -> int | None:
    """`value` where it is a whole number of 0 or more (a count to count with), else None."""
    return value if type(value) is int and value >= 0 else None


def _number(value: Any, where: str, most: int) -> None:
    """A finite number no larger than `most` in size, or None. Its range (negative, a fraction,
    more accepted than drafted) is left to the result's checks (j0.engine.figures.spec_ranges),
    which flag the request and keep it out of the pooled figures; only what could not be held is
    refused."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadAnswer(f"{where} is {_shown(value)}; expected a whole number")
    if not math.isfinite(value) or abs(value) > most:
        raise BadAnswer(f"{where} is {_shown(value)}; expected a finite number up to {most}")


def spec_decode(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """`metrics.speculative_decoding`: an object whose counts and means are finite numbers of a
    size that can be held (num_spec_tokens at most MAX_SPEC_TOKENS: it sizes the histograms) and
    whose per-step arrays are lists of such numbers; None where the chunk has none. Values out of
    their possible ranges pass, to be flagged by the result's checks."""
    metrics = mapping(chunk.get("metrics"), "metrics")
    if metrics is None:
        return None
    spec = mapping(metrics.get("speculative_decoding"), "metrics.speculative_decoding")
    if spec is None:
        return None
    where = "metrics.speculative_decoding."
    count(spec.get("num_spec_tokens"), where + "num_spec_tokens", MAX_SPEC_TOKENS)
    for key in (*INT_SPEC_FIELDS[1:], *FLOAT_SPEC_FIELDS):
        _number(spec.get(key), where + key, MAX_COUNT)
    for key in LIST_SPEC_FIELDS:
        value = spec.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise BadAnswer(f"{where}{key} is {_shown(value)}; expected a list of counts")
        most = MAX_COUNT if key == "acceptance_histogram" else MAX_SPEC_TOKENS
        for item in value:
            _number(item, f"{where}{key}[]", most)
    if len(spec.get("acceptance_histogram") or []) > MAX_SPEC_TOKENS + 1:
        raise BadAnswer(f"{where}acceptance_histogram has more than {MAX_SPEC_TOKENS + 1} bins")
    return spec
