"""`j0 serve` judges the server its arguments start by ServerSetting.problems(): the same settings,
given to `j0 serve --dry-run` in spellings vLLM accepts and to problems() as typed values, give
the same problems, in the words `j0 serve` has always warned with (typed here from its log, not
produced by the code under test).

Real processes: `j0 serve --dry-run --json` in a subprocess, with a real drafter folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.article.server_setting import ServerSetting
from j0.article.spec_config import SpecConfig

ROOT = Path(__file__).resolve().parents[2]
CAUSAL = {"dflash_config": {"causal_head": True, "causal": True, "mask_token_id": 151669}}


def dry_run_warnings(tmp_path: Path, args: list[str]) -> list[str]:
    """The warnings of `j0 serve --dry-run --json -- ARGS` (its plan's), no switch set."""
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT / "scripts"),
        "J0_SERVE_ARGS_READER": "table",  # tests/conftest.py says why
    }
    command = [sys.executable, "-m", "j0", "serve", "--dry-run", "--json"]
    command += ["--api-key-file", os.devnull, "--overlay-mount", str(tmp_path / "none")]
    result = subprocess.run(
        [*command, "--", *args], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    warnings = json.loads(result.stdout)["warnings"]
    assert isinstance(warnings, list)
    return warnings


# (draft tokens, request slots, the spellings j0 serve reads them in, its warnings)
CASES = [
    (15, 4, ["--speculative-config", "{SPEC}", "--max-num-seqs", "4"], []),
    (
        9,
        4,
        ["--speculative_config={SPEC}", "--max_num_seqs=4"],
        ["num_speculative_tokens=9: the article tested 15 and 7 only (NUM_SPEC_TOKENS)"],
    ),
    (
        7,
        8,
        ["--speculative-conf", "{SPEC}", "--max-num-se", "8"],
        ["--max-num-seqs 8: the article ran 4"],
    ),
    (
        3,
        None,
        ["-sc", "{SPEC}"],
        [
            "num_speculative_tokens=3: the article tested 15 and 7 only (NUM_SPEC_TOKENS)",
            "no --max-num-seqs: the article ran 4 (vLLM's default differs)",
        ],
    ),
]


@pytest.mark.parametrize(("tokens", "seqs", "spelled", "said"), CASES)
def test_j0_serve_warns_of_what_problems_finds(
    tmp_path: Path, tokens: int, seqs: int | None, spelled: list[str], said: list[str]
) -> None:
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_text(json.dumps(CAUSAL))
    spec = SpecConfig.article(str(drafter), tokens)
    args = ["Qwen/Test", *(word.replace("{SPEC}", spec.to_json()) for word in spelled)]
    setting = ServerSetting("Qwen/Test", spec, None, None, None, max_num_seqs=seqs)
    problems = [p.serve for p in setting.problems() if p.serve is not None]
    assert dry_run_warnings(tmp_path, args) == said
    assert problems == said
