"""`j0 selfcheck --vllm 0.34.0`: J0 cut for vLLM 0.34.0, run in 0.34.0's own kernels (its
`num_reqs` argument and the padding programs past the batch included) against the same
independent reference as the article's file; broken copies each fail; the prefix-cache battery
and the J0 audit as for the article's file.

The files are made here with GNU patch from the real vllm==0.34.0 wheel's base and the committed
patches (not with j0's code); vLLM 0.34.0's package is the one scripts/test installs apart
(tests/vllm_releases.py), put first on PYTHONPATH. The kernels run in Triton's interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from test_selfcheck import _variants

from j0.engine.source import base_sources
from j0.pins import Pins
from j0.selfcheck import batches
from j0.selfcheck.kernels import INTERPRETER_ENV
from vllm_releases import env_with_vllm

ROOT = Path(__file__).resolve().parents[2]
RELPATH = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
PATCHES = ROOT / "overlay" / "vllm-0.34.0"


def _patched(data: bytes, patch: Path, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    subprocess.run(
        ["patch", "--batch", "--fuzz=0", str(out), "-i", str(patch)],
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture(scope="module")
def files34(pins: Pins, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """0.34.0's base, the article's J0 cut for it and the prefix-safe variant, by GNU patch."""
    wheel = base_sources.vllm_wheel(pins, release="0.34.0")
    with zipfile.ZipFile(wheel) as archive:
        base = archive.read(RELPATH)
    work = tmp_path_factory.mktemp("v034")
    (work / "base.py").write_bytes(base)
    article = _patched(base, PATCHES / "jetspec-j0.patch", work / "article" / "speculator.py")
    variant = _patched(
        article.read_bytes(),
        PATCHES / "jetspec-j0-prefix-safe.patch",
        work / "prefix-safe" / "speculator.py",
    )
    return {"base": work / "base.py", "article": article, "prefix-safe": variant}


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "j0", "selfcheck", *args],
        env=env or env_with_vllm(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    return done.returncode, done.stdout + done.stderr


def _worker(paths: list[Path], results: Path, *extra: str) -> dict[str, dict[str, Any]]:
    """All files in one worker process (one import of vLLM 0.34.0), as the CLI starts it: in the
    CLI's environment, j0's folder first on PYTHONPATH (j0.selfcheck.run), so that the run's
    selfcheck zygote of 0.34.0 serves these workers and the CLI's alike (another order of the
    same folders is another zygote's key: a second import of vLLM 0.34.0, 12-16 s of CPU)."""
    env = env_with_vllm(env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    env["PYTHONPATH"] = os.pathsep.join((str(ROOT / "scripts"), env["PYTHONPATH"]))
    env.update(INTERPRETER_ENV, VLLM_LOGGING_LEVEL="ERROR")
    cmd = [sys.executable, "-m", "j0.selfcheck", "--device", "cpu", *extra]
    for path in paths:
        cmd += ["--speculator", str(path)]
    proc = subprocess.run(
        [*cmd, "--json", str(results)], env=env, capture_output=True, text=True, timeout=1800
    )
    assert results.is_file(), proc.stdout[-2000:] + proc.stderr[-3000:]
    payload = json.loads(results.read_text())
    return {r["file"]: r for r in (payload if isinstance(payload, list) else [payload])}


# --- Without running a kernel ---------------------------------------------------------------------


def test_the_battery_pads_over_several_of_0_34_0s_padding_programs() -> None:
    """0.34.0 pads the query buffers past the batch in programs of BLOCK_SIZE (128) entries each:
    most steps of the default battery need several of them, so every one is exercised."""
    steps = [(c, s) for c in batches.battery(0, 24) for s in c.steps]
    spans = [c.max_num_tokens - s.num_reqs * c.num_query_per_req for c, s in steps]
    assert sum(span > 128 for span in spans) > len(steps) // 2
    assert sum(span > 3 * 128 for span in spans) > 5
    assert any(c.max_num_seqs - s.num_reqs > 0 for c, s in steps)  # padded request rows too


def test_a_0_34_0_file_under_vllm_0_33_0_is_not_checked(files34: dict[str, Path]) -> None:
    """The test environment imports vLLM 0.33.0: the 0.34.0 file is refused before any kernel
    runs (69, nothing checked), naming both releases and the way to import 0.34.0's."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    for args in ([], ["--vllm", "0.34.0"]):
        code, out = _cli("--speculator", str(files34["article"]), *args, env=env)
        assert code == 69, out
        assert "is for vLLM 0.34.0 (identity=article-0.34.0)" in out
        assert "this Python imports vLLM 0.33.0" in out and "Nothing was checked" in out
        assert "pip install --no-deps --target DIR vllm==0.34.0" in out
        assert "PASS" not in out and "FAIL" not in out


def test_the_articles_file_under_vllm_0_34_0_is_not_checked(article_file: Path) -> None:
    code, out = _cli("--speculator", str(article_file))
    assert code == 69 and "is for vLLM 0.33.0 (identity=article)" in out, out
    assert "this Python imports vLLM 0.34.0" in out


def test_vllm_that_contradicts_the_file_is_a_usage_error(article_file: Path) -> None:
    code, out = _cli("--speculator", str(article_file), "--vllm", "0.34.0")
    assert code == 64, out
    assert "--vllm 0.34.0" in out and "identity=article, a file of vLLM 0.33.0" in out
    code, out = _cli("--vllm", "0.35.0")
    assert code == 64 and "0.33.0, 0.34.0" in out, out


# --- The kernels --------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_cli_checks_the_0_34_0_file_in_vllm_0_34_0(files34: dict[str, Path]) -> None:
    """Through the real CLI (its worker forked from a zygote that imported vLLM 0.34.0 once):
    the result names the vLLM the kernels came from; vLLM's own file has no J0 (exit 2)."""
    code, out = _cli(
        "--vllm", "0.34.0", "--speculator", str(files34["article"]), "--cases", "2", "--json"
    )
    assert code == 0, out[-4000:]
    result = json.loads(out[out.index("{") :])
    assert result["environment"]["vllm"] == "0.34.0"
    assert result["message"].startswith("J0 matches the reference: 2 cases")
    code, out = _cli("--vllm", "0.34.0", "--speculator", str(files34["base"]))
    assert code == 2 and "no J0" in out, out


def _write_after_draw(text: str) -> str:
    """The history written after the draw: the write kernel's launch moved below the other."""
    a = text.index("    if ctx_pool is not None:\n        _ctx_pool_write_kernel")
    b = text.index("    _prepare_dflash_inputs_kernel[(num_reqs + _NUM_PAD_PROGRAMS, num_blocks)](")
    return text[:a] + text[b:] + text[a:b]


# Faults where 0.34.0 differs from c50aca14: the padding programs and num_reqs.
PADDING_FAULTS = [
    (
        "history written by the padding programs",
        "_ctx_pool_write_kernel[(num_reqs, num_blocks)](",
        "_ctx_pool_write_kernel[(num_reqs + _NUM_PAD_PROGRAMS, num_blocks)](",
    ),
    (
        "history written for one padded row",
        "_ctx_pool_write_kernel[(num_reqs, num_blocks)](",
        "_ctx_pool_write_kernel[(num_reqs + 1, num_blocks)](",
    ),
    (
        "the last request taken for padding",
        "        cp_rank,\n        num_reqs,\n        SAMPLE_FROM_ANCHOR=",
        "        cp_rank,\n        num_reqs - 1,\n        SAMPLE_FROM_ANCHOR=",
    ),
    (
        "no padding programs",
        "_prepare_dflash_inputs_kernel[(num_reqs + _NUM_PAD_PROGRAMS, num_blocks)](",
        "_prepare_dflash_inputs_kernel[(num_reqs, num_blocks)](",
    ),
]


@pytest.mark.slow
def test_the_0_34_0_cut_passes_and_its_broken_copies_fail(
    files34: dict[str, Path], pins: Pins, tmp_path: Path
) -> None:
    """In one worker process (one import of vLLM 0.34.0): the 0.34.0 cut passes the default 24
    cases; the article's file's broken copies (test_selfcheck.py), made of the 0.34.0 cut, and
    the faults of 0.34.0's own padding each exit 1."""
    text = files34["article"].read_text()
    paths: dict[str, Path] = {}
    for n, (name, old, new) in enumerate([*_variants(pins.j0_seed), *PADDING_FAULTS]):
        assert text.count(old) == 1, f"{name}: {old!r} is not once in the 0.34.0 file"
        paths[name] = tmp_path / f"v{n:02d}.py"
        paths[name].write_text(text.replace(old, new))
    paths["history written after the draw"] = tmp_path / "v99.py"
    paths["history written after the draw"].write_text(_write_after_draw(text))
    files = [files34["article"], *paths.values()]
    got = _worker(files, tmp_path / "results.json", "--cases", "24")
    passed = got[str(files34["article"])]
    assert passed["code"] == 0, passed["message"]
    assert passed["message"].startswith("J0 matches the reference: 24 cases")
    assert passed["environment"]["vllm"] == "0.34.0"
    missed = [name for name, path in paths.items() if got[str(path)]["code"] != 1]
    assert missed == [], {name: got[str(paths[name])]["message"] for name in missed}


@pytest.mark.slow
def test_padding_programs_that_go_on_to_draw_fail(files34: dict[str, Path], tmp_path: Path) -> None:
    """Padding programs that run a request's body (J0's draw included) read and write past the
    batch's buffers: a mismatch, or the interpreter's process killed (exit 1 either way, through
    the CLI, which reports a death by signal as a failure, never a pass)."""
    text = files34["article"].read_text()
    old = "            )\n        return\n    req_state_idx = tl.load(idx_mapping_ptr + req_idx)\n"
    assert text.count(old) == 1
    path = tmp_path / "speculator.py"
    path.write_text(text.replace(old, "            )\n" + old.split("return\n")[1]))
    code, out = _cli("--vllm", "0.34.0", "--speculator", str(path), "--cases", "3")
    assert code == 1, out[-3000:]
    assert "J0 deviates" in out or "died of signal" in out, out[-3000:]


@pytest.mark.slow
def test_the_prefix_cache_battery_on_0_34_0(files34: dict[str, Path], tmp_path: Path) -> None:
    """The variant cut for 0.34.0 passes; the article's cut fails at the prefix hits, naming the
    foreign token, as the article's file does. (The variant's fill is the article variant's
    Python, line for line: its broken copies are test_prefix_cache.py's.)"""
    paths = [files34["prefix-safe"], files34["article"]]
    got = _worker(paths, tmp_path / "results.json", "--prefix-cache")
    variant, article = got[str(paths[0])], got[str(paths[1])]
    assert variant["code"] == 0, variant["message"]
    assert article["code"] == 1 and "request 'A again'" in article["message"], article
    assert "a foreign token" in article["message"]


@pytest.mark.slow
def test_the_audit_on_0_34_0(files34: dict[str, Path], tmp_path: Path) -> None:
    """The audit patch cut for 0.34.0 goes on either file (selfcheck applies the release's that
    applies): under prefix caching the article's cut fails at the hit, the variant passes."""
    paths = [files34["article"], files34["prefix-safe"]]
    got = _worker(paths, tmp_path / "p.json", "--audit", "--prefix-cache", "--cases", "2")
    article, variant = got[str(paths[0])], got[str(paths[1])]
    assert article["code"] == 1 and article["message"].startswith("FAIL: "), article["message"]
    assert variant["code"] == 0 and variant["message"].startswith("PASS: "), variant["message"]
