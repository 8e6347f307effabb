"""The image's build step: put the article's speculator.py (or, with --variant prefix-safe, its
prefix-safe variant) into the base image's vLLM.

docker/Dockerfile runs this once, as `python3 -m j0.image.build_step ...`, on the base image's own
python3 (the one that has vLLM), with no network. Standard library only: it imports nothing that
a base image may lack, and it never imports vLLM. What it does:

1. finds vLLM's package directory with importlib.util.find_spec (no literal site-packages path);
2. checks the base speculator.py's sha256 against BASE_SHA256 (overlay/pins.env) and refuses a
   different file, naming the file, both hashes and `--build-arg ALLOW_BASE_DRIFT=1`;
3. patches it with j0.article.build_variant, the code path of `j0 overlay build`, which checks
   the result against PATCHED_SHA256 (and, for the prefix-safe variant, applies its patch on top
   and checks PREFIX_SAFE_SHA256);
4. replaces the file atomically (same mode), drops its stale __pycache__ entries and compiles a
   fresh, hash-checked one;
5. writes the manifest (MANIFEST_PATH) and checks, by re-reading, what it installed. The manifest
   records the base's vLLM version and commit, read from `vllm/_version.py` as text
   (j0.engine.source.vllm_version), and a warning (not an error) says when that commit is not
   VLLM_COMMIT: the v0.33.0 release, for one, holds the pinned speculator.py but is commit
   4ba787ec9.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import py_compile
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from j0 import __version__
from j0.article.build import build_variant
from j0.article.identity import identify
from j0.article.patching import available_tool
from j0.article.variants import (
    ARTICLE_VARIANT,
    check_variant_name,
    variant_sha256s,
)
from j0.edge.atomic import sha256_bytes, write_bytes_atomic
from j0.edge.fields import read_document, write_document
from j0.engine.source.base_sources import installed_vllm_dir
from j0.engine.source.vllm_version import VllmVersion, read_version
from j0.errors import J0Error
from j0.image.engine_step import EngineRecord
from j0.image.manifest import ImageManifest
from j0.pins import Pins, load_pins

MANIFEST_PATH = Path("/opt/j0/manifest.json")
PROG = "j0 image build step"


def _flag(value: str) -> bool:
    if value in ("1", "true", "yes"):
        return True
    if value in ("", "0", "false", "no"):
        return False
    raise J0Error(f"ALLOW_BASE_DRIFT={value!r}: expected 0 or 1", exit_code=64)


# The pins that docker/Dockerfile repeats as ARG defaults for its labels: pins.env key -> label.
PIN_LABELS = {
    "VLLM_COMMIT": "j0.pin.vllm-commit",
    "BASE_SHA256": "j0.pin.base-sha256",
    "PATCHED_SHA256": "j0.pin.patched-sha256",
    "DRAFTER_REPO": "j0.pin.drafter-repo",
    "DRAFTER_REVISION": "j0.pin.drafter-revision",
}


def check_build_args(pins: Pins, expected: Sequence[str]) -> None:
    """The Dockerfile's label ARGs repeat pins; refuse a build whose labels would disagree."""
    values = pins.values
    for item in expected:
        key, sep, given = item.partition("=")
        if not sep or key not in values:
            raise J0Error(f"--expect-pin {item!r}: expected KEY=VALUE, KEY in {pins.pins_path}", 64)
        if given != values[key]:
            raise J0Error(
                f"docker/Dockerfile: build arg {key}={given} (used in the image's labels) is not "
                f"{key}={values[key]} from {pins.pins_path}; update the ARG default in "
                "docker/Dockerfile (or pass the pinned value)",
                exit_code=2,
            )


def check_base(path: Path, data: bytes, pins: Pins, base_image: str, allow_drift: bool) -> None:
    """Refuse a base file that is not the pinned one, unless drift is allowed."""
    actual = sha256_bytes(data)
    if actual == pins.base_sha256 or allow_drift:
        return
    raise J0Error(
        f"{path}: sha256 {actual}, expected {pins.base_sha256} (BASE_SHA256 in {pins.pins_path}: "
        f"vLLM commit {pins.vllm_commit}, release {pins.vllm_release}).\n"
        f"The base image {base_image or '(unknown)'} does not hold the pinned vLLM speculator.py: "
        "a moved nightly tag or another vLLM version. Build on the pinned image (better: pin it "
        f"by digest, VLLM_IMAGE=repo:tag@sha256:...) or on the fallback {pins.vllm_image_fallback}"
        ", whose file is byte-identical; or pass --build-arg ALLOW_BASE_DRIFT=1 to try anyway "
        "(the patch must then still apply cleanly, and the image will not hold the article's "
        "file)."
    )


def drop_stale_pycache(source: Path) -> list[str]:
    """Remove __pycache__/<stem>.*.pyc beside `source`; return the removed paths."""
    cache = source.parent / "__pycache__"
    removed = []
    if cache.is_dir():
        for entry in sorted(cache.glob(f"{source.stem}.*.pyc")):
            entry.unlink()
            removed.append(str(entry))
    return removed


def engine_problems(found: VllmVersion, labelled: tuple[str, str]) -> list[str]:
    """Refusals: label ARGs (VLLM_BASE_VERSION, VLLM_BASE_COMMIT) naming another vLLM than the
    base holds. An empty ARG (plain `docker build`) is none: the manifest has the facts."""
    problems = []
    for arg, given, actual in (
        ("VLLM_BASE_VERSION", labelled[0], found.version),
        ("VLLM_BASE_COMMIT", labelled[1], found.commit),
    ):
        same = found.matches(given) if arg == "VLLM_BASE_COMMIT" else given == actual
        if given and not same:
            problems.append(
                f"build arg {arg}={given} (the image's label) is not what {found.path} says "
                f"({actual or 'nothing'}); leave it empty or pass the base's own value"
            )
    return problems


def engine_warning(found: VllmVersion, pins: Pins) -> str | None:
    """The warning for a base whose vLLM is not the pinned commit (or cannot be told)."""
    if not found.commit:
        return (
            f"cannot read the base's vLLM commit from {found.path}: this image's engine is not "
            f"known to be the pinned commit {pins.vllm_commit[:8]} (VLLM_COMMIT)"
        )
    if found.matches(pins.vllm_commit):
        return None
    return (
        f"the base's vLLM is {found.describe()} ({found.path}), not the pinned commit "
        f"{pins.vllm_commit[:8]} (VLLM_COMMIT in overlay/pins.env): its speculator.py is checked "
        "by sha256, but the rest of the engine is another vLLM than the article ran"
    )


# Build args that only the builder knows (docker/Dockerfile passes them on; `j0 image build`
# fills them; `docker compose up` cannot, since compose runs no git or clock, and a plain
# `docker build` leaves them empty unless given with --build-arg).
PROVENANCE_ARGS = ("J0_REVISION", "J0_SOURCE", "BUILD_DATE", "VLLM_IMAGE_DIGEST")


def digest_of(base_image: str, given: str) -> str:
    """The base's digest: as given, else the one a digest-form reference (repo:tag@sha256:...)
    carries, else ""."""
    if given:
        return given
    _, sep, digest = base_image.partition("@")
    return digest if sep and digest.startswith("sha256:") else ""


def j0_files_sha256(root: Path) -> str:
    """One sha256 for the j0 code and data an image was built from (the package's *.py, the
    pins, the patch, the config merge patch): lines `relpath NUL sha256`, sorted, hashed. It
    names the code where no git revision was passed; the same function on a checkout gives the
    same value when the files are the same."""
    names = [
        *(p for p in (root / "scripts" / "j0").rglob("*.py") if "__pycache__" not in p.parts),
        root / "overlay" / "pins.env",
        root / "overlay" / "jetspec-j0.patch",
        root / "overlay" / "jetspec-j0-prefix-safe.patch",
        root / "drafter-config" / "causal.merge-patch.json",
    ]
    lines = sorted(
        f"{path.relative_to(root).as_posix()}\0{sha256_bytes(path.read_bytes())}\n"
        for path in names
        if path.is_file()
    )
    return sha256_bytes("".join(lines).encode("utf-8"))


def install(
    pins: Pins,
    base_image: str,
    base_image_digest: str,
    allow_drift: bool,
    revision: str,
    manifest_path: Path,
    labelled: tuple[str, str] = ("", ""),
    source: str = "",
    created: str = "",
    engine_record: EngineRecord | None = None,
    variant: str = ARTICLE_VARIANT,
) -> dict[str, object]:
    check_variant_name(variant, "J0_VARIANT")
    vllm_dir = installed_vllm_dir()
    engine = read_version(vllm_dir)
    problems = engine_problems(engine, labelled)
    if problems:
        raise J0Error("; ".join(problems), exit_code=2)
    target = vllm_dir / pins.speculator_relpath
    if not target.is_file():
        raise J0Error(
            f"{target}: no such file; the vllm package of {sys.executable} ({vllm_dir}/vllm) has "
            f"no {pins.speculator_relpath} (expected vLLM {pins.vllm_release} / "
            f"{pins.vllm_commit[:8]})",
            exit_code=2,
        )
    base = target.read_bytes()
    check_base(target, base, pins, base_image, allow_drift)
    if variant != ARTICLE_VARIANT:  # the variant reads req_states from init_speculator's frame
        from j0.engine.source import contract

        contract.require(vllm_dir, f"J0_VARIANT={variant}")
    tool = available_tool()
    patched = build_variant(base, str(target), pins, variant, allow_drift, tool)

    mode = stat.S_IMODE(target.stat().st_mode)
    write_bytes_atomic(target, patched, mode=mode)
    removed = drop_stale_pycache(target)
    compiled = py_compile.compile(
        str(target), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
    )
    # A copy where `j0 overlay verify` looks for the article's file (its diff reference).
    if variant == ARTICLE_VARIANT:
        write_bytes_atomic(pins.default_overlay_path, patched)
    else:
        write_bytes_atomic(
            pins.default_overlay_path, build_variant(base, str(target), pins, allow_base_drift=True)
        )

    installed = target.read_bytes()
    if installed != patched:
        raise J0Error(f"{target}: re-read after writing differs from the patched file")
    identity = identify(installed, pins)
    base_image_digest = digest_of(base_image, base_image_digest)
    given = dict(zip(PROVENANCE_ARGS, (revision, source, created, base_image_digest), strict=True))
    record = ImageManifest(
        schema=1,
        built_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        base_image=base_image,
        base_image_digest=base_image_digest,
        vllm_image_pinned=pins.vllm_image,
        vllm_image_fallback=pins.vllm_image_fallback,
        # The base's vLLM, from its vllm/_version.py; then the pins, for comparison.
        vllm_version=engine.version,
        vllm_commit=engine.commit,
        vllm_version_file=engine.path,
        vllm_commit_pinned=pins.vllm_commit,
        vllm_commit_is_pinned=engine.matches(pins.vllm_commit),
        vllm_release_pinned=pins.vllm_release,
        # How the engine got here (j0.image.engine_step's record): route `wheel` (the release
        # image with VLLM_COMMIT's wheel: index, wheel name, sha256) or `image` (the base's own).
        engine_route=engine_record.route if engine_record else "image",
        engine=(
            engine_record.to_json()
            if engine_record
            else {"route": "image", "note": "no engine step record"}
        ),
        # The base's torch.version.cuda (the engine step read its torch/version.py), and on the
        # wheel route its CUDA variant (cu130 for 13.0): `j0 doctor` judges the host's driver by
        # this CUDA. The index's folder the wheel came from (cu130, or "root" where the index
        # has no cu130/ folder and the root's wheel is CUDA 13) and why: the engine's record.
        torch_cuda=engine_record.torch_cuda if engine_record else None,
        wheel_variant=engine_record.wheel_variant if engine_record else "",
        wheel_folder=engine_record.wheel_folder if engine_record else "",
        wheel_folder_why=engine_record.wheel_folder_why if engine_record else "",
        python=sys.executable,
        python_version=platform.python_version(),
        vllm_dir=str(vllm_dir),
        speculator_path=str(target),
        base_sha256=sha256_bytes(base),
        base_sha256_pinned=pins.base_sha256,
        speculator_sha256=identity.sha256,
        speculator_sha256_pinned=variant_sha256s(pins)[variant],
        identity=identity.kind,
        # Which file j0 built: the article's (default) or the prefix-safe variant (J0_VARIANT).
        variant=variant,
        allow_base_drift=allow_drift,
        patch_file=str(pins.patch_file),
        patch_sha256=pins.patch_sha256,
        patch_tool=tool,
        removed_pycache=removed,
        compiled_pycache=compiled,
        drafter_repo=pins.drafter_repo,
        drafter_revision=pins.drafter_revision,
        drafter_commit=pins.drafter_commit,
        target_model=pins.target_model,
        j0_seed=pins.j0_seed,
        j0_version=__version__,
        j0_revision=revision,
        j0_source=source,
        j0_files_sha256=j0_files_sha256(pins.root),
        # Build args left empty (compose and a plain `docker build` cannot fill them): the
        # labels they feed are empty; built_at and j0_files_sha256 above stand in.
        not_given=[key for key, value in given.items() if not value],
    )
    write_document(manifest_path, record.to_json(), indent=2)
    return record.to_json()


def read_engine_record(path: Path | None) -> EngineRecord | None:
    """The engine step's record as its type (j0.image.engine_step), or None without one; a
    record of other kinds, or of a route that is not wheel or image, is refused (exit 2)."""
    if path is None:
        return None
    return EngineRecord.from_json(read_document(path, "the engine step's record"), str(path))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-image", default="", help="the VLLM_IMAGE build arg")
    parser.add_argument("--base-image-digest", default="", help="its repo digest, if known")
    parser.add_argument("--allow-base-drift", default="0", metavar="0|1")
    parser.add_argument("--revision", default="", help="the j0 git revision being built")
    parser.add_argument("--source", default="", help="the J0_SOURCE build arg (a label)")
    parser.add_argument("--created", default="", help="the BUILD_DATE build arg (a label)")
    parser.add_argument(
        "--expect-pin",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label ARG that repeats a pin; refused unless it equals KEY in pins.env",
    )
    parser.add_argument(
        "--label-vllm-version", default="", help="the VLLM_BASE_VERSION build arg (a label)"
    )
    parser.add_argument(
        "--label-vllm-commit", default="", help="the VLLM_BASE_COMMIT build arg (a label)"
    )
    parser.add_argument(
        "--variant",
        default="",
        metavar="article|prefix-safe",
        help="the J0_VARIANT build arg: which speculator.py to install (empty: article)",
    )
    parser.add_argument("--manifest", type=Path, default=MANIFEST_PATH)
    parser.add_argument(
        "--engine-record",
        type=Path,
        default=None,
        help="the engine step's JSON record (route, wheel, sha256), copied into the manifest",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        pins = load_pins()
        allow_drift = _flag(args.allow_base_drift)
        check_build_args(pins, args.expect_pin)
        record = read_engine_record(args.engine_record)
        manifest = install(
            pins,
            args.base_image,
            args.base_image_digest,
            allow_drift,
            args.revision,
            args.manifest,
            (args.label_vllm_version, args.label_vllm_commit),
            args.source,
            args.created,
            record,
            args.variant or ARTICLE_VARIANT,
        )
    except J0Error as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"{PROG}: installed {manifest['speculator_path']}")
    print(
        f"{PROG}: speculator.py sha256={manifest['speculator_sha256']} "
        f"identity={manifest['identity']}"
    )
    print(f"{PROG}: manifest {args.manifest}")
    not_given = manifest["not_given"]
    if isinstance(not_given, list) and not_given:
        print(
            f"{PROG}: note: build args {', '.join(map(str, not_given))} not given (`docker "
            "compose up` "
            "cannot pass them; `j0 image build` does): those OCI fields are empty; the "
            f"manifest has built_at and j0_files_sha256 {str(manifest['j0_files_sha256'])[:12]}…"
        )
    engine = VllmVersion(
        str(manifest["vllm_version_file"]),
        str(manifest["vllm_version"]),
        str(manifest["vllm_commit"]),
    )
    route = manifest["engine_route"]
    print(f"{PROG}: engine route {route}: {engine.describe()} (from {engine.path})")
    if not args.label_vllm_commit:
        print(
            f"{PROG}: note: labels j0.vllm.version/j0.vllm.commit are empty (build args "
            "VLLM_BASE_VERSION/VLLM_BASE_COMMIT not given; `j0 image build` passes them); "
            f"{args.manifest} has the base's vLLM"
        )
    warning = engine_warning(engine, pins)
    if warning:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    if manifest["identity"] != manifest["variant"]:
        what = "the article's file" if manifest["variant"] == ARTICLE_VARIANT else "the pinned "
        what += "" if manifest["variant"] == ARTICLE_VARIANT else f"{manifest['variant']} file"
        print(
            f"{PROG}: warning: ALLOW_BASE_DRIFT=1: this image does NOT hold {what}; its labels "
            "name the pinned hash, the manifest the real one",
            file=sys.stderr,
        )
    elif manifest["variant"] != ARTICLE_VARIANT:
        print(
            f"{PROG}: note: J0_VARIANT={manifest['variant']}: this image holds the prefix-safe "
            "variant of the article's file (identity=prefix-safe), not the article's file",
        )
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main())
