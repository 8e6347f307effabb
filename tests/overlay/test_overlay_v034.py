"""J0 on vLLM 0.34.0: the patches cut by hand against 0.34.0's speculator.py, their pins, and
`j0 overlay build|verify --vllm 0.34.0`; c50aca14 (0.33.0) stays the default.

The base is the real file of the PyPI wheel vllm==0.34.0 (downloaded once, cached beside
0.33.0's). The expected sha256s are typed here from the measured files, never read from the code
under test; `git apply` and GNU `patch --fuzz=0` are the references the results are held to.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from j0.cli import main
from j0.engine.source import base_sources
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]
RELPATH = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
RELEASE = "0.34.0"
BASE = "0044839fe26b57016fbb5b8066fac3a4b834fa183021a471cf6366662a92f96e"
ARTICLE = "7a7fa8030d747ceb26702da6eeecc27a1063d7bd9f61335667e6a44a0fd7307c"
PREFIX_SAFE = "b09c3e1d2b907dfa831204bda1479837795797b526cd99925baf2467cf9f08e5"
AUDIT_ARTICLE = "5301f11e7fdee37a4c1ba7a41e32d23734a322c0b0b9d40509e2e7264fc96db5"
AUDIT_PREFIX_SAFE = "62a85423bc21cf7bae058a037a87f5fe0cb95d84a8c739fdd0c501b0df3ad4da"
DIR = ROOT / "overlay" / "vllm-0.34.0"
PATCHES = {
    "article": DIR / "jetspec-j0.patch",
    "prefix-safe": DIR / "jetspec-j0-prefix-safe.patch",
    "audit": DIR / "jetspec-j0-audit.patch",
}
ARTICLE_PATCHES = {
    "article": ROOT / "overlay" / "jetspec-j0.patch",
    "prefix-safe": ROOT / "overlay" / "jetspec-j0-prefix-safe.patch",
    "audit": ROOT / "overlay" / "jetspec-j0-audit.patch",
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def wheel(pins: Pins) -> Path:
    return base_sources.vllm_wheel(pins, release=RELEASE)


@pytest.fixture(scope="module")
def base34(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(RELPATH)


def gnu_patch(data: bytes, patch: Path, tmp: Path) -> tuple[bytes, str]:
    """`data` with `patch` applied by GNU patch --fuzz=0 (the reference), and what patch said."""
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / "speculator.py"
    out.write_bytes(data)
    done = subprocess.run(
        ["patch", "--batch", "--fuzz=0", "--verbose", str(out), "-i", str(patch)],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.read_bytes(), done.stdout


def git_apply(data: bytes, patch: Path, tmp: Path) -> bytes:
    work = tmp / "tree"
    (work / RELPATH).parent.mkdir(parents=True)
    (work / RELPATH).write_bytes(data)
    subprocess.run(
        ["git", "apply", "-p1", str(patch)],
        cwd=work,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp)},
    )
    return (work / RELPATH).read_bytes()


def test_the_base_is_vllm_0_34_0s_file(wheel: Path, base34: bytes, pins: Pins) -> None:
    assert sha(base34) == BASE and len(base34.splitlines()) == 1007
    with zipfile.ZipFile(wheel) as archive:
        version = archive.read("vllm/_version.py").decode()
    assert "__commit_id__ = commit_id = 'g62d4bc3c7'" in version
    assert "__version__ = version = '0.34.0'" in version
    # The pins hold what was measured (typed here), beside the article's, which stay the default.
    values = pins.values
    assert (values["V0340_RELEASE"], values["V0340_COMMIT"]) == (RELEASE, "62d4bc3c7")
    assert values["V0340_IMAGE"] == "vllm/vllm-openai:v0.34.0"
    assert values["V0340_BASE_SHA256"] == BASE
    assert values["V0340_PATCHED_SHA256"] == ARTICLE
    assert values["V0340_PREFIX_SAFE_SHA256"] == PREFIX_SAFE
    assert values["V0340_AUDIT_ARTICLE_SHA256"] == AUDIT_ARTICLE
    assert values["V0340_AUDIT_PREFIX_SAFE_SHA256"] == AUDIT_PREFIX_SAFE
    for key, name in (("PATCH", "article"), ("PREFIX_SAFE_PATCH", "prefix-safe")):
        assert values[f"V0340_{key}_FILE"] == str(PATCHES[name].relative_to(ROOT))
        assert values[f"V0340_{key}_SHA256"] == sha(PATCHES[name].read_bytes())
    assert values["V0340_AUDIT_PATCH_SHA256"] == sha(PATCHES["audit"].read_bytes())
    assert pins.vllm_release == "0.33.0" and pins.vllm_commit.startswith("c50aca14")


def test_the_articles_patch_does_not_apply_to_0_34_0(base34: bytes, tmp_path: Path) -> None:
    """Why the re-cut: the article's patch fails on 0.34.0's file without fuzz."""
    with pytest.raises(subprocess.CalledProcessError) as info:
        gnu_patch(base34, ARTICLE_PATCHES["article"], tmp_path)
    assert "FAILED" in info.value.stdout


def test_each_patch_applies_with_no_fuzz_and_no_offset(base34: bytes, tmp_path: Path) -> None:
    article, said = gnu_patch(base34, PATCHES["article"], tmp_path / "a")
    assert sha(article) == ARTICLE
    assert "fuzz" not in said and "offset" not in said, said
    variant, said = gnu_patch(article, PATCHES["prefix-safe"], tmp_path / "p")
    assert sha(variant) == PREFIX_SAFE
    assert "fuzz" not in said and "offset" not in said, said
    audited, said = gnu_patch(article, PATCHES["audit"], tmp_path / "aa")
    assert sha(audited) == AUDIT_ARTICLE and "fuzz" not in said and "offset" not in said
    # One audit patch for both files, as for the article's: on the variant only its offset moves.
    audited, said = gnu_patch(variant, PATCHES["audit"], tmp_path / "ap")
    assert sha(audited) == AUDIT_PREFIX_SAFE and "fuzz" not in said
    assert git_apply(base34, PATCHES["article"], tmp_path / "g") == article


# What the cut may change in the lines the article's patches add: the release a message names and
# the audit patch's own path. Every other added or removed line is the article's, in its order.
ALLOWED = {
    "needs vLLM 0.33.0's GPU model runner": "needs vLLM 0.34.0's GPU model runner",
    "(patch: overlay/jetspec-j0-audit.patch; a test instrument) -------------------------": (
        "(patch: overlay/vllm-0.34.0/jetspec-j0-audit.patch; a test instrument) ------------"
    ),
}


def changed_lines(patch: Path) -> list[str]:
    return [
        x
        for x in patch.read_text().splitlines()
        if x[:1] in "+-" and not x.startswith(("+++ ", "--- "))
    ]


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_the_cut_adds_the_articles_lines(name: str) -> None:
    """J0's code is carried, not rewritten: the cut's added and removed lines are the article's
    patch's, one for one, but for the release a message names."""
    theirs = changed_lines(ARTICLE_PATCHES[name])
    for old, new in ALLOWED.items():
        theirs = [x.replace(old, new) for x in theirs]
    assert changed_lines(PATCHES[name]) == theirs


def test_padding_programs_return_before_j0(base34: bytes, tmp_path: Path) -> None:
    """In 0.34.0 the programs past num_reqs pad and return; J0's draw comes after that return,
    and the history kernel is launched over the batch's requests only."""
    text, _ = gnu_patch(base34, PATCHES["article"], tmp_path)
    body = text.decode()
    kernel = body[body.index("def _prepare_dflash_inputs_kernel(") :]
    assert kernel.index("    if req_idx >= num_reqs:") < kernel.index("        return\n")
    assert kernel.index("        return\n") < kernel.index("    if CTX_NOISE:")
    assert "_ctx_pool_write_kernel[(num_reqs, num_blocks)](" in body
    assert "_prepare_dflash_inputs_kernel[(num_reqs + _NUM_PAD_PROGRAMS, num_blocks)](" in body
    for line in ("DFLASH_CTX_NOISE=%d pool=%s dump=%s/%d", "DFLASH_DRAFT_KV_DTYPES=%s"):
        assert line in body  # the log lines j0 status reads, as in the article's file


@pytest.mark.parametrize(
    ("args", "expected", "where"),
    [
        ([], ARTICLE, "overlay/vllm-0.34.0/article"),
        (["--variant", "prefix-safe"], PREFIX_SAFE, "overlay/vllm-0.34.0/prefix-safe"),
        (["--audit"], AUDIT_ARTICLE, "overlay/vllm-0.34.0/audit/article"),
        (
            ["--audit", "--variant", "prefix-safe"],
            AUDIT_PREFIX_SAFE,
            "overlay/vllm-0.34.0/audit/prefix-safe",
        ),
    ],
)
@pytest.mark.parametrize("tool", ["git", "patch", "python"])
def test_build_for_0_34_0(
    args: list[str], expected: str, where: str, tool: str, base34: bytes, tmp_path: Path
) -> None:
    base = tmp_path / "base.py"
    base.write_bytes(base34)
    out = tmp_path / "out.py"
    argv = ["overlay", "build", "--vllm", RELEASE, "--base", str(base), "--tool", tool]
    assert main([*argv, *args, "-o", str(out)]) == 0
    assert sha(out.read_bytes()) == expected
    if tool == "python":  # the default place, without -o, in a copy of the checkout's pins
        home = tmp_path / "home"
        shutil.copytree(ROOT / "overlay", home / "overlay", ignore=shutil.ignore_patterns("vllm"))
        env = {**os.environ, "J0_HOME": str(home), "PYTHONPATH": str(ROOT / "scripts")}
        cmd = [sys.executable, "-m", "j0", *argv, *args]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        assert sha((home / where / RELPATH).read_bytes()) == expected


def verify(path: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "j0", "overlay", "verify", str(path), *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")},
        capture_output=True,
        text=True,
    )
    return done.returncode, done.stdout + done.stderr


def test_verify_names_each_0_34_0_file(base34: bytes, tmp_path: Path) -> None:
    article, _ = gnu_patch(base34, PATCHES["article"], tmp_path / "a")
    variant, _ = gnu_patch(article, PATCHES["prefix-safe"], tmp_path / "p")
    audited, _ = gnu_patch(variant, PATCHES["audit"], tmp_path / "x")
    files = {"base": base34, "article": article, "prefix-safe": variant}
    for name, data in files.items():
        path = tmp_path / f"{name}.py"
        path.write_bytes(data)
        code, out = verify(path, "--vllm", RELEASE)
        assert code == {"base": 3, "article": 0, "prefix-safe": 5}[name], out
        assert f"identity={name}-0.34.0" in out
        # Judged as the article's release (the default), a 0.34.0 file is not the article's file.
        code, out = verify(path)
        assert code == 4 and f"identity={name}-0.34.0" in out, out
        assert "`j0 overlay verify --vllm 0.34.0` judges it" in out
    path = tmp_path / "audit.py"
    path.write_bytes(audited)
    for args in ([], ["--vllm", RELEASE]):
        code, out = verify(path, *args)
        assert code == 6 and "identity=audit" in out and "prefix-safe-0.34.0 file" in out, out


def test_verify_with_0_34_0_names_the_articles_file_as_another_releases(
    article_file: Path,
) -> None:
    code, out = verify(article_file, "--vllm", RELEASE)
    assert code == 4 and "identity=article " in out, out
    assert "`j0 overlay verify without --vllm` judges it" in out


def test_the_default_refuses_0_34_0s_base_and_names_the_option(
    base34: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "base.py"
    base.write_bytes(base34)
    assert main(["overlay", "build", "--base", str(base), "-o", str(tmp_path / "o.py")]) == 1
    err = capsys.readouterr().err
    assert BASE in err and "(vLLM c50aca14 / 0.33.0)" in err
    assert "This is vLLM 0.34.0's file: `j0 overlay build --vllm 0.34.0` patches it." in err
    assert not (tmp_path / "o.py").exists()


def test_an_unknown_release_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["overlay", "build", "--vllm", "0.35.0", "-o", "/nonexistent/x.py"]) == 64
    err = capsys.readouterr().err
    assert "--vllm 0.35.0" in err and "0.33.0, 0.34.0" in err


def test_a_changed_0_34_0_patch_is_refused(pins: Pins, base34: bytes, tmp_path: Path) -> None:
    """Each V0340_ patch's own sha256 is checked before use, as the article's are."""
    import dataclasses

    from j0.article import build
    from j0.errors import J0Error

    home = tmp_path / "home"
    shutil.copytree(ROOT / "overlay", home / "overlay", ignore=shutil.ignore_patterns("vllm"))
    patch = home / "overlay" / "vllm-0.34.0" / "jetspec-j0.patch"
    patch.write_text(patch.read_text().replace("20261031", "20261030"))
    edited = dataclasses.replace(pins, root=home)
    with pytest.raises(J0Error, match="V0340_PATCH_SHA256"):
        build.j0_file(base34, RELEASE, pins=edited)


def test_j0_file_makes_every_file_in_memory_without_git_or_patch(
    base34: bytes, base_bytes: bytes, tmp_path: Path
) -> None:
    """The library call a vLLM plugin makes: vLLM's base file's bytes in, the J0 file's bytes out,
    every sha256 checked, in a process whose PATH holds neither git nor patch."""
    (tmp_path / "b34").write_bytes(base34)
    (tmp_path / "b33").write_bytes(base_bytes)
    code = f"""
import hashlib, pathlib, shutil
from j0.article.build import j0_file
from j0.errors import J0Error
assert shutil.which("git") is None and shutil.which("patch") is None
b34 = pathlib.Path({str(tmp_path / "b34")!r}).read_bytes()
b33 = pathlib.Path({str(tmp_path / "b33")!r}).read_bytes()
for release, base in (("0.34.0", b34), (None, b33)):
    for variant in ("article", "prefix-safe"):
        for audit in (False, True):
            made = j0_file(base, release, variant, audit)
            print(release, variant, audit, hashlib.sha256(made).hexdigest())
try:
    j0_file(b33, "0.34.0")
except J0Error as exc:
    print("refused:", exc)
"""
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PATH": str(empty), "PYTHONPATH": str(ROOT / "scripts")},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        f"0.34.0 article False {ARTICLE}",
        f"0.34.0 article True {AUDIT_ARTICLE}",
        f"0.34.0 prefix-safe False {PREFIX_SAFE}",
        f"0.34.0 prefix-safe True {AUDIT_PREFIX_SAFE}",
    ]
    article33 = "0f0a4d209568e41ee28389b33bd30803babee67cea28730e3475680cc1343974"
    assert lines[4] == f"None article False {article33}"
    refused = lines[-1]
    assert refused.startswith("refused: the base speculator.py: base speculator.py has sha256 ")
    assert (
        BASE in refused and "This is vLLM 0.33.0's file: `j0 overlay build` patches it" in refused
    )
    assert re.search(r"sha256 27368c98[0-9a-f]{56}, expected", refused)
