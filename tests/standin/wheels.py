"""Stand-in vllm wheels, made at test time and never committed: the fewest files the wheel route
needs, in a wheel pip installs.

  vllm/__init__.py      one comment line (nothing of vLLM's)
  vllm/_version.py      `__version__` and `__commit_id__` as vLLM's build writes them
  vllm/<SPECULATOR>     the base speculator.py, taken from the pinned vllm==0.33.0 wheel that the
                        tests already use (the one vLLM file the stand-in images carry too)
  vllm-<v>.dist-info/   METADATA (Name, Version, the Requires-Dist lines given), WHEEL, RECORD
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Sequence
from pathlib import Path

# What vLLM's build writes into vllm/_version.py, for the article's commit and the release's.
ARTICLE_VERSION = ("0.33.1.dev3+gc50aca144", "gc50aca144")
RELEASE_VERSION = ("0.33.0", "g4ba787ec9")
# Requires-Dist lines that say a wheel's CUDA: a CUDA 13 wheel's, as vLLM 0.33.0's own METADATA
# requires torch==2.14.0 (PyPI's CUDA 13 build) and nvidia-cutlass-dsl[cu13]; and what a CUDA 12.9
# build would require instead (the cu12 extra, NVIDIA's CUDA 12.9 runtime).
CUDA13_REQUIRES = ("torch==2.14.0", "nvidia-cutlass-dsl[cu13]==4.8.0")
CUDA129_REQUIRES = (
    "torch==2.14.0",
    "nvidia-cutlass-dsl[cu12]==4.8.0",
    "nvidia-cuda-runtime-cu12==12.9.79; platform_system == 'Linux'",
)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def make_wheel(
    folder: Path,
    speculator_relpath: str,
    speculator: bytes,
    version: tuple[str, str] = ARTICLE_VERSION,
    requires: Sequence[str] = (),
    tag: str = "py3-none-any",
) -> Path:
    """Write vllm-<version>-<tag>.whl into `folder` and return its path."""
    name, commit = version
    info = f"vllm-{name}.dist-info"
    files = {
        "vllm/__init__.py": b"# a stand-in vllm package made by j0's tests\n",
        "vllm/_version.py": (
            f"__version__ = version = {name!r}\n__commit_id__ = commit_id = {commit!r}\n"
        ).encode(),
        speculator_relpath: speculator,
        f"{info}/METADATA": (
            "Metadata-Version: 2.1\nName: vllm\n"
            f"Version: {name}\n"
            + "".join(f"Requires-Dist: {line}\n" for line in requires)
            + "\nA stand-in of the vllm wheel, made by j0's tests.\n"
        ).encode(),
        f"{info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: j0-tests\nRoot-Is-Purelib: true\nTag: {tag}\n"
        ).encode(),
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    record += f"{info}/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"vllm-{name}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{info}/RECORD", record)
    return wheel
