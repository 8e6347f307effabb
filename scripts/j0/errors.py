"""Exit codes shared by every `j0` command, the error that carries one, and optional imports.

`pip install -e .` installs the standard-library core only (overlay, serve, the image's build
step); a command that needs more says so instead of dying with a ModuleNotFoundError traceback:

    j0: error: j0 image build needs the Python package `docker`, which is not installed for
    /usr/bin/python3: pip install -e '.[docker]' (in the j0 checkout)

Standard library only.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import stat
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

OK = 0
CHECK_FAILED = 1
INPUT_LACKS = 2
VERIFY_BASE = 3
VERIFY_OTHER = 4
VERIFY_PREFIX_SAFE = 5
VERIFY_AUDIT = 6
USAGE = 64
UNAVAILABLE = 69  # sysexits.h EX_UNAVAILABLE: what the command needs is not here
INTERNAL = 70  # sysexits.h EX_SOFTWARE: a bug in j0 (an unexpected exception), never a verdict
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it: Ctrl-C
TERMINATED = 143  # 128 + SIGTERM: `kill`, `docker stop`, a Kubernetes pod's end

# The rule, written once: what each code means for every command. `j0 --help` (EXIT_CODE_TABLE)
# prints it; README.md's table is the same rows (exit_code_rows(); tests/test_exit_codes.py holds
# the two equal and walks the commands' documented exits against what they do). Which code a
# refusal takes: a file or folder the command reads that is absent or not what it must be is 2
# (the input lacks it); what the user typed (an option, an argument, a switch, an output that
# would be overwritten) is 64; a thing the command needs from the machine (a package, a GPU,
# Docker, an image) is 69; a judged input that is wrong is 1.
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (OK, "success"),
    (
        CHECK_FAILED,
        "a check failed: what was checked is not what it must be (a hash mismatch, a patch that "
        "does not apply, J0 deviates, a dump file that is not what the patch writes)",
    ),
    (
        INPUT_LACKS,
        "the input lacks what the command checks: a file or folder it reads is missing, "
        "unreadable or not of its kind (no J0 in the file, no `dflash_config`, not JSON, no "
        "dumps), or nothing could be checked",
    ),
    (VERIFY_BASE, "`overlay verify`: the unpatched base"),
    (VERIFY_OTHER, "`overlay verify`: neither the article's file nor the base"),
    (VERIFY_PREFIX_SAFE, "`overlay verify`: the prefix-safe variant of the article's file"),
    (
        VERIFY_AUDIT,
        "`overlay verify`: a J0 audit instrument (`identity=audit`: the audit patch on either "
        "file), refused",
    ),
    (
        USAGE,
        "command-line usage error: an option, argument or switch the command does not take (a "
        "value out of its range, arguments vLLM would refuse in `j0 serve`), or an output that "
        "exists and would be overwritten",
    ),
    (
        UNAVAILABLE,
        "what the command needs is not installed or not here: a package (named, with the `pip "
        "install` line that brings it), a GPU, Docker, an image (named; never pulled unasked); "
        "nothing was checked",
    ),
    (
        INTERNAL,
        "internal error: a bug in j0, never a verdict (one line naming the command and its "
        "input; `J0_DEBUG=1` shows the traceback)",
    ),
    (
        INTERRUPTED,
        "interrupted (SIGINT, Ctrl-C): what had finished is kept (`j0 bench run` writes its "
        "finished requests first; `j0 mini train` removes its unfinished OUT)",
    ),
    (
        TERMINATED,
        "terminated (SIGTERM: `kill`, `docker stop`, a Kubernetes pod's end): as 130 (SIGHUP: 129)",
    ),
)


def exit_code_rows() -> list[str]:
    """README.md's exit-code table, row by row (the header, then one row per code)."""
    return ["| code | meaning |", "|---|---|"] + [f"| {c} | {m} |" for c, m in EXIT_CODES]


def _help_table() -> str:
    import textwrap

    lines = ["exit codes (all commands):"]
    for code, meaning in EXIT_CODES:
        wrapped = textwrap.wrap(meaning, 90)
        lines.append(f"  {code:<3} {wrapped[0]}")
        lines += [f"      {more}" for more in wrapped[1:]]
    return "\n".join(lines) + "\n"


EXIT_CODE_TABLE = _help_table()


class J0Error(Exception):
    """An error to report to the user as one clear message, with an exit code."""

    def __init__(self, message: str, exit_code: int = CHECK_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


# The most a file the user names may hold before it is read (j0 never needs more): a server log,
# a dataset, a result; InputLimit.SMALL for what is one document (a status file, a system prompt,
# a JSON of prompts). A larger one, or one that is not a regular file (/dev/zero, a FIFO), is
# refused with its size and the limit, never read whole.
class InputLimit:
    """Byte limits of files read by read_input_bytes (a class, not module constants: this
    module's upper-case integers are the exit codes)."""

    ANY = 512 * 1024 * 1024
    SMALL = 16 * 1024 * 1024
    PIECE = 1 << 20  # read this much at a time


def read_input_text(
    path: Path, what: str, limit: int = InputLimit.ANY, exit_code: int = INPUT_LACKS
) -> str:
    """The UTF-8 text of a file the user named, or the J0Error (exit 2, INPUT_LACKS) that says
    why not, naming `what` (e.g. "--status-json FILE") and the file: no such file, a folder, not
    a regular file, over `limit` bytes, unreadable, not UTF-8. Never a traceback for a file that
    is not what was asked for."""
    data = read_input_bytes(path, what, text=True, limit=limit, exit_code=exit_code)
    return data.decode("utf-8")


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_input_bytes(
    path: Path,
    what: str,
    text: bool = False,
    limit: int = InputLimit.ANY,
    exit_code: int = INPUT_LACKS,
) -> bytes:
    """The bytes of a file the user named (checked to be UTF-8 with `text`), at most `limit`:
    judged by fstat(2) on the opened file before a byte is read (O_NONBLOCK, so that a FIFO
    cannot hold the open), and read with that bound (a file that grows meanwhile is refused
    too); see read_input_text."""
    # "--system-prompt @" names a file as the user wrote it: "@FILE", without a space; no `what`:
    # the file alone.
    where = f"{what}{path}" if what.endswith("@") else f"{what} {path}" if what else str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise J0Error(f"{where}: no such file", exit_code) from None
    except IsADirectoryError:
        raise J0Error(f"{where}: a folder, expected a file", exit_code) from None
    except OSError as exc:
        raise J0Error(
            f"{where}: cannot be read ({exc.strerror or type(exc).__name__})", exit_code
        ) from None
    mode, size = os.fstat(fd).st_mode, os.fstat(fd).st_size
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise J0Error(f"{where}: a folder, expected a file", exit_code)
        raise J0Error(
            f"{where}: {_file_kind(mode)}, expected a regular file (nothing was read)", exit_code
        )
    with os.fdopen(fd, "rb") as handle:
        too_big = J0Error(
            f"{where}: {size:,} bytes, over the limit of {limit:,} bytes"
            f"{f' for {what}' if what else ''} (nothing was read)",
            exit_code,
        )
        if size > limit:
            raise too_big
        parts: list[bytes] = []
        total = 0
        try:  # in pieces: read(limit + 1) would allocate the whole limit at once
            while part := handle.read(min(InputLimit.PIECE, limit + 1 - total)):
                parts.append(part)
                total += len(part)
                if total > limit:  # grew while read
                    raise too_big
        except OSError as exc:
            raise J0Error(
                f"{where}: cannot be read ({exc.strerror or type(exc).__name__})", exit_code
            ) from None
        data = b"".join(parts)
    if text:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise J0Error(
                f"{where}: not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x})",
                exit_code,
            ) from None
    return data


# What json.loads raises on input that is not JSON it can hold: JSONDecodeError, and plain
# ValueError for an integer of more than 4,300 digits (Python's int-string limit; not a
# JSONDecodeError), RecursionError for arrays nested deeper than the interpreter's stack.
JSON_ERRORS: tuple[type[Exception], ...] = (ValueError, RecursionError)


class JsonLimit:
    """The bounds of every JSON j0 reads (parse_json): containers nested at most DEPTH deep (a
    config, a result, a server's answer nest a handful; j0's own walks of a document recurse, and
    the stack must never be what refuses one), and a text of at most InputLimit.ANY bytes unless
    the reader says less."""

    DEPTH = 100


class JsonNestedTooDeep(J0Error):
    """parse_json's refusal of a text nested past JsonLimit.DEPTH (or the stack): a reader that
    takes text that is not JSON as plain text (serve's dotted options) still refuses this one."""


def json_problem(exc: BaseException) -> str:
    """What was wrong with a JSON text, in one line."""
    if isinstance(exc, json.JSONDecodeError):
        return str(exc)
    if isinstance(exc, RecursionError):
        return f"nested more than {JsonLimit.DEPTH} levels deep, the limit"
    if "digits" in str(exc):
        return "an integer of more than 4,300 digits"
    return str(exc)[:200]


def _nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` deep in `value` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        inner = item.values() if isinstance(item, dict) else item
        stack.extend((x, depth + 1) for x in inner if isinstance(x, dict | list))
    return False


def parse_json(
    text: str | bytes,
    what: str,
    exit_code: int = INPUT_LACKS,
    *,
    max_bytes: int = InputLimit.ANY,
    object_pairs_hook: Any = None,
) -> Any:
    """json.loads(text), bounded: the one JSON loader of j0 (tests/test_json_bounds.py fails on a
    json.loads anywhere else). A text over `max_bytes` (judged before it is parsed), one that
    json.loads refuses in any way (JSON_ERRORS; `object_pairs_hook`'s ValueError too), or one
    nested more than JsonLimit.DEPTH deep is the J0Error "WHAT: not JSON (why)" (exit 2 by
    default), never a RecursionError."""
    size = len(text)  # a character is at least a byte
    if size > max_bytes:
        unit = "bytes" if isinstance(text, bytes) else "characters"
        raise J0Error(
            f"{what}: {size:,} {unit}, over the limit of {max_bytes:,} bytes (not read)",
            exit_code,
        )
    too_deep = JsonNestedTooDeep(f"{what}: not JSON ({json_problem(RecursionError())})", exit_code)
    try:
        value = json.loads(text, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise too_deep from None
    except JSON_ERRORS as exc:
        raise J0Error(f"{what}: not JSON ({json_problem(exc)})", exit_code) from None
    if isinstance(value, dict | list) and _nested_deeper_than(value, JsonLimit.DEPTH):
        raise too_deep
    return value


def read_json_file(
    path: Path,
    what: str = "",
    limit: int = InputLimit.SMALL,
    exit_code: int = INPUT_LACKS,
    *,
    object_pairs_hook: Any = None,
) -> Any:
    """The JSON of a file a user or a server gave: read_input_text's bounds (a regular file of at
    most `limit` bytes, UTF-8; a FIFO refused unread), then parse_json's. Errors name `what` and
    the file (the file alone where `what` is empty)."""
    text = read_input_text(path, what, limit=limit, exit_code=exit_code)
    where = f"{what} {path}" if what else str(path)
    return parse_json(text, where, exit_code, object_pairs_hook=object_pairs_hook)


def require_input_file(path: Path, what: str) -> Path:
    """`path` when it is a file; else the J0Error (exit 2, INPUT_LACKS) naming `what` and the
    path: no such file, or a folder where a file goes."""
    if Path(path).is_file():
        return path
    if Path(path).is_dir():
        raise J0Error(f"{what} {path}: a folder, expected a file", INPUT_LACKS)
    if Path(path).exists():
        kind = _file_kind(Path(path).stat().st_mode)
        raise J0Error(f"{what} {path}: {kind}, expected a regular file", INPUT_LACKS)
    raise J0Error(f"{what} {path}: no such file", INPUT_LACKS)


def require_input_folder(path: Path, what: str) -> Path:
    """`path` when it is a folder; else the J0Error (exit 2, INPUT_LACKS) naming `what` and the
    path: no such folder, or a file where a folder goes."""
    if Path(path).is_dir():
        return path
    if Path(path).exists():
        raise J0Error(f"{what} {path}: a file, expected a folder", INPUT_LACKS)
    raise J0Error(f"{what} {path}: no such folder", INPUT_LACKS)


# --- Optional dependencies ---------------------------------------------------------------
# The extras of pyproject.toml's [project.optional-dependencies], by the module each one brings.
EXTRA_OF = {
    "docker": "docker",
    "requests": "docker",
    "huggingface_hub": "hub",
    "prometheus_client": "status",
    "torch": "dumps",
    "numpy": "dumps",
    "rich": "dumps",
    "dflash": "dumps",
    "transformers": "dumps",
    "safetensors": "dumps",
    "aiohttp": "bench",
    "tqdm": "bench",
    "datasets": "bench",
    "matplotlib": "bench",
    "kubernetes": "k8s",
    "dotenv": "dotenv",
    "yaml": "deploy",
}
# Distribution (pip) names where they differ from the module's.
DISTRIBUTION_OF = {
    "huggingface_hub": "huggingface_hub",
    "prometheus_client": "prometheus_client",
    "dotenv": "python-dotenv",
    "yaml": "PyYAML",
}


def install_hint(extra: str) -> str:
    return f"pip install -e '.[{extra}]' (in the j0 checkout)"


def missing_error(module: str, purpose: str, extra: str | None = None) -> J0Error:
    """The J0Error for `module` missing, for `purpose` (the command, e.g. "j0 image build"):
    exit 69 (UNAVAILABLE), never 1, which would read as a failed check."""
    top = module.split(".", 1)[0]
    extra = extra or EXTRA_OF.get(top, top)
    package = DISTRIBUTION_OF.get(top, top)
    return J0Error(
        f"{purpose} needs the Python package `{package}`, which is not installed for "
        f"{sys.executable}: {install_hint(extra)}",
        UNAVAILABLE,
    )


def require(module: str, purpose: str, extra: str | None = None) -> ModuleType:
    """Import `module`, or raise a J0Error naming the extra that provides it.

    Only the module itself being absent is turned into that message; an ImportError from inside
    an installed package (a broken install) propagates, so that its own message stays visible.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".", 1)[0]
        if exc.name not in (module, top):
            raise
        raise missing_error(module, purpose, extra) from None


def available(module: str) -> bool:
    """Whether `module` is installed (found, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
