"""The overlay: the committed patch gives the article's file; bad bases are refused loudly."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from j0.cli import main
from j0.engine.source import base_sources
from j0.pins import Pins

ROOT = Path(__file__).resolve().parents[2]
ARTICLE_SHA = "0f0a4d209568e41ee28389b33bd30803babee67cea28730e3475680cc1343974"
BASE_SHA = "27368c98791397625603ba45782119e4d306880841900a9d07587a6d6757d3ee"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_pins_hold_the_article_hashes(pins: Pins) -> None:
    # Typed from the seed and the measured wheel, not read from the code under test.
    assert pins.patched_sha256 == ARTICLE_SHA
    assert pins.base_sha256 == BASE_SHA
    assert pins.vllm_commit == "c50aca14416ef29f6ed0ed256302f30646726dcd"
    assert pins.j0_seed == 20261031


def test_wheel_base_is_the_pinned_base(base_file: Path) -> None:
    assert sha(base_file) == BASE_SHA
    assert len(base_file.read_bytes().splitlines()) == 927


def test_gnu_patch_gives_article_file(article_file: Path) -> None:
    assert sha(article_file) == ARTICLE_SHA


def test_patch_matches_the_seed_text(pins: Pins) -> None:
    """The rebuilt patch, with whitespace collapsed, is the seed's patch text token for token,
    and the seed names the sha256 that the pins hold for the patched file."""
    seed_text = (ROOT / "docs" / "seed" / "000_b827a839324d2b2e.txt").read_text(encoding="utf-8")
    seed_patch = seed_text[seed_text.index("--- a/vllm/") :]
    assert pins.patch_file.read_text().split() == seed_patch.split()
    assert f"Patched file sha256: {pins.patched_sha256}" in seed_text


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_build_from_base_file(tool: str, base_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "speculator.py"
    assert main(["overlay", "build", "--base", str(base_file), "-o", str(out), "--tool", tool]) == 0
    assert sha(out) == ARTICLE_SHA


def test_build_from_wheel(tmp_path: Path) -> None:
    out = tmp_path / "speculator.py"
    assert main(["overlay", "build", "--from-wheel", "-o", str(out)]) == 0
    assert sha(out) == ARTICLE_SHA


def test_build_from_site_packages_and_installed(
    pins: Pins, base_bytes: bytes, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    target = site / pins.speculator_relpath
    target.parent.mkdir(parents=True)
    target.write_bytes(base_bytes)
    (site / "vllm" / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    out = tmp_path / "a.py"
    assert main(["overlay", "build", "--site-packages", str(site), "-o", str(out)]) == 0
    assert sha(out) == ARTICLE_SHA
    # --installed finds the package through importlib without importing it.
    code = (
        "import sys; from j0.cli import main; "
        f"sys.exit(main(['overlay', 'build', '--installed', '-o', {str(tmp_path / 'b.py')!r}]))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT / "scripts")]))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert sha(tmp_path / "b.py") == ARTICLE_SHA


def test_one_byte_drift_is_refused_with_both_hashes(
    base_bytes: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    drifted = bytearray(base_bytes)
    index = drifted.index(b"    def _store_hidden_states(")  # far from every hunk
    drifted[index + 8] = ord("S")
    base = tmp_path / "drifted.py"
    base.write_bytes(bytes(drifted))
    out = tmp_path / "out.py"
    assert main(["overlay", "build", "--base", str(base), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert hashlib.sha256(bytes(drifted)).hexdigest() in err
    assert BASE_SHA in err
    assert str(base) in err
    assert not out.exists()
    # With drift allowed, a change outside the hunks still patches, and the result is not the
    # article's file.
    assert (
        main(["overlay", "build", "--base", str(base), "-o", str(out), "--allow-base-drift"]) == 0
    )
    assert sha(out) not in (ARTICLE_SHA, BASE_SHA)


def test_drift_inside_a_hunk_is_refused_even_when_allowed(
    base_bytes: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = base_bytes.decode()
    assert text.count("        self.draft_kv_cache_group_id: int = -1\n") == 1
    base = tmp_path / "drifted.py"
    base.write_text(
        text.replace("draft_kv_cache_group_id: int = -1", "draft_kv_cache_group_id = -1")
    )
    out = tmp_path / "out.py"
    for tool in ("git", "patch"):
        code = main(
            [
                "overlay",
                "build",
                "--base",
                str(base),
                "-o",
                str(out),
                "--allow-base-drift",
                "--tool",
                tool,
            ]
        )
        assert code == 1
        assert "does not apply cleanly" in capsys.readouterr().err
        assert not out.exists()


def test_changed_patch_file_is_refused(pins: Pins, tmp_path: Path) -> None:
    """The patch's own sha256 is pinned: an edited patch is refused before use."""
    import dataclasses

    from j0.article import build as overlay
    from j0.errors import J0Error

    edited = tmp_path / "edited.patch"
    edited.write_text(pins.patch_file.read_text().replace("20261031", "20261030"))
    with pytest.raises(J0Error, match="PATCH_SHA256"):
        overlay.check_patch_file(dataclasses.replace(pins, patch_file=edited))


def test_a_result_other_than_the_pinned_file_is_refused(pins: Pins, base_bytes: bytes) -> None:
    """The patched result is checked against PATCHED_SHA256 too: with another pinned result
    (as if the patch tool misbehaved), the right base and the right patch are still refused."""
    import dataclasses

    from j0.article import build as overlay
    from j0.errors import J0Error

    other = dataclasses.replace(pins, patched_sha256="0" * 64)
    with pytest.raises(J0Error) as info:
        overlay.patch_base(base_bytes, "the wheel's file", other)
    assert str(info.value) == (
        f"the wheel's file: patched file has sha256 {ARTICLE_SHA}, expected {'0' * 64}"
    )
    assert info.value.exit_code == 1


def test_existing_output_is_kept_as_orig(base_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "speculator.py"
    out.write_text("my own experiment\n")
    assert main(["overlay", "build", "--base", str(base_file), "-o", str(out)]) == 0
    assert sha(out) == ARTICLE_SHA
    assert (tmp_path / "speculator.py.orig").read_text() == "my own experiment\n"
    # A second, different experiment does not overwrite the first one's copy.
    out.write_text("my second experiment\n")
    assert main(["overlay", "build", "--base", str(base_file), "-o", str(out)]) == 0
    assert (tmp_path / "speculator.py.orig").read_text() == "my own experiment\n"
    assert (tmp_path / "speculator.py.orig.1").read_text() == "my second experiment\n"
    assert not list(tmp_path.glob(".*.tmp"))


def test_verify_exit_codes(
    article_file: Path, base_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["overlay", "verify", str(article_file)]) == 0
    assert main(["overlay", "verify", str(base_file)]) == 3
    broken = tmp_path / "broken.py"
    broken.write_text(
        article_file.read_text().replace("tl.randint(20261031", "tl.randint(20261030")
    )
    capsys.readouterr()
    assert main(["overlay", "verify", str(broken)]) == 4
    out = capsys.readouterr().out
    assert "present: history buffer" in out
    assert "present: KV dtype log" in out
    assert "-        rnd = tl.randint(20261031" in out
    assert "+        rnd = tl.randint(20261030" in out
    no_dump = tmp_path / "no_dump.py"
    no_dump.write_text(article_file.read_text().replace("VLLM_DFLASH_DUMP", "X"))
    assert main(["overlay", "verify", str(no_dump)]) == 4
    assert "MISSING: dump instrumentation" in capsys.readouterr().out
    assert main(["overlay", "verify", str(tmp_path / "absent.py")]) == 2


def test_build_json_says_what_was_built(
    base_file: Path, pins: Pins, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`overlay build --json OUT`: the text as usual, and in OUT the file written, its sha256 and
    the base's (hashlib's, of the files on disk), its identity and variant."""
    import json

    out, record = tmp_path / "speculator.py", tmp_path / "built.json"
    argv = ["overlay", "build", "--base", str(base_file), "-o", str(out)]
    assert main([*argv, "--json", str(record)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0] == f"wrote {out}" and f"sha256={pins.patched_sha256}" in said[1], said
    built = json.loads(record.read_text())
    assert built["file"] == str(out)
    assert built["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest() == pins.patched_sha256
    assert built["base_sha256"] == hashlib.sha256(base_file.read_bytes()).hexdigest()
    assert (built["identity"], built["variant"], built["audit"]) == ("article", "article", False)
    assert main([*argv, "--json"]) == 0  # again: the same file, unchanged, said on stdout
    again = json.loads(capsys.readouterr().out)
    assert again["said"] == f"{out} already holds this file (unchanged)"


def test_verify_json_names_the_file_its_sha256_and_the_same_exit_code(
    article_file: Path, base_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json: the verdict as one object; its sha256 is hashlib's of the file, its exit code the
    command's own, and `said` the lines the text form prints."""
    import json

    for path, code, identity in ((article_file, 0, "article"), (base_file, 3, "base")):
        assert main(["overlay", "verify", str(path)]) == code
        text = capsys.readouterr().out
        assert main(["overlay", "verify", str(path), "--json"]) == code
        verdict = json.loads(capsys.readouterr().out)
        assert verdict["file"] == str(path)
        assert verdict["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert verdict["identity"] == identity
        assert verdict["exit_code"] == code
        assert "\n".join(verdict["said"]) + "\n" == text
    out = tmp_path / "verdict.json"
    assert main(["overlay", "verify", str(base_file), "--json", str(out)]) == 3
    assert capsys.readouterr().out.startswith(f"{base_file}: ")
    assert json.loads(out.read_text())["identity"] == "base"


def test_verify_a_directory_finds_the_file_where_vllm_keeps_it(
    article_file: Path,
    base_file: Path,
    pins: Pins,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`j0 overlay verify DIR`: a folder holding speculator.py, a site-packages (or checkout) and
    the vllm package folder are all understood; a folder without one says what it looked for."""
    site = tmp_path / "site-packages"
    installed = site / pins.speculator_relpath
    installed.parent.mkdir(parents=True)
    shutil.copy(article_file, installed)
    capsys.readouterr()
    assert main(["overlay", "verify", str(site)]) == 0
    assert capsys.readouterr().out.startswith(f"{installed}: speculator.py sha256=")
    assert main(["overlay", "verify", str(site / "vllm")]) == 0
    assert main(["overlay", "verify", str(installed.parent)]) == 0
    shutil.copy(base_file, installed)
    assert main(["overlay", "verify", str(site)]) == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert main(["overlay", "verify", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"{empty} is a directory" in err and "no such file" not in err
    assert pins.speculator_relpath in err


def test_interrupted_build_leaves_no_half_written_file(base_file: Path, tmp_path: Path) -> None:
    """Kill a build while it writes; OUT must be absent or complete, and no temp file remains."""
    out = tmp_path / "speculator.py"
    # Slow every write down so that the kill lands mid-write.
    code = (
        "import os, sys, time\n"
        "real_write = os.fdopen\n"
        "class Slow:\n"
        "    def __init__(self, f): self.f = f\n"
        "    def write(self, data):\n"
        "        for i in range(0, len(data), 4096):\n"
        "            self.f.write(data[i:i+4096]); self.f.flush(); time.sleep(0.05)\n"
        "    def __getattr__(self, name): return getattr(self.f, name)\n"
        "    def __enter__(self): return self\n"
        "    def __exit__(self, *a): return self.f.__exit__(*a)\n"
        "os.fdopen = lambda *a, **k: Slow(real_write(*a, **k))\n"
        "from j0.cli import main\n"
        f"sys.exit(main(['overlay', 'build', '--base', {str(base_file)!r}, '-o', {str(out)!r}]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "scripts"))
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.time() + 30
    while time.time() < deadline and not any(tmp_path.glob(".speculator.py.*.tmp")):
        time.sleep(0.01)
    assert any(tmp_path.glob(".speculator.py.*.tmp")), "the build never started writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    # A SIGKILL leaves the hidden temp file (nothing can clean up after SIGKILL), never OUT.
    # A SIGINT (Ctrl-C) must clean up after itself and exit 130, j0's code for "interrupted".
    for leftover in tmp_path.glob(".speculator.py.*.tmp"):
        leftover.unlink()
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        # Its own session, and SIGINT at its default whatever the shell that started pytest did
        # with it (a background job or `nohup` ignores SIGINT, and children inherit that).
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 30
    while time.time() < deadline and not any(tmp_path.glob(".speculator.py.*.tmp")):
        time.sleep(0.01)
    assert any(tmp_path.glob(".speculator.py.*.tmp")), "the build never started writing"
    os.kill(proc.pid, signal.SIGINT)  # to that process alone, as Ctrl-C would
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "j0: interrupted" in err
    assert not out.exists()
    assert not list(tmp_path.glob(".speculator.py.*.tmp"))


def test_generated_file_is_ignored_and_untracked(pins: Pins) -> None:
    relpath = str(pins.default_overlay_path.relative_to(ROOT))
    ignored = subprocess.run(["git", "check-ignore", "-q", relpath], cwd=ROOT)
    assert ignored.returncode == 0, f"{relpath} is not ignored by git"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in tracked.stdout.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file():
            assert sha(path) not in (ARTICLE_SHA, BASE_SHA), f"{name} is vLLM's speculator.py"


def test_wheel_reader_rejects_a_wheel_without_the_file(pins: Pins, tmp_path: Path) -> None:
    from j0.errors import J0Error

    fake = tmp_path / f"vllm-{pins.vllm_release}-py3-none-any.whl"
    with zipfile.ZipFile(fake, "w") as archive:
        archive.writestr("vllm/__init__.py", "")
    with pytest.raises(J0Error, match=str(fake)):
        base_sources.from_wheel(pins, cache=tmp_path)
