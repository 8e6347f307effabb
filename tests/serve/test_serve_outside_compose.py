"""`j0 serve --dry-run` outside compose, as a user tries it on a machine of their own: no compose
secret at /run/secrets/api_key, maybe no vLLM, maybe vLLM's module without a GPU (as
scripts/selfcheck-setup installs it). What it says must be true there:

- no "published on 127.0.0.1 only" (compose publishes the port so; outside compose vLLM listens
  where --host says, every interface without it);
- no "J0 on" for a speculator.py it cannot identify;
- no prefix-caching warning about J0 right after saying J0 is absent (vLLM's unpatched file);
- where vLLM is installed but no GPU is visible, vLLM's parser is not built (it fails there after
  importing torch, seconds): the table reads ARGS, and the fact says why, never that vLLM "is
  not importable".

Each runs the real `python -m j0 serve` in a subprocess; the vLLM of the test environment (0.33.0,
installed with --no-deps, torch beside it) is the one selfcheck-setup installs.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.article.spec_config import SpecConfig

ROOT = Path(__file__).resolve().parents[2]
CAUSAL_CONFIG = {
    "architectures": ["DFlashDraftModel"],
    "num_hidden_layers": 5,
    "dflash_config": {"causal_head": True, "causal": True, "mask_token_id": 151669},
}
SPECULATOR = Path("vllm/v1/worker/gpu/spec_decode/dflash/speculator.py")


def drafter(tmp_path: Path) -> Path:
    folder = tmp_path / "drafter"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(CAUSAL_CONFIG))
    return folder


def dry_run(
    tmp_path: Path, *extra: str, env: dict[str, str], python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    spec = SpecConfig.article(str(drafter(tmp_path)), 15).to_json()
    args = ["Qwen/Test", "--speculative-config", spec, "--max-num-seqs", "4", *extra]
    return subprocess.run(
        [sys.executable, *python_flags, "-m", "j0", "serve", "--dry-run",
         "--overlay-mount", str(tmp_path / "none"), "--", *args],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), **env},
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [x for x in result.stderr.splitlines() if x.startswith("j0 serve: ")]


def one(result: subprocess.CompletedProcess[str], start: str) -> str:
    (line,) = [x for x in lines(result) if x.startswith("j0 serve: " + start)]
    return line


def site_with(tmp_path: Path, source: Path | None) -> str:
    """A site folder first on PATH whose vllm holds `source` as its speculator.py (vllm itself
    is not importable from it: `j0 serve` finds the file without importing vLLM)."""
    site = tmp_path / "site"
    target = site / SPECULATOR
    target.parent.mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("raise ImportError('not to be imported')\n")
    if source is not None:
        target.write_bytes(source.read_bytes())
    return os.pathsep.join([str(site), str(ROOT / "scripts")])


def test_no_key_outside_compose_does_not_claim_a_loopback_port(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(ROOT / "scripts"), "J0_SERVE_ARGS_READER": "table"}
    result = dry_run(tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "127.0.0.1 only" not in result.stderr
    key = one(result, "API key: none")
    assert "every interface" in key and "--host" in key, key
    # Where --host says where, that is said.
    result = dry_run(tmp_path / "b", "--host", "127.0.0.1", env=env)
    key = one(result, "API key: none")
    assert "listens on 127.0.0.1" in key and "every interface" not in key, key


def test_j0_on_is_not_said_for_a_file_it_cannot_identify(tmp_path: Path) -> None:
    env = {
        "PYTHONPATH": site_with(tmp_path, None),  # the folder, but no speculator.py in it
        "J0_SERVE_ARGS_READER": "table",
        "VLLM_DFLASH_CTX_NOISE": "1",
    }
    result = dry_run(tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    noise = one(result, "VLLM_DFLASH_CTX_NOISE=1")
    assert "J0 on" not in noise and "not known here" in noise, noise
    assert "identity line" in noise, noise


def test_no_prefix_caching_warning_where_j0_is_absent(tmp_path: Path, base_file: Path) -> None:
    env = {
        "PYTHONPATH": site_with(tmp_path, base_file),
        "J0_SERVE_ARGS_READER": "table",
        "VLLM_DFLASH_CTX_NOISE": "1",
    }
    result = dry_run(tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "but J0 is absent" in one(result, "VLLM_DFLASH_CTX_NOISE=1")
    assert "prefix caching is on with J0 on" not in result.stderr, lines(result)


@pytest.mark.skipif(bool(glob.glob("/dev/nvidia[0-9]*")), reason="a GPU is visible here")
def test_vllm_without_a_gpu_is_read_by_the_table_without_importing_torch(tmp_path: Path) -> None:
    """The test environment's vLLM, importable, on a machine that shows no GPU (the test
    machines): its parser is not built (that imports torch and then fails to infer a device), and
    the fact says why. `-X importtime` lists every module the process imported."""
    env = {"PYTHONPATH": str(ROOT / "scripts")}
    result = dry_run(tmp_path, env=env, python_flags=("-X", "importtime"))
    assert result.returncode == 0, result.stderr[-3000:]
    reader = one(result, "arguments read by")
    assert "not importable" not in reader, reader
    assert "j0's table" in reader and "no GPU" in reader, reader
    imported = [x.split("|")[-1].strip() for x in result.stderr.splitlines() if "|" in x]
    assert "j0.serve.launch" in imported  # the listing is there
    assert "torch" not in imported and "vllm" not in imported


def test_vllm_not_installed_is_said_as_such(tmp_path: Path) -> None:
    """A Python where vLLM is not installed at all (the j0 package alone, Python's isolated
    mode: no site-packages)."""
    spec = SpecConfig.article(str(drafter(tmp_path)), 15).to_json()
    result = subprocess.run(
        [sys.executable, "-S", "-c",
         f"import sys; sys.path.insert(0, {str(ROOT / 'scripts')!r}); "
         "from j0.cli import main; sys.exit(main(sys.argv[1:]))",
         "serve", "--dry-run", "--overlay-mount", str(tmp_path / "none"), "--",
         "Qwen/Test", "--speculative-config", spec, "--max-num-seqs", "4"],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert one(result, "arguments read by").endswith("(vLLM is not installed here)")
