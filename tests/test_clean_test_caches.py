"""scripts/clean-test-caches removes what the Docker tests keep between runs, the stand-in images
(`j0-standin/*`) and the stand-in cache (both folders tests/standin/build.py may keep it in), and
nothing else: another run's `j0-test/*` images, scripts/test's caches (the vllm wheel, uv's) and
the CI set-up's own files stay. A stand-in `docker` CLI (written here) records the calls."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "clean-test-caches"

FAKE_DOCKER = r"""import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_DOCKER_CALLS"], "a") as calls:
    calls.write(json.dumps(args) + "\n")
if os.environ.get("FAKE_DOCKER_DOWN"):
    print("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
          "Is the docker daemon running?", file=sys.stderr)
    sys.exit(1)
if args[:2] == ["image", "ls"] and os.environ.get("FAKE_DOCKER_NO_IMAGES"):
    sys.exit(0)
if args[:2] == ["image", "ls"]:
    # what the engine lists for --filter reference=j0-standin/* (and a line it must not trust)
    print("j0-standin/a:0123456789abcdef\t1.1GB")
    print("j0-standin/b:fedcba9876543210\t3.2GB")
    print("j0-test/image-1234:abcd\t1.1GB")
    sys.exit(0)
if args[:1] == ["rmi"]:
    sys.exit(0)
sys.exit(2)
"""


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, Path]:
    """A home and a CI state folder holding the stand-in caches beside caches that must stay."""
    home, ci = tmp_path / "home", tmp_path / "ci"
    files = {
        "ci_rootfs": ci / "standin" / "rootfs-0123.tar",
        "ci_deps": ci / "standin" / "deps-4567" / "site" / "torch" / "__init__.py",
        "ci_trixie": ci / "trixie" / "debs" / "docker-compose.deb",
        "home_floor": home / ".cache" / "j0" / "standin" / "floor-89ab" / ".complete",
        "wheel": home / ".cache" / "j0" / "wheels" / "vllm-0.33.0-cp38-abi3-linux_x86_64.whl",
        "uv": home / ".cache" / "j0" / "uv-cache" / "entry",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 1000)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(f"#!{sys.executable}\n{FAKE_DOCKER}")
    (bin_dir / "docker").chmod(0o755)
    return {"home": home, "ci": ci, "bin": bin_dir, "calls": tmp_path / "calls", **files}


def clean(machine: dict[str, Path], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {  # only the stand-in `docker` on PATH: never this machine's engine
        "PATH": str(machine["bin"]),
        "HOME": str(machine["home"]),
        "J0_CI_STATE": str(machine["ci"]),
        "FAKE_DOCKER_CALLS": str(machine["calls"]),
        **env,
    }
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def calls(machine: dict[str, Path]) -> list[list[str]]:
    if not machine["calls"].is_file():
        return []
    return [json.loads(line) for line in machine["calls"].read_text().splitlines()]


def test_dry_run_says_what_would_go_and_removes_nothing(machine: dict[str, Path]) -> None:
    done = clean(machine, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "would remove image j0-standin/a:0123456789abcdef (1.1GB)" in done.stdout
    assert "would remove image j0-standin/b:fedcba9876543210 (3.2GB)" in done.stdout
    assert f"would remove {machine['ci'] / 'standin'}" in done.stdout
    assert f"would remove {machine['home'] / '.cache' / 'j0' / 'standin'}" in done.stdout
    assert "j0-test" not in done.stdout
    assert all(path.is_file() for key, path in machine.items() if key.startswith(("ci_", "home_")))
    assert [c for c in calls(machine) if c[0] == "rmi"] == []


def test_it_removes_the_standins_and_nothing_else(machine: dict[str, Path]) -> None:
    done = clean(machine)
    assert done.returncode == 0, done.stderr
    assert calls(machine) == [
        ["image", "ls", "--filter", "reference=j0-standin/*", "--format",
         "{{.Repository}}:{{.Tag}}\t{{.Size}}"],
        ["rmi", "j0-standin/a:0123456789abcdef"],
        ["rmi", "j0-standin/b:fedcba9876543210"],
    ]  # fmt: skip
    assert not (machine["ci"] / "standin").exists()
    assert not (machine["home"] / ".cache" / "j0" / "standin").exists()
    for kept in ("ci_trixie", "wheel", "uv"):
        assert machine[kept].is_file(), kept
    assert f"removed {machine['ci'] / 'standin'} (" in done.stdout
    again = clean(machine, FAKE_DOCKER_NO_IMAGES="1")
    assert again.returncode == 0, again.stderr
    assert "nothing to remove" in again.stdout


def test_without_an_engine_the_folders_go_and_it_says_so(machine: dict[str, Path]) -> None:
    done = clean(machine, FAKE_DOCKER_DOWN="1")
    assert done.returncode == 1
    assert "the stand-in images were not looked for" in done.stderr
    assert "Cannot connect to the Docker daemon" in done.stderr
    assert not (machine["ci"] / "standin").exists()
    assert len(done.stderr.strip().splitlines()) == 1


def test_nothing_there_is_said(machine: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    empty = {**machine, "home": tmp_path / "nohome", "ci": tmp_path / "noci"}
    empty["bin"] = tmp_path / "empty"
    done = clean(empty)  # no docker on PATH: the tests made no image here
    assert done.returncode == 0, done.stderr
    assert "nothing to remove" in done.stdout


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("clean_test_caches", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("ci_writable", [True, False])
def test_its_folders_are_where_the_standin_builder_keeps_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci_writable: bool
) -> None:
    from standin import build

    ci = tmp_path / "ci"
    if not ci_writable:
        ci.write_text("a file: no folder can be made under it")
    monkeypatch.setenv("J0_CI_STATE", str(ci))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert build.state_dir() in load_script().state_dirs()
