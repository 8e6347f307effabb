"""Foreign text made safe to print: no control character reaches the terminal.

A server, the Hub or a file can hold characters that a terminal obeys rather than shows (ESC
sequences that move the cursor or erase a line, carriage returns, backspaces, line breaks of
any kind, bidirectional overrides): printed as they are, a crafted model id could redraw a
"NOT the article's setup" verdict as "the article's setup". Three tools, standard library only:

- `shown(text)`: one line, every character that is not printable (str.isprintable; the space
  is) written as its Python escape (`\\n`, `\\x1b`, `\\u202e`); printable text is unchanged;
- `shown_lines(text)`: the same but line breaks and tabs kept (a message of several lines);
- `EscapingStream`: a text stream that writes through `shown_lines` (and j0.edge.redaction's
  `scrub`: no URL's userinfo, no secret read); `j0`'s entry point puts one over standard output
  and standard error, so whoever prints, no control character but the line break and the tab
  gets through. The per-field `shown` is what keeps a foreign value on its line.
"""

from __future__ import annotations

from typing import Any, TextIO

_KEPT_IN_LINES = frozenset("\n\t")


def _escape(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii")


def shown(text: str) -> str:
    """`text` on one line: what is not printable escaped, the rest as it is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def shown_lines(text: str) -> str:
    """`text` with its line breaks ("\\n") and tabs, everything else not printable escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in _KEPT_IN_LINES else _escape(c) for c in text)


class EscapingStream:
    """A text stream over `stream` that writes `shown_lines(text)`; the rest (flush, fileno,
    isatty, buffer, encoding...) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        from j0.edge.redaction import scrub  # no secret either (j0.edge.redaction)

        self.wrapped.write(shown_lines(scrub(text)))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)
