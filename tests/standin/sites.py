"""Stand-in site-packages for the wheel route's tests: what a base image's Python has installed,
made at test time.

  installed(site, name, version, requires, files)  a distribution as pip installs one: its files
                                                    and a dist-info (METADATA with Requires-Dist,
                                                    INSTALLER, RECORD, so pip can replace it)
  release_vllm(site)        vLLM 0.33.0 as the release image holds it (vllm/_version.py, 4ba787ec9)
  torch(site, cuda)         a torch whose torch/version.py says `cuda: Optional[str] = '13.0'`
                            (None: torch's CPU build), the file torch.version.cuda comes from
  image_venv(folder)        a virtual environment standing in for the image's Python (see there)
"""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from importlib import metadata as importlib_metadata
from pathlib import Path

TORCH_VERSION = "2.14.0"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def installed(
    site: Path,
    name: str,
    version: str,
    requires: Sequence[str] = (),
    files: dict[str, str] | None = None,
) -> Path:
    """Write `files` (path relative to `site` -> text) and `name`'s dist-info; return the latter
    (its folder's name with the name's runs of -_. as one `_`, as installers write it: pip reads
    a `-` there as the version's start)."""
    info = site / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    info.mkdir(parents=True)
    written = {}
    for relpath, text in (files or {}).items():
        target = site / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written[relpath] = text.encode()
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {line}\n" for line in requires)
    for relpath, data in ((f"{info.name}/METADATA", metadata), (f"{info.name}/INSTALLER", "pip\n")):
        (site / relpath).write_text(data)
        written[relpath] = data.encode()
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in written.items())
    (info / "RECORD").write_text(record + f"{info.name}/RECORD,,\n")
    return info


def release_vllm(site: Path) -> None:
    version = "__version__ = version = '0.33.0'\n__commit_id__ = commit_id = 'g4ba787ec9'\n"
    files = {"vllm/__init__.py": "", "vllm/_version.py": version}
    installed(site, "vllm", "0.33.0", files=files)


def torch(site: Path, cuda: str | None, version: str = TORCH_VERSION) -> None:
    """torch as its wheels lay out torch/version.py (torch 2.13's, with this CUDA)."""
    local = f"cu{cuda.replace('.', '')}" if cuda else "cpu"
    text = (
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
        f"__version__ = '{version}+{local}'\n"
        "debug = False\n"
        f"cuda: Optional[str] = {cuda!r}\n"
        "git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'\n"
        "hip: Optional[str] = None\n"
        "rocm: Optional[str] = None\n"
        "xpu: Optional[str] = None\n"
    )
    installed(site, "torch", version, files={"torch/__init__.py": "", "torch/version.py": text})


def image_venv(folder: Path) -> tuple[Path, Path]:
    """A virtual environment that stands in for the image's Python: (its python, its
    site-packages). Made without pip of its own (`venv --without-pip`: 0.2 s, where ensurepip
    takes 10 s on a busy machine); a .pth file puts a folder on its path that holds only a link
    to this test environment's pip package, so `python -m pip install` and `python -m pip check`
    there are the real pip, installing into and checking that environment alone (none of this
    environment's other packages is visible to it)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    site = Path(purelib)
    only_pip = folder / "pip-only"
    only_pip.mkdir()
    # pip found by its installed metadata, neither imported nor looked up by the import system: in
    # this test process even `importlib.util.find_spec("pip")` reaches setuptools' distutils shim,
    # which then turns itself off for good on Python 3.11 (_distutils_hack's spec_for_pip: "ensure
    # stdlib distutils when running under pip"), and every later import of vLLM here fails
    # (setuptools, imported by torch.utils.cpp_extension, finds the standard library's
    # distutils.core): seen as test_vllms_parser_was_the_reference_here failing after this test.
    pip_init = importlib_metadata.distribution("pip").locate_file("pip/__init__.py")
    (only_pip / "pip").symlink_to(Path(pip_init).resolve().parent, target_is_directory=True)
    (site / "test-pip.pth").write_text(f"{only_pip}\n")
    assert sysconfig.get_path("purelib") != purelib  # not this environment's
    return python, site
