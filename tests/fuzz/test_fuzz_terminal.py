"""Property: no control character of foreign text reaches the terminal (j0.terminal.escape), and
printable text is printed as it is.

* `shown(text)`: every character of the result is printable (the space is), for any text;
  printable text comes back unchanged; the result names each escaped character by its Python
  escape, so nothing is silently dropped;
* `shown_lines(text)`: the same, line breaks and tabs kept;
* `EscapingStream` (what `j0`'s entry point puts over standard output and error): whatever is
  written, what reaches the wrapped stream holds no control character but "\\n" and "\\t".
The inputs: any Unicode text, and text built from terminal escape sequences, line breaks,
bidirectional overrides and verdict-looking lines.
"""

from __future__ import annotations

import io
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from j0.terminal.escape import EscapingStream, shown, shown_lines

CONTROLS = ["\x1b[2K", "\x1b[1A", "\r", "\x08", "\n", "\u2028", "\u202e", "\x9b", "\x00", "\t"]
hostile = st.lists(
    st.one_of(
        st.sampled_from([*CONTROLS, "==> the article's setup (J0 on)", "Qwen/Qwen3.8-27B", "\\"]),
        st.text(max_size=8),
    ),
    max_size=12,
).map("".join)
texts = st.one_of(st.text(), hostile)


def reaches_terminal(text: str, kept: str = "") -> list[str]:
    """The characters of `text` a terminal would obey rather than show."""
    return [c for c in text if not (c.isprintable() or c in kept)]


@given(texts)
def test_shown_is_one_printable_line(text: str) -> None:
    out = shown(text)
    assert reaches_terminal(out) == []
    assert "\n" not in out and "\r" not in out


@given(st.text().filter(str.isprintable))
def test_printable_text_is_unchanged(text: str) -> None:
    assert shown(text) == text and shown_lines(text) == text


@given(texts)
def test_every_escaped_character_is_named(text: str) -> None:
    """Each character that is not printable is written as its escape, in place."""
    out = shown(text)
    for char in text:
        if not char.isprintable():
            assert char.encode("unicode_escape").decode("ascii") in out
    assert len(out) >= len(text)


@given(texts)
def test_shown_lines_keeps_only_line_breaks_and_tabs(text: str) -> None:
    out = shown_lines(text)
    assert reaches_terminal(out, kept="\n\t") == []
    assert out.count("\n") == text.count("\n")


@given(st.lists(texts, max_size=6))
def test_the_stream_lets_no_control_character_through(pieces: list[str]) -> None:
    target = io.StringIO()
    stream = EscapingStream(target)
    for piece in pieces:
        assert stream.write(piece) == len(piece)
    stream.flush()
    written = target.getvalue()
    assert reaches_terminal(written, kept="\n\t") == []
    assert not [c for c in written if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t"]
