"""The prefix-safe variant: a second patch on top of the article's file, built, pinned, verified
and named (identity `prefix-safe`, never `article`) wherever the article's file is.

The base file is vLLM 0.33.0's, read from the real wheel (the `base_file` fixture); the article's
file is made from it with GNU patch (`article_file`), the variant from that with `git apply`, not
with j0's code. The hashes are typed here.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from j0.article import build as overlay
from j0.article.identity import ARTICLE, PREFIX_SAFE, identify
from j0.cli import main
from j0.engine.server.server_log import parse as parse_log
from j0.errors import J0Error
from j0.pins import Pins, load_pins

ROOT = Path(__file__).resolve().parents[2]
ARTICLE_SHA = "0f0a4d209568e41ee28389b33bd30803babee67cea28730e3475680cc1343974"
PREFIX_SAFE_SHA = "38d5625e42113ced60fe43ef47434d0b88bed0e5f7217787d81efb441dce6d02"
PATCH = ROOT / "overlay" / "jetspec-j0-prefix-safe.patch"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def variant_file(article_file: Path, pins: Pins, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The variant made by `git apply` of the committed patch on the article's file."""
    work = tmp_path_factory.mktemp("variant")
    target = work / pins.speculator_relpath
    target.parent.mkdir(parents=True)
    shutil.copy(article_file, target)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "apply", "-p1", str(PATCH)], cwd=work, check=True)
    return target


def test_the_pins_hold_the_variant_and_the_article_stays_the_default(pins: Pins) -> None:
    assert pins.values["PREFIX_SAFE_SHA256"] == PREFIX_SAFE_SHA
    assert pins.values["PREFIX_SAFE_PATCH_FILE"] == "overlay/jetspec-j0-prefix-safe.patch"
    assert pins.values["PREFIX_SAFE_PATCH_SHA256"] == sha(PATCH)
    assert pins.patched_sha256 == ARTICLE_SHA


def test_git_apply_on_the_articles_file_gives_the_pinned_variant(variant_file: Path) -> None:
    assert sha(variant_file) == PREFIX_SAFE_SHA
    text = variant_file.read_text()
    # The one addition the variant makes: the fill at admission, from vLLM's all_token_ids.
    assert "def fill_ctx_pool_cached_prefix(" in text
    assert "fill_ctx_pool_cached_prefix(\n                self.ctx_pool," in text
    assert 'frame.f_code.co_name == "init_speculator"' in text


def test_the_patch_touches_one_file_only() -> None:
    headers = [x for x in PATCH.read_text().splitlines() if x.startswith(("--- ", "+++ "))]
    assert headers == [
        "--- a/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py",
        "+++ b/vllm/v1/worker/gpu/spec_decode/dflash/speculator.py",
    ]


@pytest.mark.parametrize("tool", ["git", "patch"])
def test_overlay_build_variant(tool: str, base_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "speculator.py"
    args = ["overlay", "build", "--base", str(base_file), "-o", str(out), "--tool", tool]
    assert main([*args, "--variant", "prefix-safe"]) == 0
    assert sha(out) == PREFIX_SAFE_SHA
    article = tmp_path / "article.py"
    assert main(["overlay", "build", "--base", str(base_file), "-o", str(article)]) == 0
    assert sha(article) == ARTICLE_SHA  # the default stays the article's file, byte for byte


def test_a_variant_without_o_goes_beside_the_articles_reference(
    base_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without -o the variant is written to overlay/prefix-safe/<relpath> of the checkout: a copy
    of the checkout's pins in a J0_HOME keeps the real checkout untouched."""
    home = tmp_path / "home"
    (home / "overlay").mkdir(parents=True)
    for name in ("pins.env", "jetspec-j0.patch", "jetspec-j0-prefix-safe.patch"):
        shutil.copy(ROOT / "overlay" / name, home / "overlay" / name)
    mp = pytest.MonkeyPatch()
    mp.setenv("J0_HOME", str(home))
    try:
        code = main(["overlay", "build", "--base", str(base_file), "--variant", "prefix-safe"])
        pins = load_pins(home)
    finally:
        mp.undo()
    assert code == 0
    out = home / "overlay" / "prefix-safe" / pins.speculator_relpath
    assert sha(out) == PREFIX_SAFE_SHA
    assert not pins.default_overlay_path.exists()
    assert "identity=prefix-safe" in capsys.readouterr().out


def test_verify_names_the_variant_with_its_own_exit_code(
    variant_file: Path, article_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["overlay", "verify", str(variant_file)]) == 5
    out = capsys.readouterr().out
    assert f"sha256={PREFIX_SAFE_SHA} identity=prefix-safe" in out
    assert "identity=article" not in out
    assert "not the file the article's numbers were made with" in out
    assert main(["overlay", "verify", str(article_file)]) == 0  # 0 still means the article's


def test_identity_says_prefix_safe_never_article(variant_file: Path, pins: Pins) -> None:
    identity = identify(variant_file.read_bytes(), pins)
    assert identity.kind == PREFIX_SAFE != ARTICLE
    assert "identity=prefix-safe (the article's J0 file with the prefix-safe patch)" in (
        identity.line()
    )


def test_the_identity_line_is_read_back_with_its_hyphen(pins: Pins) -> None:
    line = (
        "j0-entrypoint: vLLM 0.33.0 commit c50aca14 (the pinned commit), /x/speculator.py: "
        f"speculator.py sha256={PREFIX_SAFE_SHA} identity=prefix-safe (the article's J0 file with"
        " the prefix-safe patch)"
    )
    facts = parse_log(line + "\n", "server.log")
    assert (facts.identity, facts.speculator_sha256) == ("prefix-safe", PREFIX_SAFE_SHA)


def test_a_changed_variant_patch_is_refused(pins: Pins, base_bytes: bytes, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "overlay").mkdir(parents=True)
    for name in ("pins.env", "jetspec-j0.patch"):
        shutil.copy(ROOT / "overlay" / name, home / "overlay" / name)
    (home / "overlay" / "jetspec-j0-prefix-safe.patch").write_text(
        PATCH.read_text().replace("filled += 1", "filled += 2")
    )
    with pytest.raises(J0Error) as info:
        overlay.build_variant(base_bytes, "base.py", load_pins(home), "prefix-safe")
    assert "jetspec-j0-prefix-safe.patch: sha256" in str(info.value)
    assert pins.values["PREFIX_SAFE_PATCH_SHA256"] in str(info.value)
    assert "the committed patch was changed" in str(info.value)


def test_a_variant_file_of_another_sha256_is_refused(base_bytes: bytes, tmp_path: Path) -> None:
    """An edited patch whose own sha256 was re-pinned still gives another file than the pinned
    PREFIX_SAFE_SHA256: refused, naming both hashes."""
    home = tmp_path / "home"
    (home / "overlay").mkdir(parents=True)
    shutil.copy(ROOT / "overlay" / "jetspec-j0.patch", home / "overlay" / "jetspec-j0.patch")
    edited = home / "overlay" / "jetspec-j0-prefix-safe.patch"
    edited.write_text(PATCH.read_text().replace("filled += 1", "filled += 2"))
    pins_text = (ROOT / "overlay" / "pins.env").read_text()
    old_sha = load_pins(ROOT).values["PREFIX_SAFE_PATCH_SHA256"]
    (home / "overlay" / "pins.env").write_text(pins_text.replace(old_sha, sha(edited)))
    with pytest.raises(J0Error) as info:
        overlay.build_variant(base_bytes, "base.py", load_pins(home), "prefix-safe")
    assert "the prefix-safe file has sha256 " in str(info.value)
    assert f"expected {PREFIX_SAFE_SHA}" in str(info.value)


def test_the_variant_patch_goes_only_on_the_articles_file(pins: Pins, base_bytes: bytes) -> None:
    from j0.article.variants import variant_patch

    with pytest.raises(J0Error) as info:
        overlay.patch_article(base_bytes, "base.py", pins, variant_patch(pins, "prefix-safe"))
    assert "goes on top of the article's file" in str(info.value)
    assert ARTICLE_SHA in str(info.value)


def test_an_unknown_variant_is_a_usage_error(base_file: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["overlay", "build", "--base", str(base_file), "--variant", "other"])
    assert info.value.code == 64 or info.value.code == 2


def test_j0_serve_names_the_variant_and_drops_the_prefix_caching_warning(
    tmp_path: Path, variant_file: Path, article_file: Path
) -> None:
    """`j0 serve --dry-run` with the variant installed (a site-packages of ours, first on
    PYTHONPATH): "J0 on" names the prefix-safe file, and the warning about prefix caching, which
    concerns the article's file, is replaced by a fact; with the article's file it stays."""
    import json
    import os
    import sys

    folder = tmp_path / "drafter"
    folder.mkdir()
    config = {
        "architectures": ["DFlashDraftModel"],
        "dflash_config": {"causal_head": True, "causal": True, "mask_token_id": 151669},
    }
    (folder / "config.json").write_text(json.dumps(config))
    spec = (
        f'{{"method":"dflash","model":"{folder}","num_speculative_tokens":15,'
        '"kv_cache_dtype":"auto"}'
    )
    none = str(tmp_path / "none")
    outputs = {}
    for name, source in (("variant", variant_file), ("article", article_file)):
        site = tmp_path / name / "site"
        target = site / "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"
        target.parent.mkdir(parents=True)
        (site / "vllm" / "__init__.py").write_text("raise ImportError('not to be imported')\n")
        target.write_bytes(source.read_bytes())
        options = ["--dry-run", "--api-key-file", "/dev/null", "--overlay-mount", none]
        served = ["Qwen/Test", "--speculative-config", spec, "--max-num-seqs", "4"]
        result = subprocess.run(
            [sys.executable, "-m", "j0", "serve", *options, "--", *served],
            env={
                "PATH": os.environ["PATH"],
                "J0_SERVE_ARGS_READER": "table",  # tests/conftest.py says why
                "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "scripts")]),
                "VLLM_DFLASH_CTX_NOISE": "1",
            },
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        outputs[name] = result.stderr
    variant = outputs["variant"]
    assert "is the prefix-safe variant of the article's J0 file, identity=prefix-safe" in variant
    assert "warning: prefix caching is on with J0 on" not in variant
    assert "prefix caching with J0 on: safe with this file" in variant
    assert "the article's J0 file)" not in variant
    assert "warning: prefix caching is on with J0 on" in outputs["article"]


def test_j0_status_says_prefix_safe_never_article(tmp_path: Path) -> None:
    """`j0 status` on a server log whose identity line names the variant: the speculator check
    passes as the prefix-safe variant, and the verdict says it is not the article's file. The
    server is our vLLM stand-in on 127.0.0.1 (tests/servers/vllm/server.py)."""
    import json

    from servers.vllm.server import VllmStandIn
    from status.status_logs import article_log, status_json

    log = tmp_path / "server.log"
    log.write_text(
        article_log(sha=PREFIX_SAFE_SHA, kind="prefix-safe (the article's J0 file with the patch)")
    )
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        code, printed = status_json(vllm.url, "--log", str(log))
    value = json.loads(printed)
    assert code == 0, value["reasons"]
    assert value["identity"] == "prefix-safe" and value["speculator_sha256"] == PREFIX_SAFE_SHA
    from j0.status.status_report import StatusReport

    verdict = StatusReport.from_json(value).verdict()
    assert "prefix-safe speculator.py (identity=prefix-safe, not the article's file)" in verdict
    # A log naming prefix-safe with another sha256 is not taken for the variant.
    log.write_text(article_log(sha="ab" * 32, kind="prefix-safe (forged)"))
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, seed=1) as vllm:
        code, printed = status_json(vllm.url, "--log", str(log))
    assert code == 1
    assert "speculator.py is identity=prefix-safe, not the article's file" in printed


@pytest.mark.parametrize("installed", ["article", "base"])
def test_the_gpu_scripts_files_phase_makes_both_files_from_the_install(
    installed: str, article_file: Path, base_file: Path, pins: Pins, tmp_path: Path
) -> None:
    """scripts/prefix-safe-h200.sh's `files` phase on a site-packages of ours holding the article's
    file (as scripts/gpu-engine/install leaves it) or vLLM's base; `restore` puts it back. The
    GPU phases need vLLM on a GPU and are not run here."""
    import os
    import sys

    site = tmp_path / "site"
    target = site / pins.speculator_relpath
    target.parent.mkdir(parents=True)
    original = (article_file if installed == "article" else base_file).read_bytes()
    target.write_bytes(original)
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "SITE": str(site),
        "WORK": str(tmp_path / "work"),
    }
    script = str(ROOT / "scripts" / "prefix-safe-h200.sh")
    run = subprocess.run(
        [script, str(tmp_path / "results"), "files"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert sha(tmp_path / "work" / "article.py") == ARTICLE_SHA
    assert sha(tmp_path / "work" / "prefix-safe.py") == PREFIX_SAFE_SHA
    assert "identity=prefix-safe" in run.stdout
    target.write_bytes(b"# something else\n")
    done = subprocess.run(
        [script, str(tmp_path / "results"), "restore"], cwd=ROOT, env=env, check=False
    )
    assert done.returncode == 0 and target.read_bytes() == original
    wrong = subprocess.run(
        [script, str(tmp_path / "results"), "nonsense"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert wrong.returncode == 64 and "phase nonsense" in wrong.stderr
