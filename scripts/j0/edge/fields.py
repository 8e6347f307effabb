"""The one helper of the typed documents (a JSON file one module writes and another reads): a
field table says each key's kinds and whether it must be there, and a document is checked
against it once, where it is read, so that a reader never guesses. `field_problem` names the key,
the value and what was expected; the type that owns the document adds where (file, entry).

Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

Kinds = tuple[type, ...]
# key -> (the kinds its value may be, whether the key must be there)
FieldTable = Mapping[str, tuple[Kinds, bool]]
NUMBER: Kinds = (int, float)
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


class KeptKeys:
    """The reading and writing of a typed document whose file keeps what it had: a dataclass with
    one field per key of its table (FIELD_TABLE), `keys` (the keys the object had, in its order:
    to_json writes those only, so a document read back is written as it was) and `extra` (keys
    the table does not know, kept as they were). The object's kinds are checked against the
    table where its file is read (field_problem), before from_json."""

    FIELD_TABLE: ClassVar[FieldTable]
    keys: tuple[str, ...]
    extra: dict[str, Any]

    def has(self, key: str) -> bool:
        """Whether the object held `key` (null included)."""
        return key in self.keys

    def to_json(self) -> dict[str, Any]:
        """The object: its keys in its order."""
        return {k: self.extra[k] if k in self.extra else getattr(self, k) for k in self.keys}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Self:
        table = cls.FIELD_TABLE
        known = {key: item for key, item in value.items() if key in table}
        extra = {key: item for key, item in value.items() if key not in table}
        return cls(**known, keys=tuple(value), extra=extra)  # type: ignore[call-arg]


def field_problem(
    mapping: Mapping[str, Any],
    table: FieldTable,
    name_of: Callable[[Kinds], str] = kinds_text,
) -> str | None:
    """The first key of `table` that `mapping` lacks (where it must be there) or holds a value of
    other kinds, said in words; None where every key is as the table says."""
    for key, (kinds, required) in table.items():
        if key not in mapping:
            if required:
                return f"no {key!r} (expected {name_of(kinds)})"
            continue
        if not is_of(mapping[key], kinds):
            return f"{key!r} is {shown(mapping[key])}, expected {name_of(kinds)}"
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
    from j0.errors import INPUT_LACKS, JSON_ERRORS, J0Error, json_problem

    try:
        data = path.read_bytes()
        return json.loads(data.decode("utf-8"))
    except OSError as exc:
        why = f"cannot read ({exc.strerror or exc})"
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x})"
    except JSON_ERRORS as exc:
        why = f"not JSON ({json_problem(exc)})"
    raise J0Error(f"{path}: {why}; expected {expected}", INPUT_LACKS)


def write_document(path: Path, value: Mapping[str, Any], indent: int = 1) -> Path:
    """`value` as JSON (keys in their order, `indent` spaces, a newline at the end) into `path`,
    atomically: a reader never sees half a document. The one writer of every typed document's
    file; returns `path`."""
    from j0.edge.atomic import write_text_atomic

    write_text_atomic(path, json.dumps(value, indent=indent) + "\n")
    return path
