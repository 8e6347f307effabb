"""`j0 selfcheck`'s work, apart from its parsing (cli.py): run_selfcheck(SelfcheckOptions) ->
Selfchecked. It checks what it can before the worker starts (the file, its J0 pieces, what the
worker imports), then runs the worker (worker.py, a process of its own, which prints each case as
it ends) and turns what it exits with into the command's exit code or error, beside the result
document the worker wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.errors import UNAVAILABLE, InputLimit, J0Error, read_json_file
from j0.pins import Pins, load_pins
from j0.selfcheck import kernels as selfcheck
from j0.terminal import sink


@dataclass(frozen=True)
class SelfcheckOptions:
    """The check as `j0 selfcheck`'s flags say it (cli.py): speculator None is the installed
    vLLM's file; quiet: nothing printed on stdout as it checks (--json alone puts the JSON in
    the place of the text)."""

    speculator: Path | None = None
    device: str = "auto"
    seed: int = 0
    cases: int = 24
    case: int | None = None
    bench: bool = False
    prefix_cache: bool = False
    audit: bool = False
    audit_out: Path | None = None
    quiet: bool = False
    vllm: str | None = None  # the vLLM release the file is for (None: as the file says)
    variant: str | None = None  # without speculator: this variant's built file


@dataclass(frozen=True)
class Selfchecked:
    """What the check ended with: its exit code (OK, DEVIATES, NO_J0 of j0.selfcheck.kernels, or
    UNAVAILABLE where the worker lacked a package) and the worker's result document (the --json
    object: a case's, or a list of them with --bench), None where the check did not get as far
    as writing one (no J0 in the file, a package missing)."""

    exit_code: int
    document: Any = None


# What the check's process imports. One command installs all of it, vLLM's import dependencies
# included: scripts/selfcheck-setup (pyproject's `selfcheck` extra, then vllm==VLLM_RELEASE with
# --no-deps: the module only, not its GPU dependencies).
NEEDED = ("numpy", "torch", "triton", "vllm")
SETUP_COMMAND = "scripts/selfcheck-setup"


def check_installed(python: str = sys.executable) -> None:
    """Refuse, before starting the check, a Python that lacks what the check imports: a raw
    ModuleNotFoundError and exit 1 would read as "J0 deviates"."""
    from j0.errors import available

    missing = [name for name in NEEDED if not available(name)]
    if missing:
        raise J0Error(
            f"j0 selfcheck imports {', '.join(NEEDED)} to run the kernels, and {python} lacks "
            f"{', '.join(missing)}: {SETUP_COMMAND} installs them (in the j0 checkout; "
            f"PYTHON={python} {SETUP_COMMAND} for this Python). Nothing was checked",
            UNAVAILABLE,
        )


def overlay_variant(path: Path, pins: Pins) -> str | None:
    """The variant whose file `j0 overlay build` writes at `path` without -o (the article's at
    overlay/vllm/.../speculator.py, the prefix-safe one at overlay/prefix-safe/...; a later
    release's under overlay/vllm-<release>/<variant>/...), or None."""
    found = overlay_place(path, pins)
    return found[0] if found else None


def overlay_place(path: Path, pins: Pins) -> tuple[str, str] | None:
    """(variant, release) of the file `j0 overlay build [--vllm R]` writes at `path`, or None."""
    from j0.article.releases import release_names
    from j0.article.variants import VARIANTS, default_output

    where = path.resolve()
    for release in release_names(pins):
        for variant in VARIANTS:
            if default_output(pins, variant, release).resolve() == where:
                return variant, release
    return None


def build_overlay(path: Path, pins: Pins) -> None:
    """Make the file `j0 overlay build [--vllm R] [--variant V]` makes at `path` (a fresh clone
    has none): from the installed vLLM's base where it is that release's pinned base, else from
    the release's vllm wheel (downloaded once, cached); the base's sha256, the patches' and the
    result's all checked against the pins, as that command does."""
    from j0.article.build import build_variant, write_overlay
    from j0.article.releases import release_of
    from j0.engine.source import base_sources

    variant, release = overlay_place(path, pins) or ("article", pins.vllm_release)
    pinned = release_of(pins, release)
    command = "j0 overlay build" + ("" if pinned.is_default else f" --vllm {release}")
    command += "" if variant == "article" else f" --variant {variant}"
    base = _installed_base(pins, pinned.base_sha256)
    source = f"the installed vLLM {release}"
    if base is None:
        source = f"the pinned vllm=={release} wheel"
    sink.say(
        f"j0 selfcheck: {path} is not built yet; building it as `{command}` does (from {source}, "
        "every sha256 checked)",
        flush=True,
    )
    if base is None:
        base = base_sources.from_wheel(pins, release=release)
    made = build_variant(base.data, base.origin, pins, variant, release=release)
    sink.say(f"j0 selfcheck: {write_overlay(made, path)}", flush=True)


def _installed_base(pins: Pins, base_sha256: str) -> Any:
    """The installed vLLM's speculator.py where it is the pinned base `base_sha256`, else None."""
    from j0.edge.atomic import sha256_bytes
    from j0.engine.source import base_sources

    try:
        base = base_sources.from_installed(pins)
    except J0Error:
        return None
    return base if sha256_bytes(base.data) == base_sha256 else None


def check_release(path: Path, pins: Pins, wanted: str | None) -> None:
    """The check runs FILE inside the vLLM this Python imports: refuse (69, nothing checked) where
    that vLLM is not the release FILE was made for (--vllm R, else the release of a pinned file;
    an unpinned file is taken as given), and (64) a --vllm that contradicts a pinned file."""
    from j0.article.identity import AUDIT, OTHER, identify
    from j0.engine.source.base_sources import installed_vllm_version

    identity = identify(path.read_bytes(), pins)
    pinned = identity.role != OTHER and (identity.role != AUDIT or bool(identity.audited))
    own = (identity.release or pins.vllm_release) if pinned else None
    if wanted is not None and own is not None and own != wanted:
        raise J0Error(
            f"--vllm {wanted}: {path} is identity={identity.kind}, a file of vLLM {own}; check it "
            f"with --vllm {own} (or leave --vllm out)",
            64,
        )
    release = wanted or own
    installed = installed_vllm_version()
    if release is None or installed is None or installed[0] == release:
        return
    raise J0Error(
        f"j0 selfcheck: {path} is for vLLM {release} (identity={identity.kind}), and this Python "
        f"imports vLLM {installed[0]} ({installed[1]}): the check imports the file as vLLM's own "
        f"module, beside the rest of that vLLM. Put vLLM {release}'s package first on PYTHONPATH "
        f"(`pip install --no-deps --target DIR vllm=={release}`, then PYTHONPATH=DIR). Nothing was "
        "checked",
        UNAVAILABLE,
    )


def _child_env(device: str) -> dict[str, str]:
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    if device == "cpu":
        env.update(selfcheck.INTERPRETER_ENV)
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def _run_worker(options: SelfcheckOptions, path: Path, device: str, json_out: Path | None) -> int:
    """The worker's exit code; it writes its JSON into json_out (where given) and prints as it
    checks, except where --json alone puts the JSON in the place of its text."""
    cmd = [
        sys.executable,
        "-m",
        "j0.selfcheck",
        "--speculator",
        str(path),
        "--device",
        device,
        "--seed",
        str(options.seed),
        "--cases",
        str(options.cases),
    ]
    if options.case is not None:
        cmd += ["--case", str(options.case)]
    if options.bench:
        cmd.append("--bench")
    if options.prefix_cache:
        cmd.append("--prefix-cache")
    if options.audit:
        cmd.append("--audit")
    if options.audit_out is not None:
        cmd += ["--audit-out", str(options.audit_out)]
    if json_out is not None:
        cmd += ["--json", str(json_out)]
    from j0.edge.processes import start_owned, wait_owned

    quiet = {"stdout": subprocess.DEVNULL} if options.quiet else {}
    return wait_owned(start_owned(cmd, env=_child_env(device), **quiet))


def _check_audit_args(options: SelfcheckOptions) -> None:
    if options.audit_out is not None and not options.audit:
        raise J0Error("--audit-out DIR keeps the records of --audit; add --audit", 64)
    if options.audit and (options.bench or options.case is not None):
        raise J0Error("--audit runs the audit over the battery; without --bench and --case", 64)
    out = options.audit_out
    if out is not None and (out.is_file() or (out.is_dir() and any(out.iterdir()))):
        raise J0Error(
            f"--audit-out {out}: {'a file' if out.is_file() else 'a folder that is not empty'}; "
            "expected a new or empty folder (records already there would be judged too)",
            64,
        )


def run_selfcheck(options: SelfcheckOptions) -> Selfchecked:
    pins = load_pins()
    if options.cases < 1:
        raise J0Error(f"--cases {options.cases}: expected a positive number", exit_code=64)
    if options.prefix_cache and options.case is not None:
        raise J0Error(
            f"--case {options.case} replays a case of the default battery; --prefix-cache runs its "
            "own sessions (all of them, from --seed)",
            exit_code=64,
        )
    _check_audit_args(options)
    path = _file_to_check(options, pins)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise J0Error(
            f"{path}: {what} (expected a DFlash speculator.py; `j0 overlay build` writes the "
            f"article's to {pins.default_overlay_path})",
            exit_code=2,
        )
    code, why = selfcheck.static_check(path)
    if code != selfcheck.OK:
        sink.warn(f"{'NO J0' if code == selfcheck.NO_J0 else 'FAIL'}: {why}")
        return Selfchecked(code)
    check_installed()
    check_release(path, pins, options.vllm)
    device = options.device
    if device == "auto":
        from j0.engine.server.local_needs import gpu_present

        device = "cuda" if gpu_present() else "cpu"
    what = f"case {options.case}" if options.case is not None else f"{options.cases} cases"
    if options.prefix_cache:
        what = "the prefix-cache batteries"
    if options.audit:
        what += ", the J0 audit"
    say(options, f"j0 selfcheck: {path} on {device}, seed {options.seed}, {what}")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="j0-selfcheck-") as folder:
        json_out = Path(folder) / "result.json"
        rc = _checked(options, path, device, json_out)
        document = read_json_file(json_out, limit=InputLimit.ANY) if json_out.is_file() else None
        return Selfchecked(rc, document)


def _file_to_check(options: SelfcheckOptions, pins: Pins) -> Path:
    """--speculator FILE (built first where it is a variant's default place and absent); else,
    with --vllm or --variant, the file `j0 overlay build` writes for them (built first where
    absent); else the installed vLLM's own speculator.py."""
    from j0.article.releases import release_of

    if options.vllm is not None:
        release_of(pins, options.vllm)  # a usage error for a release the pins do not hold
    if options.speculator is not None:
        if options.variant is not None:
            raise J0Error("--variant names a built file; it goes without --speculator", 64)
        path = options.speculator
    elif options.vllm is not None or options.variant is not None:
        from j0.article.variants import default_output

        path = default_output(pins, options.variant or "article", options.vllm)
    else:
        from j0.engine.source.base_sources import installed_speculator

        return installed_speculator(pins)
    if not path.exists() and overlay_place(path, pins) is not None:
        check_installed()  # before a download for a check that could not run here
        build_overlay(path, pins)
    return path


def say(options: SelfcheckOptions, line: str) -> None:
    """A line of the text, which --json alone replaces by the JSON."""
    if not options.quiet:
        sink.say(line, flush=True)


def _checked(options: SelfcheckOptions, path: Path, device: str, json_out: Path | None) -> int:
    """Run the worker (on the CPU again where --device auto found no usable CUDA device) and turn
    what it exits with into the command's exit code or error."""
    rc = _run_worker(options, path, device, json_out)
    if rc == selfcheck.NO_CUDA and options.device == "auto":
        say(options, "j0 selfcheck: no usable CUDA device; running on the CPU instead")
        rc = _run_worker(options, path, "cpu", json_out)
    if rc == selfcheck.NO_CUDA:
        raise J0Error(
            "--device cuda: torch sees no CUDA device here; nothing was checked (--device cpu "
            "runs the same check in Triton's interpreter)",
            UNAVAILABLE,
        )
    if rc < 0:
        raise J0Error(
            f"{path}: the check's process died of signal {-rc} while running the kernels "
            "(an out-of-bounds access?): J0 deviates or the file is broken",
            exit_code=1,
        )
    if rc == UNAVAILABLE:  # the worker said which package is missing; no verdict on the file
        return rc
    if rc not in (selfcheck.OK, selfcheck.DEVIATES, selfcheck.NO_J0):
        raise J0Error(f"{path}: the check's process exited with {rc}", exit_code=1)
    return rc
