"""Properties (issue 53, items 1, 5, 6 and 8):

* outputs and inputs spelled every way (relative, with `./` and `..`, through a symlink to the
  file or to its folder, a hard link) and laid out every way (the same file, another file, a
  file inside a folder read, a new file there): the entry point's rule (j0.edge.own_inputs)
  refuses exactly where a reference written here from os.stat's (st_dev, st_ino) and
  os.path.realpath says the output would write into an input;
* JSON texts of any value nested to any depth (j0.errors.parse_json): the value json.loads
  gives where containers nest at most JsonLimit.DEPTH deep, JsonNestedTooDeep beyond, never a
  RecursionError; a JSON file of any kind and size (read_json_file): its value where it is a
  regular file within the limit, else a J0Error naming it;
* writes and flushes of any sizes on a real pipe whose reader goes away after any number of
  bytes (j0.terminal.closed_pipe.ClosedPipeGuard): every write answers its length, nothing
  raises, the reader got a prefix of what was written, and afterwards the descriptor is
  /dev/null.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import outcome
from j0.cli import build_parser
from j0.edge.own_inputs import refuse_writing_inputs
from j0.errors import J0Error, JsonLimit, JsonNestedTooDeep, parse_json, read_json_file
from j0.terminal.closed_pipe import ClosedPipeGuard

# --- item 1: no output onto an input, whatever the spelling ------------------------------------

# Places in a small tree: "in/log" is the input file, "in" the input folder's files live in.
TARGETS = ("in/log", "in/other", "in/new", "out/log", "in")
SPELLINGS = ("plain", "dot", "dotdot", "link", "folder-link", "hard-link")


def spelled(root: Path, target: str, how: str) -> Path:
    """`target` (relative to root) written another way; links made as needed."""
    path = root / target
    if how == "dot":
        return Path(os.path.relpath(path.parent, Path.cwd())) / "." / path.name
    if how == "dotdot":
        return path.parent / ".." / path.parent.name / path.name
    if how == "link":
        link = root / f"link-{target.replace('/', '-')}"
        if not os.path.lexists(link):
            link.symlink_to(path)
        return link
    if how == "folder-link":
        folder = root / f"dir-link-{path.parent.name}"
        if not os.path.lexists(folder):
            folder.symlink_to(path.parent, target_is_directory=True)
        return folder / path.name
    if how == "hard-link" and path.is_file():
        hard = root / f"hard-{target.replace('/', '-')}"
        if not os.path.lexists(hard):
            os.link(path, hard)
        return hard
    return path


def writes_into(out: Path, inputs: list[Path]) -> bool:
    """The reference: the output is an input (the same st_dev and st_ino), or an existing file
    whose real path lies under a folder read."""
    if out.exists():
        key = (out.stat().st_dev, out.stat().st_ino)
        if any(p.exists() and (p.stat().st_dev, p.stat().st_ino) == key for p in inputs):
            return True
    real = os.path.realpath(out)
    return out.is_file() and any(
        p.is_dir() and os.path.commonpath([real, os.path.realpath(p)]) == os.path.realpath(p)
        for p in inputs
    )


@given(
    st.sampled_from(("in/log", "in")),
    st.sampled_from(SPELLINGS),
    st.sampled_from(TARGETS[:4]),
    st.sampled_from(SPELLINGS),
)
def test_an_output_is_refused_exactly_where_it_writes_into_an_input(
    given_target: str, given_how: str, out_target: str, out_how: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "in").mkdir()
        (root / "out").mkdir()
        for name in ("in/log", "in/other", "out/log"):
            (root / name).write_text(name)
        given_path = spelled(root, given_target, given_how)
        out = spelled(root, out_target, out_how)
        if given_target == "in":  # a folder read: `j0 drafter check DIR --json OUT`
            argv = ["drafter", "check", str(given_path), "--json", str(out)]
        else:  # a file read: `j0 status --log FILE --json OUT`
            argv = ["status", "--log", str(given_path), "--json", str(out)]
        args = build_parser().parse_args(argv)
        expected = writes_into(out, [given_path])
        got = outcome(lambda: refuse_writing_inputs(args.j0_parser, args), J0Error)
        assert isinstance(got, J0Error) == expected, (argv, got)
        if expected:
            assert got.exit_code == 64 and str(out) in str(got) and str(given_path) in str(got)


# --- items 5 and 6: one bounded JSON reader ---------------------------------------------------

leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(alphabet='ab[]{}"\\', max_size=5)
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


def depth_of(value: object) -> int:
    """Containers nested in `value`, counted here by recursion (the values are shallow)."""
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


@given(values, st.integers(0, 3000), st.booleans())
def test_json_is_read_to_the_depth_limit_and_refused_past_it(
    value: object, wrap: int, in_objects: bool
) -> None:
    inner = json.dumps(value)
    text = ('{"k":' * wrap + inner + "}" * wrap) if in_objects else "[" * wrap + inner + "]" * wrap
    depth = wrap + depth_of(value)
    got = outcome(lambda: parse_json(text, "t.json"), J0Error)
    if depth <= JsonLimit.DEPTH:
        assert got == json.loads(text)  # shallow enough for the reference's own stack
    else:
        assert isinstance(got, JsonNestedTooDeep) and got.exit_code == 2
        assert str(got).startswith("t.json: not JSON (nested more than 100 levels deep")


@given(st.sampled_from(("file", "fifo", "folder", "link-to-fifo")), st.integers(0, 2048))
def test_a_json_file_of_any_kind_and_size_is_read_or_refused_unread(kind: str, size: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        if kind == "file":
            path.write_text("[" + " " * max(size - 2, 0) + "]")
        elif kind == "folder":
            path.mkdir()
        else:
            fifo = Path(folder) / "fifo"
            os.mkfifo(fifo)
            if kind == "fifo":
                fifo.rename(path)
            else:
                path.symlink_to(fifo)
        got = outcome(lambda: read_json_file(path, limit=1024), J0Error)
        regular = stat.S_ISREG(os.stat(path).st_mode)
        if regular and path.stat().st_size <= 1024:
            assert got == []
        else:
            assert isinstance(got, J0Error) and str(path) in str(got)


# --- item 8: a closed pipe drops, never raises ------------------------------------------------


@given(
    # at most 48 KB in all: under the pipe's 64 KiB, so that no write waits for a reader
    st.lists(st.text(alphabet="xyé\n", min_size=1, max_size=2000), min_size=1, max_size=12),
    st.integers(0, 20_000),
    st.booleans(),
)
def test_a_stream_whose_reader_goes_away_drops_quietly(
    pieces: list[str], read_before_close: int, line_buffered: bool
) -> None:
    read_end, write_end = os.pipe()
    stream = open(write_end, "w", encoding="utf-8", buffering=1 if line_buffered else -1)
    guard = ClosedPipeGuard(stream)
    written, received = "", b""
    try:
        closed = False
        for piece in pieces:
            assert guard.write(piece) == len(piece)
            written += piece
            if not closed and len(written.encode()) >= read_before_close:
                guard.flush()
                os.set_blocking(read_end, False)
                try:
                    while chunk := os.read(read_end, 1 << 16):
                        received += chunk
                except BlockingIOError:
                    pass
                os.close(read_end)  # the reader goes away (`head` has its lines)
                closed = True
        guard.flush()
        assert written.encode().startswith(received)
        if closed:
            guard.write("after\n")
            guard.flush()
            devnull = os.stat(os.devnull)
            now = os.fstat(write_end)
            if guard.reader_gone:
                assert (now.st_rdev, stat.S_ISCHR(now.st_mode)) == (devnull.st_rdev, True)
    finally:
        if not closed:
            os.close(read_end)
        stream.close()
