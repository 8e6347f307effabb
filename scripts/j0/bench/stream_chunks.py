"""What `j0 bench run`'s stream client (client.py) takes a chunk of vLLM's stream, or its
non-streamed answer, to be: the types of every field it reads. A chunk of another shape (a
`choices` that is a string, a token count that is a string or not finite, token ids that are
not whole numbers) ends the request with an error naming the field, as a broken stream does,
instead of an exception in the middle of the run.

Standard library only.
"""

from __future__ import annotations

import json
from typing import Any

_COUNTS = ("prompt_tokens", "completion_tokens")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _shown(value: Any) -> str:
    return json.dumps(value, default=str)[:80]


def _usage_problem(usage: Any) -> str | None:
    if usage is None:
        return None
    if not isinstance(usage, dict):
        return f"usage is {_shown(usage)}, expected an object"
    for key in _COUNTS:
        if usage.get(key) is not None and not _whole(usage[key]):
            return f"usage.{key} is {_shown(usage[key])}, expected a whole number >= 0"
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        if not _whole(details["cached_tokens"]):
            return f"cached_tokens is {_shown(details['cached_tokens'])}, expected a count"
    return None


def _choice_problem(choice: Any) -> str | None:
    if not isinstance(choice, dict):
        return f"a choice is {_shown(choice)}, expected an object"
    ids = choice.get("token_ids")
    if ids is not None and not (isinstance(ids, list) and all(_whole(t) for t in ids)):
        return f"token_ids is {_shown(ids)}, expected whole numbers"
    reason = choice.get("finish_reason")
    if reason is not None and not isinstance(reason, str):
        return f"finish_reason is {_shown(reason)}, expected a string"
    for key in ("text", "delta", "message"):
        part = choice.get(key)
        if part is None:
            continue
        if key == "text":
            if not isinstance(part, str):
                return f"text is {_shown(part)}, expected a string"
            continue
        if not isinstance(part, dict):
            return f"{key} is {_shown(part)}, expected an object"
        for field in ("content", "reasoning", "reasoning_content"):
            if part.get(field) is not None and not isinstance(part[field], str):
                return f"{key}.{field} is {_shown(part[field])}, expected a string"
    return None


def chunk_problem(chunk: dict[str, Any]) -> str | None:
    """What in one chunk (or a whole answer) has another type than the client reads, or None."""
    choices = chunk.get("choices")
    if choices is not None and not isinstance(choices, list):
        return f"choices is {_shown(choices)}, expected a list"
    for choice in choices or []:
        problem = _choice_problem(choice)
        if problem is not None:
            return problem
    return _usage_problem(chunk.get("usage"))
