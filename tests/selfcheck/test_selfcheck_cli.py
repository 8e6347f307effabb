"""`j0 selfcheck`'s command-line paths that do not reach a verdict on J0: a Python without the
packages the check imports, `--device cuda` where there is no CUDA device, and `--json`.

None of them may look like "J0 deviates" (exit 1) or "no J0" (exit 2): they exit 69, saying what
is missing. Real processes: `python -m j0 selfcheck` in a subprocess, the first in a fresh
virtual environment of the standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from j0.article.identity import identify
from j0.article.variants import default_output
from j0.pins import Pins, load_pins
from j0.selfcheck.run import build_overlay, overlay_variant

ROOT = Path(__file__).resolve().parents[2]


def selfcheck(python: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "j0", "selfcheck", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "scripts"), **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_without_torch_triton_or_vllm_it_says_what_is_missing(
    tmp_path: Path, article_file: Path
) -> None:
    """A plain `pip install -e .` has none of them: one line, exit 69, nothing checked."""
    env_dir = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    result = selfcheck(python, "--speculator", str(article_file))
    assert result.returncode == 69, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("j0: error:")]
    assert "lacks numpy, torch, triton, vllm" in line and python in line
    assert "Nothing was checked" in line
    assert "PASS" not in result.stdout


def test_the_unpatched_file_is_still_no_j0_without_those_packages(
    tmp_path: Path, base_file: Path
) -> None:
    """The static look at the file needs nothing: vLLM's own file is exit 2 anywhere."""
    env_dir = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    result = selfcheck(str(env_dir / "bin" / "python"), "--speculator", str(base_file))
    assert result.returncode == 2, result.stderr
    assert "NO J0" in result.stderr


def test_device_cuda_without_a_cuda_device(article_file: Path) -> None:
    """CUDA_VISIBLE_DEVICES="" hides every GPU from torch, on any machine."""
    result = selfcheck(
        sys.executable,
        "--speculator",
        str(article_file),
        "--device",
        "cuda",
        CUDA_VISIBLE_DEVICES="",
    )
    assert result.returncode == 69, result.stdout + result.stderr
    assert "--device cuda: torch sees no CUDA device here; nothing was checked" in result.stderr
    assert "PASS" not in result.stdout


@pytest.mark.slow
def test_json_result_and_no_vllm_noise(article_file: Path) -> None:
    """--json alone: the result as one JSON document on stdout, in place of the text (--json OUT,
    the file beside the text, is read by the --bench and --audit tests)."""
    result = selfcheck(
        sys.executable,
        "--speculator",
        str(article_file),
        "--device",
        "cpu",
        "--cases",
        "1",
        "--json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)  # nothing else on stdout
    assert data["code"] == 0 and data["device"] == "cpu" and data["cases_run"] == 1
    assert data["file"] == str(article_file) and data["steps_run"] > 0
    assert "Failed to import from vllm._C" not in result.stdout + result.stderr


def fresh_clone(into: Path) -> Path:
    """What a clone holds of the tool (scripts/, overlay/: tracked files only, so no overlay has
    been built), at `into`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "scripts", "overlay", "pyproject.toml"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    for name in filter(None, listed.stdout.decode().split("\0")):
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return into


@pytest.mark.parametrize("variant", ["article", "prefix-safe"])
def test_a_missing_default_overlay_is_built_as_overlay_build_does(
    tmp_path: Path, pins: Pins, variant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where `j0 overlay build [--variant V]` writes without -o, and nothing is there yet."""
    clone = load_pins(fresh_clone(tmp_path / "clone"))
    path = default_output(clone, variant)
    assert not path.exists()
    assert overlay_variant(path, clone) == variant
    build_overlay(path, clone)
    want = pins.patched_sha256 if variant == "article" else pins.values["PREFIX_SAFE_SHA256"]
    assert identify(path.read_bytes(), clone).sha256 == want
    out = capsys.readouterr().out
    assert "is not built yet; building it as `j0 overlay build" in out and f"wrote {path}" in out
    assert overlay_variant(tmp_path / "speculator.py", clone) is None  # any other path: as given


@pytest.mark.slow
def test_the_documented_line_works_on_a_fresh_clone(tmp_path: Path) -> None:
    """docs/selfcheck.md's `j0 selfcheck --speculator overlay/vllm/.../speculator.py`, run in a
    clone where `j0 overlay build` never ran: it builds the file, then checks it."""
    clone = fresh_clone(tmp_path / "clone")
    readme = (ROOT / "docs" / "selfcheck.md").read_text().splitlines()
    line = next(x for x in readme if x.startswith("j0 selfcheck --speculator overlay/"))
    args = line.split()[1:]
    done = subprocess.run(
        [sys.executable, "-m", "j0", *args, "--device", "cpu", "--cases", "1"],
        cwd=clone,
        env={**os.environ, "PYTHONPATH": str(clone / "scripts")},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is not built yet" in done.stdout and "PASS" in done.stdout
    assert (clone / args[2]).is_file()
