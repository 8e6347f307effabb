"""The prefix-safe variant's contract with vLLM's engine (j0.engine.source.contract), checked on
source text the tests write: a look-alike of the four files (tests/engine/contract_lookalike.py)
with each clause broken in turn, and copies of vLLM 0.33.0's own files read out of the pinned wheel
(downloaded once, cached; never committed). Also the image build step refusing a variant build
on a broken engine."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from engine.contract_lookalike import BREAKS, FILES, write_lookalike
from j0.engine.source import contract
from j0.engine.source.base_sources import vllm_wheel
from j0.errors import J0Error
from j0.pins import Pins


def test_the_lookalike_keeps_the_contract(tmp_path: Path) -> None:
    assert contract.problems(write_lookalike(tmp_path)) == []


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ("parameter renamed", "init_speculator has no parameter req_states (its parameters: "
         "vllm_config, device, request_states)"),
        ("built elsewhere", "no longer builds DFlashSpeculator(...) in its own body"),
        ("not passed", "init_speculator(...) is no longer called with self.req_states"),
        ("token store renamed", "RequestState.__init__ no longer sets self.all_token_ids"),
        ("no gpu view", "StagedWriteTensor no longer sets self.gpu"),
    ],
)  # fmt: skip
def test_each_broken_clause_names_its_file(tmp_path: Path, broken: str, said: str) -> None:
    found = contract.problems(write_lookalike(tmp_path, broken))
    assert len(found) == 1, found
    assert found[0].startswith(str(tmp_path / BREAKS[broken][0]) + ": ") and said in found[0]
    with pytest.raises(J0Error, match="breaks the prefix-safe variant's contract") as caught:
        contract.require(tmp_path, "J0_VARIANT=prefix-safe")
    assert caught.value.exit_code == 1 and said in str(caught.value)


def test_a_missing_file_or_bad_python_is_named(tmp_path: Path) -> None:
    write_lookalike(tmp_path)
    (tmp_path / "vllm/v1/worker/gpu/states.py").unlink()
    (tmp_path / "vllm/v1/worker/gpu/buffer_utils.py").write_text("class (:\n")
    found = contract.problems(tmp_path)
    assert any(
        p.startswith(f"{tmp_path}/vllm/v1/worker/gpu/states.py: no such file") for p in found
    )
    assert any("buffer_utils.py: cannot be read as Python" in p for p in found)


def test_vllm_0_33_0s_own_files_keep_the_contract(pins: Pins, tmp_path: Path) -> None:
    with zipfile.ZipFile(vllm_wheel(pins)) as archive:
        for relpath in FILES:
            target = tmp_path / relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(relpath))
    assert contract.problems(tmp_path) == []
    # The same text with the argument dropped from the model runner's call is caught.
    runner = tmp_path / "vllm/v1/worker/gpu/model_runner.py"
    text = runner.read_text()
    assert text.count("self.vllm_config, self.device, self.req_states") == 1
    runner.write_text(
        text.replace(
            "self.vllm_config, self.device, self.req_states", "self.vllm_config, self.device"
        )
    )
    assert [
        "init_speculator(...) is no longer called" in p for p in contract.problems(tmp_path)
    ] == [True]


@pytest.mark.parametrize("variant", ["prefix-safe", "audit"])
def test_engine_check_here_refuses_the_variant_on_a_broken_engine(
    base_file: Path, pins: Pins, tmp_path: Path, variant: str
) -> None:
    """`j0 engine-check --here` with this Python's vLLM a look-alike whose model runner no longer
    passes req_states, and the variant (or an audit) installed: exit 1 before any model is made
    (a stand-in nvidia-smi on PATH says a GPU is there; empty packages stand in for the server
    packages the pre-flight only looks for, never imports)."""
    import os
    import subprocess
    import sys

    from j0.cli import main

    site = write_lookalike(tmp_path / "site", "not passed")
    (site / "vllm" / "__init__.py").write_text("raise ImportError('vLLM must not be imported')\n")
    for name in ("fastapi", "uvicorn", "transformers", "torch"):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text("raise ImportError('not to be imported')\n")
    target = site / pins.speculator_relpath
    args = ["overlay", "build", "--base", str(base_file), "-o", str(target)]
    args += ["--audit"] if variant == "audit" else ["--variant", "prefix-safe"]
    assert main(args) == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": f"{site}:{root / 'scripts'}",
    }
    env.pop("CUDA_VISIBLE_DEVICES", None)
    keep = tmp_path / "kept"
    cmd = [sys.executable, "-m", "j0", "engine-check", "--here", "--keep", str(keep)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"identity={variant}" in done.stderr
    assert "model_runner.py: init_speculator(...) is no longer called with self.req_states" in (
        done.stderr
    )
    assert not keep.exists()
