"""The project's `.env` as Docker Compose reads it, and compose's `${...}` interpolation.

The statements (comments, blank lines, `export`, quotes, escapes in quotes, values over several
lines in quotes, inline comments) are python-dotenv's parser (the `dotenv` extra); on top of it
compose's own rules, which python-dotenv does not have: single-quoted values are literal, unquoted
and double-quoted ones are interpolated (`$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
`${NAME:+alt}`, `${NAME+alt}`, `${NAME:?error}`, `${NAME?error}`, `$$` and `\\$` for a literal `$`)
from the environment first, then from the lines above (compose-go's dotenv package does the same).

Where the two parsers read the same text differently the line is refused (exit 2, naming it),
rather than read one way here and another way by compose: a `\\\\` inside single quotes
(python-dotenv makes it one backslash, compose keeps both); a `\\'` or an octal `\\0NNN` inside
double quotes (compose keeps the first's backslash and reads the second, python-dotenv neither);
an unquoted value with a `#` after a tab, or a `#` after `= ` (python-dotenv cuts a comment there,
compose does not); `KEY: value` (compose's YAML-like form, refused by python-dotenv's parser) and
a key with `.`, `-` or brackets. A bare `KEY` line is compose's "the environment's KEY", which the
environment's layer gives anyway. tests/doctor/test_compose_env.py holds the rules; its twin
tests/compose/test_compose_dotenv.py checks the same cases against `docker compose config`.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from j0.errors import INPUT_LACKS, J0Error, read_input_text, require

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A statement as python-dotenv's parser saw it: the key, `=`, then the value's first character.
_STATEMENT = re.compile(
    r"\s*(?:export[^\S\r\n]+)?(?P<key>'[^']+'|[^=#\s]+)[^\S\r\n]*"
    r"(?:=(?P<gap>[^\S\r\n]*)(?P<value>.*))?",
    re.DOTALL,
)
_OPERATORS = (":-", ":?", ":+", "-", "?", "+")


def braced_end(text: str, start: int) -> int:
    """The index just past the `}` that closes the `${` at `start` (nesting counted); -1 when
    none closes it."""
    depth, i = 0, start
    while i < len(text):
        if text.startswith("${", i):
            depth, i = depth + 1, i + 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


# Bounds of the interpolation, checked as it goes (a .env of a few hundred bytes whose lines each
# double the one above reaches gigabytes; 2,000 nested defaults exhaust Python's recursion):
# no interpolated value longer than MAX_VALUE_CHARS, no `${...:-...}` nested deeper than
# MAX_NESTING. Compose itself has no use for either; a real .env is far below both.
MAX_VALUE_CHARS = 64 * 1024
MAX_NESTING = 16
MAX_DOTENV_BYTES = 1024 * 1024


def _too_long(where: str) -> J0Error:
    return J0Error(
        f"{where or 'a value'}: longer than {MAX_VALUE_CHARS:,} characters once interpolated "
        "(a variable that doubles the one before it?); refused before it is built",
        INPUT_LACKS,
    )


def substitute(
    text: str, lookup: Callable[[str], str | None], where: str = "", depth: int = 0
) -> str:
    """Compose's interpolation of `text`; `lookup(name)` is a variable's value, None if unset.
    A `$` that starts no variable is kept, as compose keeps it. Bounded: MAX_NESTING levels of
    `${...}` in a default, MAX_VALUE_CHARS characters of result (exit 2 past either)."""
    if depth > MAX_NESTING:
        raise J0Error(
            f"{where or 'a value'}: ${{...}} nested more than {MAX_NESTING} deep in a default; "
            "refused",
            INPUT_LACKS,
        )
    out: list[str] = []
    i = 0
    size = 0

    def add(piece: str) -> None:
        nonlocal size
        size += len(piece)
        if size > MAX_VALUE_CHARS:
            raise _too_long(where)
        out.append(piece)

    while (j := text.find("$", i)) >= 0:
        add(text[i:j])
        if text.startswith("$$", j):
            add("$")
            i = j + 2
            continue
        if not text.startswith("${", j):
            name = _NAME.match(text, j + 1)
            add((lookup(name.group()) or "") if name else "$")
            i = name.end() if name else j + 1
            continue
        end = braced_end(text, j)
        body = text[j + 2 : end - 1] if end > 0 else ""
        name = _NAME.match(body)
        rest = body[name.end() :] if name else ""
        operator = next((o for o in _OPERATORS if rest.startswith(o)), "")
        if end < 0 or name is None or (rest and not operator):
            add(text[j:] if end < 0 else text[j:end])  # not a variable: kept as written
            i = len(text) if end < 0 else end
            continue
        add(_apply(name.group(), operator, rest[len(operator) :], lookup, where, depth))
        i = end
    add(text[i:])
    return "".join(out)


def _apply(
    name: str,
    operator: str,
    argument: str,
    lookup: Callable[[str], str | None],
    where: str,
    depth: int = 0,
) -> str:
    value = lookup(name)
    is_set = value is not None and (value != "" or ":" not in operator)
    deeper = depth + 1
    if operator in (":-", "-"):
        if is_set and value is not None:
            return value
        return substitute(argument, lookup, where, deeper)
    if operator in (":+", "+"):
        return substitute(argument, lookup, where, deeper) if is_set else ""
    if operator in (":?", "?") and not is_set:
        said = substitute(argument, lookup, where, deeper) or "required"
        raise J0Error(f"{where}: ${{{name}{operator}...}}: {name} is unset: {said}", INPUT_LACKS)
    return value or ""


def interpolate(text: str, values: Mapping[str, str]) -> str:
    """`substitute` with the variables of `values` (a name there is set, even to "")."""
    return substitute(text, values.get)


def read_dotenv(path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of the .env file at `path` ({} where there is none), as compose reads it."""
    if not os.path.lexists(path):
        return {}
    text = read_input_text(path, "the .env file", limit=MAX_DOTENV_BYTES)
    return parse_dotenv(text, environ, str(path))


def parse_dotenv(text: str, environ: Mapping[str, str], source: str = ".env") -> dict[str, str]:
    """KEY=VALUE statements of a .env text, interpolated as compose does (see the module's doc)."""
    parser = require("dotenv.parser", "reading .env as Docker Compose does", extra="dotenv")
    values: dict[str, str] = {}

    def lookup(name: str) -> str | None:
        return environ[name] if name in environ else values.get(name)

    for binding in parser.parse_stream(io.StringIO(text)):
        raw = binding.original.string
        leading = raw[: len(raw) - len(raw.lstrip())]
        where = f"{source}:{binding.original.line + leading.count(chr(10))}"
        first = raw.strip().splitlines()[0] if raw.strip() else ""
        if binding.error:
            raise J0Error(
                f"{where}: {first!r} is not a KEY=VALUE statement (nor a # comment); a value "
                "with spaces or quotes needs quotes around it",
                INPUT_LACKS,
            )
        if binding.key is None or binding.value is None:
            continue  # a comment, a blank line; a bare KEY takes the environment's value
        statement = _STATEMENT.match(raw)
        written = (statement["value"] or "") if statement else ""
        gap = bool(statement and statement["gap"])
        _refuse_where_compose_differs(binding.key, written, gap, f"{where}: {first!r}")
        value = binding.value
        if written.startswith('"'):
            value = substitute(value.replace("\\$", "$$"), lookup, where)
        elif not written.startswith("'"):
            value = substitute(value, lookup, where)
        values[binding.key] = value
    return values


def _refuse_where_compose_differs(key: str, written: str, gap: bool, where: str) -> None:
    """Refuse what python-dotenv and compose read differently (the module's doc lists it)."""
    problem = ""
    if not _KEY.fullmatch(key):
        problem = f"the key {key!r}: use letters, digits and _ only (compose also takes `.`, `-`)"
    elif written.startswith("'") and "\\\\" in _quoted(written, "'"):
        problem = "\\\\ inside single quotes: compose keeps both backslashes, python-dotenv one"
    elif written.startswith('"') and re.search(r"\\'|\\0", _quoted(written, '"')):
        problem = (
            "\\' or \\0 inside double quotes: compose keeps the backslash of \\' and reads "
            "\\0NNN as octal, python-dotenv does neither"
        )
    elif not written.startswith(("'", '"')):
        line = written.split("\n", 1)[0]
        if (gap and line.startswith("#")) or re.search(r"\t#", line):
            problem = 'a # after a tab or after "= " in an unquoted value: quote the value'

    if problem:
        raise J0Error(f"{where}: {problem}; compose and python-dotenv would disagree", INPUT_LACKS)


def _quoted(written: str, quote: str) -> str:
    """The text between `written`'s opening quote and its closing one (escapes kept)."""
    i = 1
    while i < len(written):
        if written[i] == "\\":
            i += 2
            continue
        if written[i] == quote:
            return written[1:i]
        i += 1
    return written[1:]
