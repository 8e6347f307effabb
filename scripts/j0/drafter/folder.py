"""The drafter's folder: ./drafter/<revision> by default (the folder compose mounts), never named
like another speculative method (vLLM issue 47486), and never one that holds an earlier download
of another commit (the commit huggingface_hub recorded there).
"""

from __future__ import annotations

from pathlib import Path

from j0.drafter.revision import FULL_SHA
from j0.errors import CHECK_FAILED, USAGE, J0Error

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


def default_dir(revision: str) -> Path:
    """./drafter/<revision as given>, relative to the working directory: the folder that
    compose.serve.yaml mounts by default (`./drafter/${DRAFTER_REVISION}`), so that the host's
    `j0 drafter fetch` and `docker compose up` share one download (for the pinned drafter:
    ./drafter/3147a351)."""
    if not revision or revision.startswith("/") or ".." in Path(revision).parts:
        raise J0Error(f"revision {revision!r} cannot name a folder; pass --out", USAGE)
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
            "would not be DFlash; choose an --out without " + ", ".join(FORBIDDEN_PATH_WORDS),
            USAGE,
        )


def check_local_commit(directory: Path, repo_id: str, sha: str) -> None:
    """Refuse a folder that holds an earlier download of another commit: its files, config.json's
    original among them, would mix with this one's."""
    local = local_commit(directory)
    if local is not None and local != sha:
        raise J0Error(
            f"{directory} holds {repo_id}@{local}, not {sha}: use another folder for this commit "
            "(--out; compose: DRAFTER_DIR) or remove that one",
            CHECK_FAILED,
        )


def local_commit(directory: Path) -> str | None:
    """The commit huggingface_hub recorded for DIR/config.json when it downloaded it."""
    metadata = directory / ".cache" / "huggingface" / "download" / "config.json.metadata"
    try:
        first = metadata.read_text(encoding="utf-8").splitlines()[0].strip()
    except (OSError, IndexError):
        return None
    return first if FULL_SHA.fullmatch(first) else None
