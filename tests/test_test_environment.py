"""scripts/test makes its environment in a folder of its own and never touches one it did not
make. The README's install line puts `j0` into `.venv` (several GB with the extras); the README's
test command comes right after it. Each test runs the real scripts/test in a copy of the
repository's tracked files beside a small real virtual environment at `.venv` (made here by
Python's venv, a file of the user's inside it) and looks at that environment afterwards, file by
file. The slow one makes the whole test environment (uv from its warm package cache, as a second
clone does)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_FILE = "mine.txt"


def tracked_copy(destination: Path) -> Path:
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, files):
        source = ROOT / name
        if not source.is_file():
            continue  # deleted in the working tree
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return destination


def users_venv(path: Path) -> Path:
    """A real virtual environment as `python3 -m venv .venv` makes it, with a file of the user's."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    (path / USER_FILE).write_text("the user's install: must stay\n")
    return path


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under the folder: a file's sha256 and mtime, a link's target, a folder."""
    seen: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            seen[name] = "-> " + os.readlink(path)
        elif path.is_dir():
            seen[name] = "dir"
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            seen[name] = f"{digest} {path.stat().st_mtime_ns}"
    return seen


def run_set_up(clone: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("J0_VENV", "VIRTUAL_ENV")}
    env.update(extra)
    return subprocess.run(
        ["scripts/test", "--set-up-only"], cwd=clone, capture_output=True, text=True,
        timeout=900, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.slow
def test_the_readme_install_survives_the_test_set_up(tmp_path: Path) -> None:
    """The README's two commands one after the other: `.venv` (the install) is left exactly as it
    was, and the test environment is made in `.venv-test`, where j0 imports; after the checkout
    is moved, the set-up finds j0 gone and installs it again from the new place."""
    clone = tracked_copy(tmp_path / "clone")
    before = snapshot(users_venv(clone / ".venv"))
    run = run_set_up(clone)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert snapshot(clone / ".venv") == before
    python = clone / ".venv-test" / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-c", "import j0, sys; print(j0.__file__); print(sys.prefix)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    file, prefix = probe.stdout.split()
    assert Path(file).is_relative_to(clone / "scripts")
    assert Path(prefix) == clone / ".venv-test"

    # The checkout moved (renamed): its editable j0 named the old path. The set-up installs j0
    # again from the new one, without remaking the environment.
    moved = clone.rename(tmp_path / "moved")
    again = run_set_up(moved)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "creating the test environment" not in again.stdout
    assert "installed again from this checkout" in again.stdout, again.stdout
    python = moved / ".venv-test" / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-c", "import j0; print(j0.__file__)"], capture_output=True, text=True
    )
    assert probe.returncode == 0, probe.stderr
    assert Path(probe.stdout.strip()).is_relative_to(moved / "scripts")


@pytest.mark.parametrize(
    ("folder", "variables"),
    [(".venv", {"J0_VENV": ".venv"}), (".venv-test", {})],
    ids=["J0_VENV-names-the-install", "default-folder-taken"],
)
def test_a_folder_scripts_test_did_not_make_is_refused_untouched(
    tmp_path: Path, folder: str, variables: dict[str, str]
) -> None:
    """Where the folder scripts/test would use holds an environment it did not make (no mark of
    its own), it stops before changing anything and says which folder and what to do."""
    clone = tracked_copy(tmp_path / "clone")
    before = snapshot(users_venv(clone / folder))
    run = run_set_up(clone, **variables)
    assert run.returncode != 0, run.stdout[-3000:]
    assert snapshot(clone / folder) == before
    message = run.stderr
    assert folder in message and "not made by scripts/test" in message, message
    assert "J0_VENV" in message, message
    assert "creating the test environment" not in run.stdout


def test_no_reader_takes_the_old_folder_for_the_test_environment() -> None:
    """Whatever reads J0_VENV defaults to scripts/test's own folder, .venv-test, never the
    README's .venv (a test that looked there failed on a fresh clone, or found a user's install)."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    # A default of J0_VENV that names .venv, in shell (`:-` expansion) or in Python (`ROOT / `).
    old = re.compile(r"J0_VENV(?::-|\"\s*,\s*ROOT\s*/\s*\")\.venv\b(?!-test)")
    found = []
    for name in filter(None, files.split("\0")):
        path = ROOT / name
        if not path.is_file() or name.startswith("docs/results/"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{name}: {m.group(0)}" for m in old.finditer(text)]
    assert not found, "\n".join(found)
