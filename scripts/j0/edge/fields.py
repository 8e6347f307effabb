"""The checks of the typed documents (a JSON file one module writes and another reads): a field
table says each key's kinds and whether it must be there (j0.edge.document derives it from a
document's annotations: no module writes one by hand), and a document is checked against it
once, where it is read, so that a reader never guesses. `field_problem` names the key, the value
and what was expected; the type that owns the document adds where (file, entry).

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Kinds = tuple[type, ...]


@dataclass(frozen=True)
class Rule:
    """What a key's value may be where its kinds alone cannot say it (a list of whole numbers,
    one of a set of words): the test, and what it expects in words for the message."""

    words: str
    test: Callable[[Any], bool]


# key -> (the kinds its value may be, or its Rule; whether the key must be there)
FieldTable = Mapping[str, tuple[Kinds | Rule, bool]]
NUMBER: Kinds = (int, float)
NULL = type(None)  # JSON's null, as a kind
ANY_VALUE = Rule("any JSON value", lambda value: True)
_NAMES = {
    str: "a string",
    int: "a whole number",
    bool: "true or false",
    type(None): "null",
    dict: "an object",
    list: "a list",
}


def shown(value: Any, most: int = 60) -> str:
    """`value` as JSON, cut to `most` characters, for a message."""
    return json.dumps(value, default=repr)[:most]


def is_of(value: Any, kinds: Kinds) -> bool:
    """isinstance, except that true and false are no numbers (JSON's booleans are Python ints)."""
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


def kinds_text(kinds: Kinds) -> str:
    """'a number' for int and float together, else each kind in words, joined by 'or'."""
    words = []
    rest = list(kinds)
    if int in rest and float in rest:
        words.append("a number")
        rest = [k for k in rest if k not in NUMBER]
    words += [_NAMES.get(kind, kind.__name__) for kind in rest]
    return " or ".join(words)


def all_are(values: list[Any], kinds: Kinds) -> bool:
    """Every item of one of `kinds`, true and false no numbers; plain items (thousands of
    per-step ints) at the speed of set(map(type, ...))."""
    return set(map(type, values)) <= set(kinds) - {bool} or all(is_of(x, kinds) for x in values)


def list_of(kinds: Kinds, or_null: bool = False, words: str = "") -> Rule:
    """A list whose every item is of `kinds` (null too, where `or_null`); `words` in place of
    the ones made from the kinds ("a list of whole numbers")."""
    named = f"a list of {kinds_text(kinds).replace('a ', '', 1)}s" + (" or null" if or_null else "")
    return Rule(
        words or named,
        lambda value: (
            (value is None and or_null) or (isinstance(value, list) and all_are(value, kinds))
        ),
    )


def one_of(values: Collection[str], or_null: bool = False) -> Rule:
    """One of the strings `values` (null too, where `or_null`)."""
    named = [json.dumps(v) for v in values] + (["null"] if or_null else [])
    words = ", ".join(named[:-1]) + " or " + named[-1] if len(named) > 1 else named[0]
    return Rule(
        words,
        lambda value: (value is None and or_null) or (isinstance(value, str) and value in values),
    )


def listed(values: Collection[str]) -> Rule:
    """One of the strings `values`, said as 'one of "a", "b", "c"'."""
    return Rule(
        "one of " + ", ".join(map(json.dumps, values)),
        lambda value: isinstance(value, str) and value in values,
    )


def _words(kinds: Kinds | Rule, name_of: Callable[[Kinds], str]) -> str:
    return kinds.words if isinstance(kinds, Rule) else name_of(kinds)


def _fits(value: Any, kinds: Kinds | Rule) -> bool:
    return kinds.test(value) if isinstance(kinds, Rule) else is_of(value, kinds)


def field_problem(
    mapping: Mapping[str, Any],
    table: FieldTable,
    name_of: Callable[[Kinds], str] = kinds_text,
) -> str | None:
    """The first key of `table` that `mapping` lacks (where it must be there) or holds a value of
    other kinds (or one its Rule refuses), said in words; None where every key is as the table
    says."""
    for key, (kinds, required) in table.items():
        if key not in mapping:
            if required:
                return f"no {key!r} (expected {_words(kinds, name_of)})"
            continue
        if not _fits(mapping[key], kinds):
            return f"{key!r} is {shown(mapping[key])}, expected {_words(kinds, name_of)}"
    return None


def checked_object(value: Any, table: FieldTable, where: str) -> dict[str, Any]:
    """`value` where it is an object whose keys are as `table` says; else J0Error (exit 2)
    naming `where` and, from field_problem, the key, its value and what was expected. The one
    check every typed document's reader starts with."""
    from j0.errors import INPUT_LACKS, J0Error

    if not isinstance(value, dict):
        raise J0Error(f"{where}: {shown(value)}, expected an object", INPUT_LACKS)
    if (problem := field_problem(value, table)) is not None:
        raise J0Error(f"{where}: {problem}", INPUT_LACKS)
    return value


def read_document(path: Path, expected: str) -> Any:
    """The JSON value in the file at `path`, for a typed document's reader to check; else
    J0Error (exit 2) naming the file, why it cannot be read or is not JSON, and `expected` (what
    the file should have been, e.g. "the setting.json of `j0 mini run`"). The one reader of
    every typed document's file."""
    from j0.errors import INPUT_LACKS, InputLimit, J0Error, read_json_file

    try:  # bounded: a regular file under its limit, JSON nested at most JsonLimit.DEPTH deep
        return read_json_file(path, limit=InputLimit.ANY)
    except J0Error as exc:
        raise J0Error(f"{exc}; expected {expected}", INPUT_LACKS) from None


def write_document(path: Path, value: Mapping[str, Any], indent: int = 1) -> Path:
    """`value` as JSON (keys in their order, `indent` spaces, a newline at the end) into `path`,
    atomically: a reader never sees half a document. The one writer of every typed document's
    file; returns `path`."""
    from j0.edge.atomic import write_text_atomic

    write_text_atomic(path, json.dumps(value, indent=indent) + "\n")
    return path
