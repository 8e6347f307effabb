"""A CPU timing in the docs names when it was measured: each paragraph of README.md and docs/*.md
that gives a duration on a CPU ("about 25 s on 2 CPU cores", "8 s of CPU") holds a date
(YYYY-MM-DD), so that a reader on another machine can tell a figure from a promise (a user's
machine took under half of some of them). docs/ci.md is left out: its times are the benchmark's
record, each with its commit and date, and tests/test_readme_figures.py checks them against it.
Code blocks are left out too (a command's comment there points at the prose)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "ci.md")]
DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:-\d+)? ?(?:s|seconds?|min|minutes?)\b(?![-\w])")
ON_A_CPU = re.compile(
    r"\b(?:\d+|two)[- ](?:CPU )?cores?\b|\bon (?:a|the|one) (?:\d+-core )?CPU\b"
    r"|\bCPU (?:cores?|machine)\b|\bof CPU\b",
    re.IGNORECASE,
)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def paragraphs(text: str) -> list[str]:
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", prose)]


def test_the_rule_finds_an_undated_cpu_timing() -> None:
    assert not DATE.search("x") and DURATION.search("takes about 25 s on 2 CPU cores")
    found = [
        p
        for p in paragraphs("A: about 25 s on 2 CPU cores.\n\nB: 3 s on one H200.\n\n```\n9 s\n```")
        if DURATION.search(p) and ON_A_CPU.search(p)
    ]
    assert found == ["A: about 25 s on 2 CPU cores."]


def test_every_cpu_timing_names_its_date() -> None:
    undated = [
        f"{doc.relative_to(ROOT)}: {paragraph[:160]}"
        for doc in DOCS
        for paragraph in paragraphs(doc.read_text(encoding="utf-8"))
        if DURATION.search(paragraph) and ON_A_CPU.search(paragraph) and not DATE.search(paragraph)
    ]
    assert not undated, "\n".join(undated)
