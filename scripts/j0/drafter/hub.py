"""How `j0 drafter fetch` talks to the Hub: the endpoint (HF_ENDPOINT, shown without credentials),
offline mode (HF_HUB_OFFLINE), the token (HF_TOKEN, HF_TOKEN_PATH or huggingface_hub's stored
login; never shown) and the one-message errors for what the Hub answers.

huggingface_hub is imported inside the functions: this module's import costs nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from j0.edge import urls
from j0.edge.secret_file import check_secret_text, read_secret_file
from j0.errors import INPUT_LACKS, J0Error

DEFAULT_ENDPOINT = "https://huggingface.co"  # huggingface_hub's default (constants.ENDPOINT)


def _is_true(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def offline_mode() -> bool:
    return _is_true(os.environ.get("HF_HUB_OFFLINE"))


def endpoint_from_env() -> str | None:
    return os.environ.get("HF_ENDPOINT", "").strip().rstrip("/") or None


def is_default_endpoint(endpoint: str | None) -> bool:
    return endpoint is None or endpoint.rstrip("/") == DEFAULT_ENDPOINT


def drop_empty_endpoint() -> None:
    """HF_ENDPOINT set but empty (an uncommented `HF_ENDPOINT=` in .env) means the Hub; left in
    the environment, huggingface_hub would read it as an empty base URL."""
    if "HF_ENDPOINT" in os.environ and not os.environ["HF_ENDPOINT"].strip():
        del os.environ["HF_ENDPOINT"]


def shown_endpoint(endpoint: str | None) -> str:
    """The endpoint for messages, any user:password in it masked (j0.edge.urls.redact)."""
    if endpoint is None:
        return "https://huggingface.co (default)"
    return urls.redact(endpoint)


@dataclass(frozen=True)
class Token:
    """A Hub token and where it came from; repr and str never show the value."""

    value: str | None
    source: str

    def __repr__(self) -> str:
        return f"Token(source={self.source!r})"

    __str__ = __repr__


def hub_token() -> Token:
    """HF_TOKEN, else the file named by HF_TOKEN_PATH, else the stored login ($HF_HOME/token,
    where compose's drafter service mounts the token secret). A token file is read by the one rule
    of j0.edge.secret_file: one line of text, /dev/null for none, anything else exit 2."""
    value = os.environ.get("HF_TOKEN", "").strip()
    if value:
        return Token(check_secret_text(value, "HF_TOKEN"), "HF_TOKEN")
    path = os.environ.get("HF_TOKEN_PATH", "").strip()
    if path:
        value = read_secret_file(Path(path).expanduser(), "HF_TOKEN_PATH")
        if value is None:
            return Token(None, f"none (HF_TOKEN_PATH={path})")
        return Token(value, f"HF_TOKEN_PATH ({path})")
    stored = stored_token_path()
    if os.path.lexists(stored):
        value = read_secret_file(stored, "Hugging Face token file")
        return Token(value, f"{stored}" if value else f"none ({stored} is /dev/null)")
    return Token(None, "no HF_TOKEN, HF_TOKEN_PATH or stored login")


def stored_token_path() -> Path:
    """Where huggingface_hub keeps the login: $HF_HOME/token, HF_HOME defaulting to
    $XDG_CACHE_HOME/huggingface, then ~/.cache/huggingface (huggingface_hub.constants)."""
    home = os.environ.get("HF_HOME", "").strip()
    if not home:
        cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
        home = str(Path(cache) / "huggingface")
    return Path(home).expanduser() / "token"


def hub_error(
    exc: Exception, repo_id: str, revision: str, token: Token, endpoint: str | None
) -> J0Error:
    """A J0Error that says what went wrong with the Hub, without the token."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = shown_endpoint(endpoint)
    token_note = f"token: {token.source}"
    if isinstance(exc, RevisionNotFoundError):
        return J0Error(f"{repo_id}: no revision {revision!r} on {where}", INPUT_LACKS)
    if isinstance(exc, GatedRepoError):
        return J0Error(
            f"{repo_id} is gated on {where}: accept its terms on the Hub and give a token with "
            f"HF_TOKEN or HF_TOKEN_PATH ({token_note})"
        )
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, RepositoryNotFoundError):
        if status == 401:
            return J0Error(
                f"{where} answered 401 for {repo_id}: the repo is private or gated, or does not "
                f"exist; give a token with read access in HF_TOKEN or HF_TOKEN_PATH ({token_note})"
            )
        return J0Error(f"{repo_id}: no such model repo on {where} ({token_note})")
    if isinstance(exc, HfHubHTTPError) and status == 401:
        return J0Error(f"{where} refused the token (401 invalid credentials; {token_note})")
    if isinstance(exc, HfHubHTTPError):
        return J0Error(
            f"{where} answered HTTP {status} for {repo_id}@{revision}: {urls.redact_text(str(exc))}"
        )
    if isinstance(exc, OfflineModeIsEnabled):
        return J0Error(f"HF_HUB_OFFLINE is set, yet {repo_id}@{revision} needs the Hub")
    return J0Error(
        f"cannot reach {where} ({type(exc).__name__}: {urls.redact_text(str(exc))}); with "
        "HF_HUB_OFFLINE=1 an earlier "
        "download is checked and patched without the Hub (its folder: --out, compose: DRAFTER_DIR)"
    )


def transport_errors() -> tuple[type[BaseException], ...]:
    """The connection-level error classes (no answer, dropped connection) of the HTTP library
    huggingface_hub talks through: httpx2 for huggingface_hub 2.x, httpx for 1.x. vLLM 0.33.0
    allows huggingface_hub>=1.31.0, so an image may hold either line; both are caught where both
    are installed."""
    found: list[type[BaseException]] = []
    try:
        import httpx2

        found.append(httpx2.TransportError)
    except ModuleNotFoundError:
        pass
    try:
        import httpx

        found.append(httpx.TransportError)
    except ModuleNotFoundError:
        pass
    return tuple(found)
