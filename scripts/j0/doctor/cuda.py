"""The host's NVIDIA driver against the CUDA of the image compose will run.

The image's CUDA is its torch's (`torch.version.cuda`; vLLM's wheel is built for the same, and the
wheel route takes the index's variant folder of it): read from the image's /opt/j0/manifest.json
when the image is here (`torch_cuda`, written by the engine step), else VLLM_CUDA of the pins.

What a CUDA needs of the driver, on Linux x86_64:
- each toolkit release's own driver (CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding
  Driver Versions"): with it or later, the release runs in full (TOOLKIT_DRIVER);
- within a major family, an older driver of the same family runs it by minor version
  compatibility, "with limited feature-set" (CUDA Compatibility guide, minor version
  compatibility: CUDA 12.x on 525 or later, 13.x on 580 or later; FAMILY_DRIVER);
- below that it does not run: torch says "The NVIDIA driver on your system is too old". The way
  out without a new driver is CUDA's forward-compatibility package (cuda-compat-<major>-<minor>),
  which NVIDIA supports only on data-center GPUs and select NGC Server Ready RTX SKUs (CUDA
  Compatibility guide, forward compatibility). vLLM's image carries it; `VLLM_ENABLE_CUDA_
  COMPATIBILITY=1` in the container's environment puts it on the library path, and for CUDA 13
  images it supports R535 and R570 host drivers (vLLM's installation docs, "Running on Systems
  with Older CUDA Drivers").

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from j0.checks import FAIL, OK, WARN, Check
from j0.doctor import gpu
from j0.edge import host_tools as host
from j0.errors import J0Error, parse_json

# CUDA release -> the Linux x86_64 driver it shipped with (CUDA Toolkit Release Notes' table).
TOOLKIT_DRIVER = {
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
}
# CUDA major -> the oldest driver that runs its releases by minor version compatibility.
FAMILY_DRIVER = {"12": "525.60.13", "13": "580.65.06"}
# CUDA major -> the host driver branches vLLM's image's forward-compatibility package supports.
FORWARD_COMPAT_BRANCHES = {"13": (535, 570)}
# NVIDIA's data-center GPUs, as nvidia-smi names them ("NVIDIA H100 80GB HBM3", "Tesla T4",
# "NVIDIA A100-SXM4-80GB", "NVIDIA L40S"); workstation and GeForce cards are not (RTX A6000,
# RTX PRO 6000 Blackwell Workstation Edition, T600).
_DATA_CENTER = re.compile(
    r"\b(?:Tesla|V100|P100|P40|T4|A2|A10G?|A16|A30|A40|A100|A800|H20|H100|H200|H800|GH200|L4|L20"
    r"|L40S?|B100|B200|B300|GB200|GB300)\b"
)
COMPAT_SWITCH = "VLLM_ENABLE_CUDA_COMPATIBILITY=1"


@dataclass(frozen=True)
class ImageCuda:
    """The CUDA of the image compose runs, and where that was read; cuda "" when unknown, None
    for an image whose torch is a CPU build."""

    cuda: str | None
    source: str


def manifest_cuda(image: str) -> ImageCuda | None:
    """`torch_cuda` of the image's /opt/j0/manifest.json (a throwaway container, no network, no
    GPU); None when the image is not here or its manifest has no such field."""
    argv = ["docker", "run", "--rm", "--network", "none", "--entrypoint", "cat", image]
    ran = host.run([*argv, "/opt/j0/manifest.json"], timeout=60)
    if not ran.ok:
        return None
    from j0.image import torch_cuda_of

    try:
        where = f"{image}'s /opt/j0/manifest.json"
        found = torch_cuda_of(parse_json(ran.stdout, where), where)
    except (ValueError, J0Error):
        return None
    if found is None:
        return None
    value, variant = found
    where = f"{image}'s /opt/j0/manifest.json" + (f", wheel variant {variant}" if variant else "")
    return ImageCuda(str(value) if value is not None else None, where)


def image_cuda(image: str, present: bool, pinned: str) -> ImageCuda:
    """The manifest's CUDA when `image` is present and has it, else the pin (VLLM_CUDA)."""
    found = manifest_cuda(image) if present else None
    if found is not None:
        return found
    why = "not built yet" if not present else "its manifest names no torch CUDA"
    return ImageCuda(pinned, f"VLLM_CUDA in overlay/pins.env; {image} {why}")


def driver_version(text: str) -> tuple[int, ...] | None:
    """`580.65.06` -> (580, 65, 6); None for anything else."""
    if not re.fullmatch(r"\d+(?:\.\d+)*", text.strip()):
        return None
    return tuple(int(part) for part in text.strip().split("."))


def forward_compat(gpus: list[gpu.Gpu]) -> str:
    """`yes` (data-center GPUs), `maybe` (an RTX card's server edition: NVIDIA supports select
    NGC Server Ready RTX SKUs) or `no`."""
    if all(_DATA_CENTER.search(g.name) for g in gpus):
        return "yes"
    if all(_DATA_CENTER.search(g.name) or "Server Edition" in g.name for g in gpus):
        return "maybe"
    return "no"


def _compat_way(major: str, branch: int, kind: str, names: str) -> str:
    """The forward-compatibility sentence of a fix."""
    package = "CUDA's forward-compatibility package (cuda-compat)"
    if kind == "no":
        return (
            f"({package} is not a way out here: NVIDIA supports it on data-center GPUs and select "
            f"NGC Server Ready RTX cards only, not the {names})"
        )
    branches = FORWARD_COMPAT_BRANCHES.get(major)
    if branches is not None and branch not in branches:
        listed = " and ".join(f"R{b}" for b in branches)
        return (
            f"({package}, which vLLM's image carries, supports {listed} host drivers for CUDA "
            f"{major}, not R{branch})"
        )
    maybe = " if NVIDIA lists this RTX card as NGC Server Ready" if kind == "maybe" else ""
    return (
        f"or, without a new driver{maybe}: {package}, which vLLM's image carries: "
        f"{COMPAT_SWITCH} in the server's environment (a compose.override.yaml with "
        f"services.server.environment: [{COMPAT_SWITCH}])"
    )


def _at_least(have: tuple[int, ...], wanted: str) -> bool:
    return have >= (driver_version(wanted) or ())


def driver_check(gpus: list[gpu.Gpu], image: ImageCuda) -> Check:
    """ok when the driver runs the image's CUDA in full, warn by minor version compatibility (or
    where it cannot be told), fail when it cannot run it."""
    name = "gpu-driver"
    driver = gpus[0].driver
    have = driver_version(driver)
    cuda = image.cuda
    if cuda is None:
        return Check(name, OK, f"the image's torch is a CPU build ({image.source}): no CUDA")
    if have is None or not cuda:
        what = f"driver {driver!r}" if have is None else "the image's CUDA"
        return Check(name, WARN, f"cannot judge the driver: {what} unknown ({image.source})")
    major = cuda.split(".")[0]
    full, family = TOOLKIT_DRIVER.get(cuda), FAMILY_DRIVER.get(major)
    head = f"driver {driver}, the image's CUDA {cuda} ({image.source})"
    if full and _at_least(have, full):
        return Check(name, OK, f"{head}: CUDA {cuda} needs {full} or later on Linux")
    if family is None:
        return Check(
            name,
            WARN,
            f"{head}: CUDA {cuda} is not in j0's table of minimum drivers",
            "compare with CUDA's minimum-driver table (CUDA Toolkit Release Notes)",
        )
    needed = full or family
    if _at_least(have, family):
        return Check(
            name,
            WARN,
            f"{head}: older than CUDA {cuda}'s own {needed}, but of the CUDA {major} family's "
            f"drivers ({family} or later), which run it by minor version compatibility, with a "
            "limited feature set",
            f"a driver of {needed} or later runs it in full",
        )
    names = ", ".join(sorted({g.name for g in gpus}))
    branch = needed.split(".")[0]
    return Check(
        name,
        FAIL,
        f"{head}: too old for it: CUDA {cuda} needs {needed} or later on Linux (CUDA's "
        f'minimum-driver table); vLLM on the {names} would stop at start (torch: "The NVIDIA '
        'driver on your system is too old")',
        f"install NVIDIA driver {needed} or later (the R{branch} branch or newer) "
        + _compat_way(major, have[0], forward_compat(gpus), names),
    )
