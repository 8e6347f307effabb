"""The README's figures that the code or the data defines are the code's and the data's: the exit
codes (README.md's table against the constants of j0/errors.py and its --help text), the number of
guards (against scripts/mutation-guards.toml), and the measured test times (docs/ci.md's, against
the record that scripts/measure-test-times wrote, docs/results/test-times/times.json)."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest

from j0 import errors

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI_DOC = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
TIMES = ROOT / "docs" / "results" / "test-times" / "times.json"


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = text.find("\n## ", start + len(heading))
    return text[start : following if following != -1 else len(text)]


def test_the_exit_code_table_lists_every_code_the_tool_defines() -> None:
    defined = {
        value
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, int) and not isinstance(value, bool)
    }
    table = section(README, "## Exit codes")
    listed = {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.MULTILINE)}
    assert listed == defined
    in_help = {int(code) for code in re.findall(r"(?:^|\s)(\d+)\s{1,3}\S", errors.EXIT_CODE_TABLE)}
    assert defined <= in_help


def test_the_guard_count_the_docs_state_is_the_list() -> None:
    guards = tomllib.loads((ROOT / "scripts" / "mutation-guards.toml").read_text())["guard"]
    for doc in (README, CI_DOC):
        stated = {int(n) for n in re.findall(r"(\d+) guards\b", doc)}
        assert stated <= {len(guards)}, stated
    assert f"{len(guards)} guards" in CI_DOC


@pytest.mark.skipif(
    os.environ.get("J0_MEASURING_TEST_TIMES") == "1",
    reason="scripts/measure-test-times is measuring the times the docs will quote",
)
@pytest.mark.skipif(
    not TIMES.is_file(), reason=f"no record yet: scripts/measure-test-times writes {TIMES.name}"
)
def test_the_measured_test_times_quoted_are_the_record() -> None:
    record = json.loads(TIMES.read_text(encoding="utf-8"))
    for key in ("fresh_clone_ci_s", "warm_ci_s", "fast_subset_s"):
        minutes, seconds = divmod(round(record[key]), 60)
        quoted = f"{minutes} min {seconds:02d} s"
        assert quoted in CI_DOC, (key, quoted)
    # stated once: the README cites docs/ci.md#time and quotes no time of its own
    assert not re.search(r"\d+ min \d\d s", section(README, "## Tests")), "a time in the README"
