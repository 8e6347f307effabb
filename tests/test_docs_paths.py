"""The files the docs name exist: every `j0/....py` (a module of the package) and every
`scripts/...`, `tests/...`, `docs/...` path in backticks, in README.md and docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"`((?:scripts/|tests/|docs/)?j0/[\w/]+\.py|(?:scripts|tests|docs)/[\w./-]+)`")


def test_every_named_path_exists() -> None:
    missing = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for match in NAMED.finditer(doc.read_text()):
            name = match.group(1).rstrip(".")
            if any(ch in name for ch in "*<>") or "..." in name:
                continue
            path = ROOT / name if not name.startswith("j0/") else ROOT / "scripts" / name
            if not path.exists():
                missing.append(f"{doc.relative_to(ROOT)}: {name}")
    assert not missing, "\n".join(missing)
