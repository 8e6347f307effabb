"""The drafter's files: which of the repo's files vLLM 0.33.0 reads for a DFlash draft (the rest is
listed and skipped), the Hub's listing of them, and each downloaded file checked against it
(sha256 for LFS files, the git blob id otherwise) and the index's shards.

huggingface_hub is imported inside the functions: this module's import costs nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.drafter.hub import Token, hub_error, shown_endpoint, transport_errors
from j0.edge.hub_bounds import hub_answers, listed
from j0.errors import INPUT_LACKS, J0Error, read_json_file

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


def check_index(directory: Path, names: set[str]) -> None:
    for index in sorted(n for n in names if n.endswith(".safetensors.index.json")):
        value = read_json_file(directory / index)  # bounded; a J0Error (exit 2) naming it
        weight_map = value.get("weight_map") if isinstance(value, dict) else None
        if not isinstance(weight_map, dict):
            raise J0Error(
                f"{directory / index}: no weight_map object (expected a safetensors index)",
                INPUT_LACKS,
            )
        missing = sorted(set(weight_map.values()) - names)
        if missing:
            raise J0Error(
                f"{directory / index} names shards the repo does not have: {', '.join(missing)}",
                INPUT_LACKS,
            )


def list_files(
    api: Any, repo_id: str, sha: str, token: Token, endpoint: str | None
) -> list[RepoEntry]:
    transport = transport_errors()
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.hf_api import RepoFile

    where, asked = shown_endpoint(endpoint), f"the files of {repo_id}@{sha[:8]}"
    expected = "a list of entries, each with a path (text), a size and a blob id"
    try:
        with hub_answers(where, asked, expected):
            tree = api.list_repo_tree(repo_id, recursive=True, revision=sha, token=token.value)
            return [entry_of(f) for f in listed(tree, where, asked) if isinstance(f, RepoFile)]
    except (HfHubHTTPError, *transport) as exc:
        raise hub_error(exc, repo_id, sha, token, endpoint) from None


def entry_of(item: Any) -> RepoEntry:
    """A file of the Hub's listing, its fields of the Hub's types (TypeError otherwise, which
    the listing's caller refuses as an answer that is not a Hub's)."""
    lfs = item.lfs.sha256 if item.lfs is not None else None
    entry = RepoEntry(item.path, item.size, item.blob_id, lfs)
    if not (
        isinstance(entry.path, str)
        and isinstance(entry.size, int)
        and not isinstance(entry.size, bool)
        and entry.size >= 0
        and isinstance(entry.blob_id, str)
        and (lfs is None or isinstance(lfs, str))
    ):
        raise TypeError(
            f"an entry of path {entry.path!r}, size {entry.size!r}, blob id {entry.blob_id!r}"
        )
    return entry
