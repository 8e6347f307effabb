"""The host's NVIDIA GPUs, as `nvidia-smi` reports them.

Query (nvidia-smi's documented CSV interface, `nvidia-smi --help-query-gpu`):

    nvidia-smi --query-gpu=index,name,memory.total,memory.used,memory.free,driver_version \
               --format=csv,noheader,nounits

one line per GPU, fields separated by ", ", memory in MiB, e.g.
`0, NVIDIA H200, 143771, 0, 143182, 570.124.06`. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from j0.edge import host_tools as host

QUERY_FIELDS = ("index", "name", "memory.total", "memory.used", "memory.free", "driver_version")
MIB = 1 << 20


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    total_bytes: int
    used_bytes: int
    free_bytes: int
    driver: str


@dataclass(frozen=True)
class GpuQuery:
    gpus: list[Gpu]
    problem: str  # why no GPU list came back; "" when it did


def _mib(value: str) -> int:
    return int(float(value)) * MIB


def parse_query(text: str) -> list[Gpu]:
    """Lines of `--format=csv,noheader,nounits`; ValueError on a line that is not one."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [x.strip() for x in line.split(",")]
        if len(parts) != len(QUERY_FIELDS):
            raise ValueError(f"expected {len(QUERY_FIELDS)} fields, got {line!r}")
        index, name, total, used, free, driver = parts
        gpus.append(Gpu(int(index), name, _mib(total), _mib(used), _mib(free), driver))
    return gpus


def query() -> GpuQuery:
    ran = host.run(
        [
            "nvidia-smi",
            f"--query-gpu={','.join(QUERY_FIELDS)}",
            "--format=csv,noheader,nounits",
        ]
    )
    if ran.missing:
        return GpuQuery([], "nvidia-smi is not on PATH: no NVIDIA driver on this host")
    if not ran.ok:
        return GpuQuery([], f"nvidia-smi failed: {ran.said()}")
    try:
        gpus = parse_query(ran.stdout)
    except ValueError as exc:
        return GpuQuery([], f"cannot read nvidia-smi's answer: {exc}")
    if not gpus:
        return GpuQuery([], "nvidia-smi lists no GPU")
    return GpuQuery(gpus, "")
