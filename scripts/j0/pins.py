"""The pins file (overlay/pins.env): the one place that holds what reproduces the article.

Standard library only: this module also runs inside the image build, on the base image's Python.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from j0.edge.atomic import write_text_atomic
from j0.errors import J0Error, read_input_text

PINS_RELPATH = Path("overlay") / "pins.env"
_LINE = re.compile(r"^([A-Z][A-Z0-9_]*)=(\S*)$")


def project_root() -> Path:
    """The directory holding overlay/pins.env: $J0_HOME, else the nearest parent of this package,
    else (an installed wheel) the package's own copy, j0/plugin/data."""
    env = os.environ.get("J0_HOME")
    if env:
        root = Path(env)
        if not (root / PINS_RELPATH).is_file():
            raise J0Error(f"J0_HOME={env}: no {PINS_RELPATH} there", exit_code=2)
        return root
    here = Path(__file__).resolve().parent
    for candidate in (here, *here.parents):
        if (candidate / PINS_RELPATH).is_file():
            return candidate
    # An installed wheel (no checkout above it): the copy setup.py put inside the package.
    packaged = here / "plugin" / "data"
    if (packaged / PINS_RELPATH).is_file():
        return packaged
    raise J0Error(
        f"cannot find {PINS_RELPATH} above {here}; set J0_HOME to the j0 checkout", exit_code=2
    )


def parse_pins(text: str, source: str) -> dict[str, str]:
    """Parse KEY=VALUE lines; blank lines and # comments are skipped, anything else is an error."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise J0Error(f"{source}:{number}: {raw!r} is not a KEY=VALUE line", exit_code=2)
        key, value = match.groups()
        if key in values:
            raise J0Error(f"{source}:{number}: {key} is set twice", exit_code=2)
        values[key] = value
    return values


@dataclass(frozen=True)
class Pins:
    """The article's pins, read from overlay/pins.env."""

    root: Path
    vllm_commit: str
    vllm_release: str
    vllm_image: str
    vllm_image_fallback: str
    speculator_relpath: str
    base_sha256: str
    patched_sha256: str
    patch_file: Path
    patch_sha256: str
    j0_seed: int
    drafter_repo: str
    drafter_revision: str
    drafter_commit: str
    target_model: str
    # Every KEY=VALUE of the file as written, for code that needs a pin by its key.
    values: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pins_path(self) -> Path:
        return self.root / PINS_RELPATH

    @property
    def default_overlay_path(self) -> Path:
        return self.root / "overlay" / self.speculator_relpath

    @property
    def speculator_module(self) -> str:
        return self.speculator_relpath.removesuffix(".py").replace("/", ".")

    # The engine route's pins (see overlay/pins.env); read from `values` so that a pins file of
    # an older checkout (without them) still loads: the wheel route is then the default.
    @property
    def vllm_engine(self) -> str:
        """`wheel` or `image`: the route docker/Dockerfile and compose take by default."""
        return self.values.get("VLLM_ENGINE") or "wheel"

    @property
    def wheel_index_template(self) -> str:
        return self.values.get("VLLM_WHEEL_INDEX") or "https://wheels.vllm.ai/{commit}/"

    @property
    def wheel_index(self) -> str:
        """The per-commit index of VLLM_COMMIT (the template with {commit} filled in)."""
        return wheel_index_for(self.wheel_index_template, self.vllm_commit)

    @property
    def wheel_name(self) -> str:
        """The pinned wheel file name; "" until learned."""
        return self.values.get("VLLM_WHEEL_NAME", "")

    @property
    def wheel_sha256(self) -> str:
        """The pinned wheel's sha256; "" until learned."""
        return self.values.get("VLLM_WHEEL_SHA256", "")

    @property
    def cuda(self) -> str:
        """VLLM_CUDA: the CUDA of the pinned images' torch; "" in a pins file without it."""
        return self.values.get("VLLM_CUDA", "")

    def base_image_for(self, engine: str) -> str:
        """The image a route builds FROM: the release for `wheel`, VLLM_IMAGE for `image`."""
        return self.vllm_image_fallback if engine == "wheel" else self.vllm_image


ENGINES = ("wheel", "image")


def wheel_index_for(template: str, commit: str) -> str:
    """An index URL from a template: `{commit}` replaced by the full commit; a URL without it is
    taken as it is (a mirror of one commit's index)."""
    return template.replace("{commit}", commit)


_KEYS = {
    "vllm_commit": "VLLM_COMMIT",
    "vllm_release": "VLLM_RELEASE",
    "vllm_image": "VLLM_IMAGE",
    "vllm_image_fallback": "VLLM_IMAGE_FALLBACK",
    "speculator_relpath": "SPECULATOR_RELPATH",
    "base_sha256": "BASE_SHA256",
    "patched_sha256": "PATCHED_SHA256",
    "patch_sha256": "PATCH_SHA256",
    "drafter_repo": "DRAFTER_REPO",
    "drafter_revision": "DRAFTER_REVISION",
    "drafter_commit": "DRAFTER_COMMIT",
    "target_model": "TARGET_MODEL",
}


def load_pins(root: Path | None = None) -> Pins:
    """Read and check the pins file of the project at `root` (default: project_root())."""
    root = project_root() if root is None else root
    path = root / PINS_RELPATH
    values = parse_pins(read_input_text(path, "the pins file"), str(path))
    needed = [*_KEYS.values(), "PATCH_FILE", "J0_SEED"]
    missing = [key for key in needed if key not in values]
    if missing:
        raise J0Error(f"{path}: missing {', '.join(missing)}", exit_code=2)
    fields = {name: values[key] for name, key in _KEYS.items()}
    seed = values["J0_SEED"]
    if not re.fullmatch(r"[0-9]{1,19}", seed) or int(seed) >= 1 << 63:
        raise J0Error(
            f"{path}: J0_SEED={seed!r}, expected a whole number 0 or more (the patch's 20261031)",
            exit_code=2,
        )
    return Pins(
        root=root,
        patch_file=root / values["PATCH_FILE"],
        j0_seed=int(seed),
        values=values,
        **fields,
    )


def set_pin(key: str, value: str, root: Path | None = None) -> bool:
    """Set one KEY's value in the pins file, keeping every other byte. Returns True if changed."""
    root = project_root() if root is None else root
    path = root / PINS_RELPATH
    text = path.read_text(encoding="utf-8")
    parse_pins(text, str(path))
    pattern = re.compile(rf"^{re.escape(key)}=\S*$", re.MULTILINE)
    if not pattern.search(text):
        raise J0Error(f"{path}: no {key}= line to update", exit_code=2)
    new_text = pattern.sub(f"{key}={value}", text, count=1)
    if new_text == text:
        return False
    write_text_atomic(path, new_text)
    return True


@dataclass(frozen=True)
class CheckoutRevision:
    """The j0 checkout's git commit and whether tracked files have changes; None for each outside
    a git checkout (or without git)."""

    commit: str | None
    dirty: bool | None

    def label(self) -> str:
        """The commit with `-dirty` for uncommitted changes, or "" outside a checkout."""
        if not self.commit:
            return ""
        return self.commit + ("-dirty" if self.dirty else "")


def _git(root: Path, *args: str, timeout: float = 10.0) -> str | None:
    """`git -C root ARGS`'s output, stripped; None when git is absent or fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def checkout_revision(root: Path) -> CheckoutRevision:
    """What `git rev-parse HEAD` and `git status --porcelain --untracked-files=no` say in `root`."""
    commit = _git(root, "rev-parse", "HEAD") or None
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
    return CheckoutRevision(commit, bool(status) if status is not None else None)


def checkout_origin(root: Path) -> str:
    """The checkout's `origin` remote URL, or "" where there is none."""
    return _git(root, "remote", "get-url", "origin") or ""
