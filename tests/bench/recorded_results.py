"""The `j0 bench run` results recorded on the H200 (docs/results/): the files that the typed
documents' tests (manifest, request entries, the cross-check block) read back as references."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted(
    [
        *(ROOT / "docs" / "results").rglob("result.json"),
        ROOT / "docs" / "results" / "engine-check-h200" / "live-bench.json",
    ]
)
