"""The image's engine step: on the wheel route, replace the base image's vllm package by the wheel
of the pinned commit from vLLM's per-commit index; on the image route, keep the base's vLLM.

docker/Dockerfile runs this before the build step (j0.image.build_step), as
`python3 -P -m j0.image.engine_step ...`, on the base image's own python3. Standard library only;
it never imports vLLM. On the wheel route it refuses, with a message naming each:

1. an index that cannot give the wheel (unreachable, no page, no wheel for this platform): one
   message with the three routes (another index, the nightly image, the release);
2. a wheel whose sha256 is not VLLM_WHEEL_SHA256 (when pinned), or not the index's own #sha256;
3. a wheel whose vllm/_version.py is not VLLM_COMMIT (the release's wheel, 4ba787ec9, for one);
4. a wheel whose Requires-Dist the image's installed distributions do not satisfy (each unmet
   requirement listed): the wheel goes in with --no-deps, on the base's torch and CUDA stack;
5. after `pip install --no-deps`, an installed vllm/_version.py that is not VLLM_COMMIT.

It writes what it did (route, index, wheel name and sha256, engine commit) as JSON to --record,
which the build step copies into /opt/j0/manifest.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from j0.atomic import write_text_atomic
from j0.engine import urls
from j0.engine.base_sources import installed_vllm_dir
from j0.engine.vllm_version import VERSION_RELPATH, VllmVersion, parse_version_file, read_version
from j0.errors import J0Error
from j0.image import wheel_index
from j0.image.requirements import installed_distributions, unmet_requirements
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
class EngineRecord:
    """What the step did, for the manifest (keys as written into it)."""

    route: str
    wheel_index: str = ""
    wheel_name: str = ""
    wheel_url: str = ""
    wheel_sha256: str = ""
    wheel_sha256_pinned: str = ""
    engine_version: str = ""
    engine_commit: str = ""
    installer: str = ""
    requires_dist_checked: int = 0


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


def check_requirements(facts: WheelFacts, installed: Mapping[str, str]) -> None:
    """Refuse a wheel whose requirements the image does not meet, listing each."""
    unmet = unmet_requirements(facts.requires_dist, installed, skip=[wheel_index.PROJECT])
    if unmet:
        listed = "\n  ".join(unmet)
        raise J0Error(
            f"{facts.path.name}: {len(unmet)} of its Requires-Dist not satisfied by the base "
            f"image's Python ({sys.executable}); it would be installed with --no-deps on that "
            f"stack, so the build stops:\n  {listed}\nBuild on a base whose packages meet them "
            "(VLLM_IMAGE), or use another route (VLLM_ENGINE=image)",
            exit_code=1,
        )


def fetch(
    pins: Pins, index: str, name: str, folder: Path
) -> tuple[wheel_index.WheelLink, Path, str]:
    """The chosen wheel, downloaded; an index that cannot give it ends in `choices`."""
    try:
        links = wheel_index.list_wheels(index)
        link = wheel_index.choose(links, name, wheel_index.project_url(index))
        path, digest = wheel_index.download(link, folder)
    except wheel_index.WheelIndexError as exc:
        raise J0Error(wheel_index.choices(pins, index, str(exc)), exc.exit_code) from None
    return link, path, digest


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


def install_wheel(path: Path) -> str:
    """`pip install --no-deps` the wheel over the base's vllm; return the installer's name."""
    installer, command = pip_command()
    env = dict(os.environ, PIP_BREAK_SYSTEM_PACKAGES="1", PIP_ROOT_USER_ACTION="ignore")
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    done = subprocess.run([*command, str(path)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise J0Error(
            f"`{' '.join(command)} {path.name}` exited {done.returncode}:\n"
            f"{(done.stdout + done.stderr).strip()}",
            exit_code=1,
        )
    importlib.invalidate_caches()
    return installer


def wheel_route(pins: Pins, index: str, name: str, sha256: str, folder: Path) -> EngineRecord:
    link, path, digest = fetch(pins, index, name, folder)
    facts = read_wheel(path, digest)
    check_sha256(facts, sha256, link.sha256, urls.redact(index))
    check_commit(facts.engine, pins, f"the wheel {path.name}")
    check_requirements(facts, installed_distributions())
    installer = install_wheel(path)
    path.unlink(missing_ok=True)
    installed = read_version(installed_vllm_dir())
    check_commit(installed, pins, f"after `{installer} install {path.name}`")
    return EngineRecord(
        route="wheel",
        wheel_index=urls.redact(index),
        wheel_name=path.name,
        wheel_url=urls.redact(link.url),
        wheel_sha256=digest,
        wheel_sha256_pinned=sha256,
        engine_version=installed.version,
        engine_commit=installed.commit,
        installer=installer,
        requires_dist_checked=len(facts.requires_dist),
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
        return EngineRecord("image", engine_version=engine.version, engine_commit=engine.commit)
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
    write_text_atomic(args.record, json.dumps(asdict(record), indent=2) + "\n")
    if record.route == "wheel":
        print(f"{PROG}: installed {record.wheel_name} sha256={record.wheel_sha256}")
        print(f"{PROG}: from {record.wheel_url} with {record.installer} --no-deps")
        print(
            f"{PROG}: engine vLLM {record.engine_version} commit {record.engine_commit} "
            f"(VLLM_COMMIT); {record.requires_dist_checked} Requires-Dist met by the base"
        )
        if not record.wheel_sha256_pinned:
            print(
                f"{PROG}: note: VLLM_WHEEL_SHA256 is not pinned yet; to pin this wheel, set "
                f"VLLM_WHEEL_NAME={record.wheel_name} and VLLM_WHEEL_SHA256={record.wheel_sha256} "
                "in overlay/pins.env"
            )
    else:
        print(f"{PROG}: route image: the base image's own vLLM, commit {record.engine_commit}")
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main())
