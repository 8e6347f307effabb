"""Which CUDA a vllm wheel was built for, read from the wheel itself: its file name's local
version label and its METADATA's Requires-Dist. The wheel route compares it with the base
image's torch.version.cuda before installing the wheel beside that torch.

What says a CUDA (each finding is kept, with the words it came from):

- the local version label of a variant wheel (`+g<sha>.cu129`: CUDA 12.9; `+cpu`: no CUDA).
  vLLM's build writes it for every variant but the default one, whose wheel carries none;
- a requirement on one of NVIDIA's per-CUDA packages, whose name ends in the CUDA major
  (`nvidia-cuda-runtime-cu12`, `nvidia-cutlass-dsl-libs-cu13`: CUDA 12, 13); the `nvidia-cuda-*`
  ones (runtime, nvrtc, cupti), pinned `==X.Y.z`, give the minor too (their versions are the
  CUDA toolkit's), and so does a pin of `cuda-toolkit` itself;
- a requirement with a CUDA extra (`nvidia-cutlass-dsl[cu13]`: CUDA 13);
- a torch pin with a CUDA local label (`torch==2.14.0+cu130`). A torch pin without one says the
  torch version only, not its CUDA (one torch version is built for several CUDAs), so it is no
  finding; `pip check` in the image holds the version.

A requirement under one of vllm's own extras (`; extra == "audio"`) is not installed by the route
and is no finding. Findings that disagree (CUDA 12 and 13; 12.8 and 12.9; a CPU label and an
NVIDIA package) make the wheel's CUDA unknown, as does a wheel with none.

Standard library only: the engine step runs this on the base image's python3.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from j0.engine.source.wheel_index import wheel_variant

CPU = "cpu"
# A PEP 508 requirement: name, [extras], the version part, ; marker.
_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[(?P<extras>[^\]]*)\])?"
    r"\s*(?P<spec>[^;]*?)\s*(?:;(?P<marker>.*))?$"
)
_PER_CUDA = re.compile(r"^(?P<package>(?:nvidia|cuda)-.+)-cu(?P<digits>\d+)$")
_EXTRA = re.compile(r"^cu(?:da)?(?P<digits>\d+)$")
_PIN = re.compile(r"^==\s*(?P<version>[0-9][^,\s]*)$")


@dataclass(frozen=True)
class WheelCuda:
    """The wheel's CUDA: "13.0", "13" (the major alone), "cpu", or "" (nothing says it, or the
    findings disagree); `found`: each finding, in words (`Requires-Dist: ...: CUDA 13`)."""

    cuda: str
    found: tuple[str, ...]

    def describe(self) -> str:
        if self.cuda == CPU:
            return "a CPU build"
        if self.cuda:
            return f"CUDA {self.cuda}"
        return "of a CUDA its metadata disagrees on" if self.found else "of no CUDA it names"

    def evidence(self) -> str:
        """Where the CUDA was read, for a message: `by its Requires-Dist ...; its ...`."""
        if not self.found:
            return "neither its file name's local version nor its METADATA's Requires-Dist name one"
        return "; ".join(self.found)

    def fits(self, torch_cuda: str | None) -> bool | None:
        """Whether the wheel goes with a torch of `torch_cuda` (None: torch's CPU build): the same
        major.minor where the wheel says one, else the same major; None where it says none."""
        if not self.cuda:
            return None
        if self.cuda == CPU or torch_cuda is None:
            return self.cuda == CPU and torch_cuda is None
        torch_parts = torch_cuda.strip().split(".")
        parts = self.cuda.split(".")
        return parts == torch_parts[: len(parts)]


def cuda_of_digits(digits: str) -> str:
    """`cu130`'s digits -> "13.0", `cu129`'s -> "12.9", `cu13`'s -> "13" (the major alone)."""
    if len(digits) <= 2:
        return str(int(digits))
    return f"{int(digits[:-1])}.{digits[-1]}"


def describe_torch(torch_cuda: str | None) -> str:
    return f"CUDA {torch_cuda}" if torch_cuda else "a CPU build"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _major_minor(version: str) -> str:
    match = re.match(r"(\d+)\.(\d+)", version)
    return f"{int(match[1])}.{int(match[2])}" if match else ""


def _from_requirement(line: str) -> list[str]:
    """The CUDAs one Requires-Dist line names (none, or one per rule it meets)."""
    match = _REQUIREMENT.match(line)
    if match is None or "extra" in (match["marker"] or ""):
        return []
    name = _canonical(match["name"])
    spec = (match["spec"] or "").strip().strip("()").strip()
    pin = _PIN.match(spec)
    found = []
    per_cuda = _PER_CUDA.match(name)
    if per_cuda:
        major = cuda_of_digits(per_cuda["digits"])
        precise = _major_minor(pin["version"]) if pin else ""
        exact = name.startswith("nvidia-cuda-") and precise.split(".")[0] == major
        found.append(precise if exact else major)
    if name == "cuda-toolkit" and pin and _major_minor(pin["version"]):
        found.append(_major_minor(pin["version"]))
    for extra in (part.strip().lower() for part in (match["extras"] or "").split(",")):
        if (cu := _EXTRA.match(extra)) is not None:
            found.append(cuda_of_digits(cu["digits"]))
    if name == "torch" and pin:
        label = wheel_variant(f"torch-{pin['version']}-py3-none-any.whl")
        if label:
            found.append(CPU if label == CPU else cuda_of_digits(label[2:]))
    return found


def _agreed(cudas: list[str]) -> str:
    """The one CUDA all findings allow (the most precise), or "" where they disagree."""
    kinds = set(cudas)
    if not kinds or CPU in kinds:
        return CPU if kinds == {CPU} else ""
    majors = {cuda.split(".")[0] for cuda in kinds}
    precise = {cuda for cuda in kinds if "." in cuda}
    if len(majors) != 1 or len(precise) > 1:
        return ""
    return precise.pop() if precise else majors.pop()


def of_wheel(name: str, requires: Sequence[str]) -> WheelCuda:
    """The CUDA the wheel `name` (its file name) with these Requires-Dist lines was built for."""
    cudas: list[str] = []
    found: list[str] = []
    label = wheel_variant(name)
    if label.startswith("cu") or label == CPU:
        cuda = CPU if label == CPU else cuda_of_digits(label[2:])
        cudas.append(cuda)
        found.append(f"its local version label .{label}: {WheelCuda(cuda, ()).describe()}")
    for line in requires:
        for cuda in _from_requirement(line):
            cudas.append(cuda)
            found.append(f"Requires-Dist {line.strip()}: {WheelCuda(cuda, ()).describe()}")
    return WheelCuda(_agreed(cudas), tuple(found))
