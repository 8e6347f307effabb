"""What the `j0 drafter fetch` tests share: the article's fake repo on our Hub-like server
(tests/servers/hub/server.py), a temporary J0_HOME with a copy of the pins, and `j0 drafter fetch`
run as a subprocess with HF_ENDPOINT pointing at the server. Not a test module: each test module
makes its fixtures (repo, article_sha, hub, env) with these helpers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from j0.pins import load_pins
from servers.hub.server import FakeRepo, HubServer

ROOT = Path(__file__).resolve().parents[2]
BIG = "model-00001-of-00002.safetensors"
NEEDED = {
    "config.json",
    "config.json.orig",
    BIG,
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.json",
}
TOKEN = "hf_SENTINEL_do_not_print_0123456789"


@dataclass
class Env:
    home: Path  # J0_HOME: a copy of the pins and drafter-config
    work: Path  # the working directory (./drafter/... lands here)
    vars: dict[str, str]

    @property
    def pins(self) -> Path:
        return self.home / "overlay" / "pins.env"

    def run(
        self, *args: str, timeout: float = 120, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "j0", "drafter", "fetch", *args],
            cwd=self.work,
            env={**self.vars, **extra},
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def make_env(tmp_path: Path, hub_url: str) -> Env:
    """A J0_HOME with copies of the pins and drafter-config, a working directory, and an
    environment without the caller's HF_* variables, HF_ENDPOINT at `hub_url`."""
    home = tmp_path / "j0home"
    (home / "overlay").mkdir(parents=True)
    shutil.copy(ROOT / "overlay" / "pins.env", home / "overlay" / "pins.env")
    shutil.copytree(ROOT / "drafter-config", home / "drafter-config")
    work = tmp_path / "work"
    work.mkdir()
    variables = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "HUGGING")) and k not in ("J0_HOME",)
    }
    variables.update(
        J0_HOME=str(home),
        HOME=str(tmp_path / "userhome"),
        HF_HOME=str(tmp_path / "hfhome"),
        HF_ENDPOINT=hub_url,
        HF_HUB_DISABLE_TELEMETRY="1",
        PYTHONPATH=str(ROOT / "scripts"),
    )
    return Env(home, work, variables)


def default_dir(env: Env) -> Path:
    """./drafter/<the pinned revision>: where compose's DRAFTER_DIR points by default too."""
    return env.work / "drafter" / "3147a351"


def pinned_commit(env: Env) -> str:
    return load_pins(env.home).drafter_commit


def pinned_sha(repo: FakeRepo) -> str:
    """The article's commit in the fake repo: the one that the pinned 3147a351 names."""
    (sha,) = [c for c in repo.commits if c.startswith("3147a351")]
    return sha


@contextlib.contextmanager
def serving(repo: FakeRepo) -> Iterator[HubServer]:
    """Our Hub-like server with `repo`, on 127.0.0.1, stopped at the end."""
    server = HubServer([repo]).start()
    try:
        yield server
    finally:
        server.stop()
