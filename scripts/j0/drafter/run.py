"""`j0 drafter`'s work, apart from its parsing (cli.py): run_fetch(FetchOptions) -> Fetched,
run_patch_config(PatchOptions) -> PatchResult (config.py's), run_check(CheckOptions) -> Checked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.drafter import config as drafter_config
from j0.engine.source.causality import LayerCausality


@dataclass(frozen=True)
class FetchOptions:
    """None: the pinned repo, the pinned revision, the default folder."""

    repo_id: str | None = None
    revision: str | None = None
    directory: Path | None = None


@dataclass(frozen=True)
class Fetched:
    """What a fetch left: the repo and revision asked, the full commit huggingface_hub recorded
    for the files (None where it recorded none), and config.json's patch."""

    repo: str
    revision_asked: str
    commit: str | None
    patch: drafter_config.PatchResult

    def lines(self) -> list[str]:
        return self.patch.lines()

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "revision_asked": self.revision_asked,
            "commit": self.commit,
            "dir": str(self.patch.config.parent),
            **self.patch.to_json(),
        }


@dataclass(frozen=True)
class PatchOptions:
    directory: Path
    patch: Path | None = None  # None: drafter-config/causal.merge-patch.json


@dataclass(frozen=True)
class DrafterCheckOptions:
    directory: Path


@dataclass(frozen=True)
class Checked:
    """The causality of a drafter's layers as vLLM 0.33 resolves it from its config.json."""

    config: Path
    causality: LayerCausality

    def lines(self) -> list[str]:
        notes = [f"note: {note}" for note in self.causality.notes]
        return [*notes, f"{self.config}: {self.causality.summary()}"]

    def to_json(self) -> dict[str, Any]:
        return {"config": str(self.config), **self.causality.to_json()}


def run_fetch(options: FetchOptions) -> Fetched:
    """Download the drafter at a full commit, check every file, patch its config.json."""
    from j0.drafter import fetch as drafter_fetch
    from j0.drafter.folder import local_commit
    from j0.pins import load_pins

    patch = drafter_fetch.fetch(options.repo_id, options.revision, options.directory)
    pins = load_pins()
    return Fetched(
        repo=options.repo_id or pins.drafter_repo,
        revision_asked=options.revision or pins.drafter_revision,
        commit=local_commit(patch.config.parent),
        patch=patch,
    )


def run_patch_config(options: PatchOptions) -> drafter_config.PatchResult:
    return drafter_config.patch_config(options.directory, options.patch)


def run_check(options: DrafterCheckOptions) -> Checked:
    causality = drafter_config.check_causality(options.directory)
    return Checked(options.directory / drafter_config.CONFIG_NAME, causality)
