"""What j0 sends to a Hub and takes from one, bounded and checked: a repo id or revision given to
j0 is checked before it is sent (huggingface_hub's own repo id validator: exit 64 naming the
option), an answer whose shape is not a Hub's (HTML with a 200, a list where an object goes, an
object without its keys, a tree entry whose path is not text) is refused naming the endpoint
and what was expected (exit 69: that endpoint is not a Hub), and a listing is bounded: at most
MAX_LISTED entries, and at most MAX_API_REQUESTS requests of the Hub's API per command, so that
a listing whose Link header always names a next page ends (pages of files, or empty pages).

huggingface_hub is imported inside the functions: this module's import costs nothing.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from j0.errors import UNAVAILABLE, USAGE, J0Error

MAX_LISTED = 50_000  # entries of one listing (a drafter's repo holds a handful of files)
MAX_API_REQUESTS = 1_000  # requests of /api/ per command (a fetch makes a few)
# What huggingface_hub raises on an answer of another shape than a Hub's (it parses with
# json() and builds its dataclasses with **item): caught around its calls, never a j0 bug's.
SHAPE_ERRORS = (ValueError, KeyError, TypeError, AttributeError, IndexError)
# A git revision as a pin or an option names one: a commit (prefix), a branch or a tag.
REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,254}")


def checked_repo_id(value: str, what: str) -> str:
    """`value` where huggingface_hub takes it for a repo id ("org/name"), else exit 64 naming
    `what` (--repo-id, TARGET_MODEL, DRAFTER_REPO) and what was expected."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    expected = "expected a Hugging Face model id (ORG/NAME: letters, digits, '-', '_', '.')"
    try:
        validate_repo_id(value)
    except HFValidationError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise J0Error(
            f"{what} {value!r}: {expected}; huggingface_hub refuses it: {reason}", USAGE
        ) from None
    if not value:
        raise J0Error(f"{what} '': {expected}", USAGE)
    return value


def checked_revision(value: str, what: str) -> str:
    """`value` where it can name a git revision (a commit, a branch, a tag), else exit 64."""
    if not REVISION.fullmatch(value) or ".." in value:
        raise J0Error(
            f"{what} {value!r}: expected a revision (a commit, a branch or a tag: letters, "
            "digits, '.', '_', '-', '/')",
            USAGE,
        )
    return value


def not_a_hub(where: str, asked: str, expected: str, found: str) -> J0Error:
    """The refusal of an answer that is not a Hub's (exit 69)."""
    return J0Error(
        f"{where} is not answering as a Hugging Face Hub: asked {asked}, expected {expected}, "
        f"got {found}; check HF_ENDPOINT (a mirror must serve the Hub's API)",
        UNAVAILABLE,
    )


@contextmanager
def hub_answers(where: str, asked: str, expected: str) -> Iterator[None]:
    """Around huggingface_hub's calls: an answer it cannot read as a Hub's is `not_a_hub`."""
    try:
        yield
    except SHAPE_ERRORS as exc:
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise not_a_hub(where, asked, expected, f"{type(exc).__name__}: {text}") from None


def listed(entries: Any, where: str, asked: str) -> Iterator[Any]:
    """The entries of a listing, at most MAX_LISTED: more is an endpoint whose listing never
    ends (the generator is closed: no further page is asked)."""
    for count, entry in enumerate(entries, 1):
        if count > MAX_LISTED:
            raise not_a_hub(
                where, asked, f"a listing of at most {MAX_LISTED} entries",
                "more: a listing that never ends",
            )  # fmt: skip
        yield entry


# The conversation being bounded (bounded_requests): where, and its requests so far.
_armed: dict[str, Any] = {"where": None, "count": 0}
_hooked: weakref.WeakSet[Any] = weakref.WeakSet()  # huggingface_hub's clients with the hook


def _count(response: Any) -> None:
    where = _armed["where"]
    if where is None or "/api/" not in str(response.request.url.path):
        return
    _armed["count"] += 1
    if _armed["count"] > MAX_API_REQUESTS:
        raise not_a_hub(
            where, "its API", f"at most {MAX_API_REQUESTS} requests for one command",
            "more: a listing that never ends (its Link header always names a next page)",
        )  # fmt: skip


@contextmanager
def bounded_requests(where: str) -> Iterator[None]:
    """Count the requests of the Hub's API made in the block (on huggingface_hub's one HTTP
    client): past MAX_API_REQUESTS the next is refused, so a listing whose pages always link a
    next ends. Outside the block nothing is counted (a process may run several commands)."""
    from huggingface_hub.utils import get_session

    client = get_session()
    if client not in _hooked:
        hooks = client.event_hooks
        client.event_hooks = {**hooks, "response": [*hooks.get("response", []), _count]}
        _hooked.add(client)
    saved = dict(_armed)
    _armed.update(where=where, count=0)
    try:
        yield
    finally:
        _armed.update(saved)
