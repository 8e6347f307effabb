"""`j0 image smoke`: checks of a built image, each in a fresh container (no network, no GPU).

docker-py is imported inside the functions (it is optional, and absent inside the image).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.article.identity import ARTICLE
from j0.article.server_setting import ARTICLE_MAX_NUM_SEQS
from j0.article.variants import variant_sha256s
from j0.checks import FAIL, OK, SKIP, WARN, Check
from j0.engine.server.speculator_identity import engine_words
from j0.engine.source import vllm_version
from j0.engine.source.vllm_version import VllmVersion
from j0.errors import UNAVAILABLE, J0Error, parse_json, require
from j0.image.build import CPU_ENV, ENTRYPOINT, MANIFEST, docker_client
from j0.image.build_step import PIN_LABELS
from j0.image.manifest import ImageManifest
from j0.pins import Pins, load_pins
from j0.terminal import sink

PASSED, FAILED, SKIPPED, WARNED = OK, FAIL, SKIP, WARN
# How the smoke test prints each status.
LABELS = {OK: "ok", FAIL: "FAILED", SKIP: "skipped", WARN: "warning"}

FIND_SPECULATOR = """\
import hashlib, importlib.util, json, pathlib
spec = importlib.util.find_spec("vllm")
root = pathlib.Path(list(spec.submodule_search_locations)[0]).parent
path = root / {relpath!r}
print(json.dumps({{"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}}))
"""

IMPORT_MODULE = """\
import hashlib, importlib, json, pathlib
module = importlib.import_module({module!r})
path = pathlib.Path(module.__file__)
print(json.dumps({{"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                  "has_j0_kernel": hasattr(module, "_ctx_pool_write_kernel")}}))
"""

FAKE_VLLM = (
    "set -eu; mkdir -p /tmp/j0-smoke-bin; "
    "printf '#!/bin/sh\\necho \"fake vllm: $*\"\\n' > /tmp/j0-smoke-bin/vllm; "
    "chmod +x /tmp/j0-smoke-bin/vllm; "
    'PATH="/tmp/j0-smoke-bin:$PATH" exec "$0" "$@"'
)


@dataclass
class RunResult:
    exit_code: int
    output: str


class Runner:
    """Runs one command in a fresh container of the image: no network, no GPU, removed after."""

    def __init__(self, client: Any, image: str, timeout: float) -> None:
        self.client = client
        self.image = image
        self.timeout = timeout

    def __call__(
        self, command: list[str], entrypoint: list[str], env: dict[str, str] | None = None
    ) -> RunResult:
        import requests.exceptions

        container = self.client.containers.create(
            self.image,
            command,
            entrypoint=entrypoint,
            environment={**CPU_ENV, **(env or {})},
            network_mode="none",
        )
        try:
            container.start()
            try:
                status = container.wait(timeout=self.timeout)
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                container.kill()
                output = container.logs().decode("utf-8", "replace")
                return RunResult(124, f"{output}\n(timed out after {self.timeout:.0f} s)")
            output = container.logs().decode("utf-8", "replace")
            return RunResult(int(status["StatusCode"]), output)
        finally:
            container.remove(force=True)


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _json_line(output: str) -> dict[str, Any]:
    for line in reversed(output.strip().splitlines()):
        if line.startswith("{"):
            value: dict[str, Any] = parse_json(line, "the image's answer")
            return value
    raise ValueError("no JSON line in the output")


@dataclass(frozen=True)
class Expected:
    """The speculator.py the image should hold: the article's file, or the variant its j0.variant
    label names (J0_VARIANT; the manifest must agree)."""

    variant: str
    identity: str
    sha256: str
    words: str


def expected_for(labels: dict[str, str], pins: Pins) -> Expected:
    variant = labels.get("j0.variant") or ARTICLE
    sha = variant_sha256s(pins).get(variant)
    if sha is None:
        raise J0Error(f"the image's label j0.variant={variant!r} is no variant of {pins.pins_path}")
    words = "the article's file" if variant == ARTICLE else f"the {variant} variant"
    return Expected(variant, variant, sha, words)


def check_file(
    run: Runner, pins: Pins, found: dict[str, str], want: Expected | None = None
) -> Check:
    want = want or expected_for({}, pins)
    result = run(["-c", FIND_SPECULATOR.format(relpath=pins.speculator_relpath)], ["python3"])
    if result.exit_code != 0:
        return Check(
            "file", FAILED, f"python3 could not find vLLM's speculator.py:\n{_tail(result.output)}"
        )
    info = _json_line(result.output)
    found.update(info)
    if info["sha256"] != want.sha256:
        return Check(
            "file",
            FAILED,
            f"{info['path']}: sha256 {info['sha256']}, expected {want.words} {want.sha256}",
        )
    return Check("file", PASSED, f"{info['path']} is {want.words} ({info['sha256'][:12]}…)")


def check_manifest(
    run: Runner,
    pins: Pins,
    found: dict[str, str],
    labels: dict[str, str],
    want: Expected | None = None,
) -> Check:
    want = want or expected_for({}, pins)
    result = run([MANIFEST], ["cat"])
    if result.exit_code != 0:
        return Check("manifest", FAILED, f"cannot read {MANIFEST}:\n{_tail(result.output)}")
    try:
        manifest = ImageManifest.from_json(parse_json(result.output, MANIFEST), MANIFEST)
    except J0Error as exc:
        return Check("manifest", FAILED, str(exc))
    expected: dict[str, object] = {
        "identity": want.identity,
        "speculator_sha256": want.sha256,
        "base_sha256": pins.base_sha256,
        "vllm_commit_pinned": pins.vllm_commit,
        "patch_sha256": pins.patch_sha256,
        "drafter_repo": pins.drafter_repo,
        "drafter_revision": pins.drafter_revision,
        "j0_seed": pins.j0_seed,
    }
    if "path" in found:
        expected["speculator_path"] = found["path"]
    wrong = [
        f"{key}={getattr(manifest, key)!r} (expected {value!r})"
        for key, value in expected.items()
        if getattr(manifest, key) != value
    ]
    label_expect = {
        "org.opencontainers.image.base.name": manifest.base_image,
        "j0.manifest": MANIFEST,
        **{label: pins.values[key] for key, label in PIN_LABELS.items()},
    }
    wrong += [
        f"label {key}={labels.get(key)!r} (expected {value!r})"
        for key, value in label_expect.items()
        if labels.get(key) != value
    ]
    if wrong:
        return Check("manifest", FAILED, f"{MANIFEST} or labels disagree: " + "; ".join(wrong))
    return Check(
        "manifest",
        PASSED,
        f"{MANIFEST}: base {manifest.base_image}, built {manifest.built_at}",
    )


def check_engine(run: Runner, pins: Pins, labels: dict[str, str]) -> Check:
    """The image's vLLM (its vllm/_version.py, read as text in a container) against the manifest
    and the j0.vllm.* labels (which must agree), and against VLLM_COMMIT (a warning if not)."""
    source = Path(vllm_version.__file__).read_text(encoding="utf-8")
    result = run(["-c", source], ["python3"])
    manifest_run = run([MANIFEST], ["cat"])
    try:
        info = _json_line(result.output)
        engine = VllmVersion(str(info["path"]), str(info["version"]), str(info["commit"]))
        manifest = ImageManifest.from_json(parse_json(manifest_run.output, MANIFEST), MANIFEST)
    except (ValueError, KeyError, J0Error) as exc:
        return Check(
            "engine",
            FAILED,
            f"cannot read the image's vllm/_version.py or {MANIFEST} ({exc}):\n"
            f"{_tail(result.output + manifest_run.output)}",
        )
    wrong = [
        f"{MANIFEST} {key}={getattr(manifest, key)!r}"
        for key, value in (("vllm_version", engine.version), ("vllm_commit", engine.commit))
        if getattr(manifest, key) != value
    ]
    # The commit label may be the full commit (the wheel route's VLLM_COMMIT) where the file has
    # the abbreviated one: a prefix agrees.
    version_label, commit_label = labels.get("j0.vllm.version"), labels.get("j0.vllm.commit")
    if version_label and version_label != engine.version:
        wrong.append(f"label j0.vllm.version={version_label!r}")
    if commit_label and not engine.matches(commit_label):
        wrong.append(f"label j0.vllm.commit={commit_label!r}")
    if wrong:
        return Check(
            "engine",
            FAILED,
            f"{engine.path} says {engine.describe()}, but " + "; ".join(wrong),
        )
    detail = engine_words(engine, pins)
    if not labels.get("j0.vllm.commit"):
        detail += " (labels j0.vllm.* empty: a plain docker build; the manifest has it)"
    if not engine.matches(pins.vllm_commit):
        return Check("engine", WARNED, f"{detail}: the rest of the engine is not the article's")
    return Check("engine", PASSED, detail)


def check_entrypoint(
    run: Runner, pins: Pins, config_entrypoint: list[str] | None, want: Expected | None = None
) -> Check:
    want = want or expected_for({}, pins)
    if config_entrypoint != [ENTRYPOINT]:
        return Check(
            "entrypoint",
            FAILED,
            f"the image's entrypoint is {config_entrypoint}, not [{ENTRYPOINT}]",
        )
    args = ["--model", "j0-smoke", "--max-num-seqs", str(ARTICLE_MAX_NUM_SEQS)]
    result = run([ENTRYPOINT, *args], ["/bin/sh", "-c", FAKE_VLLM])
    want_identity = f"sha256={want.sha256} identity={want.identity}"
    want_exec = "fake vllm: serve " + " ".join(args)
    lines = result.output.splitlines()
    identity_lines = [x for x in lines if x.startswith("j0-entrypoint: ")]
    if result.exit_code != 0 or not any(want_identity in x for x in identity_lines):
        return Check(
            "entrypoint",
            FAILED,
            f"expected a 'j0-entrypoint: ... {want_identity}' line (exit {result.exit_code}):\n"
            f"{_tail(result.output)}",
        )
    if want_exec not in lines:
        return Check(
            "entrypoint",
            FAILED,
            f"the entrypoint did not run `vllm serve {' '.join(args)}`:\n{_tail(result.output)}",
        )
    return Check("entrypoint", PASSED, identity_lines[0])


def check_import(
    run: Runner, pins: Pins, found: dict[str, str], want: Expected | None = None
) -> Check:
    want = want or expected_for({}, pins)
    started = time.monotonic()
    result = run(["-c", IMPORT_MODULE.format(module=pins.speculator_module)], ["python3"])
    took = time.monotonic() - started
    if result.exit_code != 0:
        return Check(
            "import",
            FAILED,
            f"import {pins.speculator_module} failed on the CPU (exit {result.exit_code}):\n"
            f"{_tail(result.output)}",
        )
    info = _json_line(result.output)
    if info["sha256"] != want.sha256 or not info["has_j0_kernel"]:
        return Check(
            "import", FAILED, f"the imported module is {info['path']} (sha256 {info['sha256']})"
        )
    if found.get("path") and info["path"] != found["path"]:
        return Check(
            "import", FAILED, f"imported {info['path']}, but the installed file is {found['path']}"
        )
    return Check("import", PASSED, f"{pins.speculator_module} imported on the CPU in {took:.0f} s")


def check_selfcheck(run: Runner) -> Check:
    probe = run(["selfcheck", "--help"], ["j0"])
    if probe.exit_code != 0 or "--device" not in probe.output:
        return Check("selfcheck", SKIPPED, "selfcheck not available in this image's j0")
    started = time.monotonic()
    result = run(["selfcheck", "--device", "cpu"], ["j0"])
    took = time.monotonic() - started
    if result.exit_code != 0:
        return Check(
            "selfcheck",
            FAILED,
            f"j0 selfcheck --device cpu exited {result.exit_code}:\n{_tail(result.output)}",
        )
    last = result.output.strip().splitlines()[-1] if result.output.strip() else ""
    return Check("selfcheck", PASSED, f"passed in {took:.0f} s: {last}")


@dataclass(frozen=True)
class Smoked:
    """What `j0 image smoke` found: each check of `image`, in the order they ran, and which
    speculator.py the image's labels say it runs (in words)."""

    image: str
    speculator: str
    checks: tuple[Check, ...]

    def named(self, status: str) -> list[str]:
        """The names of the checks that ended with `status`."""
        return [c.name for c in self.checks if c.status == status]

    @property
    def passed(self) -> bool:
        return not self.named(FAILED)

    def to_json(self) -> dict[str, Any]:
        """The --json object: {"image", "speculator", "passed", "checks"}."""
        return {
            "image": self.image,
            "speculator": self.speculator,
            "passed": self.passed,
            "checks": [check.to_json() for check in self.checks],
        }

    def last_line(self) -> str:
        """The run's last line where every check passed (skips and warnings named)."""
        notes = [f"{', '.join(skipped)} skipped"] if (skipped := self.named(SKIPPED)) else []
        notes += [f"warning: {', '.join(warned)}"] if (warned := self.named(WARNED)) else []
        note = f" ({'; '.join(notes)})" if notes else ""
        return f"==> {self.image}: all smoke checks passed{note}"


def smoke(image: str, timeout: float = 600.0) -> Smoked:
    """Run the smoke checks on `image`, printing one line per check as it ends."""
    require("docker", "j0 image smoke")
    from docker.errors import ImageNotFound

    pins = load_pins()
    client = docker_client(purpose="j0 image smoke")
    try:
        attrs = client.images.get(image).attrs
    except ImageNotFound:
        raise J0Error(
            f"image {image} is not present here (build it with `j0 image build`; it is never "
            "pulled)",
            UNAVAILABLE,
        ) from None
    config = attrs.get("Config") or {}
    labels = config.get("Labels") or {}
    run = Runner(client, image, timeout)
    found: dict[str, str] = {}
    want = expected_for(labels, pins)
    steps: list[Callable[[], Check]] = [
        lambda: check_file(run, pins, found, want),
        lambda: check_manifest(run, pins, found, labels, want),
        lambda: check_engine(run, pins, labels),
        lambda: check_entrypoint(run, pins, config.get("Entrypoint"), want),
        lambda: check_import(run, pins, found, want),
        lambda: check_selfcheck(run),
    ]
    sink.say(f"==> smoke checks of {image} (network: none, no GPU; speculator.py: {want.words})")
    checks = []
    for step in steps:
        check = step()
        checks.append(check)
        detail = check.detail.replace("\n", "\n    ")
        sink.say(f"{check.name:<11} {LABELS[check.status]}: {detail}", flush=True)
    return Smoked(image, want.words, tuple(checks))
