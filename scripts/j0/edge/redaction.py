"""One redaction for everything a j0 command prints, whoever prints it: j0's own lines, and what
the libraries it calls log or warn (huggingface_hub's retry warnings named HF_ENDPOINT's password
in clear; httpx, urllib3 and docker log through the same logging).

`scrub(text)` masks the userinfo of every URL in it (j0.edge.urls.redact_text) and every secret
this process has read (`remember`: a token or API key file's content, HF_TOKEN, a URL's password
and the Basic header it makes), each as `***`. `install()`, at the command's entry (j0.cli),
routes the libraries' output through it: every log record is scrubbed as it is made (a record
factory: whichever logger, handler or level, its message, arguments, exception text and stack),
and so is every warning's text (warnings.formatwarning) and the traceback J0_DEBUG=1 prints
(sys.excepthook); j0's standard output and error are scrubbed as they are written
(j0.terminal.escape.EscapingStream).

A secret shorter than MIN_SECRET characters is masked only inside URLs: searched for in free text
it would mask ordinary words. Standard library only.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import sys
import traceback
import urllib.parse
import warnings
from typing import Any

from j0.edge.urls import MASK, redact_text

MIN_SECRET = 6
# The environment variables that hold a secret as they are (a token, a key).
SECRET_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY")
_URL_WITH_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@\s]*@[^\s]*")

_secrets: set[str] = set()
_installed = False


def remember(secret: str | None) -> None:
    """Mask `secret` wherever it appears from now on (MIN_SECRET characters or more)."""
    if secret and len(secret) >= MIN_SECRET:
        _secrets.add(secret)


def remember_url(url: str) -> None:
    """Mask the password in `url`'s userinfo, and the Basic Authorization value it makes, in
    free text too (the userinfo itself is masked wherever it appears in a URL)."""
    try:
        parts = urllib.parse.urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    if password is None:
        return
    user, password = urllib.parse.unquote(user or ""), urllib.parse.unquote(password)
    remember(password)
    remember(base64.b64encode(f"{user}:{password}".encode()).decode("ascii"))


def scrub(text: str) -> str:
    """`text` with URLs' userinfo and every remembered secret masked (again until none is left:
    a mask can complete a secret that holds one; each pass shortens the text, so it ends)."""
    text = redact_text(text)
    found = [s for s in sorted(_secrets, key=len, reverse=True) if s in text]
    while found:
        for secret in found:
            text = text.replace(secret, MASK)
        found = [s for s in found if s in text]
    return text


def _scrubbed_record(record: logging.LogRecord) -> logging.LogRecord:
    try:
        message = record.getMessage()
    except Exception:  # a record whose arguments do not fit its format: leave it to logging
        return record
    clean = scrub(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and not record.exc_text:
        record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)
    return record


def remember_environment(environ: dict[str, str] | None = None) -> None:
    """The secrets the environment holds: SECRET_VARIABLES' values, and the password of every
    URL in a variable (HF_ENDPOINT, J0_SERVER_URL, WHEEL_INDEX, ...)."""
    env = dict(os.environ) if environ is None else environ
    for name in SECRET_VARIABLES:
        remember(env.get(name, "").strip())
    for value in env.values():
        if "@" in value and "://" in value:
            for url in _URL_WITH_USERINFO.findall(value):
                remember_url(url)


def install() -> None:
    """Route every log record and warning of this process through `scrub` (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    remember_environment()
    make_record = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return _scrubbed_record(make_record(*args, **kwargs))

    logging.setLogRecordFactory(factory)
    format_warning = warnings.formatwarning

    def formatwarning(*args: Any, **kwargs: Any) -> str:
        return scrub(format_warning(*args, **kwargs))

    warnings.formatwarning = formatwarning  # type: ignore[assignment]

    def excepthook(kind: Any, value: Any, trace: Any) -> None:
        # J0_DEBUG=1's traceback, printed after j0's streams are put back
        text = "".join(traceback.format_exception(kind, value, trace))
        if sys.__stderr__ is not None:
            sys.__stderr__.write(scrub(text))

    sys.excepthook = excepthook
