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
   0.33.0 reads when it loads a DFlash draft (files.VLLM_FILES), chosen from the repo's file list;
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

This module runs the steps; each lives in the module named for it: revision (1), pin_record (2),
files (which files, the Hub's listing, the checks of 3 and 4), download (3), folder (DIR: its
default, its name, the commit it holds), hub (endpoint, offline mode, token, the Hub's errors) and
console (what is printed). default_dir and check_dir_name are importable from here as well.

huggingface_hub is imported inside the functions: this module's import costs nothing.
"""

from __future__ import annotations

import glob
from pathlib import Path

from j0.drafter import config as drafter_config
from j0.drafter import console
from j0.drafter.config_guard import guard_config
from j0.drafter.console import Log
from j0.drafter.download import download_files, report_leftovers
from j0.drafter.files import (
    RepoEntry,
    check_index,
    list_files,
    select_files,
    verify_file,
)
from j0.drafter.folder import check_dir_name, check_local_commit, default_dir, local_commit
from j0.drafter.hub import (
    Token,
    drop_empty_endpoint,
    endpoint_from_env,
    hub_token,
    offline_mode,
    shown_endpoint,
)
from j0.drafter.pin_record import record_pin
from j0.drafter.revision import FULL_SHA, resolve_revision
from j0.edge.atomic import CLAIM_INSIDE, check_output_folder, claimed
from j0.edge.hub_bounds import bounded_requests, checked_repo_id
from j0.errors import INPUT_LACKS, InputLimit, J0Error, read_input_bytes, require
from j0.pins import Pins, load_pins

# Kept here for callers of fetch.default_dir and fetch.check_dir_name (the compose tests).
__all__ = ["check_dir_name", "default_dir", "fetch"]


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
        local = local_commit(candidate)
        if local is not None and local.startswith(revision):
            return local
    raise J0Error(
        f"HF_HUB_OFFLINE=1: cannot tell which commit {revision!r} is without the Hub (no pin in "
        f"DRAFTER_COMMIT, no earlier download in {', '.join(map(str, candidates)) or 'an --out'}); "
        "give the full commit and the folder of an earlier download: --revision <full commit> "
        "--out DIR (compose: DRAFTER_REVISION=<full commit> DRAFTER_DIR=DIR)",
        INPUT_LACKS,
    )


def _fetch_offline(
    repo_id: str, revision: str, directory: Path | None, pins: Pins, token: Token, log: Log
) -> Path:
    from huggingface_hub import get_cached_repo_tree
    from huggingface_hub.errors import CachedRepoTreeNotFoundError

    sha = _offline_sha(repo_id, revision, directory, pins)
    directory = directory or default_dir(revision)
    check_dir_name(directory)
    log(f"HF_HUB_OFFLINE=1: checking {directory} for {repo_id}@{sha} (no requests)")
    if not (directory.is_dir() and any(p.name != CLAIM_INSIDE for p in directory.iterdir())):
        raise J0Error(
            f"HF_HUB_OFFLINE=1 and {directory} holds no earlier download (the folder: --out, "
            "compose: DRAFTER_DIR)",
            INPUT_LACKS,
        )
    check_local_commit(directory, repo_id, sha)
    try:
        listing = get_cached_repo_tree(repo_id, revision=sha, local_dir=directory)
    except CachedRepoTreeNotFoundError:
        raise J0Error(
            f"{directory}: no file list of {repo_id}@{sha[:8]} cached there by an earlier "
            "download, so its completeness cannot be checked offline",
            INPUT_LACKS,
        ) from None
    chosen, _ = select_files(RepoEntry(f.path, f.size, f.blob_id, None) for f in listing)
    download_files(
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


def fetch_plan(directory: Path, chosen: list[RepoEntry], keep_config: bool) -> str:
    """What this run will download, in words: the files not yet here at the Hub's size (all of
    them on a first run, none on a re-run); the others are checked all the same, below."""

    def here(entry: RepoEntry) -> bool:
        if entry.path == "config.json":
            return keep_config
        path = directory / entry.path
        return path.is_file() and path.stat().st_size == entry.size

    missing = [e for e in chosen if not here(e)]
    present = [e.path for e in chosen if here(e)]
    if not missing:
        return (
            f"all {len(chosen)} files already in {directory} (sizes match; nothing to download): "
            + ", ".join(present)
        )
    total = sum(e.size for e in missing)
    words = (
        f"fetching {len(missing)} of {len(chosen)} files ({total / 1e6:.1f} MB) into "
        f"{directory}: " + ", ".join(e.path for e in missing)
    )
    return words + (f"; already here: {', '.join(present)}" if present else "")


def _fetch_online(
    repo_id: str, revision: str, directory: Path | None, pins: Pins, token: Token, log: Log
) -> Path:
    from huggingface_hub import HfApi

    endpoint = endpoint_from_env()
    api = HfApi(endpoint=endpoint, library_name="j0")
    log(f"resolving {repo_id}@{revision} on {shown_endpoint(endpoint)} ({token.source})")
    resolution = resolve_revision(api, repo_id, revision, token, endpoint)
    sha = resolution.sha
    log(f"{revision} -> {sha} ({resolution.how})")
    directory = directory or default_dir(revision)
    check_dir_name(directory)
    check_local_commit(directory, repo_id, sha)
    record_pin(pins, repo_id, revision, sha, log, endpoint)

    entries = list_files(api, repo_id, sha, token, endpoint)
    chosen, skipped = select_files(entries)
    names = {e.path for e in chosen}
    if "config.json" not in names or not any(n.endswith(".safetensors") for n in names):
        raise J0Error(
            f"{repo_id}@{sha[:8]} has no config.json and *.safetensors at its top level "
            f"(files: {', '.join(sorted(e.path for e in entries)) or 'none'})",
            INPUT_LACKS,
        )
    if skipped:
        log("not read by vLLM, skipped: " + ", ".join(e.path for e in skipped))
    config_entry = next(e for e in chosen if e.path == "config.json")

    def hub_config() -> bytes:
        return _hub_config_bytes(repo_id, sha, config_entry, token, endpoint)

    keep_config = guard_config(directory, config_entry, sha, hub_config)
    log(fetch_plan(directory, chosen, keep_config))
    wanted = [e for e in chosen if not (keep_config and e.path == "config.json")]
    download_files(
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
    check_index(directory, names)
    report_leftovers(directory)
    log(f"{repo_id}@{sha} is in {directory}")
    return directory


def _hub_config_bytes(
    repo_id: str, sha: str, entry: RepoEntry, token: Token, endpoint: str | None
) -> bytes:
    """The Hub's config.json of the commit, downloaded into a temporary folder (the drafter's
    folder is not touched) and checked against the listing."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="j0-config-") as scratch:
        download_files(repo_id, sha, Path(scratch), ["config.json"], token, endpoint, False)
        path = Path(scratch) / "config.json"
        problem = verify_file(path, entry)
        if problem is not None:
            raise J0Error(f"the Hub's config.json differs from its listing: {problem}")
        return read_input_bytes(path, "the Hub's config.json", limit=InputLimit.SMALL)


def fetch(
    repo_id: str | None = None,
    revision: str | None = None,
    directory: Path | None = None,
    log: Log = console.log,
) -> drafter_config.PatchResult:
    """Fetch the drafter and patch its config.json (see the module's docstring)."""
    drop_empty_endpoint()  # before huggingface_hub reads its constants
    require("huggingface_hub", "j0 drafter fetch")
    pins = load_pins()
    repo_id = checked_repo_id(repo_id or pins.drafter_repo, "--repo-id")  # before any request
    revision = revision or pins.drafter_revision
    if directory is not None:
        check_output_folder(directory, "--out")
        check_dir_name(directory)
    token = hub_token()
    folder = directory if directory is not None else default_dir(revision)
    # DIR is claimed until config.json is patched: a second fetch into it is refused (exit 64).
    # The lock file is inside DIR: compose and Kubernetes mount DIR in a read-only root.
    with claimed(folder, "--out", inside=True):
        if offline_mode():
            folder = _fetch_offline(repo_id, revision, folder, pins, token, log)
        else:
            # a listing that never ends, ended (j0.edge.hub_bounds)
            with bounded_requests(shown_endpoint(endpoint_from_env())):
                folder = _fetch_online(repo_id, revision, folder, pins, token, log)
        return drafter_config.patch_config(folder)
