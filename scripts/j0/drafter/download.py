"""The download itself: huggingface_hub's snapshot_download of the chosen files at one commit into
the folder, with up to three attempts on a server error or a dropped connection (the finished
files are kept), and the partial files of killed runs named (not deleted).

huggingface_hub is imported inside the functions: this module's import costs nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

from j0.drafter.console import warn
from j0.drafter.hub import Token, hub_error, shown_endpoint, transport_errors
from j0.edge.hub_bounds import hub_answers
from j0.errors import INPUT_LACKS, J0Error


def download_files(
    repo_id: str,
    sha: str,
    directory: Path,
    patterns: list[str],
    token: Token,
    endpoint: str | None,
    offline: bool,
    attempts: int = 3,
) -> None:
    transport = transport_errors()
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    for attempt in range(1, attempts + 1):
        try:
            with hub_answers(shown_endpoint(endpoint), f"{repo_id}@{sha[:8]}", "its files"):
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
                raise hub_error(exc, repo_id, sha, token, endpoint) from None
            error: Exception = exc
        except (*transport, OSError) as exc:
            if attempt == attempts:
                raise hub_error(exc, repo_id, sha, token, endpoint) from None
            error = exc
        warn(
            f"download interrupted ({type(error).__name__}); attempt {attempt + 1} of {attempts} "
            "keeps the finished files"
        )
        time.sleep(1.0)


def report_leftovers(directory: Path) -> None:
    """Name the partial files that killed runs left behind (huggingface_hub removes its own
    partial files only when it can); they are not deleted here: another fetch may be writing."""
    download = directory / ".cache" / "huggingface" / "download"
    leftovers = sorted(download.rglob("*.incomplete")) if download.is_dir() else []
    if leftovers:
        size = sum(p.stat().st_size for p in leftovers)
        warn(
            f"{len(leftovers)} partial file(s) of interrupted runs in {download} "
            f"({size / 1e6:.1f} MB); delete them when no other fetch is running"
        )
