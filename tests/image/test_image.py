"""The image: docker/Dockerfile, its build step, its entrypoint, `j0 image build` and `smoke`.

The first group runs without Docker: the Dockerfile's pins, its build context, and the build step
itself on a fake site-packages tree, run by a Python started without any site-packages (so an
import of anything outside the standard library fails the test). The `docker` group builds the
real docker/Dockerfile on local stand-ins for vLLM's image (tests/standin/build.py: Debian
bookworm from debootstrap plus the real vllm 0.33.0 wheel; no registry is used) and runs the
smoke checks in containers with no network.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from image_tree import put_j0_package

from conftest import OwnImages
from engine.contract_lookalike import write_lookalike
from j0.cli import main
from j0.pins import Pins

# A Docker worker of its own (tests/worker_plan.py): these build and run the j0 image on A, B
# and C while the other group's tests run compose on B.
pytestmark = pytest.mark.xdist_group("docker-image")

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
ARTICLE_SHA = "0f0a4d209568e41ee28389b33bd30803babee67cea28730e3475680cc1343974"
BASE_SHA = "27368c98791397625603ba45782119e4d306880841900a9d07587a6d6757d3ee"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def arg_defaults(text: str) -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S*)$", text, re.MULTILINE))


# --- the Dockerfile, without Docker ------------------------------------------------------------


def test_entrypoint_and_launcher_are_executable() -> None:
    for name in ("entrypoint.sh", "j0"):
        assert os.access(ROOT / "docker" / name, os.X_OK), name


# --- the build step, run as in the image: standard library only ---------------------------------

STEP_RUNNER = """\
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from j0.image.build_step import main
code = main(sys.argv[3:])
top = {name.split(".")[0] for name in sys.modules}
foreign = sorted(t for t in top if t not in sys.stdlib_module_names and t not in ("j0", "__main__"))
print("MODULES " + json.dumps(foreign))
sys.exit(code)
"""


@pytest.fixture
def step_tree(tmp_path: Path, base_bytes: bytes, pins: Pins) -> dict[str, Path]:
    """A copy of j0 (its package, pins and patch) and a fake site-packages holding vLLM's file."""
    home = tmp_path / "opt-j0"
    put_j0_package(home / "scripts")
    (home / "overlay").mkdir()
    for name in ("pins.env", "jetspec-j0.patch", "jetspec-j0-prefix-safe.patch"):
        shutil.copy(ROOT / "overlay" / name, home / "overlay" / name)
    site = tmp_path / "dist-packages"
    target = site / pins.speculator_relpath
    target.parent.mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("raise ImportError('vLLM must not be imported')\n")
    write_lookalike(site)  # the engine source the prefix-safe variant's contract reads
    target.write_bytes(base_bytes)
    target.chmod(0o640)
    stale = target.parent / "__pycache__" / "speculator.cpython-311.opt-1.pyc"
    stale.parent.mkdir()
    stale.write_bytes(b"stale bytecode of the unpatched file")
    return {"home": home, "site": site, "target": target, "stale": stale}


def run_step(tree: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    """`python3 -I -S`: no site-packages and no PYTHONPATH, as on a bare base image."""
    manifest = tree["home"] / "manifest.json"
    cmd = [sys.executable, "-I", "-S", "-c", STEP_RUNNER, str(tree["home"] / "scripts")]
    cmd += [str(tree["site"]), "--manifest", str(manifest), "--base-image", "stand/in:1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def test_build_step_installs_the_article_file_with_stdlib_only(
    step_tree: dict[str, Path], pins: Pins
) -> None:
    result = run_step(step_tree, "--expect-pin", f"PATCHED_SHA256={ARTICLE_SHA}")
    assert result.returncode == 0, result.stderr
    assert "MODULES []" in result.stdout  # nothing outside the standard library, vLLM included
    target = step_tree["target"]
    assert sha(target.read_bytes()) == ARTICLE_SHA
    assert oct(target.stat().st_mode & 0o777) == "0o640"  # the file's mode is kept
    assert not step_tree["stale"].exists()
    fresh = list((target.parent / "__pycache__").glob("speculator.*.pyc"))
    assert len(fresh) == 1 and fresh[0].read_bytes()[4:8] == b"\x03\x00\x00\x00"  # checked-hash
    manifest = json.loads((step_tree["home"] / "manifest.json").read_text())
    assert manifest["speculator_path"] == str(target)
    assert manifest["speculator_sha256"] == ARTICLE_SHA
    assert manifest["base_sha256"] == BASE_SHA
    assert manifest["identity"] == "article"
    assert manifest["base_image"] == "stand/in:1"
    assert manifest["vllm_commit_pinned"] == pins.vllm_commit
    assert manifest["drafter_revision"] == pins.drafter_revision
    assert manifest["removed_pycache"] == [str(step_tree["stale"])]
    copy = step_tree["home"] / "overlay" / pins.speculator_relpath
    assert sha(copy.read_bytes()) == ARTICLE_SHA


# vLLM 0.33.0's vllm/_version.py, as the wheel has it (commit 4ba787ec9), typed here.
RELEASE_VERSION_PY = "__version__ = version = '0.33.0'\n__commit_id__ = commit_id = 'g4ba787ec9'\n"


def test_build_step_records_the_bases_vllm_commit_and_warns_when_not_pinned(
    step_tree: dict[str, Path], pins: Pins
) -> None:
    """The v0.33.0 fallback: byte-identical speculator.py, but vLLM commit 4ba787ec9."""
    (step_tree["site"] / "vllm" / "_version.py").write_text(RELEASE_VERSION_PY)
    result = run_step(step_tree)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((step_tree["home"] / "manifest.json").read_text())
    assert (manifest["vllm_version"], manifest["vllm_commit"]) == ("0.33.0", "4ba787ec9")
    assert manifest["vllm_commit_is_pinned"] is False
    assert manifest["vllm_version_file"] == str(step_tree["site"] / "vllm" / "_version.py")
    assert manifest["identity"] == "article"  # the file is still the article's
    assert "engine route image: vLLM 0.33.0 commit 4ba787ec9" in result.stdout
    assert "warning: the base's vLLM is vLLM 0.33.0 commit 4ba787ec9" in result.stderr
    assert "not the pinned commit c50aca14" in result.stderr
    assert "labels j0.vllm.version/j0.vllm.commit are empty" in result.stdout


def test_build_step_on_the_pinned_commit_does_not_warn(step_tree: dict[str, Path]) -> None:
    nightly = "__version__ = '0.33.1.dev3+gc50aca144'\n__commit_id__ = 'gc50aca144'\n"
    (step_tree["site"] / "vllm" / "_version.py").write_text(nightly)
    result = run_step(step_tree, "--label-vllm-commit", "c50aca144")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((step_tree["home"] / "manifest.json").read_text())
    assert manifest["vllm_commit"] == "c50aca144" and manifest["vllm_commit_is_pinned"] is True
    assert "warning" not in result.stderr and "labels" not in result.stdout


def test_build_step_without_a_version_file_warns_it_cannot_tell(
    step_tree: dict[str, Path],
) -> None:
    result = run_step(step_tree)
    assert result.returncode == 0, result.stderr
    assert "cannot read the base's vLLM commit" in result.stderr
    manifest = json.loads((step_tree["home"] / "manifest.json").read_text())
    assert manifest["vllm_commit"] == "" and manifest["vllm_commit_is_pinned"] is False


def test_build_step_refuses_a_label_arg_that_names_another_vllm(
    step_tree: dict[str, Path],
) -> None:
    (step_tree["site"] / "vllm" / "_version.py").write_text(RELEASE_VERSION_PY)
    result = run_step(step_tree, "--label-vllm-commit", "c50aca144")
    assert result.returncode == 2
    assert "build arg VLLM_BASE_COMMIT=c50aca144" in result.stderr and "4ba787ec9" in result.stderr
    assert not (step_tree["home"] / "manifest.json").exists()


def test_build_step_refuses_a_drifted_base_naming_both_hashes(
    step_tree: dict[str, Path], base_bytes: bytes
) -> None:
    drifted = base_bytes.replace(b"# Fixed-address inputs", b"# fixed-address inputs")
    step_tree["target"].write_bytes(drifted)
    result = run_step(step_tree)
    assert result.returncode == 1
    for needed in (
        str(step_tree["target"]),
        sha(drifted),
        BASE_SHA,
        "--build-arg ALLOW_BASE_DRIFT=1",
    ):
        assert needed in result.stderr
    assert step_tree["target"].read_bytes() == drifted  # untouched
    assert not (step_tree["home"] / "manifest.json").exists()


def test_build_step_with_drift_allowed_patches_and_says_so(
    step_tree: dict[str, Path], base_bytes: bytes
) -> None:
    drifted = base_bytes.replace(b"# Fixed-address inputs", b"# fixed-address inputs")
    step_tree["target"].write_bytes(drifted)
    result = run_step(step_tree, "--allow-base-drift", "1")
    assert result.returncode == 0, result.stderr
    assert "does NOT hold the article's file" in result.stderr
    manifest = json.loads((step_tree["home"] / "manifest.json").read_text())
    assert manifest["identity"] == "other" and manifest["allow_base_drift"] is True
    assert manifest["base_sha256"] == sha(drifted)


def test_build_step_refuses_label_args_that_disagree_with_the_pins(
    step_tree: dict[str, Path],
) -> None:
    result = run_step(step_tree, "--expect-pin", "PATCHED_SHA256=" + "0" * 64)
    assert result.returncode == 2
    assert "build arg PATCHED_SHA256=000" in result.stderr and ARTICLE_SHA in result.stderr


def expected_files_sha256(home: Path) -> str:
    """The j0 files' hash, computed here from the tree: `relpath NUL sha256` lines, sorted."""
    files = [p for p in (home / "scripts" / "j0").rglob("*.py") if "__pycache__" not in p.parts]
    files += [home / "overlay" / "pins.env", home / "overlay" / "jetspec-j0.patch"]
    files += [home / "overlay" / "jetspec-j0-prefix-safe.patch"]
    lines = sorted(f"{p.relative_to(home).as_posix()}\0{sha(p.read_bytes())}\n" for p in files)
    return sha("".join(lines).encode())


def test_build_step_says_which_provenance_args_it_was_not_given(
    step_tree: dict[str, Path],
) -> None:
    """What `docker compose up` builds: no revision, source, date or digest is passed. The
    manifest lists them, takes the digest from a digest-form base, and names the j0 files."""
    digest = "sha256:" + "ab" * 32
    result = run_step(step_tree, "--base-image", f"stand/in:1@{digest}")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((step_tree["home"] / "manifest.json").read_text())
    assert manifest["base_image_digest"] == digest
    assert manifest["not_given"] == ["J0_REVISION", "J0_SOURCE", "BUILD_DATE"]
    assert "note: build args J0_REVISION, J0_SOURCE, BUILD_DATE not given" in result.stdout
    assert manifest["j0_files_sha256"] == expected_files_sha256(step_tree["home"])
    assert manifest["built_at"]


def test_build_step_records_what_j0_image_build_passes(step_tree: dict[str, Path]) -> None:
    args = ["--revision", "abc123", "--source", "https://example/j0.git"]
    args += ["--created", "2026-11-30T00:00:00+00:00", "--base-image-digest", "sha256:" + "1" * 64]
    result = run_step(step_tree, *args)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((step_tree["home"] / "manifest.json").read_text())
    assert manifest["not_given"] == []
    assert manifest["j0_revision"] == "abc123" and manifest["j0_source"] == "https://example/j0.git"
    assert "note: build args" not in result.stdout


def test_image_identity_of_this_python(capsys: pytest.CaptureFixture[str]) -> None:
    """The test environment's vLLM is the unpatched 0.33.0 wheel: identity `base`, commit
    4ba787ec9, and the line says that this is not the pinned commit."""
    assert main(["image", "identity", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["identity"] == "base" and info["sha256"] == BASE_SHA
    assert (info["vllm_version"], info["vllm_commit"]) == ("0.33.0", "4ba787ec9")
    assert info["vllm_commit_is_pinned"] is False
    assert main(["image", "identity"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("j0: vLLM 0.33.0 commit 4ba787ec9 (not the pinned c50aca14), /")
    assert line.endswith(f"speculator.py sha256={BASE_SHA} identity=base (the unpatched vLLM base)")


def test_image_help_explains_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    for sub in ("build", "smoke", "identity"):
        with pytest.raises(SystemExit) as exc:
            main(["image", sub, "--help"])
        assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--network none" in out and "ALLOW_BASE_DRIFT=1" in out and "entrypoint" in out


# --- with Docker: the real Dockerfile on stand-in base images -----------------------------------


@pytest.fixture(scope="module")
def standins(pins: Pins) -> dict[str, str]:
    from conftest import require_docker, standin_images

    require_docker()
    from standin import build as standin

    a, b, c = standin_images(
        lambda: standin.image_a(pins), lambda: standin.image_b(pins), lambda: standin.image_c(pins)
    )
    return {"a": a, "b": b, "c": c}


@pytest.fixture(scope="module")
def built(own_images: OwnImages) -> OwnImages:
    """What these tests build: tags unique to this run, and the step images of their builds;
    removed at the end (the stand-ins stay cached, other runs' images stay)."""
    return own_images


def docker_build(
    built: OwnImages, base: str, tag: str, *extra: str, buildkit: bool = False, fresh: bool = False
) -> subprocess.CompletedProcess[str]:
    """The hidden check's command: the docker CLI, --network none, VLLM_IMAGE set (which, with
    VLLM_ENGINE not given, takes the image route: the base's own vLLM). The step images it
    leaves (a refused build keeps those before the failing step) are recorded.

    fresh: a build whose output a test reads. Docker's layer cache replays a step another test
    already built with the same arguments without printing its output again, so the build step
    runs anew: a BUILD_DATE of its own (what `j0 image build` passes) changes the steps' keys."""
    env = dict(os.environ, DOCKER_BUILDKIT="1" if buildkit else "0")
    cmd = ["docker", "build", "--network", "none", "--build-arg", f"VLLM_IMAGE={base}"]
    if fresh:
        created = datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds")
        cmd += ["--build-arg", f"BUILD_DATE={created}"]
    if not buildkit:
        cmd.append("--force-rm")  # the legacy builder keeps a failed step's container otherwise
    cmd += [*extra, "-f", "docker/Dockerfile", "-t", tag, "."]
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    built.record_output(result.stdout + result.stderr)
    return result


def docker_run(image: str, *args: str, entrypoint: str, volume: str = "") -> str:
    cmd = ["docker", "run", "--rm", "--network", "none", "--entrypoint", entrypoint]
    cmd += ["-v", volume] if volume else []
    result = subprocess.run(
        [*cmd, image, *args], capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def failed_checks(stderr: str, image: str) -> set[str]:
    match = re.search(rf"smoke test of {re.escape(image)} failed: (.*)$", stderr, re.MULTILINE)
    assert match, stderr
    return set(match.group(1).split(", "))


# The output of each build the fixtures make, by tag.
BUILD_OUTPUT: dict[str, str] = {}


@pytest.fixture(scope="module")
def image_on_a(standins: dict[str, str], built: OwnImages) -> str:
    tag = built.tag("on-a")
    result = docker_build(built, standins["a"], tag, fresh=True)
    assert result.returncode == 0, result.stdout + result.stderr
    BUILD_OUTPUT[tag] = result.stdout + result.stderr
    return tag


FIND = (
    "import hashlib, importlib.util as u, pathlib; s = u.find_spec('vllm'); "
    "p = pathlib.Path(list(s.submodule_search_locations)[0]) / {rel!r}; "
    "print(p, hashlib.sha256(p.read_bytes()).hexdigest())"
)


@pytest.mark.docker
@pytest.mark.slow
def test_build_on_hidden_check_like_standin_installs_the_article_file(
    image_on_a: str, standins: dict[str, str], pins: Pins
) -> None:
    """Stand-in A: bookworm, python3 3.11, git, curl, the vllm wheel unpacked, no dependencies."""
    rel = pins.speculator_relpath.removeprefix("vllm/")
    out = docker_run(image_on_a, "-c", FIND.format(rel=rel), entrypoint="python3")
    path, digest = out.split()
    assert path == f"/usr/local/lib/python3.11/dist-packages/{pins.speculator_relpath}"
    assert digest == ARTICLE_SHA
    manifest = json.loads(docker_run(image_on_a, "/opt/j0/manifest.json", entrypoint="cat"))
    assert manifest["identity"] == "article" and manifest["base_image"] == standins["a"]
    assert manifest["patch_tool"] == "git"  # the stand-in has no GNU patch
    labels = json.loads(
        subprocess.run(
            ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", image_on_a],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert labels["org.opencontainers.image.base.name"] == standins["a"]
    assert labels["j0.pin.patched-sha256"] == pins.patched_sha256
    assert labels["j0.pin.base-sha256"] == pins.base_sha256
    # A plain `docker build` cannot know the base's vLLM for a label; the manifest has it.
    assert labels["j0.vllm.commit"] == "" and labels["j0.vllm.version"] == ""


@pytest.mark.docker
@pytest.mark.slow
def test_the_standin_engine_commit_is_recorded_shown_and_warned_about(
    image_on_a: str, pins: Pins
) -> None:
    """The stand-ins carry the real 0.33.0 wheel, vLLM commit 4ba787ec9 (its vllm/_version.py),
    not the pinned c50aca14: the manifest and `j0 image identity` name it, the build warns."""
    output = BUILD_OUTPUT[image_on_a]
    assert "warning: the base's vLLM is vLLM 0.33.0 commit 4ba787ec9" in output
    assert "not the pinned commit c50aca14" in output
    manifest = json.loads(docker_run(image_on_a, "/opt/j0/manifest.json", entrypoint="cat"))
    assert (manifest["vllm_version"], manifest["vllm_commit"]) == ("0.33.0", "4ba787ec9")
    assert manifest["vllm_commit_pinned"] == pins.vllm_commit
    assert manifest["vllm_commit_is_pinned"] is False
    site = "/usr/local/lib/python3.11/dist-packages"
    assert manifest["vllm_version_file"] == f"{site}/vllm/_version.py"
    info = json.loads(docker_run(image_on_a, "image", "identity", "--json", entrypoint="j0"))
    assert (info["vllm_version"], info["vllm_commit"]) == ("0.33.0", "4ba787ec9")
    line = docker_run(image_on_a, "image", "identity", entrypoint="j0").strip()
    assert line.startswith("j0: vLLM 0.33.0 commit 4ba787ec9 (not the pinned c50aca14), ")


@pytest.mark.docker
@pytest.mark.slow
def test_build_with_buildkit_too(standins: dict[str, str], built: OwnImages) -> None:
    """`docker build` may mean BuildKit (buildx) on the hidden check's machine: it must work."""
    tag = built.tag("on-a-buildkit")
    result = docker_build(built, standins["a"], tag, buildkit=True)
    assert result.returncode == 0, result.stdout + result.stderr
    out = docker_run(tag, "image", "identity", entrypoint="j0")
    assert f"sha256={ARTICLE_SHA} identity=article" in out


@pytest.mark.docker
@pytest.mark.slow
def test_drifted_base_is_refused_naming_the_hash(
    standins: dict[str, str],
    built: OwnImages,
    base_bytes: bytes,
    pins: Pins,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Stand-in C: vLLM's speculator.py with one byte changed; the build must stop."""
    from standin.build import drifted

    result = docker_build(built, standins["c"], built.tag("on-c-refused"))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert sha(drifted(base_bytes)) in output and BASE_SHA in output
    assert f"/usr/local/lib/python3.11/dist-packages/{pins.speculator_relpath}" in output
    assert "--build-arg ALLOW_BASE_DRIFT=1" in output
    # j0 image build repeats the build step's message in its own error.
    assert (
        main(
            [
                "image",
                "build",
                "--engine",
                "image",
                "--base",
                standins["c"],
                "--tag",
                built.tag("on-c-x"),
            ]
        )
        == 1
    )
    out, err = capsys.readouterr()
    built.record_output(out)
    assert sha(drifted(base_bytes)) in err and BASE_SHA in err and "ALLOW_BASE_DRIFT=1" in err


@pytest.mark.docker
@pytest.mark.slow
def test_drift_allowed_builds_and_smoke_names_the_failed_checks(
    standins: dict[str, str], built: OwnImages, capsys: pytest.CaptureFixture[str]
) -> None:
    tag = built.tag("on-c-drift-allowed")
    result = docker_build(
        built, standins["c"], tag, "--build-arg", "ALLOW_BASE_DRIFT=1", fresh=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "identity=other" in result.stdout + result.stderr
    assert main(["image", "smoke", tag]) == 1
    captured = capsys.readouterr()
    assert "file        FAILED" in captured.out and "manifest    FAILED" in captured.out
    failed = failed_checks(captured.err, tag)
    assert {"file", "manifest", "entrypoint"} <= failed  # the entrypoint logs identity=other


@pytest.mark.docker
@pytest.mark.slow
def test_smoke_on_the_dependency_free_standin_fails_only_the_import(
    image_on_a: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """On A the file, manifest and entrypoint checks pass; importing vLLM cannot (no torch).
    With --json alone the same verdict is one object on stdout, the exit code the same."""
    assert main(["image", "smoke", image_on_a, "--timeout", "300", "--json"]) == 1
    out, err = capsys.readouterr()
    said = json.loads(out)
    status = {check["name"]: check["status"] for check in said["checks"]}
    assert (said["image"], said["passed"]) == (image_on_a, False)
    assert status["file"] == status["manifest"] == status["entrypoint"] == "ok"
    assert status["import"] == "fail"
    # selfcheck, where the image's j0 has it, cannot run without torch either.
    failed = {name for name, value in status.items() if value == "fail"}
    assert failed_checks(err, image_on_a) == failed
    assert failed in ({"import"}, {"import", "selfcheck"})


@pytest.mark.docker
@pytest.mark.slow
def test_entrypoint_names_a_bind_mounted_swap(image_on_a: str, base_file: Path, pins: Pins) -> None:
    """What compose's J0_OVERLAY does: a file mounted over the installed one, no rebuild."""
    installed = f"/usr/local/lib/python3.11/dist-packages/{pins.speculator_relpath}"
    from j0.image.smoke import FAKE_VLLM

    out = docker_run(
        image_on_a,
        "-c",
        FAKE_VLLM,
        "/usr/local/bin/j0-entrypoint",
        "--model",
        "m",
        entrypoint="/bin/sh",
        volume=f"{base_file}:{installed}:ro",
    )
    lines = out.splitlines()
    engine = "j0-entrypoint: vLLM 0.33.0 commit 4ba787ec9 (not the pinned c50aca14), "
    want = f"{installed}: speculator.py sha256={BASE_SHA} identity=base"
    assert any(line.startswith(engine + want) for line in lines), out
    assert "fake vllm: serve --model m" in lines


@pytest.mark.docker
@pytest.mark.slow
def test_image_build_and_smoke_pass_on_the_standin_with_the_import_dependencies(
    standins: dict[str, str], built: OwnImages, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Stand-in B carries torch, triton and the import's packages: every smoke check passes."""
    tag = built.tag("on-b")
    assert (
        main(
            [
                "image",
                "build",
                "--engine",
                "image",
                "--base",
                standins["b"],
                "--tag",
                tag,
                "--no-pull",
                "--json",
                str(tmp_path / "built.json"),
            ]
        )
        == 0
    )
    built_record = json.loads((tmp_path / "built.json").read_text())
    captured = capsys.readouterr()
    out = captured.out
    assert "Step 1/" in out and f"==> built {tag}" in out  # the build's progress is shown
    assert "==> " + standins["b"] + ": vLLM 0.33.0 commit 4ba787ec9" in out
    warning = "j0 image build: warning: the base's vLLM is vLLM 0.33.0 commit 4ba787ec9"
    assert warning in captured.err
    labels = json.loads(
        subprocess.run(
            ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", tag],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    # j0 image build reads the base's vllm/_version.py first and passes it to the labels.
    assert (labels["j0.vllm.version"], labels["j0.vllm.commit"]) == ("0.33.0", "4ba787ec9")
    image_id = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", tag],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert (built_record["image_id"], built_record["tag"]) == (image_id, tag)
    assert (built_record["base"], built_record["route"]) == (standins["b"], "image")
    record = tmp_path / "smoke.json"
    assert main(["image", "smoke", tag, "--json", str(record)]) == 0
    out = capsys.readouterr().out
    for name in ("file", "manifest", "entrypoint", "import"):
        assert re.search(rf"^{name}\s+ok: ", out, re.MULTILINE), out
    said = json.loads(record.read_text())  # --json OUT: the text as usual, and the record
    assert said["passed"] is True
    lines = re.findall(r"^([a-z]+) +\S+: ", out, re.MULTILINE)
    assert [check["name"] for check in said["checks"]] == lines
    assert re.search(
        r"^engine\s+warning: vLLM 0.33.0 commit 4ba787ec9 \(not the pinned c50aca14\)",
        out,
        re.MULTILINE,
    ), out
    assert "all smoke checks passed" in out and "warning: engine" in out
    assert re.search(r"^selfcheck\s+(ok|skipped): ", out, re.MULTILINE), out


@pytest.mark.docker
@pytest.mark.slow
def test_overlay_build_from_the_standin_image(standins: dict[str, str], tmp_path: Path) -> None:
    """`j0 overlay build --from-image`: docker-py reads vLLM's file out of stand-in A."""
    out = tmp_path / "speculator.py"
    assert main(["overlay", "build", "--from-image", standins["a"], "-o", str(out)]) == 0
    assert sha(out.read_bytes()) == ARTICLE_SHA
