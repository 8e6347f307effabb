"""`j0 image build` and `j0 image smoke`: the article's image, built and checked with docker-py.

docker-py is imported inside the functions (it is optional, and absent inside the image).
The build uses Docker's legacy builder through docker-py, which docker/Dockerfile is written for.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.errors import J0Error
from j0.identity import ARTICLE
from j0.image_build_step import PIN_LABELS
from j0.pins import Pins, load_pins

DOCKERFILE = "docker/Dockerfile"
MANIFEST = "/opt/j0/manifest.json"
ENTRYPOINT = "/usr/local/bin/j0-entrypoint"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the legacy builder colours a step's stderr
# Environment of every smoke container: no GPU is visible, and Triton runs its interpreter.
CPU_ENV = {"CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1"}


def default_tag(pins: Pins) -> str:
    return f"j0/vllm-openai:{pins.vllm_commit[:8]}-j0"


def _client(timeout: int = 3600) -> Any:
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except DockerException as exc:
        raise J0Error(
            f"no Docker engine answers ({exc}); start dockerd or set DOCKER_HOST"
        ) from exc
    return client


def _git(root: Path, *args: str) -> str:
    try:
        result = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def _revision(root: Path) -> str:
    head = _git(root, "rev-parse", "HEAD")
    if head and _git(root, "status", "--porcelain", "--untracked-files=no"):
        head += "-dirty"
    return head


def _ensure_base(client: Any, base: str, pull: bool, fallback: str) -> Any:
    from docker.errors import APIError, ImageNotFound

    try:
        return client.images.get(base)
    except ImageNotFound:
        if not pull:
            raise J0Error(f"base image {base} is not present and --no-pull was given") from None
    print(f"==> pulling {base}", flush=True)
    try:
        seen: dict[str, str] = {}  # layer id -> its last status: one line per change, not per chunk
        for event in client.api.pull(base, stream=True, decode=True):
            layer, status = str(event.get("id", "")), str(event.get("status", ""))
            if status and seen.get(layer) != status:
                seen[layer] = status
                print(f"    {layer + ': ' if layer else ''}{status}", flush=True)
            if "error" in event:
                raise J0Error(f"pulling {base}: {event['error']}")
        return client.images.get(base)
    except (APIError, ImageNotFound) as exc:
        raise J0Error(
            f"cannot pull the base image {base}: {exc}. Per-commit nightly tags are deleted after "
            f"a while: try --base {fallback} (VLLM_IMAGE_FALLBACK in overlay/pins.env, "
            "byte-identical speculator.py) or a repo:tag@sha256:... digest you have"
        ) from exc


def _repo_digest(image: Any, base: str) -> str:
    digests = image.attrs.get("RepoDigests") or []
    if "@sha256:" in base:
        return base.split("@", 1)[1]
    repo = base.rsplit(":", 1)[0] if ":" in base.rsplit("/", 1)[-1] else base
    for digest in digests:
        if digest.split("@", 1)[0] == repo:
            return str(digest.split("@", 1)[1])
    return ""


def build_args(pins: Pins, base: str, digest: str, allow_base_drift: bool) -> dict[str, str]:
    return {
        "VLLM_IMAGE": base,
        "VLLM_IMAGE_DIGEST": digest,
        "ALLOW_BASE_DRIFT": "1" if allow_base_drift else "0",
        **{key: pins.values[key] for key in PIN_LABELS},
        "J0_REVISION": _revision(pins.root),
        "J0_SOURCE": _git(pins.root, "remote", "get-url", "origin"),
        "BUILD_DATE": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _stream_build(events: Iterable[dict[str, Any]], echo: Callable[[str], None]) -> str | None:
    """Print the build's output as it comes; return the image id, raise on a build error."""
    image_id = None
    step_errors: list[str] = []  # the build step's own error message, repeated in the J0Error
    for event in events:
        if "stream" in event:
            echo(str(event["stream"]))
            text = _ANSI.sub("", str(event["stream"]))
            if text.startswith("Removing intermediate container"):
                continue
            if step_errors or "j0 image build step: error:" in text:
                step_errors.append(text)
        elif "status" in event:
            echo(f"{event['status']}\n")
        if "aux" in event and "ID" in event["aux"]:
            image_id = str(event["aux"]["ID"])
        if "error" in event:
            because = "".join(step_errors).strip()
            raise J0Error(
                f"docker build of {DOCKERFILE} failed: {event['error'].strip()}"
                + (f"\n{because}" if because else "")
            )
    return image_id


def build(
    base: str | None = None,
    tag: str | None = None,
    allow_base_drift: bool = False,
    pull: bool = True,
    echo: Callable[[str], None] | None = None,
) -> str:
    """Build docker/Dockerfile on `base`; return the image id. Progress goes to `echo`."""
    from docker.errors import APIError

    pins = load_pins()
    base = base or pins.vllm_image
    tag = tag or default_tag(pins)
    write = echo or (lambda text: print(text, end="", flush=True))
    client = _client()
    base_image = _ensure_base(client, base, pull, pins.vllm_image_fallback)
    args = build_args(pins, base, _repo_digest(base_image, base), allow_base_drift)
    write(f"==> building {DOCKERFILE} on {base} as {tag} (network: none)\n")
    started = time.monotonic()
    try:
        events = client.api.build(
            path=str(pins.root),
            dockerfile=DOCKERFILE,
            tag=tag,
            buildargs=args,
            network_mode="none",
            pull=False,
            rm=True,
            forcerm=True,
            decode=True,
        )
        image_id = _stream_build(events, write)
    except APIError as exc:
        raise J0Error(f"docker build of {DOCKERFILE} on {base}: {exc}") from exc
    image = client.images.get(tag)
    size_mb = image.attrs.get("Size", 0) / 1e6
    write(
        f"==> built {tag} ({image_id or image.id}, {size_mb:.0f} MB) in "
        f"{time.monotonic() - started:.0f} s\n"
    )
    return str(image.id)


# --- smoke -----------------------------------------------------------------------------------

PASSED, FAILED, SKIPPED = "ok", "FAILED", "skipped"

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
class Check:
    name: str
    status: str
    detail: str


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
            value: dict[str, Any] = json.loads(line)
            return value
    raise ValueError("no JSON line in the output")


def check_file(run: Runner, pins: Pins, found: dict[str, str]) -> Check:
    result = run(["-c", FIND_SPECULATOR.format(relpath=pins.speculator_relpath)], ["python3"])
    if result.exit_code != 0:
        return Check(
            "file", FAILED, f"python3 could not find vLLM's speculator.py:\n{_tail(result.output)}"
        )
    info = _json_line(result.output)
    found.update(info)
    if info["sha256"] != pins.patched_sha256:
        return Check(
            "file",
            FAILED,
            f"{info['path']}: sha256 {info['sha256']}, expected the article's "
            f"{pins.patched_sha256} (PATCHED_SHA256)",
        )
    return Check("file", PASSED, f"{info['path']} is the article's file ({info['sha256'][:12]}…)")


def check_manifest(run: Runner, pins: Pins, found: dict[str, str], labels: dict[str, str]) -> Check:
    result = run([MANIFEST], ["cat"])
    if result.exit_code != 0:
        return Check("manifest", FAILED, f"cannot read {MANIFEST}:\n{_tail(result.output)}")
    try:
        manifest = json.loads(result.output)
    except json.JSONDecodeError as exc:
        return Check("manifest", FAILED, f"{MANIFEST} is not JSON: {exc}")
    expected: dict[str, object] = {
        "identity": ARTICLE,
        "speculator_sha256": pins.patched_sha256,
        "base_sha256": pins.base_sha256,
        "vllm_commit": pins.vllm_commit,
        "patch_sha256": pins.patch_sha256,
        "drafter_repo": pins.drafter_repo,
        "drafter_revision": pins.drafter_revision,
        "j0_seed": pins.j0_seed,
    }
    if "path" in found:
        expected["speculator_path"] = found["path"]
    wrong = [
        f"{key}={manifest.get(key)!r} (expected {value!r})"
        for key, value in expected.items()
        if manifest.get(key) != value
    ]
    label_expect = {
        "org.opencontainers.image.base.name": manifest.get("base_image"),
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
        f"{MANIFEST}: base {manifest['base_image']}, built {manifest['built_at']}",
    )


def check_entrypoint(run: Runner, pins: Pins, config_entrypoint: list[str] | None) -> Check:
    if config_entrypoint != [ENTRYPOINT]:
        return Check(
            "entrypoint",
            FAILED,
            f"the image's entrypoint is {config_entrypoint}, not [{ENTRYPOINT}]",
        )
    args = ["--model", "j0-smoke", "--max-num-seqs", "4"]
    result = run([ENTRYPOINT, *args], ["/bin/sh", "-c", FAKE_VLLM])
    want_identity = f"sha256={pins.patched_sha256} identity={ARTICLE}"
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


def check_import(run: Runner, pins: Pins, found: dict[str, str]) -> Check:
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
    if info["sha256"] != pins.patched_sha256 or not info["has_j0_kernel"]:
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


def smoke(image: str, timeout: float = 600.0) -> int:
    """Run the smoke checks on `image`; print one line per check; 0 if none failed."""
    from docker.errors import ImageNotFound

    pins = load_pins()
    client = _client()
    try:
        attrs = client.images.get(image).attrs
    except ImageNotFound:
        raise J0Error(f"image {image} is not present (build it with `j0 image build`)", 2) from None
    config = attrs.get("Config") or {}
    labels = config.get("Labels") or {}
    run = Runner(client, image, timeout)
    found: dict[str, str] = {}
    steps: list[Callable[[], Check]] = [
        lambda: check_file(run, pins, found),
        lambda: check_manifest(run, pins, found, labels),
        lambda: check_entrypoint(run, pins, config.get("Entrypoint")),
        lambda: check_import(run, pins, found),
        lambda: check_selfcheck(run),
    ]
    print(f"==> smoke checks of {image} (network: none, no GPU)", flush=True)
    checks = []
    for step in steps:
        check = step()
        checks.append(check)
        detail = check.detail.replace("\n", "\n    ")
        print(f"{check.name:<11} {check.status}: {detail}", flush=True)
    failed = [c.name for c in checks if c.status == FAILED]
    if failed:
        raise J0Error(f"smoke test of {image} failed: {', '.join(failed)}")
    skipped = [c.name for c in checks if c.status == SKIPPED]
    note = f" ({', '.join(skipped)} skipped)" if skipped else ""
    print(f"==> {image}: all smoke checks passed{note}", file=sys.stdout, flush=True)
    return 0
