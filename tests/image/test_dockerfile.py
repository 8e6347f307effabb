"""docker/Dockerfile without Docker: its ARG defaults against the pins, the legacy builder's
syntax, the build context docker-py sends, and the engine step's early COPY (the files copied
before the rest of j0, so that the installed wheel stays in Docker's cache) holding every module
the step imports."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def arg_defaults(text: str) -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S*)$", text, re.MULTILINE))


def test_dockerfile_arg_defaults_equal_the_pins(pins: Pins) -> None:
    """An ARG default cannot read overlay/pins.env, so this test keeps the two in step."""
    from j0.image.build_step import PIN_LABELS
    from j0.pins import parse_pins

    text = DOCKERFILE.read_text()
    defaults = arg_defaults(text)
    values = parse_pins(pins.pins_path.read_text(), "pins.env")
    # The base image ARG's default is the default route's base: the wheel route builds FROM
    # the release (VLLM_IMAGE_FALLBACK), whose vllm package the engine step replaces.
    # Both empty by default: FROM takes the release, the engine step the route (wheel, or image
    # when VLLM_IMAGE alone is given); compose and `j0 image build` pass both.
    assert defaults["VLLM_ENGINE"] == defaults["VLLM_IMAGE"] == ""
    assert values["VLLM_ENGINE"] == "wheel"
    release = "${VLLM_IMAGE:-" + pins.vllm_image_fallback + "}"
    assert f"\nFROM {release}\n" in text
    assert text.count(release) == 3  # FROM, the base.name label, the build step's --base-image
    assert defaults["ALLOW_BASE_DRIFT"] == "0"
    assert defaults["WHEEL_INDEX"] == ""  # empty: the pins' VLLM_WHEEL_INDEX
    repeated = {key for key in defaults if key in values}
    wheel_pins = {"VLLM_WHEEL_NAME", "VLLM_WHEEL_SHA256"}
    assert repeated == {"VLLM_IMAGE", "VLLM_ENGINE", *PIN_LABELS, *wheel_pins}
    for key in repeated - {"VLLM_IMAGE", "VLLM_ENGINE"}:
        assert defaults[key] == values[key], key
    for key in ("VLLM_ENGINE", "WHEEL_INDEX", "VLLM_WHEEL_NAME", "VLLM_WHEEL_SHA256"):
        assert f'"${{{key}}}"' in text.split("LABEL", 1)[1], key  # a label, and the step's
    for key, label in PIN_LABELS.items():
        assert f'{label}="${{{key}}}"' in text
        assert f'--expect-pin "{key}=${{{key}}}"' in text


def test_dockerfile_base_is_an_arg_before_from_and_legacy_builder_syntax() -> None:
    text = DOCKERFILE.read_text()
    instructions = [x for x in text.splitlines() if x and not x.startswith((" ", "#"))]
    assert instructions[0].startswith("ARG VLLM_IMAGE=")
    assert instructions[1].startswith("ARG VLLM_ENGINE=")
    assert instructions[2].startswith("FROM ${VLLM_IMAGE:-")
    assert not re.search(r"^#\s*syntax\s*=", text, re.MULTILINE | re.IGNORECASE)
    # What docker-py's legacy builder cannot do (comments aside).
    code = "\n".join(x for x in text.splitlines() if not x.lstrip().startswith("#"))
    assert "--mount" not in code and "--chmod" not in code and "<<" not in code
    for key in ("base.name", "base.digest", "revision", "source", "title"):
        assert f"org.opencontainers.image.{key}=" in text


def test_build_context_holds_only_what_the_image_needs() -> None:
    """The context that docker-py sends, computed by docker-py itself from .dockerignore."""
    from docker.utils.build import exclude_paths

    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    files = {
        p for p in exclude_paths(str(ROOT), patterns, "docker/Dockerfile") if (ROOT / p).is_file()
    }
    package = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "scripts" / "j0").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert files == {
        ".dockerignore",  # always sent, like the Dockerfile
        "docker/Dockerfile",
        "docker/entrypoint.sh",
        "docker/j0",
        "overlay/pins.env",
        "overlay/jetspec-j0.patch",
        "overlay/jetspec-j0-prefix-safe.patch",
        "drafter-config/causal.merge-patch.json",
        *package,
        # docker/plugin.Dockerfile's (the plugin route: j0 pip-installed from its own files)
        "docker/plugin-entrypoint.sh",
        "pyproject.toml",
        "setup.py",
        "MANIFEST.in",
        "README.md",
        *(
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / "overlay" / "vllm-0.34.0").iterdir()
            if p.is_file()
        ),
    }


def test_every_file_the_dockerfile_copies_is_in_the_build_context() -> None:
    """A COPY of a file that .dockerignore leaves out fails only in a real build (the prefix-safe
    patch did, in CI): each source of each COPY line (not --from) must be sent."""
    from docker.utils.build import exclude_paths

    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    sent = set(exclude_paths(str(ROOT), patterns, "docker/Dockerfile"))
    missing = []
    for line in re.findall(r"^COPY (.+)$", DOCKERFILE.read_text(), re.MULTILINE):
        words = [w for w in shlex.split(line) if not w.startswith("--")]
        if "--from" in line:
            continue
        for source in words[:-1]:
            path = ROOT / source
            files = (
                [source]
                if path.is_file()
                else [
                    f.relative_to(ROOT).as_posix()
                    for f in path.rglob("*")
                    if f.is_file() and "__pycache__" not in f.parts
                ]
            )
            missing += [f for f in files if f not in sent] or ([] if files else [source])
    assert missing == []


def test_the_engine_steps_early_copy_holds_everything_it_imports(tmp_path: Path) -> None:
    """Copy only what the COPY lines before the engine step's RUN name, then import the step
    with `python3 -I -S` from there: a module it needs but the Dockerfile does not copy fails."""
    import shutil

    text = DOCKERFILE.read_text()
    early = text[: text.index("python3 -P -m j0.image.engine_step")]
    copies = re.findall(r"^COPY (.+)$", early, re.MULTILINE)
    assert copies, "no COPY before the engine step"
    for line in copies:
        *sources, dest = shlex.split(line)
        for source in sources:
            target = tmp_path / dest.lstrip("/") / Path(source).name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / source, target)
    scripts = tmp_path / "opt" / "j0" / "scripts"
    code = "import sys; sys.path[:0] = [sys.argv[1]]; import j0.image.engine_step"
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(scripts)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
