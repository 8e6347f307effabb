"""Properties of the one redaction (j0.edge.redaction): whatever text surrounds it, a remembered
secret (MIN_SECRET characters or more) and a URL's password never survive `scrub`, nor does the
Basic Authorization value that a URL's userinfo makes; text without them is left as it was.
And, in a fresh interpreter with the redaction installed as `j0` installs it, a record of any
logger through any handler (a file handler that j0's streams never see) and a warning carry none.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from j0.edge import redaction

ROOT = Path(__file__).resolve().parents[2]
secrets = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=6, max_size=24)
around = st.text(max_size=40)


@contextmanager
def remembered() -> Iterator[None]:
    """The secrets a property remembers are forgotten after it: another test of this process
    that runs `j0` in it must not find its output masked by them."""
    saved = set(redaction._secrets)
    try:
        yield
    finally:
        redaction._secrets.clear()
        redaction._secrets.update(saved)


@given(secrets, around, around)
def test_a_remembered_secret_never_survives(secret: str, before: str, after: str) -> None:
    with remembered():
        redaction.remember(secret)
        assert secret not in redaction.scrub(before + secret + after + secret)


@given(st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=6, max_size=20))
def test_a_urls_password_and_its_basic_header_never_survive(password: str) -> None:
    url = f"https://user:{urllib.parse.quote(password, safe='')}@mirror.example/api"
    basic = base64.b64encode(f"user:{password}".encode()).decode()
    text = f"GET {url} failed; Authorization: Basic {basic}; password {password}"
    with remembered():
        redaction.remember_url(url)
        clean = redaction.scrub(text)
    assert password not in clean and basic not in clean
    assert "https://***@mirror.example/api" in clean


@given(st.text(st.characters(codec="ascii", categories=("L", "N", "Zs", "P")), max_size=60))
def test_text_without_secrets_is_left_as_it_was(text: str) -> None:
    if "://" in text or any(s in text for s in redaction._secrets):
        return
    assert redaction.scrub(text) == text


LIBRARY = """
import logging, sys, warnings
sys.path.insert(0, sys.argv[1])
from j0.edge import redaction
redaction.install()
log = logging.getLogger("huggingface_hub.utils._http")
log.addHandler(logging.FileHandler(sys.argv[2]))
log.propagate = False
log.warning("HTTP Error 503 thrown while requesting GET %s", "http://alice:pw-LIBRARY-1@h/api")
try:
    raise OSError("cannot reach http://alice:pw-LIBRARY-1@h/api: token hf_LIBRARY_env_2")
except OSError:
    log.exception("failed")
with open(sys.argv[2], "a") as out:
    warnings.showwarning(
        UserWarning("retrying http://alice:pw-LIBRARY-1@h/x with hf_LIBRARY_env_2"),
        UserWarning, "lib.py", 1, file=out,
    )
"""


def test_a_librarys_log_file_and_warnings_carry_no_secret(tmp_path: Path) -> None:
    """A handler of the library's own (a file) and a warning shown into a file: neither goes
    through j0's standard streams, only through the record factory and formatwarning."""
    out = tmp_path / "library.log"
    env = {"HF_TOKEN": "hf_LIBRARY_env_2", "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [sys.executable, "-c", LIBRARY, str(ROOT / "scripts"), str(out)],
        check=True, env=env, timeout=60,
    )  # fmt: skip
    text = out.read_text()
    assert "HTTP Error 503" in text and "Traceback" in text and "UserWarning" in text
    assert "pw-LIBRARY-1" not in text and "hf_LIBRARY_env_2" not in text, text
    assert text.count("http://***@h/") == 3


@given(secrets, around)
def test_what_j0_prints_carries_no_secret(secret: str, text: str) -> None:
    """j0's standard output and error (the EscapingStream its entry point puts over them) write
    no remembered secret and no URL's userinfo, whoever prints."""
    import io

    from j0.terminal.escape import EscapingStream

    with remembered():
        redaction.remember(secret)
        out = io.StringIO()
        url = f"http://u:{urllib.parse.quote(secret, safe='')}@h/"
        EscapingStream(out).write(f"{text}{secret} via {url}\n")  # type: ignore[arg-type]
    assert secret not in out.getvalue() and "http://***@h/" in out.getvalue()


def test_the_debug_traceback_carries_no_secret(tmp_path: Path) -> None:
    """J0_DEBUG=1 lets a bug's traceback through, printed after j0's streams are put back: the
    redaction's excepthook (installed by j0's entry point) scrubs it too. A fresh interpreter
    that runs `j0`, then raises an error naming a URL with its password and HF_TOKEN's value."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "scripts"),
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_ENDPOINT": "http://alice:pw-DEBUG-secret-1@127.0.0.1:9",
        "J0_DEBUG": "1",
        "HF_TOKEN": "hf_DEBUG_token_secret_2",
    }
    code = (
        "import contextlib\nfrom j0.cli import main\n"
        "with contextlib.suppress(SystemExit):\n    main(['--version'])\n"
        "raise RuntimeError('bug at http://alice:pw-DEBUG-secret-1@127.0.0.1:9 with "
        "hf_DEBUG_token_secret_2')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert "Traceback" in done.stderr and "RuntimeError" in done.stderr, done.stderr
    assert "pw-DEBUG-secret-1" not in done.stderr and "hf_DEBUG_token_secret_2" not in done.stderr
