"""`j0 serve`: the server's command line and switches, checked before vLLM starts.

Real files and real processes: a drafter folder with a config.json, a secret file, and `j0 serve`
run in a subprocess that execs a small program of ours in place of the image's entrypoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.article import serving
from j0.article.spec_config import SpecConfig
from j0.errors import J0Error
from j0.serve import launch as serve_launch

ROOT = Path(__file__).resolve().parents[2]
# Typed from the seed's serving flags, not produced by the code under test.
ARTICLE_15 = (
    '{"method":"dflash","model":"/drafter","num_speculative_tokens":15,"kv_cache_dtype":"auto"}'
)

CAUSAL_CONFIG = {
    "architectures": ["DFlashDraftModel"],
    "num_hidden_layers": 5,
    "dflash_config": {"causal_head": True, "causal": True, "mask_token_id": 151669},
}


def drafter(tmp_path: Path, config: dict[str, object] | None = None) -> Path:
    folder = tmp_path / "drafter"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config or CAUSAL_CONFIG, indent=2) + "\n")
    return folder


def serve_args(folder: Path, n: int = 15, *extra: str) -> list[str]:
    spec = SpecConfig.article(str(folder), n).to_json()
    return ["Qwen/Test", "--speculative-config", spec, "--max-num-seqs", "4", *extra]


def test_render_is_the_seeds_form() -> None:
    assert SpecConfig.article("/drafter", 15).to_json() == ARTICLE_15
    assert SpecConfig.article("/drafter", 7).to_json() == ARTICLE_15.replace("15", "7")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{", "not JSON"),
        (
            '{"method":"dflash","model":"/d","num_speculative_tokens":,"kv_cache_dtype":"auto"}',
            "NUM_SPEC_TOKENS empty",
        ),
        ("[]", "expected a JSON object"),
        (
            '{"method":"eagle3","model":"/d","num_speculative_tokens":7,"kv_cache_dtype":"auto"}',
            "method is 'eagle3'",
        ),
        (
            '{"method":"dflash","model":"/d","num_speculative_tokens":7,"kv_cache_dtype":"fp8"}',
            "keeps the draft's KV cache BF16",
        ),
        (
            '{"method":"dflash","model":"/d","num_speculative_tokens":0,"kv_cache_dtype":"auto"}',
            "positive integer",
        ),
        (
            '{"method":"dflash","model":"/d","num_speculative_tokens":"7","kv_cache_dtype":"auto"}',
            "positive integer",
        ),
        (
            '{"method":"dflash","model":"/d","num_speculative_tokens":true,"kv_cache_dtype":"auto"}',
            "positive integer",
        ),
        (
            '{"method":"dflash","model":"","num_speculative_tokens":7,"kv_cache_dtype":"auto"}',
            "drafter's directory",
        ),
        ('{"model":"/d","num_speculative_tokens":7,"kv_cache_dtype":"auto"}', "no method"),
        ('{"method":"dflash","num_speculative_tokens":7}', "drafter's directory"),
        ('{"method":"dflash","model":"/d","kv_cache_dtype":"auto"}', "positive integer"),
    ],
)
def test_speculative_config_other_than_the_articles_is_refused(raw: str, message: str) -> None:
    with pytest.raises(J0Error, match=message) as info:
        serving.parse_speculative_config(raw)
    assert info.value.exit_code == 64


@pytest.mark.parametrize(
    ("raw", "note"),
    [
        (
            '{"model":"/d","method":"dflash","num_speculative_tokens":7,"kv_cache_dtype":"auto"}',
            "in another key order or spacing",
        ),
        (
            '{"method": "dflash", "model": "/d", '
            '"num_speculative_tokens": 7, "kv_cache_dtype": "auto"}',
            "in another key order or spacing",
        ),
        (
            '{"method":"dflash","model":"/d","num_speculative_tokens":7,"kv_cache_dtype":"auto",'
            '"draft_tensor_parallel_size":1}',
            "sets draft_tensor_parallel_size=1, which the article's did not",
        ),
        (
            '{"method":"dflash","model":"/d","num_speculative_tokens":7}',
            'no "kv_cache_dtype": the draft inherits the target\'s --kv-cache-dtype auto',
        ),
    ],
)
def test_speculative_config_in_another_form_is_accepted_with_a_note(raw: str, note: str) -> None:
    """Only what contradicts the article's setup is refused (method, drafter, draft KV dtype)."""
    spec = serving.parse_speculative_config(raw)
    config = spec.config
    assert (config.method, config.drafter, config.tokens) == ("dflash", "/d", 7)
    assert config.kv_cache_dtype == "auto"
    assert len(spec.notes) == 1 and note in spec.notes[0]
    assert serving.parse_speculative_config(ARTICLE_15).notes == ()


def test_no_draft_kv_dtype_under_an_fp8_target_is_refused(tmp_path: Path) -> None:
    """Without "kv_cache_dtype" the draft inherits --kv-cache-dtype fp8: not the article's BF16."""
    folder = drafter(tmp_path)
    raw = json.dumps({"method": "dflash", "model": str(folder), "num_speculative_tokens": 15})
    args = ["Qwen/Test", "--speculative-config", raw, "--max-num-seqs", "4"]
    env = {"VLLM_DFLASH_CTX_NOISE": "1"}
    plan = serve_launch.plan_serve(args, env, api_key_file=None)
    assert any(f.startswith('note: no "kv_cache_dtype"') for f in plan.facts)
    with pytest.raises(J0Error, match="would inherit the target's --kv-cache-dtype fp8") as info:
        serve_launch.plan_serve([*args, "--kv-cache-dtype", "fp8"], env, api_key_file=None)
    assert info.value.exit_code == 64


def test_tested_token_counts_pass_quietly_and_others_warn(tmp_path: Path) -> None:
    folder = drafter(tmp_path)
    env = {"VLLM_DFLASH_CTX_NOISE": "1", "ENABLE_PREFIX_CACHING": "0"}
    for n in (15, 7):
        plan = serve_launch.plan_serve(serve_args(folder, n), env, api_key_file=None)
        assert plan.warnings == []
        assert f'"num_speculative_tokens":{n},' in " ".join(plan.facts)
    plan = serve_launch.plan_serve(serve_args(folder, 3), env, api_key_file=None)
    assert plan.warnings == [
        "num_speculative_tokens=3: the article tested 15 and 7 only (NUM_SPEC_TOKENS)"
    ]


def test_prefix_caching_knob_and_the_j0_warning(tmp_path: Path) -> None:
    """ENABLE_PREFIX_CACHING 1/0/empty -> vLLM's flag or its default (on); J0 on with prefix
    caching on warns, saying what happens to cached prompt positions."""
    folder = drafter(tmp_path)
    cases = (
        ({"VLLM_DFLASH_CTX_NOISE": "1"}, None, "on (vLLM's default)", True),
        (
            {"VLLM_DFLASH_CTX_NOISE": "1", "ENABLE_PREFIX_CACHING": ""},
            None,
            "on (vLLM's default)",
            True,
        ),
        (
            {"VLLM_DFLASH_CTX_NOISE": "1", "ENABLE_PREFIX_CACHING": "1"},
            "--enable-prefix-caching",
            "on (--enable-prefix-caching)",
            True,
        ),
        (
            {"VLLM_DFLASH_CTX_NOISE": "1", "ENABLE_PREFIX_CACHING": "0"},
            "--no-enable-prefix-caching",
            "off (--no-enable-prefix-caching)",
            False,
        ),
        (
            {"VLLM_DFLASH_CTX_NOISE": "0", "ENABLE_PREFIX_CACHING": "1"},
            "--enable-prefix-caching",
            "on (--enable-prefix-caching)",
            False,
        ),
    )
    for env, flag, fact, warned in cases:
        plan = serve_launch.plan_serve(serve_args(folder), env, api_key_file=None)
        assert plan.args[-1] == (flag or "4"), env
        assert f"prefix caching: {fact}" in plan.facts
        if warned:
            assert plan.warnings == [
                "prefix caching is on with J0 on: J0's history is written only from scheduled "
                "tokens, so for a request whose prompt prefix comes from the cache, J0 draws the "
                "tokens of those positions from whatever its request slot's history row still "
                "holds (another request's tokens); outputs are unchanged, acceptance is not. For "
                "J0 measurements use ENABLE_PREFIX_CACHING=0 (--no-enable-prefix-caching)"
            ]
        else:
            assert plan.warnings == []
    # given in the arguments instead of the knob: the same, no flag added
    plan = serve_launch.plan_serve(
        serve_args(folder, 15, "--no-enable-prefix-caching"),
        {"VLLM_DFLASH_CTX_NOISE": "1"},
        api_key_file=None,
    )
    assert plan.warnings == [] and plan.args.count("--no-enable-prefix-caching") == 1
    with pytest.raises(J0Error, match="ENABLE_PREFIX_CACHING=0 and --enable-prefix-caching"):
        serve_launch.plan_serve(
            serve_args(folder, 15, "--enable-prefix-caching"),
            {"ENABLE_PREFIX_CACHING": "0"},
            api_key_file=None,
        )
    with pytest.raises(J0Error, match="ENABLE_PREFIX_CACHING='yes': expected 1"):
        serve_launch.plan_serve(
            serve_args(folder), {"ENABLE_PREFIX_CACHING": "yes"}, api_key_file=None
        )


def test_max_num_seqs_other_than_four_warns(tmp_path: Path) -> None:
    folder = drafter(tmp_path)
    args = [*serve_args(folder)[:3], "--max-num-seqs=8"]
    plan = serve_launch.plan_serve(args, {}, api_key_file=None)
    assert plan.warnings == ["--max-num-seqs 8: the article ran 4"]
    plan = serve_launch.plan_serve(serve_args(folder)[:3], {}, api_key_file=None)
    assert "no --max-num-seqs" in plan.warnings[0]


def test_facts_name_target_drafter_causality_and_switches(tmp_path: Path) -> None:
    folder = drafter(tmp_path)
    plan = serve_launch.plan_serve(
        serve_args(folder), {"VLLM_DFLASH_CTX_NOISE": "1"}, api_key_file=None
    )
    text = "\n".join(plan.facts)
    assert "target Qwen/Test" in text
    assert f"drafter {folder}: all 5 draft layers causal (decided by dflash_config.causal" in text
    assert "VLLM_DFLASH_CTX_NOISE=1: J0 on" in text
    assert "--max-num-seqs 4" in text
    assert "dumps: off" in text
    plan = serve_launch.plan_serve(serve_args(folder), {}, api_key_file=None)
    assert "VLLM_DFLASH_CTX_NOISE=0: J0 off (baseline)" in plan.facts


@pytest.mark.parametrize(
    ("config", "message", "code"),
    [
        # The released config: causal_head only, so vLLM 0.33 runs full (non-causal) attention.
        ({"num_hidden_layers": 5, "dflash_config": {"causal_head": True}}, "NOT causal", 1),
        (
            {"is_causal": False, "num_hidden_layers": 5, "dflash_config": {"causal": True}},
            "top-level is_causal",
            1,
        ),
        ({"num_hidden_layers": 5}, "no dflash_config", 2),
    ],
)
def test_a_drafter_that_vllm_would_not_run_causally_is_refused(
    tmp_path: Path, config: dict[str, object], message: str, code: int
) -> None:
    folder = drafter(tmp_path, config)
    with pytest.raises(J0Error, match=message) as info:
        serve_launch.plan_serve(serve_args(folder), {}, api_key_file=None)
    assert info.value.exit_code == code
    assert str(folder / "config.json") in str(info.value)


def test_missing_drafter_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(J0Error, match=r"config\.json: no such file") as info:
        serve_launch.plan_serve(serve_args(tmp_path / "none"), {}, api_key_file=None)
    assert info.value.exit_code == 2


@pytest.mark.parametrize("value", ["true", "on", "", "2"])
def test_ctx_noise_must_be_one_or_zero(tmp_path: Path, value: str) -> None:
    folder = drafter(tmp_path)
    with pytest.raises(J0Error, match="VLLM_DFLASH_CTX_NOISE"):
        serve_launch.plan_serve(
            serve_args(folder), {"VLLM_DFLASH_CTX_NOISE": value}, api_key_file=None
        )


def test_dump_switches(tmp_path: Path) -> None:
    folder = drafter(tmp_path)
    dumps = tmp_path / "dumps" / "run1"
    on = {"VLLM_DFLASH_DUMP": str(dumps), "VLLM_DFLASH_DUMP_STEPS": "16"}
    plan = serve_launch.plan_serve(serve_args(folder), on, api_key_file=None)
    assert dumps.is_dir() and plan.warnings == []
    assert any(
        f.startswith(f"dumps: the first 16 single-request draft steps to {dumps}")
        for f in plan.facts
    )
    plan = serve_launch.plan_serve(
        serve_args(folder),
        {"VLLM_DFLASH_DUMP": str(dumps), "VLLM_DFLASH_DUMP_STEPS": "0"},
        api_key_file=None,
    )
    assert plan.warnings == [
        f"VLLM_DFLASH_DUMP={dumps} but VLLM_DFLASH_DUMP_STEPS=0: nothing is dumped"
    ]
    plan = serve_launch.plan_serve(
        serve_args(folder),
        {"VLLM_DFLASH_DUMP": "", "VLLM_DFLASH_DUMP_STEPS": "4"},
        api_key_file=None,
    )
    assert "VLLM_DFLASH_DUMP is empty" in plan.warnings[0]
    plan = serve_launch.plan_serve(
        serve_args(folder), {"VLLM_DFLASH_DUMP_STEPS": ""}, api_key_file=None
    )
    assert plan.env["VLLM_DFLASH_DUMP_STEPS"] == "0" and "dumps: off" in plan.facts
    with pytest.raises(J0Error, match="VLLM_DFLASH_DUMP_STEPS='many'"):
        serve_launch.plan_serve(
            serve_args(folder), {"VLLM_DFLASH_DUMP_STEPS": "many"}, api_key_file=None
        )


def test_api_key_comes_from_the_secret_file_into_the_environment_only(tmp_path: Path) -> None:
    folder = drafter(tmp_path)
    key_file = tmp_path / "api_key"
    key_file.write_text("s3cret-key\n")
    plan = serve_launch.plan_serve(serve_args(folder), {}, api_key_file=key_file)
    assert plan.env["VLLM_API_KEY"] == "s3cret-key"
    assert "s3cret-key" not in " ".join(plan.args + plan.facts + plan.warnings)
    plan = serve_launch.plan_serve(serve_args(folder), {}, api_key_file=Path(os.devnull))
    assert "VLLM_API_KEY" not in plan.env  # /dev/null: compose's secret with API_KEY_FILE unset


def test_hf_token_is_reported_never_shown_and_an_empty_path_is_dropped(tmp_path: Path) -> None:
    folder = drafter(tmp_path)
    home = tmp_path / "hf-home"
    home.mkdir()
    plan = serve_launch.plan_serve(serve_args(folder), {"HF_HOME": str(home)}, api_key_file=None)
    assert "Hugging Face token: none (HF_TOKEN_FILE unset)" in plan.facts
    (home / "token").write_text("hf_abc\n")  # where compose mounts the secret
    plan = serve_launch.plan_serve(
        serve_args(folder), {"HF_HOME": str(home), "HF_TOKEN": "hf_abc"}, api_key_file=None
    )
    assert f"Hugging Face token: from {home / 'token'}" in plan.facts
    assert "hf_abc" not in " ".join(plan.facts + plan.warnings)
    assert "HF_TOKEN is set in the environment" in plan.warnings[0]
    for value in (os.devnull, ""):
        plan = serve_launch.plan_serve(
            serve_args(folder), {"HF_TOKEN_PATH": value}, api_key_file=None
        )
        assert "HF_TOKEN_PATH" not in plan.env


def test_overlay_swap_links_the_installed_file_to_the_mounted_one(tmp_path: Path) -> None:
    dflash = tmp_path / "site" / "vllm" / "dflash"
    (dflash / "__pycache__").mkdir(parents=True)
    installed = dflash / "speculator.py"
    installed.write_text("installed\n")
    stale = dflash / "__pycache__" / "speculator.cpython-311.pyc"
    stale.write_bytes(b"stale")
    other = dflash / "__pycache__" / "utils.cpython-311.pyc"
    other.write_bytes(b"keep")
    mount = tmp_path / "opt" / "speculator.py"
    mount.parent.mkdir()
    mount.write_text("swapped\n")
    plan = serve_launch.ServePlan(args=[], env={})
    serve_launch.apply_overlay_swap(mount, installed, plan)
    assert installed.is_symlink() and installed.read_text() == "swapped\n"
    assert not stale.exists() and other.exists()
    assert plan.facts == [f"overlay swap: {installed} -> {mount} (read-only bind mount)"]
    # A second start of the same container: the link is already there.
    plan = serve_launch.ServePlan(args=[], env={})
    serve_launch.apply_overlay_swap(mount, installed, plan)
    assert plan.facts == [f"overlay swap: {mount} is mounted over {installed}"]


def run_j0_serve(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full_env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT / "scripts"),
        "J0_SERVE_ARGS_READER": "table",  # tests/conftest.py says why
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "j0", "serve", *args],
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_j0_serve_execs_the_entrypoint_with_the_same_arguments(tmp_path: Path) -> None:
    """`j0 serve` replaces itself by --then, with ARGS unchanged and the API key in its env."""
    folder = drafter(tmp_path)
    then = tmp_path / "entrypoint"
    then.write_text(
        "#!/bin/sh\n"
        'echo "entrypoint got: $*"\n'
        'echo "api key: ${VLLM_API_KEY:-none} noise: $VLLM_DFLASH_CTX_NOISE"\n'
        'echo "pythonpath: ${PYTHONPATH:-unset}"\n'
    )
    then.chmod(0o755)
    key_file = tmp_path / "api_key"
    key_file.write_text("k-123\n")
    args = serve_args(folder, 7)
    result = run_j0_serve(
        "--then",
        str(then),
        "--api-key-file",
        str(key_file),
        "--overlay-mount",
        str(tmp_path / "no-overlay"),
        "--",
        *args,
        env={"VLLM_DFLASH_CTX_NOISE": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "entrypoint got: " + " ".join(args),
        "api key: k-123 noise: 1",
        "pythonpath: unset",  # j0's own folder is not handed on to vLLM
    ]
    # This Python's vLLM is the unpatched 0.33.0 wheel: the switch alone does not give J0.
    assert "j0 serve: VLLM_DFLASH_CTX_NOISE=1, but J0 is absent" in result.stderr
    assert "k-123" not in result.stderr


@pytest.mark.parametrize(
    ("which", "fact", "warned", "ran"),
    [
        ("article", "VLLM_DFLASH_CTX_NOISE=1: J0 on (", False, "on"),
        ("base", "VLLM_DFLASH_CTX_NOISE=1, but J0 is absent: ", True, "off"),
        ("other", "VLLM_DFLASH_CTX_NOISE=1: J0 on only if ", False, "unknown"),
    ],
)
def test_j0_on_is_said_only_where_the_running_file_has_it(
    tmp_path: Path,
    article_file: Path,
    base_file: Path,
    which: str,
    fact: str,
    warned: bool,
    ran: str,
) -> None:
    """`j0 serve` names the speculator.py that vLLM will import (a site-packages of ours, first
    on PYTHONPATH) and says "J0 on" only for the article's file; its --json's j0_state says the
    same by the one rule (base: off, another file: unknown)."""
    folder = drafter(tmp_path)
    site = tmp_path / "site"
    target = site / "vllm" / "v1" / "worker" / "gpu" / "spec_decode" / "dflash" / "speculator.py"
    target.parent.mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("raise ImportError('not to be imported')\n")
    source = {"article": article_file, "base": base_file}.get(which)
    target.write_bytes(source.read_bytes() if source else b"# my own speculator\n")
    none = str(tmp_path / "none")
    options = ["--dry-run", "--json", "--api-key-file", os.devnull, "--overlay-mount", none]
    result = subprocess.run(
        [sys.executable, "-m", "j0", "serve", *options, "--", *serve_args(folder)],
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
    lines = result.stderr.splitlines()
    (line,) = [x for x in lines if x.startswith("j0 serve: VLLM_DFLASH_CTX_NOISE=1")]
    assert line.startswith("j0 serve: " + fact), line
    assert str(target) in line
    assert ("J0 was asked for" in result.stderr) is warned
    state = json.loads(result.stdout)["j0_state"]
    assert (state["asked"], state["ran"], state["seen"]) == ("on", ran, False)


def test_drop_own_pythonpath_keeps_the_rest(tmp_path: Path) -> None:
    own = str(ROOT / "scripts")
    env = {"PYTHONPATH": f"{own}:/other/lib"}
    serve_launch.drop_own_pythonpath(env)
    assert env == {"PYTHONPATH": "/other/lib"}
    env = {"PYTHONPATH": "/other/lib"}
    serve_launch.drop_own_pythonpath(env)
    assert env == {"PYTHONPATH": "/other/lib"}


def test_j0_serve_dry_run_and_refusal_exit_codes(tmp_path: Path) -> None:
    folder = drafter(tmp_path)
    common = ["--api-key-file", os.devnull, "--overlay-mount", str(tmp_path / "none")]
    result = run_j0_serve(*common, "--dry-run", "--", *serve_args(folder, 9), env={})
    assert result.returncode == 0, result.stderr
    assert (
        "j0 serve: warning: num_speculative_tokens=9: the article tested 15 and 7" in result.stderr
    )
    assert "checks passed" in result.stderr
    result = run_j0_serve(*common, "--", *serve_args(folder), env={"VLLM_DFLASH_CTX_NOISE": "yes"})
    assert result.returncode == 64
    assert "j0: error: VLLM_DFLASH_CTX_NOISE='yes'" in result.stderr
    result = run_j0_serve(
        *common, "--then", str(tmp_path / "missing"), "--", *serve_args(folder), env={}
    )
    assert result.returncode == 2 and "cannot run" in result.stderr


def _logged(stderr: str) -> tuple[list[str], list[str]]:
    """The facts and warnings among `j0 serve`'s lines on stderr, without their prefix."""
    lines = [
        x.removeprefix("j0 serve: ") for x in stderr.splitlines() if x.startswith("j0 serve: ")
    ]
    warnings = [x.removeprefix("warning: ") for x in lines if x.startswith("warning: ")]
    facts = [x for x in lines if not x.startswith(("warning: ", "checks passed"))]
    return facts, warnings


def test_json_alone_prints_the_plan_and_the_log_lines_stay(tmp_path: Path) -> None:
    """--dry-run --json: the plan on stdout, its facts and warnings the very lines logged on
    stderr (still there: they are the server's log); an API key given in ARGS, in either
    spelling, never shown; the switches are vLLM's environment's."""
    folder = drafter(tmp_path)
    common = ["--api-key-file", os.devnull, "--overlay-mount", str(tmp_path / "none")]
    for key_args in (["--api-key", "k-s3cret"], ["--api_key=k-s3cret"]):
        args = serve_args(folder, 9, *key_args)
        env = {"VLLM_DFLASH_CTX_NOISE": "1", "ENABLE_PREFIX_CACHING": "0"}
        result = run_j0_serve(*common, "--dry-run", "--json", "--", *args, env=env)
        assert result.returncode == 0, result.stderr
        assert "k-s3cret" not in result.stdout + result.stderr
        plan = json.loads(result.stdout)
        assert (plan["kind"], plan["format_version"], plan["started"]) == (
            "j0-serve-plan",
            1,
            False,
        )
        assert plan["program"] == serve_launch.DEFAULT_THEN
        masked = ["--api-key", "***"] if len(key_args) == 2 else ["--api_key=***"]
        # ENABLE_PREFIX_CACHING=0 is applied as vLLM's flag, after the arguments given
        assert plan["args"] == [*serve_args(folder, 9), *masked, "--no-enable-prefix-caching"]
        assert plan["switches"] == env
        facts, warnings = _logged(result.stderr)
        assert (plan["facts"], plan["warnings"]) == (facts, warnings)
        assert any("num_speculative_tokens=9" in w for w in warnings)
        assert "API key: from --api-key" in facts


def test_json_out_is_written_before_vllm_starts(tmp_path: Path) -> None:
    """--json OUT without --dry-run: OUT says started, then --then runs as without --json."""
    folder = drafter(tmp_path)
    then = tmp_path / "entrypoint"
    then.write_text('#!/bin/sh\necho "entrypoint got: $*"\n')
    then.chmod(0o755)
    out = tmp_path / "plan.json"
    args = serve_args(folder)
    common = ["--api-key-file", os.devnull, "--overlay-mount", str(tmp_path / "none")]
    result = run_j0_serve(*common, "--then", str(then), "--json", str(out), "--", *args, env={})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["entrypoint got: " + " ".join(args)]
    plan = json.loads(out.read_text())
    assert plan["started"] is True and plan["program"] == str(then)
    assert plan["args"] == args
    assert (plan["facts"], plan["warnings"]) == _logged(result.stderr)


def test_an_empty_hf_endpoint_is_the_hub(tmp_path: Path) -> None:
    """`HF_ENDPOINT=` in .env reaches the container as an empty value; vLLM must not get it."""
    folder = drafter(tmp_path)
    plan = serve_launch.plan_serve(serve_args(folder), {"HF_ENDPOINT": ""}, api_key_file=None)
    assert "HF_ENDPOINT" not in plan.env
    assert "HF_ENDPOINT is empty: the Hub (https://huggingface.co)" in plan.facts
    plan = serve_launch.plan_serve(
        serve_args(folder), {"HF_ENDPOINT": "http://mirror:1"}, api_key_file=None
    )
    assert plan.env["HF_ENDPOINT"] == "http://mirror:1"
