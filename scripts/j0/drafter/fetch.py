"""`j0 drafter fetch`: download the JetSpec++ drafter at one full commit, then patch its config.

Steps:
1. Resolve the revision (default DRAFTER_REVISION from the pins, a short commit such as 3147a351)
   to its full 40-hex commit with the Hub API (`/api/models/{repo}/revision/{rev}`, which the
   Hub has answered for commit prefixes since 2023, huggingface_hub issue #197; huggingface_hub
   itself treats anything but 40 hex as a branch or tag), and cross-check a hex prefix against
   the commits of the repo's branches and tags, since what the Hub does with a prefix that two
   commits share is not documented: an unknown prefix is refused (exit 2), an ambiguous one is
   refused with the candidates listed (exit 1), and so is a branch or tag whose name looks like
   a commit prefix but points elsewhere.
2. Record the full sha as DRAFTER_COMMIT in overlay/pins.env, only for the pinned repo and
   revision, and only where that record lasts and can be trusted: not in an image's copy of the
   pins (the compose drafter service: the container's layer is thrown away), not in a pins file
   tracked by git when the commit came from another endpoint than the Hub (HF_ENDPOINT: a mirror
   or a test server), not where the file cannot be written. Each of those is a warning that
   names the commit, so it can be set by hand. A pin that differs is refused.
3. `snapshot_download(local_dir=DIR, revision=<full sha>, allow_patterns=...)` of the files vLLM
   0.33.0 reads when it loads a DFlash draft (VLLM_FILES below), chosen from the repo's file list;
   everything else (README, tokenizer, training state) is listed and skipped. Progress bars are
   huggingface_hub's. A dropped connection is resumed by huggingface_hub with an HTTP Range
   request in the same run; an interrupted run leaves the finished files in DIR and a re-run
   fetches only what is missing (huggingface_hub 2.x keeps no partial file across runs).
4. Check every file against the Hub's listing (sha256 for LFS files, the git blob id otherwise).
5. Run patch-config (j0.drafter.config) and report the draft layers' causality.

Authentication: HF_TOKEN, else the file named by HF_TOKEN_PATH, else huggingface_hub's stored
login. The token is passed to huggingface_hub and never printed or logged. HF_ENDPOINT selects
the Hub. With HF_HUB_OFFLINE=1 nothing is requested: an existing DIR is checked for completeness
(against the file list cached by the earlier download) and patched.

huggingface_hub is imported inside the functions: this module's import costs nothing.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from j0.drafter import config as drafter_config
from j0.errors import CHECK_FAILED, INPUT_LACKS, USAGE, J0Error, require
from j0.pins import PINS_RELPATH, Pins, load_pins, set_pin

FULL_SHA = re.compile(r"[0-9a-f]{40}")
DEFAULT_ENDPOINT = "https://huggingface.co"  # huggingface_hub's default (constants.ENDPOINT)
# Beside the pins in an image: the build step writes /opt/j0/manifest.json next to /opt/j0/overlay.
IMAGE_MANIFEST_NAME = "manifest.json"
HEX_PREFIX = re.compile(r"[0-9a-f]{4,39}")

# What vLLM 0.33.0 reads from a DFlash draft's folder (method "dflash"), and why. Top level only:
# vLLM does not look into sub-folders of a model folder for these.
VLLM_FILES: dict[str, str] = {
    "config.json": "the draft's architecture and dflash_config (the file patch-config changes)",
    "*.safetensors": "the weights (vLLM's default loader takes *.safetensors first)",
    "*.safetensors.index.json": "which shard holds which tensor (model.safetensors.index.json)",
    "mask_embedding.pt": "a separately trained mask-token embedding, loaded by qwen3_dflash "
    "when the repo has one",
    "hf_quant_config.json": "a ModelOpt quantisation config, read when the repo has one",
}
# Not fetched: the tokenizer (a DFlash draft uses the target's tokenizer unless
# use_heterogeneous_vocab, which only method "draft_model" allows), generation_config.json (read for
# the target, not the draft), README/licence, training state (*.bin, *.pt other than the above).

# vLLM picks a speculative method from substrings of the draft's path when no method is given
# (vLLM 0.33.0: "eagle-", "eagle3", "dflash", "dspark"; vLLM issue 47486). A DFlash drafter's
# folder must not carry another method's name.
FORBIDDEN_PATH_WORDS = (
    "eagle",
    "mtp",
    "medusa",
    "mlp_speculator",
    "mlp-speculator",
    "dspark",
    "xpress",
    "ngram",
    "hydra",
)

Log = Callable[[str], None]


def _log(message: str) -> None:
    print(f"j0 drafter: {message}", flush=True)


def _is_true(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def offline_mode() -> bool:
    return _is_true(os.environ.get("HF_HUB_OFFLINE"))


def endpoint_from_env() -> str | None:
    return os.environ.get("HF_ENDPOINT", "").strip().rstrip("/") or None


def is_default_endpoint(endpoint: str | None) -> bool:
    return endpoint is None or endpoint.rstrip("/") == DEFAULT_ENDPOINT


def _drop_empty_endpoint() -> None:
    """HF_ENDPOINT set but empty (an uncommented `HF_ENDPOINT=` in .env) means the Hub; left in
    the environment, huggingface_hub would read it as an empty base URL."""
    if "HF_ENDPOINT" in os.environ and not os.environ["HF_ENDPOINT"].strip():
        del os.environ["HF_ENDPOINT"]


def _shown_endpoint(endpoint: str | None) -> str:
    """The endpoint for messages, without any user:password part."""
    if endpoint is None:
        return "https://huggingface.co (default)"
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


@dataclass(frozen=True)
class Token:
    """A Hub token and where it came from; repr and str never show the value."""

    value: str | None
    source: str

    def __repr__(self) -> str:
        return f"Token(source={self.source!r})"

    __str__ = __repr__


def hub_token() -> Token:
    """HF_TOKEN, else the file named by HF_TOKEN_PATH, else huggingface_hub's stored login."""
    value = os.environ.get("HF_TOKEN", "").strip()
    if value:
        return Token(value, "HF_TOKEN")
    path = os.environ.get("HF_TOKEN_PATH", "").strip()
    if path:
        try:
            value = Path(path).expanduser().read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise J0Error(f"HF_TOKEN_PATH={path}: no such file", INPUT_LACKS) from None
        except OSError as exc:
            raise J0Error(f"HF_TOKEN_PATH={path}: cannot read it: {exc.strerror}") from None
        if not value:
            raise J0Error(f"HF_TOKEN_PATH={path}: the file is empty", INPUT_LACKS)
        return Token(value, f"HF_TOKEN_PATH ({path})")
    return Token(None, "no HF_TOKEN or HF_TOKEN_PATH (huggingface_hub's stored login, if any)")


# ---------------------------------------------------------------------------------------------
# The folder


def default_dir(revision: str) -> Path:
    """./drafter/<revision as given>, relative to the working directory: the folder that
    compose.serve.yaml mounts by default (`./drafter/${DRAFTER_REVISION}`), so that the host's
    `j0 drafter fetch` and `docker compose up` share one download (for the pinned drafter:
    ./drafter/3147a351)."""
    if not revision or revision.startswith("/") or ".." in Path(revision).parts:
        raise J0Error(f"revision {revision!r} cannot name a folder; pass --dir", USAGE)
    return Path("drafter") / revision


def check_dir_name(directory: Path) -> None:
    """Refuse a folder whose path holds another speculative method's name (vLLM issue 47486)."""
    full = str(directory.expanduser().absolute())
    lowered = full.lower()
    found = [word for word in FORBIDDEN_PATH_WORDS if word in lowered]
    if found:
        raise J0Error(
            f"drafter folder {full} contains {', '.join(repr(w) for w in found)}: vLLM guesses "
            "a speculative method from such names in the model path (vLLM issue 47486), which "
            "would not be DFlash; choose a --dir without " + ", ".join(FORBIDDEN_PATH_WORDS),
            USAGE,
        )


# ---------------------------------------------------------------------------------------------
# The revision


@dataclass(frozen=True)
class Resolution:
    sha: str
    how: str


def _hub_error(
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

    where = _shown_endpoint(endpoint)
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
        return J0Error(f"{where} answered HTTP {status} for {repo_id}@{revision}: {exc}")
    if isinstance(exc, OfflineModeIsEnabled):
        return J0Error(f"HF_HUB_OFFLINE is set, yet {repo_id}@{revision} needs the Hub")
    return J0Error(
        f"cannot reach {where} ({type(exc).__name__}: {exc}); with HF_HUB_OFFLINE=1 an earlier "
        "download is checked and patched without the Hub (its folder: --dir, compose: DRAFTER_DIR)"
    )


def _commits_by_prefix(api: Any, repo_id: str, prefix: str, token: Token) -> dict[str, str]:
    """Commits of every branch and tag whose id starts with `prefix`: {sha: title}."""
    refs = api.list_repo_refs(repo_id, token=token.value)
    found: dict[str, str] = {}
    seen: set[str] = set()
    for ref in [*refs.branches, *refs.tags]:
        if ref.target_commit in seen:
            continue  # that history has been read already
        for commit in api.list_repo_commits(repo_id, revision=ref.ref, token=token.value):
            seen.add(commit.commit_id)
            if commit.commit_id.startswith(prefix):
                found[commit.commit_id] = commit.title
    return found


def resolve_revision(
    api: Any, repo_id: str, revision: str, token: Token, endpoint: str | None
) -> Resolution:
    """The full commit that `revision` names on the Hub (see the module's docstring)."""
    import httpx2
    from huggingface_hub.errors import BadRequestError, HfHubHTTPError, RevisionNotFoundError

    sha: str | None = None
    try:
        sha = api.model_info(repo_id, revision=revision, token=token.value).sha
    except (RevisionNotFoundError, BadRequestError):
        sha = None  # a prefix the server does not resolve; the commit list below says why
    except (HfHubHTTPError, httpx2.TransportError) as exc:
        raise _hub_error(exc, repo_id, revision, token, endpoint) from None
    if sha is not None and not FULL_SHA.fullmatch(sha):
        raise J0Error(f"{_shown_endpoint(endpoint)} gave {sha!r} as the commit of {revision!r}")
    if FULL_SHA.fullmatch(revision):
        if sha is None:
            raise J0Error(f"{repo_id}: no commit {revision}", INPUT_LACKS)
        return Resolution(sha, "a full commit id")
    if not HEX_PREFIX.fullmatch(revision):
        if sha is None:
            raise J0Error(f"{repo_id}: no branch, tag or commit {revision!r}", INPUT_LACKS)
        return Resolution(sha, f"branch or tag {revision!r} (a moving name, now pinned)")

    try:
        candidates = _commits_by_prefix(api, repo_id, revision, token)
    except (HfHubHTTPError, httpx2.TransportError) as exc:
        if sha is None:
            raise _hub_error(exc, repo_id, revision, token, endpoint) from None
        candidates = None
    if candidates is not None and len(candidates) > 1:
        listed = "; ".join(f"{c} ({title})" for c, title in sorted(candidates.items()))
        raise J0Error(
            f"{repo_id}: revision {revision!r} is ambiguous: {len(candidates)} commits start with "
            f"it: {listed}; pass a longer prefix or the full commit",
            CHECK_FAILED,
        )
    if sha is None:
        if not candidates:
            raise J0Error(
                f"{repo_id}: no commit starts with {revision!r} on {_shown_endpoint(endpoint)}",
                INPUT_LACKS,
            )
        (sha,) = candidates
        return Resolution(sha, "the only commit with that prefix in the repo's history")
    if not sha.startswith(revision):
        raise J0Error(
            f"{repo_id}: {revision!r} is the name of a branch or tag pointing to {sha}, not a "
            "prefix of that commit; pass the full commit you mean",
            CHECK_FAILED,
        )
    if candidates is None:
        return Resolution(
            sha,
            "the Hub's answer (the commit list could not be read to rule out an ambiguous prefix)",
        )
    return Resolution(sha, "the only commit with that prefix")


# ---------------------------------------------------------------------------------------------
# The files


@dataclass(frozen=True)
class RepoEntry:
    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None


def select_files(entries: Iterable[RepoEntry]) -> tuple[list[RepoEntry], list[RepoEntry]]:
    """(what vLLM reads, the rest), by VLLM_FILES, top-level files only."""
    import fnmatch

    chosen: list[RepoEntry] = []
    skipped: list[RepoEntry] = []
    for entry in sorted(entries, key=lambda e: e.path):
        top = "/" not in entry.path
        if top and any(fnmatch.fnmatchcase(entry.path, pattern) for pattern in VLLM_FILES):
            chosen.append(entry)
        else:
            skipped.append(entry)
    return chosen, skipped


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _file_hash(path: Path, algorithm: str, prefix: bytes = b"") -> str:
    digest = hashlib.new(algorithm)
    digest.update(prefix)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: Path, entry: RepoEntry) -> str | None:
    """None if the file matches the Hub's listing, else what differs."""
    if not path.is_file():
        return f"{path}: missing"
    size = path.stat().st_size
    if size != entry.size:
        return f"{path}: {size} bytes, the Hub lists {entry.size}"
    if entry.lfs_sha256 is not None:
        actual = _file_hash(path, "sha256")
        if actual != entry.lfs_sha256:
            return f"{path}: sha256 {actual}, the Hub lists {entry.lfs_sha256}"
        return None
    actual = _file_hash(path, "sha1", b"blob %d\0" % size)
    if actual != entry.blob_id:
        return f"{path}: git blob {actual}, the Hub lists {entry.blob_id}"
    return None


def _config_already_here(directory: Path, entry: RepoEntry) -> bool:
    """True if DIR/config.json.orig is this commit's config.json and DIR/config.json is it
    patched, so that the download can leave config.json alone."""
    orig = directory / (drafter_config.CONFIG_NAME + drafter_config.ORIG_SUFFIX)
    config = directory / drafter_config.CONFIG_NAME
    if not (orig.is_file() and config.is_file()) or verify_file(orig, entry) is not None:
        return False
    try:
        original = drafter_config.parse_json_text(orig.read_text(encoding="utf-8"))
        current = drafter_config.parse_json_text(config.read_text(encoding="utf-8"))
        patch = drafter_config.load_patch(drafter_config.default_patch_path())
    except (ValueError, UnicodeDecodeError, J0Error):
        return False
    expected = drafter_config.merge_patch(original, patch)
    return drafter_config.ordered(current) == drafter_config.ordered(expected)


def _check_index(directory: Path, names: set[str]) -> None:
    for index in sorted(n for n in names if n.endswith(".safetensors.index.json")):
        try:
            weight_map = json.loads((directory / index).read_text(encoding="utf-8"))["weight_map"]
        except (ValueError, KeyError, TypeError) as exc:
            raise J0Error(
                f"{directory / index}: no readable weight_map ({exc})", INPUT_LACKS
            ) from None
        missing = sorted(set(weight_map.values()) - names)
        if missing:
            raise J0Error(
                f"{directory / index} names shards the repo does not have: {', '.join(missing)}",
                INPUT_LACKS,
            )


def _report_leftovers(directory: Path) -> None:
    """Name the partial files that killed runs left behind (huggingface_hub removes its own
    partial files only when it can); they are not deleted here: another fetch may be writing."""
    download = directory / ".cache" / "huggingface" / "download"
    leftovers = sorted(download.rglob("*.incomplete")) if download.is_dir() else []
    if leftovers:
        size = sum(p.stat().st_size for p in leftovers)
        _warn(
            f"{len(leftovers)} partial file(s) of interrupted runs in {download} "
            f"({size / 1e6:.1f} MB); delete them when no other fetch is running"
        )


def _check_local_commit(directory: Path, repo_id: str, sha: str) -> None:
    """Refuse a folder that holds an earlier download of another commit: its files, config.json's
    original among them, would mix with this one's."""
    local = _local_commit(directory)
    if local is not None and local != sha:
        raise J0Error(
            f"{directory} holds {repo_id}@{local}, not {sha}: use another folder for this commit "
            "(--dir; compose: DRAFTER_DIR) or remove that one",
            CHECK_FAILED,
        )


def _local_commit(directory: Path) -> str | None:
    """The commit huggingface_hub recorded for DIR/config.json when it downloaded it."""
    metadata = directory / ".cache" / "huggingface" / "download" / "config.json.metadata"
    try:
        first = metadata.read_text(encoding="utf-8").splitlines()[0].strip()
    except (OSError, IndexError):
        return None
    return first if FULL_SHA.fullmatch(first) else None


# ---------------------------------------------------------------------------------------------
# The pins


def _image_copy(pins: Pins) -> bool:
    """Whether these pins are an image's copy (/opt/j0: the build step's manifest beside them)."""
    return (pins.root / IMAGE_MANIFEST_NAME).is_file()


def _tracked(pins: Pins) -> bool:
    """Whether the pins file is tracked by git in its checkout (the project's own pins). Where git
    cannot say, a .git folder above the pins counts as tracked: the careful answer."""
    try:
        result = subprocess.run(
            ["git", "-C", str(pins.root), "ls-files", "--error-unmatch", str(PINS_RELPATH)],
            capture_output=True,
            check=False,
        )
    except OSError:
        result = None
    if result is not None and result.returncode in (0, 1):
        return result.returncode == 0
    return any((folder / ".git").exists() for folder in (pins.root, *pins.root.parents))


def record_pin(
    pins: Pins, repo_id: str, revision: str, sha: str, log: Log, endpoint: str | None = None
) -> None:
    """Write DRAFTER_COMMIT=sha for the pinned repo and revision where that record lasts and
    can be trusted; otherwise warn, naming the commit (see the module's docstring)."""
    if repo_id != pins.drafter_repo or revision not in (pins.drafter_revision, sha):
        log(f"pins: not touched ({repo_id}@{revision} is not the pinned drafter)")
        return
    if pins.drafter_commit and pins.drafter_commit != sha:
        raise J0Error(
            f"{pins.pins_path}: DRAFTER_COMMIT={pins.drafter_commit}, but {revision} resolves to "
            f"{sha}; the pinned drafter has moved or the pin is wrong",
            CHECK_FAILED,
        )
    if pins.drafter_commit == sha:
        log(f"pins: DRAFTER_COMMIT={sha} already in {pins.pins_path}")
        return
    if _image_copy(pins):
        _warn(
            f"DRAFTER_COMMIT={sha} is not recorded: {pins.pins_path} is the image's copy of the "
            "pins, in a container layer that is thrown away; `j0 drafter fetch` on the host "
            "records it in the checkout's overlay/pins.env"
        )
        return
    if not is_default_endpoint(endpoint) and _tracked(pins):
        _warn(
            f"DRAFTER_COMMIT={sha} is not recorded in {pins.pins_path}: it came from "
            f"{_shown_endpoint(endpoint)} (HF_ENDPOINT), not from {DEFAULT_ENDPOINT}, and the "
            "tracked pins hold the Hub's commit only"
        )
        return
    try:
        changed = set_pin("DRAFTER_COMMIT", sha, pins.root)
    except (OSError, J0Error) as exc:
        _warn(
            f"cannot record DRAFTER_COMMIT={sha} in {pins.pins_path} ({exc}); set it there by hand"
        )
        return
    log(f"pins: DRAFTER_COMMIT={sha} {'written to' if changed else 'already in'} {pins.pins_path}")


def _warn(message: str) -> None:
    import sys

    print(f"j0: warning: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# fetch


def _offline_sha(repo_id: str, revision: str, directory: Path | None, pins: Pins) -> str:
    if FULL_SHA.fullmatch(revision):
        return revision
    if (
        repo_id == pins.drafter_repo
        and pins.drafter_commit
        and pins.drafter_commit.startswith(revision)
    ):
        return pins.drafter_commit
    candidates = [directory if directory is not None else default_dir(revision)]
    for candidate in candidates:
        local = _local_commit(candidate)
        if local is not None and local.startswith(revision):
            return local
    raise J0Error(
        f"HF_HUB_OFFLINE=1: cannot tell which commit {revision!r} is without the Hub (no pin in "
        f"DRAFTER_COMMIT, no earlier download in {', '.join(map(str, candidates)) or 'a --dir'}); "
        "give the full commit and the folder of an earlier download: --revision <full commit> "
        "--dir DIR (compose: DRAFTER_REVISION=<full commit> DRAFTER_DIR=DIR)",
        INPUT_LACKS,
    )


def _download(
    repo_id: str,
    sha: str,
    directory: Path,
    patterns: list[str],
    token: Token,
    endpoint: str | None,
    offline: bool,
    attempts: int = 3,
) -> None:
    import httpx2
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    for attempt in range(1, attempts + 1):
        try:
            snapshot_download(
                repo_id,
                revision=sha,
                local_dir=directory,
                allow_patterns=patterns,
                token=token.value,
                endpoint=endpoint,
                local_files_only=offline,
            )
            return
        except LocalEntryNotFoundError as exc:
            raise J0Error(
                f"{directory}: not a complete download of {repo_id}@{sha[:8]} ({exc})", INPUT_LACKS
            ) from None
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if status < 500 or attempt == attempts:
                raise _hub_error(exc, repo_id, sha, token, endpoint) from None
            error: Exception = exc
        except (httpx2.TransportError, OSError) as exc:
            if attempt == attempts:
                raise _hub_error(exc, repo_id, sha, token, endpoint) from None
            error = exc
        _warn(
            f"download interrupted ({type(error).__name__}); attempt {attempt + 1} of {attempts} "
            "keeps the finished files"
        )
        time.sleep(1.0)


def _fetch_offline(
    repo_id: str, revision: str, directory: Path | None, pins: Pins, token: Token, log: Log
) -> Path:
    from huggingface_hub import get_cached_repo_tree
    from huggingface_hub.errors import CachedRepoTreeNotFoundError

    sha = _offline_sha(repo_id, revision, directory, pins)
    directory = directory or default_dir(revision)
    check_dir_name(directory)
    log(f"HF_HUB_OFFLINE=1: checking {directory} for {repo_id}@{sha} (no requests)")
    if not (directory.is_dir() and any(directory.iterdir())):
        raise J0Error(
            f"HF_HUB_OFFLINE=1 and {directory} holds no earlier download (the folder: --dir, "
            "compose: DRAFTER_DIR)",
            INPUT_LACKS,
        )
    _check_local_commit(directory, repo_id, sha)
    try:
        listing = get_cached_repo_tree(repo_id, revision=sha, local_dir=directory)
    except CachedRepoTreeNotFoundError:
        raise J0Error(
            f"{directory}: no file list of {repo_id}@{sha[:8]} cached there by an earlier "
            "download, so its completeness cannot be checked offline",
            INPUT_LACKS,
        ) from None
    chosen, _ = select_files(RepoEntry(f.path, f.size, f.blob_id, None) for f in listing)
    _download(
        repo_id, sha, directory, [glob.escape(e.path) for e in chosen], token, None, offline=True
    )
    wrong = [
        f"{directory / e.path}: {(directory / e.path).stat().st_size} bytes, listed {e.size}"
        for e in chosen
        if e.path != "config.json" and (directory / e.path).stat().st_size != e.size
    ]
    if wrong:
        raise J0Error("incomplete files: " + "; ".join(wrong), INPUT_LACKS)
    log(f"{len(chosen)} files present: " + ", ".join(e.path for e in chosen))
    return directory


def _list_files(
    api: Any, repo_id: str, sha: str, token: Token, endpoint: str | None
) -> list[RepoEntry]:
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.hf_api import RepoFile

    try:
        return [
            RepoEntry(f.path, f.size, f.blob_id, f.lfs.sha256 if f.lfs is not None else None)
            for f in api.list_repo_tree(repo_id, recursive=True, revision=sha, token=token.value)
            if isinstance(f, RepoFile)
        ]
    except (HfHubHTTPError, httpx2.TransportError) as exc:
        raise _hub_error(exc, repo_id, sha, token, endpoint) from None


def _fetch_online(
    repo_id: str, revision: str, directory: Path | None, pins: Pins, token: Token, log: Log
) -> Path:
    from huggingface_hub import HfApi

    endpoint = endpoint_from_env()
    api = HfApi(endpoint=endpoint, library_name="j0")
    log(f"resolving {repo_id}@{revision} on {_shown_endpoint(endpoint)} ({token.source})")
    resolution = resolve_revision(api, repo_id, revision, token, endpoint)
    sha = resolution.sha
    log(f"{revision} -> {sha} ({resolution.how})")
    directory = directory or default_dir(revision)
    check_dir_name(directory)
    _check_local_commit(directory, repo_id, sha)
    record_pin(pins, repo_id, revision, sha, log, endpoint)

    entries = _list_files(api, repo_id, sha, token, endpoint)
    chosen, skipped = select_files(entries)
    names = {e.path for e in chosen}
    if "config.json" not in names or not any(n.endswith(".safetensors") for n in names):
        raise J0Error(
            f"{repo_id}@{sha[:8]} has no config.json and *.safetensors at its top level "
            f"(files: {', '.join(sorted(e.path for e in entries)) or 'none'})",
            INPUT_LACKS,
        )
    total = sum(e.size for e in chosen)
    log(
        f"fetching {len(chosen)} files ({total / 1e6:.1f} MB) into {directory}: "
        + ", ".join(e.path for e in chosen)
    )
    if skipped:
        log("not read by vLLM, skipped: " + ", ".join(e.path for e in skipped))
    config_entry = next(e for e in chosen if e.path == "config.json")
    keep_config = _config_already_here(directory, config_entry)
    wanted = [e for e in chosen if not (keep_config and e.path == "config.json")]
    _download(
        repo_id, sha, directory, [glob.escape(e.path) for e in wanted], token, endpoint, False
    )
    log("checking the files against the Hub's listing (sha256 / git blob id)")
    problems = []
    for entry in chosen:
        path = directory / entry.path
        if entry.path == "config.json" and keep_config:
            path = directory / (drafter_config.CONFIG_NAME + drafter_config.ORIG_SUFFIX)
        problem = verify_file(path, entry)
        if problem:
            problems.append(problem)
    if problems:
        raise J0Error(
            "downloaded files differ from the Hub's listing: "
            + "; ".join(problems)
            + "; nothing was patched: remove those files and fetch again"
        )
    _check_index(directory, names)
    _report_leftovers(directory)
    log(f"{repo_id}@{sha} is in {directory}")
    return directory


def fetch(
    repo_id: str | None = None,
    revision: str | None = None,
    directory: Path | None = None,
    log: Log = _log,
) -> drafter_config.PatchResult:
    """Fetch the drafter and patch its config.json (see the module's docstring)."""
    _drop_empty_endpoint()  # before huggingface_hub reads its constants
    require("huggingface_hub", "j0 drafter fetch")
    pins = load_pins()
    repo_id = repo_id or pins.drafter_repo
    revision = revision or pins.drafter_revision
    if directory is not None:
        check_dir_name(directory)
    token = hub_token()
    if offline_mode():
        directory = _fetch_offline(repo_id, revision, directory, pins, token, log)
    else:
        directory = _fetch_online(repo_id, revision, directory, pins, token, log)
    return drafter_config.patch_config(directory)
