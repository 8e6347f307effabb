"""Writing files: atomically (a reader sees the old file or the new one, never half of either),
following the umask, and never into the writer's own input (`refuse_own_inputs`,
`refuse_inside`: a usage error before any work)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from j0.errors import USAGE, J0Error

# The signals that stop a j0 command (Ctrl-C, SIGTERM): held back while a temporary file is named.
HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def current_umask() -> int:
    """The process's umask (os.umask can only be read by setting it: set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_bytes_atomic(
    path: Path, data: bytes, mode: int | None = None, *, replace_existing: bool = True
) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then move it to `path`.

    The file gets `mode` where given (a file replaced in place keeps its own), else what a plain
    `open(path, "w")` gives: 0o666 less the umask (0o644 under the usual 022, 0o600 under 077).

    With replace_existing=False the move is link(2), which refuses (FileExistsError) to replace
    a file already at `path`: for keeping originals that must never be overwritten.
    """
    check_output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_name: str | None = None
    try:
        # Ctrl-C or SIGTERM held back while the temporary file is made and named: arriving between
        # the two, it left the file behind (seen in a loaded test run, where the interrupted
        # build's cleanup found no name to remove). Delivered when the name is known, the
        # `finally` below removes the file.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
        try:
            fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o666 & ~current_umask() if mode is None else mode)
        if replace_existing:
            os.replace(tmp_name, path)
        else:
            os.link(tmp_name, path)
    finally:
        if tmp_name is not None:
            Path(tmp_name).unlink(missing_ok=True)


def check_output_path(path: Path) -> None:
    """Refuse (exit 64) an output path that names a folder, or whose folder is a file."""
    if path.is_dir():
        raise J0Error(f"{path}: a folder; expected the name of a file to write", USAGE)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise J0Error(f"{path}: {parent} is a file, not a folder to write into", USAGE)
            break


def check_output_folder(path: Path, what: str) -> None:
    """Refuse (exit 64) an output folder that is a file, or whose folder is a file; `what` names
    the option (e.g. "--out")."""
    if path.exists() and not path.is_dir():
        raise J0Error(f"{what} {path}: a file; expected a folder to write into", USAGE)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise J0Error(f"{what} {path}: {parent} is a file, not a folder", USAGE)
            break


CLAIM_INSIDE = ".j0-claim"  # the lock file of a folder claimed from inside (claimed(inside=True))


def claim_name(path: Path, inside: bool = False) -> Path:
    """The lock file that `path`'s writer holds (claimed): beside it, or where `inside`, in the
    folder itself."""
    return path / CLAIM_INSIDE if inside else path.with_name(f".{path.name}.j0-claim")


@contextmanager
def claimed(path: Path, what: str, inside: bool = False) -> Iterator[None]:
    """Hold `path` (a file or a folder) as this process's output for as long as the block runs.

    The claim is an exclusive flock(2) on a lock file beside it (claim_name): a second writer
    that finds it held is refused (exit 64), so that whatever the block judges of `path` (does
    it exist, is the folder empty) no other j0 command can change until it ends. The kernel
    drops a flock when its holder dies, so a killed writer leaves no stale claim (a lock file
    left by kill -9 is taken over). Folders made for the lock file that the block left empty
    are removed with it: a refused command leaves nothing behind. With `inside`, the lock file
    is in the folder `path` itself: for a folder that is a mount point (compose's and
    Kubernetes' /drafter), whose parent is not writable."""
    lock = claim_name(path, inside)
    home = lock.parent
    made = [p for p in (home, *home.parents) if not os.path.lexists(p)]
    home.mkdir(parents=True, exist_ok=True)
    try:
        yield from _flocked(lock, path, what)
    finally:
        for folder in made:  # the deepest first
            try:
                folder.rmdir()
            except OSError:
                break  # not empty: the command wrote there


def _flocked(lock: Path, path: Path, what: str) -> Iterator[None]:
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise J0Error(
                f"{what} {path}: another j0 command is writing it now (it holds {lock}); "
                f"wait for it to end or choose another {what}",
                USAGE,
            ) from None
        try:
            held = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:
            held = False
        if held:  # else its holder removed the file after we opened it: claim the new one
            break
        os.close(fd)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        os.close(fd)


@contextmanager
def claimed_output(path: Path, what: str, replace: bool) -> Iterator[None]:
    """Hold the file `path` as this process's output (`claimed`) for as long as the block runs;
    whether it exists is judged under the claim, so that of two commands started together only
    one can write it; with `replace` false an existing `path` is refused (exit 64)."""
    with claimed(path, what):
        if not replace and os.path.lexists(path):
            raise J0Error(
                f"{what} {path}: exists; give --force to replace it (or another {what}): "
                "nothing is overwritten unasked",
                USAGE,
            )
        yield


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def same_file(a: Path, b: Path) -> bool:
    """Whether writing `a` would replace `b`: the same file where both exist (os.path.samefile
    follows symlinks and sees hard links), else the same resolved path."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except OSError:
        return False


def refuse_own_inputs(
    outputs: Iterable[tuple[str, Path]], inputs: Iterable[tuple[str, Path]]
) -> None:
    """A usage error (exit 64) where an output (what names it, its path) is one of the inputs."""
    given = [(name, path) for name, path in inputs if path is not None]
    for out_name, out in outputs:
        for in_name, path in given:
            if same_file(out, path):
                raise J0Error(
                    f"{out_name} {out} is the same file as {in_name} {path}: a command never "
                    "writes into its own input; choose another output",
                    USAGE,
                )


def refuse_inside(
    outputs: Iterable[tuple[str, Path | None]], folders: Iterable[tuple[str, Path]]
) -> None:
    """A usage error (exit 64) where an output (what names it, its path) lies in, or is, a folder
    being read: a report written among the dumps it reads could replace one, and would be read
    as one the next time."""
    given = [(name, folder) for name, folder in folders if folder is not None]
    for out_name, out in outputs:
        if out is None:
            continue
        for in_name, folder in given:
            try:
                inside = out.resolve().is_relative_to(folder.resolve())
            except OSError:
                inside = False
            if inside:
                raise J0Error(
                    f"{out_name} {out} is inside {in_name} {folder}, which this command reads: "
                    "a command never writes into its own input; write it beside the folder",
                    USAGE,
                )
