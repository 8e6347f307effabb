"""Apply the J0 patch to a base speculator.py with a maintained tool: `git apply`, else GNU patch,
else (neither installed, or `python` asked for) j0's own exact applier (j0.article.unidiff).

Standard library only: the image build runs this on the base image's Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from j0.errors import J0Error


def _patch_target(patch_text: str) -> str:
    """The b/ path the patch writes, e.g. vllm/v1/.../speculator.py."""
    for line in patch_text.splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t", 1)[0].strip()
            return name[2:] if name.startswith("b/") else name
    raise J0Error("the patch has no '+++ ' header line", exit_code=2)


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(cwd.parent), LC_ALL="C")
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)


TOOLS = ("git", "patch", "python")


def available_tool() -> str:
    """'git' or 'patch', whichever is installed (git first); 'python' (j0.article.unidiff, the
    same no-fuzz rules) where neither is."""
    for tool in ("git", "patch"):
        if shutil.which(tool):
            return tool
    return "python"


def apply_patch(base: bytes, patch_file: Path, tool: str | None = None) -> bytes:
    """Return `base` with `patch_file` applied; refuse if any hunk does not apply exactly.

    No fuzz and no offset guessing beyond what the tools do by default with exact context:
    `git apply` never fuzzes; GNU patch is run with --fuzz=0; `python` is j0.article.unidiff.
    """
    tool = tool or available_tool()
    if tool == "python":
        from j0.article import unidiff

        try:
            return unidiff.apply(base, patch_file.read_bytes(), str(patch_file))
        except J0Error as exc:
            raise J0Error(
                f"the patch {patch_file} does not apply cleanly to this base (python):\n{exc}"
            ) from None
    patch_text = patch_file.read_text(encoding="utf-8")
    target = _patch_target(patch_text)
    with tempfile.TemporaryDirectory(prefix="j0-patch-") as tmp:
        work = Path(tmp) / "tree"
        file_path = work / target
        file_path.parent.mkdir(parents=True)
        file_path.write_bytes(base)
        if tool == "git":
            cmd = ["git", "apply", "-p1", "--whitespace=nowarn", str(patch_file.resolve())]
        elif tool == "patch":
            cmd = [
                "patch",
                "-p1",
                "--batch",
                "--forward",
                "--fuzz=0",
                "--no-backup-if-mismatch",
                "-i",
                str(patch_file.resolve()),
            ]
        else:
            raise J0Error(
                f"unknown patch tool {tool!r}; expected one of {', '.join(TOOLS)}", exit_code=64
            )
        result = _run(cmd, work)
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip()
            raise J0Error(
                f"the patch {patch_file} does not apply cleanly to this base ({tool}):\n{output}"
            )
        leftovers = sorted(p.name for p in file_path.parent.iterdir() if p.name != file_path.name)
        if leftovers:
            raise J0Error(
                f"the patch {patch_file} left {leftovers} behind: it did not apply cleanly"
            )
        return file_path.read_bytes()
