"""The plugin installed from j0's wheel, as into vLLM's image (`pip install --no-deps`): the wheel
carries the pins and every proven release's patches (setup.py puts them under j0/plugin/data/),
its entry point is in vLLM's group, and vLLM 0.34.0's loader registers `dflash_j0` from the
installed copy alone (no checkout on the path), reading the packaged pins."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from vllm_releases import vllm_site

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """j0's wheel, built from a copy of the files a build reads (the checkout is not written)."""
    tree = tmp_path_factory.mktemp("j0-source")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    shutil.copytree(ROOT / "overlay", tree / "overlay")
    shutil.copytree(
        ROOT / "scripts" / "j0",
        tree / "scripts" / "j0",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            str(tree),
            "-w",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (found,) = out.glob("j0-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_carries_the_pins_and_patches(wheel: Path) -> None:
    pins = (ROOT / "overlay" / "pins.env").read_text()
    files = re.findall(r"^V\d+_\w*FILE=(\S+)$", pins, re.MULTILINE)
    assert "overlay/vllm-0.34.0/jetspec-j0.patch" in files
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for relpath in ["overlay/pins.env", *files]:
            packed = f"j0/plugin/data/{relpath}"
            assert packed in names, packed
            assert archive.read(packed) == (ROOT / relpath).read_bytes(), packed
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        assert (
            "[vllm.general_plugins]\nj0 = j0.plugin.register:register"
            in archive.read(entry_points).decode()
        )
        assert "Provides-Extra: plugin" in archive.read(metadata).decode()


LOAD = """
import json, logging, sys
logging.getLogger("vllm.j0_plugin").addHandler(logging.StreamHandler(sys.stderr))
logging.getLogger("vllm.j0_plugin").setLevel(logging.INFO)
from vllm.plugins import load_general_plugins
load_general_plugins()
import j0.plugin.proven as proven
from vllm.v1.worker.gpu.spec_decode import speculator_config as sc
print(json.dumps({"methods": sc.registered_speculative_methods(),
                  "j0": proven.__file__, "pins": str(proven.plugin_pins().root)}))
"""


@pytest.mark.slow
def test_vllm_loads_the_installed_plugin(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(target), str(vllm_site())]),
        "CUDA_VISIBLE_DEVICES": "",
    }
    env.pop("J0_HOME", None)
    done = subprocess.run(
        [sys.executable, "-c", LOAD],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["methods"] == ["dflash_j0"]
    assert found["j0"].startswith(str(target))
    assert found["pins"] == str(target / "j0" / "plugin" / "data")
    assert "j0-plugin: registered speculative method dflash_j0 for vLLM 0.34.0" in done.stderr
