"""Apply a one-file unified diff exactly, in Python: no fuzz, no whitespace leniency, no binary.

What `git apply` and `GNU patch --fuzz=0` do with the J0 patches, without either program (vLLM's
image and a plugin's process may have neither): every hunk's old side (its context and removed
lines, byte for byte) must stand in the file; it is looked for at the line the header names
(shifted by what earlier hunks added or removed), then ever further above and below, never
before the end of the previous hunk, as both tools look for a hunk that moved (git's rules: a
hunk from line 1 stays at the start, one without trailing context at the end). A hunk found
nowhere refuses the whole patch, naming the hunk and the first of its lines that differs at the
place it names. "\\ No newline at end of file" is honoured on either side. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from j0.errors import J0Error

_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = b"\\ No newline at end of file"


@dataclass
class Hunk:
    header: str
    old_start: int  # 1-based, as written (0 for an empty old side)
    old_count: int
    new_count: int
    old: list[bytes] = field(default_factory=list)  # context and removed lines, with their "\n"
    new: list[bytes] = field(default_factory=list)  # context and added lines
    trailing: int = 0  # context lines after the last removed or added line


@dataclass(frozen=True)
class Diff:
    target: str  # the +++ path without its b/
    hunks: list[Hunk]


def _path(line: bytes) -> str:
    name = line[4:].split(b"\t", 1)[0].strip().decode("utf-8", errors="replace")
    return name[2:] if name.startswith(("a/", "b/")) else name


def _bad(origin: str, number: int, why: str) -> J0Error:
    return J0Error(f"{origin}:{number}: {why}; expected a unified diff of one file")


def _hunk_lines(hunk: Hunk, body: list[tuple[int, bytes]], origin: str) -> None:
    """Fill a hunk's old and new sides from its body lines (line number, text without "\n")."""
    last: list[list[bytes]] = []
    for number, line in body:
        if line == _NO_NEWLINE:
            if not last:
                raise _bad(origin, number, "a no-newline marker before any line")
            for side in last:
                side[-1] = side[-1].removesuffix(b"\n")
            continue
        mark, text = line[:1], line[1:] + b"\n"
        hunk.trailing = hunk.trailing + 1 if mark == b" " else 0
        sides = {b" ": [hunk.old, hunk.new], b"-": [hunk.old], b"+": [hunk.new]}.get(mark)
        if sides is None:
            raise _bad(origin, number, f"{line[:40]!r} in a hunk starts with none of ' -+\\'")
        for side in sides:
            side.append(text)
        last = sides


def parse(patch: bytes, origin: str) -> Diff:
    """The diff's target and hunks; a usage error naming the line for anything else."""
    lines = patch.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    target = ""
    hunks: list[Hunk] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(b"--- ") and i + 1 < len(lines) and lines[i + 1].startswith(b"+++ "):
            if target:
                raise _bad(origin, i + 1, "a second file's header")
            target = _path(lines[i + 1])
            i += 2
            continue
        match = _HEADER.match(line)
        if match is None:
            if hunks:
                raise _bad(origin, i + 1, f"{line[:40]!r} outside a hunk")
            i += 1  # text before the first header (a commit message) is skipped, as git does
            continue
        if not target:
            raise _bad(origin, i + 1, "a hunk before the file's ---/+++ header")
        numbers = (int(g) if g is not None else 1 for g in match.groups())
        old_start, old_count, _, new_count = numbers
        hunk = Hunk(line.decode("utf-8", errors="replace"), old_start, old_count, new_count)
        body: list[tuple[int, bytes]] = []
        seen_old = seen_new = 0
        i += 1
        while i < len(lines):
            nxt = lines[i]
            if not nxt.startswith(b"\\"):
                if seen_old >= old_count and seen_new >= new_count:
                    break
                seen_old += nxt[:1] in (b" ", b"-")
                seen_new += nxt[:1] in (b" ", b"+")
            body.append((i + 1, nxt))
            i += 1
        _hunk_lines(hunk, body, origin)
        if (len(hunk.old), len(hunk.new)) != (old_count, new_count):
            raise _bad(
                origin,
                i,
                f"hunk {hunk.header!r} holds {len(hunk.old)} old and {len(hunk.new)} new lines, "
                f"its header says {old_count} and {new_count}",
            )
        hunks.append(hunk)
    if not target or not hunks:
        raise _bad(origin, len(lines), "no ---/+++ header" if not target else "no hunk")
    return Diff(target, hunks)


def _split(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    last = lines.pop()
    out = [x + b"\n" for x in lines]
    return [*out, last] if last else out


def _find(lines: list[bytes], hunk: Hunk, want: int, floor: int) -> int | None:
    """The start nearest `want` (not below `floor`) where the hunk's old side stands in `lines`.
    As `git apply` rules: a hunk that starts at line 0 or 1 must stand at the file's start, and
    one without trailing context lines at its end."""
    old = hunk.old
    size, top = len(old), len(lines) - len(old)
    at_start = hunk.old_start <= 1
    at_end = not hunk.trailing
    for distance in range(max(want - floor, top - want, 0) + 1):
        for at in (want - distance, want + distance) if distance else (want,):
            if not floor <= at <= top or (at_start and at) or (at_end and at != top):
                continue
            if lines[at : at + size] == old:
                return at
    return None


def _first_difference(lines: list[bytes], old: list[bytes], at: int) -> str:
    for n, expected in enumerate(old):
        got = lines[at + n] if 0 <= at + n < len(lines) else b"(end of file)"
        if got != expected:
            return f"line {at + n + 1} is {got!r}, the hunk expects {expected!r}"
    return "the hunk runs past the end of the file"


def apply(base: bytes, patch: bytes, origin: str) -> bytes:
    """`base` with the diff `patch` (read from `origin`, for messages) applied exactly."""
    diff = parse(patch, origin)
    lines = _split(base)
    out: list[bytes] = []
    done = 0  # lines of `lines` already copied or replaced
    shift = 0
    for number, hunk in enumerate(diff.hunks, start=1):
        # Where the old side starts (0-based): its first line, or after line N for "-N,0".
        want = max(hunk.old_start - 1, 0) if hunk.old_count else hunk.old_start
        at = _find(lines, hunk, want + shift, done)
        if at is None:
            after = f" after hunk {number - 1}" if number > 1 else ""
            raise J0Error(
                f"{origin}: hunk {number} ({hunk.header}) does not apply: its lines stand nowhere "
                f"in the file{after}; at its own place "
                f"{_first_difference(lines, hunk.old, want + shift)}"
            )
        out += lines[done:at] + hunk.new
        done = at + len(hunk.old)
        shift = at - want
    return b"".join(out + lines[done:])
