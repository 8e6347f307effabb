"""The image's engine step: on the wheel route, replace the base image's vllm package by the wheel
of the pinned commit from vLLM's per-commit index; on the image route, keep the base's vLLM.

docker/Dockerfile runs this before the build step (j0.image.build_step), as
`python3 -P -m j0.image.engine_step ...`, on the base image's own python3. Standard library only;
it never imports vLLM or torch. On the wheel route it refuses, with a message naming each:

1. a base without a readable torch (`torch/version.py`): the wheel goes in beside the base's
   torch, so its CUDA must be known;
2. an index with neither the variant folder of the base's torch (`torch.version.cuda` 13.0:
   `cu130/`) nor a vllm wheel at its root (vLLM's default variant), naming the folders the index
   has; an index that cannot give the wheel (unreachable, no page, no wheel for this platform):
   one message with the three routes (another index, the nightly image, the release);
3. a wheel whose sha256 is not VLLM_WHEEL_SHA256 (when pinned), or not the index's own #sha256;
   a wheel whose own CUDA (its local version label, its METADATA's Requires-Dist: torch pin,
   `[cu13]` extras, nvidia-*-cu13 / -cu12 requirements; j0.engine.source.wheel_cuda) is not the
   base's torch's, naming both; a wheel from the root that names no CUDA (the root is taken only for
   a wheel whose own CUDA is the torch's: vLLM's index aliases it as `cu129/` whatever it is);
4. a wheel whose vllm/_version.py is not VLLM_COMMIT (the release's wheel, 4ba787ec9, for one);
5. after `pip install --no-deps`, an installed vllm/_version.py that is not VLLM_COMMIT, or
   requirements of the wheel that the image does not meet: `pip check` (pip's own reading of
   every installed distribution's Requires-Dist, markers and extras included) run in the image,
   its lines about the wheel's project listed each; its lines about the base's other packages
   are the base's own affair and are recorded, not refused.

It writes what it did (route, index, CUDA variant, the folder taken and why, the wheel's CUDA and
what said it, wheel name and sha256, engine commit, the base's torch) as JSON to --record, which
the build step copies into /opt/j0/manifest.json.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from j0.edge import urls
from j0.edge.document import Document
from j0.edge.fields import Rule, write_document
from j0.engine.source import wheel_cuda, wheel_index
from j0.engine.source.base_sources import installed_vllm_dir
from j0.engine.source.torch_version import TorchVersion, installed_torch
from j0.engine.source.vllm_version import (
    VERSION_RELPATH,
    VllmVersion,
    parse_version_file,
    read_version,
)
from j0.errors import J0Error
from j0.pins import ENGINES, Pins, load_pins, wheel_index_for

PROG = "j0 image engine step"
RECORD_PATH = Path("/opt/j0/engine.json")
WORK_DIR = Path("/tmp/j0-wheel")


@dataclass(frozen=True)
class WheelFacts:
    """What the wheel holds, read from the file before it is installed."""

    path: Path
    sha256: str
    engine: VllmVersion
    requires_dist: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EngineRecord(Document):
    """What the step did, for the manifest (keys as written into it; a reader needs every one:
    the manifest must not claim a route that did not run)."""

    EVERY_KEY_NEEDED = True

    route: Annotated[str, Rule("wheel or image", lambda value: value in ENGINES)]
    wheel_index: str = ""
    # The CUDA variant of the base's torch (cu130 for torch.version.cuda 13.0), and the index of
    # the folder the wheel came from: that variant's folder, or the root (vLLM's default variant)
    # where the index has no such folder and the root's wheel is of that CUDA.
    wheel_variant: str = ""
    wheel_variant_index: str = ""
    # Which folder: the variant's name (cu130), or "root"; and why, in words.
    wheel_folder: str = ""
    wheel_folder_why: str = ""
    # The wheel's own CUDA ("13.0", "13": the major alone) and what said it (its local version
    # label, its Requires-Dist), read from the wheel (j0.engine.source.wheel_cuda).
    wheel_cuda: str = ""
    wheel_cuda_from: list[Any] = field(default_factory=list)
    wheel_name: str = ""
    wheel_url: str = ""
    wheel_sha256: str = ""
    wheel_sha256_pinned: str = ""
    engine_version: str = ""
    engine_commit: str = ""
    installer: str = ""
    requires_dist: int = 0
    # `pip check` after the install: "ok" (nothing about the wheel's project), and the lines it
    # printed about the base's other packages (not the wheel's requirements: not refused).
    pip_check: str = ""
    pip_check_other: list[Any] = field(default_factory=list)
    # The base's torch, from its torch/version.py (both routes).
    torch_version: str = ""
    torch_cuda: str | None = None
    torch_version_file: str = ""


def check_sha256(facts: WheelFacts, pinned: str, from_index: str, index: str) -> None:
    """Refuse a wheel whose bytes are not the pinned sha256, or not what the index says."""
    name = facts.path.name
    if pinned and facts.sha256 != pinned.lower():
        raise J0Error(
            f"{name} from {index}: sha256 {facts.sha256}, expected {pinned} (VLLM_WHEEL_SHA256 in "
            "overlay/pins.env): not the wheel that was pinned; the index changed or the download "
            "is not vLLM's",
            exit_code=1,
        )
    if from_index and facts.sha256 != from_index:
        raise J0Error(
            f"{name}: sha256 {facts.sha256}, but the index's link says {from_index}: a damaged "
            "or altered download",
            exit_code=1,
        )


def read_wheel(path: Path, sha256: str) -> WheelFacts:
    """The wheel's vllm/_version.py and its METADATA's Requires-Dist, read from the zip."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            version_text = (
                archive.read(VERSION_RELPATH).decode("utf-8", "replace")
                if VERSION_RELPATH in names
                else ""
            )
            metadata = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if len(metadata) != 1:
                raise J0Error(f"{path.name}: expected one *.dist-info/METADATA, found {metadata}")
            text = archive.read(metadata[0]).decode("utf-8", "replace")
    except (zipfile.BadZipFile, OSError) as exc:
        raise J0Error(f"{path}: not a readable wheel ({exc})", exit_code=1) from None
    engine = parse_version_file(version_text, f"{path.name}:{VERSION_RELPATH}")
    if not version_text:
        engine = VllmVersion(f"{path.name}:{VERSION_RELPATH} (absent)", "", "")
    requires = [
        line.split(":", 1)[1].strip()
        for line in text.split("\n\n", 1)[0].splitlines()
        if line.lower().startswith("requires-dist:")
    ]
    return WheelFacts(path, sha256, engine, requires)


def check_commit(engine: VllmVersion, pins: Pins, what: str) -> None:
    """Refuse an engine that is not VLLM_COMMIT (named by `what`: the wheel, the install)."""
    if engine.matches(pins.vllm_commit):
        return
    release = pins.values.get("VLLM_RELEASE_COMMIT", "")
    hint = (
        f" (that is the {pins.vllm_release} release's commit, VLLM_RELEASE_COMMIT)"
        if release and engine.matches(release)
        else ""
    )
    raise J0Error(
        f"{what}: {engine.path} says {engine.describe()}{hint}, not VLLM_COMMIT "
        f"{pins.vllm_commit} from overlay/pins.env: this is not the article's engine",
        exit_code=1,
    )


def base_torch() -> TorchVersion:
    """The base's torch, or the refusal: the wheel goes in with --no-deps beside it."""
    found = installed_torch()
    if found is None or not found.version:
        where = f"{found.path} cannot be read" if found else f"{sys.executable} has no torch"
        raise J0Error(
            f"{where}: the wheel route installs vLLM's wheel with --no-deps on the base image's "
            "torch, and takes the index's CUDA variant from that torch's torch.version.cuda. "
            "Build on vLLM's image (VLLM_IMAGE_FALLBACK, the default base), or use "
            "VLLM_ENGINE=image",
            exit_code=1,
        )
    if found.cuda is None and found.hip:
        raise J0Error(
            f"the base's {found.describe()} is a ROCm build: the wheel route takes vLLM's CUDA "
            "(or CPU) wheels only; use VLLM_ENGINE=image with a ROCm image of vLLM",
            exit_code=1,
        )
    return found


@dataclass(frozen=True)
class DownloadedWheel:
    """The wheel downloaded: the index's link, the file, its sha256, the variant of the base's
    torch (cu130 for 13.0) and the folder of the index it came from (wheel_index.Source)."""

    link: wheel_index.WheelLink
    path: Path
    sha256: str
    variant: str
    source: wheel_index.Source


def fetch(pins: Pins, index: str, name: str, folder: Path, torch: TorchVersion) -> DownloadedWheel:
    """The chosen wheel of the folder wheel_index.wheel_source takes for the base's torch
    (its variant folder, else the root), downloaded; an index that cannot give it ends in
    `choices`."""
    try:
        variant = wheel_index.variant_of_cuda(torch.cuda)
        why = f"the base image's {torch.describe()}"
        source = wheel_index.wheel_source(index, variant, why)
        link = wheel_index.choose(source.links, name, wheel_index.project_url(source.index))
        path, digest = wheel_index.download(link, folder)
    except wheel_index.WheelIndexError as exc:
        raise J0Error(wheel_index.choices(pins, index, str(exc)), exc.exit_code) from None
    return DownloadedWheel(link, path, digest, variant, source)


def check_cuda(
    fetched: DownloadedWheel, facts: WheelFacts, torch: TorchVersion, pins: Pins, index: str
) -> tuple[wheel_cuda.WheelCuda, str]:
    """The wheel's own CUDA (its local version label, its METADATA's Requires-Dist) against the
    base's torch: (that CUDA, why the folder was taken). A wheel of another CUDA is refused,
    naming both: from the root (vLLM's default variant of the day) with the choices (exit 69);
    from a variant folder as not vLLM's layout (exit 1). A root wheel that names no CUDA is
    refused too: nothing says it goes with the torch."""
    name = fetched.path.name
    found = wheel_cuda.of_wheel(name, facts.requires_dist)
    fits = found.fits(torch.cuda)
    torch_is = f"the base image's {torch.describe()} is {wheel_cuda.describe_torch(torch.cuda)}"
    said = f"{name} is {found.describe()} ({found.evidence()})"
    folder = fetched.source.folder
    if folder == wheel_index.ROOT and not fits:
        fetched.path.unlink(missing_ok=True)
        verdict = (
            "a vllm wheel built for another CUDA than the torch beside it fails to load its kernels"
            if fits is False
            else "nothing says it goes with that torch"
            + (" (what it says disagrees)" if found.found else "")
        )
        reason = f"{fetched.source.why}; but {said}, and {torch_is}: {verdict}"
        raise J0Error(wheel_index.choices(pins, index, reason), 69)
    if fits is False:
        fetched.path.unlink(missing_ok=True)
        raise J0Error(
            f"{said}, but it came from the {folder}/ folder, and {torch_is}: the index is not "
            "vLLM's layout, or is damaged",
            exit_code=1,
        )
    if fits:
        return found, f"{fetched.source.why}; the wheel is {found.describe()} by {found.evidence()}"
    return found, f"{fetched.source.why}; the wheel's own metadata names no CUDA"


def pip_command() -> tuple[str, list[str]]:
    """How this image installs a wheel: `python3 -m pip` if it has pip, else `uv pip`."""
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "--version"], capture_output=True, check=False
    )
    if probe.returncode == 0:
        return "pip", [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index"]
    uv = shutil.which("uv")
    if uv:
        return "uv", [uv, "pip", "install", "--system", "--python", sys.executable, "--no-deps"]
    raise J0Error(
        f"{sys.executable} has no pip (`python3 -m pip` fails) and there is no uv: the base image "
        "cannot install the wheel; use VLLM_ENGINE=image",
        exit_code=69,
    )


def _pip_env() -> dict[str, str]:
    env = dict(os.environ, PIP_BREAK_SYSTEM_PACKAGES="1", PIP_ROOT_USER_ACTION="ignore")
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    return env


# `pip check`'s lines (pip/_internal/commands/check.py): "<name> <version> requires <req>, which
# is not installed.", "<name> <version> has requirement <req>, but you have <name> <version>.",
# "<name> <version> is not supported on this platform"; and uv's: "The package `<name>` requires
# `<req>`, but ...".
_PIP_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*) \S+ (?:requires|has requirement|is not supported)"
)
_UV_LINE = re.compile(r"^The package `(?P<name>[^`]+)` ")


def canonical_name(name: str) -> str:
    """PEP 503's normalised project name (pip check prints names so)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def split_pip_check(output: str, project: str) -> tuple[list[str], list[str]]:
    """`pip check`'s problem lines: (those about `project`, its own requirements; the others,
    about the base's other packages). Lines that are no problem ("No broken requirements
    found.", uv's counts) are neither."""
    own, other = [], []
    for line in (raw.strip() for raw in output.splitlines()):
        match = _PIP_LINE.match(line) or _UV_LINE.match(line)
        if match is None:
            continue
        (own if canonical_name(match["name"]) == canonical_name(project) else other).append(line)
    return own, other


def pip_check(installer: str) -> tuple[list[str], list[str]]:
    """Run `pip check` (or `uv pip check`) on this Python; split its lines as above. A checker
    that fails in another way than by finding problems (exit 0 or 1) is refused."""
    if installer == "pip":
        command = [sys.executable, "-m", "pip", "check"]
    else:
        command = [shutil.which("uv") or "uv", "pip", "check", "--python", sys.executable]
    done = subprocess.run(command, env=_pip_env(), capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    own, other = split_pip_check(output, wheel_index.PROJECT)
    if done.returncode not in (0, 1) or (done.returncode == 1 and not own and not other):
        raise J0Error(
            f"`{' '.join(command)}` exited {done.returncode} without a verdict:\n{output.strip()}",
            exit_code=1,
        )
    return own, other


def checker_name(installer: str) -> str:
    return "pip check" if installer == "pip" else "uv pip check"


def check_requirements(path: Path, installer: str) -> list[str]:
    """Refuse a wheel whose requirements the image does not meet, as `pip check` lists them in
    the image after the --no-deps install; return pip check's other lines (the base's own)."""
    unmet, other = pip_check(installer)
    if unmet:
        listed = "\n  ".join(unmet)
        raise J0Error(
            f"{path.name}: `{checker_name(installer)}` in the base image ({sys.executable}), "
            f"after the --no-deps install, finds {len(unmet)} of the wheel's requirements unmet "
            f"by the image's packages, so the build stops:\n  {listed}\nBuild on a base whose "
            "packages meet them (VLLM_IMAGE), or use another route (VLLM_ENGINE=image)",
            exit_code=1,
        )
    return other


def install_wheel(path: Path) -> str:
    """`pip install --no-deps` the wheel over the base's vllm; return the installer's name."""
    installer, command = pip_command()
    done = subprocess.run([*command, str(path)], env=_pip_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise J0Error(
            f"`{' '.join(command)} {path.name}` exited {done.returncode}:\n"
            f"{(done.stdout + done.stderr).strip()}",
            exit_code=1,
        )
    importlib.invalidate_caches()
    return installer


def wheel_route(pins: Pins, index: str, name: str, sha256: str, folder: Path) -> EngineRecord:
    torch = base_torch()
    fetched = fetch(pins, index, name, folder, torch)
    path, digest, link = fetched.path, fetched.sha256, fetched.link
    facts = read_wheel(path, digest)
    check_sha256(facts, sha256, link.sha256, urls.redact(fetched.source.index))
    cuda, why = check_cuda(fetched, facts, torch, pins, index)
    check_commit(facts.engine, pins, f"the wheel {path.name}")
    installer = install_wheel(path)
    path.unlink(missing_ok=True)
    installed = read_version(installed_vllm_dir())
    check_commit(installed, pins, f"after `{installer} install {path.name}`")
    other = check_requirements(path, installer)
    return EngineRecord(
        route="wheel",
        wheel_index=urls.redact(index),
        wheel_variant=fetched.variant,
        wheel_variant_index=urls.redact(fetched.source.index),
        wheel_folder=fetched.source.folder,
        wheel_folder_why=urls.redact_text(why),
        wheel_cuda=cuda.cuda,
        wheel_cuda_from=list(cuda.found),
        wheel_name=path.name,
        wheel_url=urls.redact(link.url),
        wheel_sha256=digest,
        wheel_sha256_pinned=sha256,
        engine_version=installed.version,
        engine_commit=installed.commit,
        installer=installer,
        requires_dist=len(facts.requires_dist),
        pip_check="ok",
        pip_check_other=other,
        torch_version=torch.version,
        torch_cuda=torch.cuda,
        torch_version_file=torch.path,
    )


def pinned_or_given(pins: Pins, key: str, given: str) -> str:
    """A build arg that repeats a pin: empty takes the pin; given, it must equal a set pin."""
    pinned = pins.values.get(key, "")
    if given and pinned and given != pinned:
        raise J0Error(
            f"build arg {key}={given} is not {key}={pinned} from {pins.pins_path}", exit_code=2
        )
    return given or pinned


def route_of(engine: str, base_image: str, pins: Pins) -> str:
    """The route to take: VLLM_ENGINE as given; empty, `image` when a base image was given (a
    plain `docker build --build-arg VLLM_IMAGE=...` builds on that image's own vLLM, as before
    the wheel route), else VLLM_ENGINE of the pins (`wheel`)."""
    if engine:
        return engine
    return "image" if base_image else pins.vllm_engine


def run(args: argparse.Namespace, pins: Pins) -> EngineRecord:
    route = route_of(args.engine, args.base_image, pins)
    if route not in ENGINES:
        raise J0Error(f"VLLM_ENGINE={route!r}: expected one of {', '.join(ENGINES)}", 64)
    if route == "image":
        engine = read_version(installed_vllm_dir())
        torch = installed_torch()
        return EngineRecord(
            "image",
            engine_version=engine.version,
            engine_commit=engine.commit,
            torch_version=torch.version if torch else "",
            torch_cuda=torch.cuda if torch else None,
            torch_version_file=torch.path if torch else "",
        )
    index = wheel_index_for(args.wheel_index, pins.vllm_commit) if args.wheel_index else ""
    return wheel_route(
        pins,
        index or pins.wheel_index,
        pinned_or_given(pins, "VLLM_WHEEL_NAME", args.wheel_name),
        pinned_or_given(pins, "VLLM_WHEEL_SHA256", args.wheel_sha256),
        args.work,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="", metavar="wheel|image", help="VLLM_ENGINE")
    parser.add_argument("--base-image", default="", help="the VLLM_IMAGE build arg as given")
    parser.add_argument("--wheel-index", default="", metavar="URL", help="WHEEL_INDEX")
    parser.add_argument("--wheel-name", default="", help="VLLM_WHEEL_NAME (a pin)")
    parser.add_argument("--wheel-sha256", default="", help="VLLM_WHEEL_SHA256 (a pin)")
    parser.add_argument("--work", type=Path, default=WORK_DIR, help="where the wheel is fetched")
    parser.add_argument("--record", type=Path, default=RECORD_PATH)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        pins = load_pins()
        record = run(args, pins)
    except J0Error as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    write_document(args.record, record.to_json(), indent=2)
    if record.route == "wheel":
        checker = checker_name(record.installer)
        print(f"{PROG}: installed {record.wheel_name} sha256={record.wheel_sha256}")
        print(
            f"{PROG}: variant {record.wheel_variant}/ for the base's torch {record.torch_version} "
            f"(torch.version.cuda {record.torch_cuda}); from {record.wheel_url} with "
            f"{record.installer} --no-deps"
        )
        print(f"{PROG}: folder {record.wheel_folder}: {record.wheel_folder_why}")
        print(
            f"{PROG}: engine vLLM {record.engine_version} commit {record.engine_commit} "
            f"(VLLM_COMMIT); `{checker}`: the wheel's {record.requires_dist} Requires-Dist are "
            "met by the image"
        )
        if record.pip_check_other:
            print(
                f"{PROG}: note: `{checker}` also names {len(record.pip_check_other)} problem(s) "
                "of the base's other packages (not the wheel's requirements; recorded in the "
                "manifest):\n  " + "\n  ".join(record.pip_check_other)
            )
        if not record.wheel_sha256_pinned:
            print(
                f"{PROG}: note: VLLM_WHEEL_SHA256 is not pinned yet; to pin this wheel, set "
                f"VLLM_WHEEL_NAME={record.wheel_name} and VLLM_WHEEL_SHA256={record.wheel_sha256} "
                "in overlay/pins.env"
            )
    else:
        print(f"{PROG}: route image: the base image's own vLLM, commit {record.engine_commit}")
    if record.torch_version and pins.cuda and record.torch_cuda != pins.cuda:
        print(
            f"{PROG}: warning: the base's torch {record.torch_version} is CUDA "
            f"{record.torch_cuda}, not VLLM_CUDA={pins.cuda} of overlay/pins.env, which `j0 "
            "doctor` judges the host's driver by until it can read this image's manifest",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main())
