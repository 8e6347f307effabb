"""`j0 doctor` against a Hub whose file listing never ends (every page links a next, pages of
files or empty ones): the listing is cut (j0.edge.hub_bounds: entries and requests bounded),
doctor ends and names it; before, it listed until memory ran out (issue 53, item 4). A real
process against our Hub stand-in on 127.0.0.1, no Docker and no GPU on its PATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from servers.hub.server import HubServer, article_repo

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("per_page", [1000, 0])
def test_a_listing_that_never_ends_is_cut(tmp_path: Path, per_page: int) -> None:
    (tmp_path / "bin").mkdir()
    with HubServer([article_repo()]) as hub:
        hub.endless["tree"] = per_page
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "J0_"))},
            "PATH": str(tmp_path / "bin"),
            "PYTHONPATH": str(ROOT / "scripts"),
            "HOME": str(tmp_path),
            "HF_HOME": str(tmp_path / "hf"),
            "HF_ENDPOINT": hub.url,
            "DRAFTER_DIR": str(tmp_path / "drafter"),
        }
        done = subprocess.run(
            [sys.executable, "-m", "j0", "doctor", "--json"],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        asked = len(hub.requests("GET", "/tree/"))
    assert done.returncode == 1, done.stderr  # no GPU, no Docker: not ready, not a crash
    problems = json.dumps(json.loads(done.stdout))
    assert "is not answering as a Hugging Face Hub" in problems, problems
    assert asked <= 1000
