"""What the Hugging Face Hub (or what is already on disk) says about the target and the drafter:
weights' sizes, config.json, whether the repo is gated and whether our token opens it.

Local first: a model already in the Hub cache (models--ORG--NAME) or a drafter already fetched
(DRAFTER_DIR) answers without the network. Then the Hub, with huggingface_hub (the `hub` extra;
without it, the local facts and stated estimates only): `model_info` (gated), `list_repo_tree`
(file sizes) and config.json downloaded into a temporary folder (never into the user's cache).
The token is passed to huggingface_hub and never printed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from j0.edge import urls
from j0.edge.hub_bounds import bounded_requests, listed
from j0.edge.secret_file import read_secret_file
from j0.errors import J0Error, available, read_json_file

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
HUB_TIMEOUT_S = 10.0


@dataclass
class RepoFacts:
    """What is known about one model repo; `problem` says why something is not."""

    repo_id: str
    revision: str
    weights_bytes: int | None = None
    weights_source: str = ""
    config: dict[str, Any] | None = None
    config_source: str = ""
    gated: str | None = None  # "auto" / "manual" when gated, "" when not, None: unknown
    access: bool | None = None  # True: our token (or none) can download; None: unknown
    reachable: bool | None = None  # the Hub answered
    problems: list[str] = field(default_factory=list)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = read_json_file(path)
    except J0Error:
        return None
    return value if isinstance(value, dict) else None


def weight_names(names: list[str]) -> list[str]:
    """The files vLLM loads weights from: *.safetensors where there are any (vLLM's default
    loader takes them first), else *.bin / *.pt / *.pth."""
    safetensors = [n for n in names if n.endswith(".safetensors")]
    return safetensors or [n for n in names if n.endswith(WEIGHT_SUFFIXES)]


def _weight_files(folder: Path) -> list[Path]:
    names = weight_names([p.name for p in folder.iterdir() if p.is_file()])
    return [folder / name for name in names]


def cached_model_dir(hub_cache: Path, repo_id: str) -> Path:
    return hub_cache / ("models--" + repo_id.replace("/", "--"))


def cached_bytes(hub_cache: Path, repo_id: str) -> int:
    """Bytes of this repo's files already in the Hub cache (its blobs)."""
    blobs = cached_model_dir(hub_cache, repo_id) / "blobs"
    if not blobs.is_dir():
        return 0
    return sum(p.stat().st_size for p in blobs.iterdir() if p.is_file())


def from_cache(facts: RepoFacts, hub_cache: Path) -> None:
    """Fill config and weight sizes from a snapshot already in the Hub cache."""
    snapshots = cached_model_dir(hub_cache, facts.repo_id) / "snapshots"
    if not snapshots.is_dir():
        return
    for snapshot in sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
        config = _read_json(snapshot / "config.json")
        if config is not None and facts.config is None:
            facts.config = config
            facts.config_source = f"{snapshot / 'config.json'}"
        weights = [p for p in _weight_files(snapshot) if p.exists()]
        if weights and facts.weights_bytes is None:
            facts.weights_bytes = sum(p.stat().st_size for p in weights)
            facts.weights_source = f"{len(weights)} files in the Hub cache"


def from_folder(facts: RepoFacts, folder: Path) -> None:
    """Fill config and weight sizes from a fetched drafter folder."""
    if not folder.is_dir():
        return
    config = _read_json(folder / "config.json")
    if config is not None:
        facts.config = config
        facts.config_source = str(folder / "config.json")
    weights = _weight_files(folder)
    if weights:
        facts.weights_bytes = sum(p.stat().st_size for p in weights)
        facts.weights_source = f"{len(weights)} files in {folder}"


def hub_available() -> bool:
    return available("huggingface_hub")


def ask_hub(facts: RepoFacts, token: str | None, endpoint: str | None) -> None:
    """Gated or not, our access, file sizes and config.json, from the Hub (huggingface_hub),
    its requests bounded (j0.edge.hub_bounds: a listing that never ends, ended)."""
    with bounded_requests(urls.redact(endpoint) if endpoint else "the Hub"):
        _ask_hub(facts, token, endpoint)


def _ask_hub(facts: RepoFacts, token: str | None, endpoint: str | None) -> None:
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    api = HfApi(endpoint=endpoint or None, token=token or False)
    where = urls.redact(endpoint) if endpoint else "the Hub"
    try:
        info = api.model_info(facts.repo_id, revision=facts.revision, timeout=HUB_TIMEOUT_S)
    except OfflineModeIsEnabled:
        facts.problems.append("HF_HUB_OFFLINE=1: the Hub was not asked")
        return
    except GatedRepoError:
        facts.reachable, facts.gated, facts.access = True, "manual", False
        return
    except RepositoryNotFoundError:
        facts.reachable = True
        facts.problems.append(
            f"{where} has no repo {facts.repo_id} visible to "
            + ("this token" if token else "anonymous users (private? give a token)")
        )
        return
    except RevisionNotFoundError:
        facts.reachable = True
        facts.problems.append(f"{where}: {facts.repo_id} has no revision {facts.revision}")
        return
    except HfHubHTTPError as exc:
        facts.reachable = True
        facts.problems.append(f"{where} answered {_first_line(exc)}")
        return
    except Exception as exc:  # connection errors differ between huggingface_hub's HTTP stacks
        facts.reachable = False
        facts.problems.append(f"cannot reach {where}: {_first_line(exc)}")
        return
    facts.reachable = True
    gated = getattr(info, "gated", None)
    facts.gated = "" if gated in (None, False) else str(gated)
    if facts.weights_bytes is None:
        try:
            tree = api.list_repo_tree(facts.repo_id, revision=facts.revision, recursive=True)
            entries = list(listed(tree, where, f"the files of {facts.repo_id}"))
            size_of = {  # top level only: vLLM reads no sub-folder of a model folder
                str(e.path): int(getattr(e, "size", 0) or 0) for e in entries if "/" not in e.path
            }
            sizes = [size_of[name] for name in weight_names(list(size_of))]
            if sizes:
                facts.weights_bytes = sum(sizes)
                facts.weights_source = f"the Hub's sizes of {len(sizes)} files"
        except Exception as exc:
            facts.problems.append(f"cannot list the files: {_first_line(exc)}")
    try:
        with tempfile.TemporaryDirectory(prefix="j0-doctor-") as tmp:
            path = hf_hub_download(
                facts.repo_id,
                "config.json",
                revision=facts.revision,
                local_dir=tmp,
                token=token or False,
                endpoint=endpoint or None,
                etag_timeout=HUB_TIMEOUT_S,
            )
            config = _read_json(Path(str(path)))
        facts.access = True
        if facts.config is None and config is not None:
            facts.config, facts.config_source = config, f"config.json on {where}"
    except GatedRepoError:
        facts.access = False
        facts.gated = facts.gated or "manual"
    except Exception as exc:
        facts.problems.append(f"cannot read config.json: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    text = urls.redact_text(str(exc)).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


@dataclass(frozen=True)
class TokenFound:
    """Whether a token is there, and where; the token itself only for the requests."""

    value: str | None
    compose_file: Path | None  # HF_TOKEN_FILE, what compose mounts as the secret
    source: str  # words for the report, never the token


def _read_token(path: Path) -> tuple[str, str]:
    """The token in `path` and "", or "" and what is wrong with the file (the one rule of
    j0.edge.secret_file; /dev/null is no token)."""
    try:
        return read_secret_file(path, "token file") or "", ""
    except J0Error as exc:
        return "", str(exc)


def find_token(compose_file: Path | None, environ: dict[str, str] | None = None) -> TokenFound:
    """The token compose would pass (HF_TOKEN_FILE), else the one this host's huggingface_hub
    would use (HF_TOKEN, HF_TOKEN_PATH, the stored login)."""
    environ = dict(os.environ) if environ is None else environ
    if compose_file is not None:
        token, problem = _read_token(compose_file)
        if token:
            return TokenFound(token, compose_file, f"HF_TOKEN_FILE={compose_file}")
        problem = problem or f"token file {compose_file}: /dev/null, no token"
        return TokenFound(None, compose_file, f"HF_TOKEN_FILE={compose_file} ({problem})")
    if environ.get("HF_TOKEN", "").strip():
        return TokenFound(environ["HF_TOKEN"].strip(), None, "HF_TOKEN in this shell")
    candidates = []
    if environ.get("HF_TOKEN_PATH"):
        candidates.append(Path(environ["HF_TOKEN_PATH"]).expanduser())
    home = Path(environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface").expanduser()
    candidates.append(home / "token")
    for path in candidates:
        token, _ = _read_token(path) if os.path.lexists(path) else ("", "")
        if token:
            return TokenFound(token, None, f"{path} (huggingface_hub's login)")
    return TokenFound(None, None, "none")
