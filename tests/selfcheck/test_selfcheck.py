"""`j0 selfcheck`: the article's file passes, vLLM's base has no J0, and broken copies fail.

The kernels are vLLM 0.33.0's real code (the article's file made from the wheel with GNU patch,
see conftest.py) run by Triton's interpreter on the CPU, in child processes that set
TRITON_INTERPRET=1 themselves. The broken copies are made here by editing the article's file:
each edit is one way J0 could be subtly wrong, and each must exit 1.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from j0.cli import main
from j0.pins import Pins
from j0.reference import philox
from j0.selfcheck import batches
from j0.selfcheck import expected as reference
from j0.selfcheck import kernels as selfcheck
from j0.selfcheck.zygote import ZYGOTES_ENV

ROOT = Path(__file__).resolve().parents[2]


# --- The battery and the reference, without any kernel ----------------------------------------


@pytest.fixture(scope="module")
def battery() -> list[batches.Case]:
    return batches.battery(0, 24)


def test_battery_is_varied(battery: list[batches.Case]) -> None:
    reqs = [(c, s, r) for c in battery for s in c.steps for r in s.requests]
    kinds = Counter(r.kind for _, _, r in reqs)
    assert kinds[batches.PREFILL_CHUNK] > 20 and kinds[batches.PREFILL_LAST] > 20
    assert kinds[batches.DECODE] > 40
    assert {c.num_spec for c in battery} == {7, 15}
    # Request slots other than 0, and batch order different from slot order.
    assert len({r.req_state_idx for _, _, r in reqs}) >= 10
    assert any(r.req_state_idx != i for _, s, _ in reqs for i, r in enumerate(s.requests))
    # Batches of one request up to max_num_seqs requests.
    assert any(s.num_reqs == 1 for c in battery for s in c.steps)
    assert any(
        s.num_reqs == c.max_num_seqs and c.max_num_seqs >= 4 for c in battery for s in c.steps
    )
    # Decode steps with none and with all drafts rejected, and partial rejections.
    decodes = [r for _, _, r in reqs if r.kind == batches.DECODE]
    assert any(r.num_rejected == 0 and r.num_tokens > 1 for r in decodes)
    assert any(r.num_rejected == r.num_tokens - 1 > 0 for r in decodes)
    assert any(0 < r.num_rejected < r.num_tokens - 1 for r in decodes)
    # Short contexts (L of a few tokens) and contexts at max_model_len.
    assert any(len(r.committed) <= 3 for _, _, r in reqs)
    assert any(len(r.committed) == c.max_model_len for c, _, r in reqs)
    assert any(c.pool_pad > 0 for c in battery) and any(c.pool_pad == 0 for c in battery)
    # Requests that live for several steps (the history carries over).
    longest = max(Counter((c.index, r.req_state_idx) for c, _, r in reqs).values())
    assert longest >= 5


def test_battery_replays_one_case() -> None:
    a, b = batches.make_case(3, 5), batches.make_case(3, 5)
    assert a.describe() == b.describe()
    for sa, sb in zip(a.steps, b.steps, strict=True):
        for ra, rb in zip(sa.requests, sb.requests, strict=True):
            assert (ra.tokens == rb.tokens).all() and ra.anchor == rb.anchor


def test_reference_draws_follow_the_seed_text(pins: Pins) -> None:
    # Slot k takes committed[r mod L], r = randint(seed, req_state_idx * 64 + k) as uint32.
    draws = reference.draws(pins.j0_seed, 5, 15, committed=100)
    r = philox.randint(pins.j0_seed, np.arange(5 * 64 + 1, 5 * 64 + 16, dtype=np.uint32))
    assert [d.r for d in draws] == [int(x) for x in r]
    assert [d.index for d in draws] == [int(x) % 100 for x in r]


def test_reference_history_keeps_only_committed_tokens() -> None:
    case = batches.make_case(0, 3)
    history = batches.pool_view(batches.initial_pool(case), case).copy()
    for step in case.steps:
        new = reference.update_history(history, case, step)
        for req in step.requests:
            accepted = req.num_tokens - req.num_rejected
            apos = req.start_pos + accepted
            row = new[req.req_state_idx]
            assert row[apos] == req.anchor
            # Rejected positions past the anchor are untouched.
            old = history[req.req_state_idx]
            assert (
                row[apos + 1 : req.start_pos + req.num_tokens]
                == old[apos + 1 : req.start_pos + req.num_tokens]
            ).all()
        history = new


def test_reference_j0_off_is_the_mask_token() -> None:
    case = batches.make_case(0, 0)
    step = case.steps[0]
    before = batches.initial_outputs(case, 0)
    off, _ = reference.expected_outputs(case, step, before, 1, j0=False)
    on, draws = reference.expected_outputs(case, step, before, 1, j0=True)
    nq = case.num_query_per_req
    for i, req in enumerate(step.requests):
        assert off["input_ids"][i * nq] == on["input_ids"][i * nq] == req.anchor
        assert (off["input_ids"][i * nq + 1 : (i + 1) * nq] == case.mask_token).all()
        for k in range(1, nq):
            assert on["input_ids"][i * nq + k] == req.committed[draws[(i, k)].index]
    for name in batches.OUTPUT_SPECS:
        if name != "input_ids":
            assert (off[name] == on[name]).all(), name


def test_static_check(tmp_path: Path, base_file: Path, article_file: Path) -> None:
    assert selfcheck.static_check(article_file)[0] == selfcheck.OK
    code, why = selfcheck.static_check(base_file)
    assert code == selfcheck.NO_J0 and "ctx_pool" in why
    broken = tmp_path / "speculator.py"
    broken.write_text("def prepare_dflash_inputs(:\n")
    assert selfcheck.static_check(broken)[0] == selfcheck.DEVIATES


# --- The CLI on real files ------------------------------------------------------------------------


def test_base_has_no_j0(base_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selfcheck", "--speculator", str(base_file), "--device", "cpu"]) == 2
    assert "no J0" in capsys.readouterr().err


def test_default_is_the_installed_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    # The test environment installs vLLM 0.33.0 as released: its file has no J0.
    assert main(["selfcheck", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "site-packages" in err and "speculator.py" in err


def test_missing_file_is_exit_2(tmp_path: Path) -> None:
    assert main(["selfcheck", "--speculator", str(tmp_path / "nope.py")]) == 2


def test_syntax_error_is_exit_1(tmp_path: Path, article_file: Path) -> None:
    bad = tmp_path / "speculator.py"
    bad.write_text(article_file.read_text().replace("def _ctx_pool_write_kernel(", "def (", 1))
    assert main(["selfcheck", "--speculator", str(bad), "--device", "cpu"]) == 1


def _cli(*args: str) -> tuple[int, str, float]:
    """Run the installed-style command `python -m j0 selfcheck ...` as a user would."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET",)}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "j0", "selfcheck", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started


@pytest.mark.slow
def test_article_passes_on_cpu(article_file: Path) -> None:
    """The default battery on the article's file, J0 off and on, through the real CLI."""
    code, out, seconds = _cli("--speculator", str(article_file), "--device", "cpu")
    assert code == 0, out[-4000:]
    assert "PASS" in out and "J0 matches the reference" in out
    assert "Failed to import from vllm._C" not in out  # vLLM's noise, unrelated to the check
    print(f"j0 selfcheck (default battery, cpu) took {seconds:.1f} s")


# Each edit: (name, text in the article's file, replacement). All are subtle J0 faults.
def _variants(seed: int) -> list[tuple[str, str, str]]:
    return [
        ("other seed", f"tl.randint({seed},", f"tl.randint({seed + 1},"),
        ("L one short", "committed = last_valid_pos + 2", "committed = last_valid_pos + 1"),
        ("L one long", "committed = last_valid_pos + 2", "committed = last_valid_pos + 3"),
        ("offset * 63", "req_state_idx * 64 + query_off", "req_state_idx * 63 + query_off"),
        (
            "slot 0 replaced",
            "use_noise = is_query & (query_off > 0)",
            "use_noise = is_query & (query_off >= 0)",
        ),
        (
            "history from rejected tokens",
            "    m = j < num_valid_ctx\n",
            "    m = j < (ctx_end - ctx_start)\n",
        ),
        (
            "anchor one position late",
            "bpos = tl.load(target_positions_ptr + valid_ctx_end - 1) + 1",
            "bpos = tl.load(target_positions_ptr + valid_ctx_end - 1) + 2",
        ),
        (
            "anchor after the rejected tokens",
            "bpos = tl.load(target_positions_ptr + valid_ctx_end - 1) + 1",
            "bpos = tl.load(target_positions_ptr + ctx_end - 1) + 1",
        ),
        (
            "int32 modulo",
            "ridx = (rnd % committed.to(tl.uint32)).to(tl.int64)",
            "ridx = (rnd.to(tl.int32) % committed.to(tl.int32)).to(tl.int64)",
        ),
        (
            "row stride taken as max_model_len",
            "ctx_pool_ptr + req_state_idx.to(tl.int64) * ctx_pool_stride + ridx",
            "ctx_pool_ptr + req_state_idx.to(tl.int64) * max_model_len + ridx",
        ),
        (
            "history row by batch index",
            "ctx_pool_ptr + req_state_idx.to(tl.int64) * ctx_pool_stride + ridx",
            "ctx_pool_ptr + req_idx.to(tl.int64) * ctx_pool_stride + ridx",
        ),
        (
            "anchor always the bonus token",
            "        if tl.load(num_sampled_ptr + req_idx) > 0:\n            bonus = tl.load(",
            "        if tl.load(num_sampled_ptr + req_idx) >= 0:\n            bonus = tl.load(",
        ),
        (
            "L ignores rejections",
            "committed = last_valid_pos + 2",
            "committed = tl.load(target_positions_ptr + ctx_end - 1) + 2",
        ),
        (
            "J0 off path changed",
            "input_id = tl.where(is_bonus, bonus_token, parallel_drafting_token_id)",
            "input_id = tl.where(is_bonus, bonus_token, parallel_drafting_token_id + 1)",
        ),
        (
            "L from this step's tokens only",
            "committed = last_valid_pos + 2",
            "committed = num_valid_ctx + 1",
        ),
        (
            "history indexed by chunk offset",
            "tl.store(base + pos, tok, mask=m & (pos < max_model_len))",
            "tl.store(base + j, tok, mask=m & (pos < max_model_len))",
        ),
        (
            "history of the first block only",
            "    j = block_idx * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n    m = j < num_valid_ctx",
            "    j = tl.arange(0, BLOCK_SIZE)\n    m = j < num_valid_ctx",
        ),
        (
            "7 Philox rounds",
            "(req_state_idx * 64 + query_off).to(tl.uint32))",
            "(req_state_idx * 64 + query_off).to(tl.uint32), n_rounds=7)",
        ),
        (
            "history's bonus token by batch index",
            "            bonus = tl.load(last_sampled_ptr + req_state_idx).to(tl.int32)\n"
            "        else:\n            bonus = tl.load(next_prefill_tokens_ptr + req_state_idx)"
            ".to(tl.int32)\n        bpos",
            "            bonus = tl.load(last_sampled_ptr + req_idx).to(tl.int32)\n"
            "        else:\n            bonus = tl.load(next_prefill_tokens_ptr + req_state_idx)"
            ".to(tl.int32)\n        bpos",
        ),
        (
            "history written with row stride max_model_len",
            "base = ctx_pool_ptr + req_state_idx.to(tl.int64) * ctx_pool_stride\n",
            "base = ctx_pool_ptr + req_state_idx.to(tl.int64) * max_model_len\n",
        ),
        (
            "history written by batch index",
            "base = ctx_pool_ptr + req_state_idx.to(tl.int64) * ctx_pool_stride\n",
            "base = ctx_pool_ptr + req_idx.to(tl.int64) * ctx_pool_stride\n",
        ),
        (
            "write kernel's stride from the shape",
            "            ctx_pool.stride(0),\n            max_model_len,\n            BLOCK_SIZE=",
            "            ctx_pool.shape[1],\n            max_model_len,\n            BLOCK_SIZE=",
        ),
        (
            "switch renamed",
            'os.environ.get("VLLM_DFLASH_CTX_NOISE", "0") == "1"',
            'os.environ.get("VLLM_DFLASH_CTX_NOISY", "0") == "1"',
        ),
        (
            "switch on by default",
            'os.environ.get("VLLM_DFLASH_CTX_NOISE", "0") == "1"',
            'os.environ.get("VLLM_DFLASH_CTX_NOISE", "1") == "1"',
        ),
        (
            "history one column short",
            "(self.max_num_reqs, self.max_model_len) if self.ctx_noise",
            "(self.max_num_reqs, self.max_model_len - 1) if self.ctx_noise",
        ),
        (
            "history never passed",
            "ctx_pool=self.ctx_pool if self.ctx_noise else None,",
            "ctx_pool=None,",
        ),
        (
            "history passed with J0 off",
            "ctx_pool=self.ctx_pool if self.ctx_noise else None,",
            "ctx_pool=self.ctx_pool,",
        ),
        (
            "does not import",
            "import os\n",
            "import os\nimport j0_no_such_module\n",
        ),
    ]


def _write_after_draw(text: str) -> str:
    """The history written after the draw: the write kernel's launch moved below the other."""
    a = text.index("    if ctx_pool is not None:\n        _ctx_pool_write_kernel")
    b = text.index("    _prepare_dflash_inputs_kernel[(num_reqs, num_blocks)](")
    return text[:a] + text[b:] + text[a:b]


@pytest.fixture(scope="module")
def broken_copies(article_file: Path, pins: Pins, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("broken")
    text = article_file.read_text()
    files: dict[str, Path] = {}
    for n, (name, old, new) in enumerate(_variants(pins.j0_seed)):
        assert text.count(old) == 1, f"{name}: {old!r} is not once in the article's file"
        path = out / f"v{n:02d}.py"
        path.write_text(text.replace(old, new))
        files[name] = path
    path = out / "v99.py"
    path.write_text(_write_after_draw(text))
    files["history written after the draw"] = path
    return files


@pytest.mark.slow
def test_broken_copies_fail(broken_copies: dict[str, Path]) -> None:
    """All copies in one worker process (one vLLM import); each must report exit 1."""
    env = {**os.environ, **selfcheck.INTERPRETER_ENV}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    env["VLLM_LOGGING_LEVEL"] = "ERROR"
    results = next(iter(broken_copies.values())).parent / "results.json"
    cmd = [sys.executable, "-m", "j0.selfcheck", "--device", "cpu", "--json", str(results)]
    for path in broken_copies.values():
        cmd += ["--speculator", str(path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert "RESULT " not in out  # no machine-only lines in what a user reads
    codes = {Path(r["file"]).name: r["code"] for r in json.loads(results.read_text())}
    for name, path in broken_copies.items():
        assert codes.get(path.name) == 1, f"{name} ({path.name}) was not caught:\n{out[-3000:]}"
    assert proc.returncode == 1
    assert "cannot import" in out  # the copy that does not import says why


@pytest.mark.slow
def test_mismatch_report_and_replay(broken_copies: dict[str, Path]) -> None:
    path = broken_copies["history from rejected tokens"]
    code, out, _ = _cli("--speculator", str(path), "--device", "cpu", "--cases", "8")
    assert code == 1, out[-3000:]
    assert "J0 deviates: case" in out and "history row" in out and "rejected" in out
    replay = re.search(r"replay: (j0 selfcheck .*)$", out, re.MULTILINE)
    assert replay is not None, out[-3000:]
    args = shlex.split(replay.group(1))[2:]
    assert "--case" in args and "--seed" in args
    again, out2, _ = _cli(*args)
    assert again == 1, out2[-3000:]
    first = re.search(r"J0 deviates: (.*)", out)
    second = re.search(r"J0 deviates: (.*)", out2)
    assert first and second and first.group(1) == second.group(1)


@pytest.mark.slow
def test_a_crash_while_checking_is_exit_1(tmp_path: Path) -> None:
    """A file that kills its process (as an out-of-bounds kernel access can) fails, not crashes."""
    path = tmp_path / "speculator.py"
    path.write_text(
        "import os, signal\n"
        "os.kill(os.getpid(), signal.SIGSEGV)\n"
        "def prepare_dflash_inputs(ctx_pool=None):\n"
        "    pass\n"
    )
    code, out, _ = _cli("--speculator", str(path), "--device", "cpu", "--cases", "1")
    assert code == 1, out[-3000:]
    assert "died of signal" in out


@pytest.mark.gpu
def test_article_passes_on_cuda(pins: Pins, tmp_path: Path) -> None:
    """The compiled kernels against the CPU reference. The article's file is made from the
    installed vLLM (a GPU machine may have no copy of the wheel)."""
    from conftest import cuda_gpu_here

    if not cuda_gpu_here():
        pytest.skip("no CUDA GPU")
    from j0.article import build as overlay
    from j0.engine.source import base_sources

    base = base_sources.from_installed(pins)
    article = tmp_path / "speculator.py"
    article.write_bytes(overlay.patch_base(base.data, base.origin, pins))
    code, out, _ = _cli("--speculator", str(article), "--device", "cuda", "--cases", "48")
    assert code == 0, out[-4000:]
    assert "J0 matches the reference: 48 cases" in out


@pytest.mark.slow
def test_a_missing_vllm_dependency_is_exit_69_not_a_verdict(article_file: Path) -> None:
    """vLLM installed with --no-deps and nothing else: its module's import stops at `cbor2`
    (vllm/utils/hashing.py imports it). The real vLLM module and the real CLI run; only `cbor2` is
    made unimportable, by tests/selfcheck/hide_modules/sitecustomize.py. The answer is exit 69,
    naming the package and the one command that installs what the check needs, and never a
    FAIL line (which would read as "the article's file is broken")."""
    os.environ["J0_TEST_HIDE_MODULES"] = "cbor2"
    zygotes = os.environ.pop(ZYGOTES_ENV, None)  # a worker of its own (test_zygote.py: with one)
    old_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).parent / "hide_modules"), old_path) if p
    )
    try:
        code, out, _ = _cli("--speculator", str(article_file), "--device", "cpu", "--cases", "1")
    finally:
        del os.environ["J0_TEST_HIDE_MODULES"]
        if zygotes is not None:
            os.environ[ZYGOTES_ENV] = zygotes
        if old_path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old_path
    assert code == 69, out[-3000:]
    assert "`cbor2`" in out and "scripts/selfcheck-setup" in out, out[-3000:]
    assert "FAIL" not in out and "Traceback" not in out and "RESULT" not in out, out[-3000:]
    assert "Nothing was checked" in out


def test_the_setup_script_installs_the_extra_and_vllm_without_deps() -> None:
    """scripts/selfcheck-setup, the one command the message names, installs pyproject's
    `selfcheck` extra (which lists cbor2 among vLLM's import dependencies) and vLLM --no-deps at
    the pinned release."""
    import tomllib

    script = (ROOT / "scripts" / "selfcheck-setup").read_text()
    assert "pip install -e '.[selfcheck]'" in script
    assert 'pip install --no-deps "vllm==$release"' in script and "VLLM_RELEASE" in script
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["selfcheck"]
    names = {re.split(r"[<>=]", x)[0].lower() for x in extra}
    assert {"numpy", "torch", "triton", "cbor2", "pydantic", "msgspec"} <= names
