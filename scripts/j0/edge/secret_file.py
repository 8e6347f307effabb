"""One rule for every file that holds a secret (the server's API key, a Hugging Face token): it
is read as one line of text, or refused; it never silently counts as "no secret".

A secret file is either the way to say "none", `/dev/null` (what compose mounts for an unset
API_KEY_FILE or HF_TOKEN_FILE), or a regular file of at most MAX_SECRET_BYTES bytes holding one
line of UTF-8 text without control characters. Line ends after that line (`echo key > file`,
an editor's last newline) are allowed; surrounding spaces are dropped. Anything else (missing, a
folder, unreadable, empty, not UTF-8, two lines, a NUL) is a J0Error, exit 2, naming the file
and what was expected, so that a server never starts without the key it was given and a request
never carries half a token.

Standard library only: `j0 serve` runs this inside the image, on the base image's python3.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from j0.edge.redaction import remember
from j0.errors import INPUT_LACKS, J0Error

MAX_SECRET_BYTES = 64 * 1024
EXPECTED = "expected one line of UTF-8 text holding it (or /dev/null for none)"


def is_dev_null(path: Path) -> bool:
    """Whether `path` is the null device: /dev/null itself, or a bind mount of it (compose
    mounts the host's /dev/null as an unset secret), recognised by its device number."""
    try:
        found = os.stat(path)
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(found.st_mode) and found.st_rdev == null.st_rdev


def read_secret_file(path: Path, what: str) -> str | None:
    """The secret in `path` (`what` names it in messages, e.g. "API key file"); None for
    /dev/null. Raises J0Error (exit 2) for anything but one line of text."""
    where = f"{what} {path}"
    if is_dev_null(path):
        return None
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise J0Error(f"{where}: no such file; {EXPECTED}", INPUT_LACKS) from None
    except OSError as exc:
        raise _unreadable(where, exc) from None
    if stat.S_ISDIR(info.st_mode):
        raise J0Error(f"{where}: a folder, not a file; {EXPECTED}", INPUT_LACKS)
    if not stat.S_ISREG(info.st_mode):
        raise J0Error(f"{where}: not a regular file; {EXPECTED}", INPUT_LACKS)
    if info.st_size > MAX_SECRET_BYTES:
        raise J0Error(
            f"{where}: {info.st_size} bytes, more than a secret's {MAX_SECRET_BYTES}; {EXPECTED}",
            INPUT_LACKS,
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SECRET_BYTES + 1)
    except OSError as exc:
        raise _unreadable(where, exc) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise J0Error(
            f"{where}: not UTF-8 text (byte {exc.start}); {EXPECTED}", INPUT_LACKS
        ) from None
    return check_secret_text(text, where)


def _unreadable(where: str, exc: OSError) -> J0Error:
    return J0Error(f"{where}: cannot read it ({exc.strerror}); {EXPECTED}", INPUT_LACKS)


def check_secret_text(text: str, where: str) -> str:
    """`text` (a secret file's content) as the secret, or a J0Error naming `where`."""
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark some editors write
    body = text.rstrip("\r\n")
    lines = body.splitlines()
    if len(lines) > 1:
        raise J0Error(f"{where}: {len(lines)} lines; {EXPECTED}", INPUT_LACKS)
    value = body.strip()
    remember(value)  # masked in whatever this process prints (j0.edge.redaction)
    if not value:
        raise J0Error(f"{where}: empty; {EXPECTED}", INPUT_LACKS)
    controls = sorted({f"{ord(c):#04x}" for c in value if ord(c) < 0x20 or ord(c) == 0x7F})
    if controls:
        raise J0Error(
            f"{where}: holds control characters ({', '.join(controls)}); {EXPECTED}", INPUT_LACKS
        )
    return value
