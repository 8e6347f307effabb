"""`j0 selfcheck --audit`: the J0 audit (overlay/jetspec-j0-audit.patch) run by the real kernels.

The article's file (made from vLLM 0.33.0's wheel with GNU patch, conftest.py), the prefix-safe
variant (the committed patch applied with git apply) and broken copies of the article's file run
in Triton's interpreter on the CPU; the audit patch is applied to each by the check, and the
records the audit writes are judged by `j0 dumps audit`. Planted faults: the history row written
by batch index instead of request slot (wrong slot), the draw read from the neighbouring request
slot's row (foreign token) and the history written one position late (shifted row): each must be
caught. Under prefix caching the article's file must fail (its known cross-request defect) and
the variant must pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from j0.cli import main
from j0.pins import Pins
from j0.selfcheck import kernels as selfcheck

ROOT = Path(__file__).resolve().parents[2]
VARIANT_PATCH = ROOT / "overlay" / "jetspec-j0-prefix-safe.patch"

FAULTS = {
    "wrong slot": (
        "base = ctx_pool_ptr + req_state_idx.to(tl.int64) * ctx_pool_stride\n",
        "base = ctx_pool_ptr + req_idx.to(tl.int64) * ctx_pool_stride\n",
    ),
    "foreign token": (
        "ctx_pool_ptr + req_state_idx.to(tl.int64) * ctx_pool_stride + ridx,",
        "ctx_pool_ptr + (req_state_idx ^ 1).to(tl.int64) * ctx_pool_stride + ridx,",
    ),
    "shifted row": (
        "tl.store(base + pos, tok, mask=m & (pos < max_model_len))",
        "tl.store(base + pos + 1, tok, mask=m & (pos < max_model_len))",
    ),
}


@pytest.fixture(scope="module")
def files(article_file: Path, pins: Pins, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("audit-files")
    text = article_file.read_text()
    made = {"article": article_file}
    for name, (old, new) in FAULTS.items():
        assert text.count(old) == 1, name
        path = out / f"{name.replace(' ', '-')}.py"
        path.write_text(text.replace(old, new))
        made[name] = path
    work = out / "variant"
    target = work / pins.speculator_relpath
    target.parent.mkdir(parents=True)
    shutil.copy(article_file, target)
    subprocess.run(["git", "apply", "-p1", str(VARIANT_PATCH)], cwd=work, check=True)
    made["prefix-safe"] = target
    return made


def _worker(paths: list[Path], results: Path, *extra: str) -> dict[str, dict]:
    """All files in one worker process (one vLLM import)."""
    env = {**os.environ, **selfcheck.INTERPRETER_ENV, "VLLM_LOGGING_LEVEL": "ERROR"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    cmd = [sys.executable, "-m", "j0.selfcheck", "--device", "cpu", "--audit", *extra]
    cmd += ["--json", str(results)]
    for path in paths:
        cmd += ["--speculator", str(path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert results.is_file(), proc.stdout[-2000:] + proc.stderr[-3000:]
    payload = json.loads(results.read_text())
    return {r["file"]: r for r in (payload if isinstance(payload, list) else [payload])}


@pytest.mark.slow
def test_the_audit_passes_good_files_and_catches_planted_faults(
    files: dict[str, Path], tmp_path: Path
) -> None:
    got = _worker(list(files.values()), tmp_path / "r.json", "--cases", "2")
    by_name = {name: got[str(path)] for name, path in files.items()}
    for name in ("article", "prefix-safe"):
        assert by_name[name]["code"] == 0, by_name[name]["message"]
        assert by_name[name]["message"].startswith("PASS: ")
        assert "with several requests" in by_name[name]["message"]
    for name in FAULTS:
        message = by_name[name]["message"]
        assert by_name[name]["code"] == 1, f"{name} was not caught: {message}"
        assert message.startswith("FAIL: ")
    # The foreign token leaves every history row right: only the draws show it.
    foreign = by_name["foreign token"]["message"]
    assert foreign.startswith("FAIL: 0 history rows (0 positions) and ") and "draw k=" in foreign
    assert "history position" in by_name["shifted row"]["message"]


@pytest.mark.slow
def test_under_prefix_caching_the_article_fails_and_the_variant_passes(
    files: dict[str, Path], tmp_path: Path
) -> None:
    paths = [files["article"], files["prefix-safe"]]
    got = _worker(paths, tmp_path / "r.json", "--prefix-cache", "--cases", "2")
    article, variant = got[str(paths[0])], got[str(paths[1])]
    assert article["code"] == 1 and "request 'A again'" in article["message"], article
    assert variant["code"] == 0 and variant["message"].startswith("PASS: "), variant


@pytest.mark.slow
def test_the_cli_keeps_the_records_for_dumps_audit(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "records"
    args = ["selfcheck", "--speculator", str(files["article"]), "--device", "cpu", "--audit"]
    assert main([*args, "--cases", "1", "--audit-out", str(out)]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.iterdir())
    assert main(["dumps", "audit", str(out), "--json", str(tmp_path / "a.json")]) == 0
    summary = json.loads((tmp_path / "a.json").read_text())
    assert summary["steps"] > 0 and summary["draws_checked"] > 0 and summary["mismatches"] == 0


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (["--audit-out", "X"], "add --audit"),
        (["--audit", "--bench"], "without --bench and --case"),
        (["--audit", "--case", "1"], "without --bench and --case"),
    ],
)
def test_audit_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], why: str
) -> None:
    assert main(["selfcheck", "--speculator", str(tmp_path / "x.py"), *extra]) == 64
    assert why in capsys.readouterr().err


def test_audit_out_must_be_new_or_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old.jsonl").write_text("{}\n")
    args = ["selfcheck", "--speculator", str(tmp_path / "x.py"), "--audit"]
    assert main([*args, "--audit-out", str(tmp_path)]) == 64
    assert "a folder that is not empty" in capsys.readouterr().err


FRAME_CHECK = """
import os, sys
from pathlib import Path
from types import SimpleNamespace

from j0.selfcheck.kernels import load_speculator

module = load_speculator(Path(sys.argv[1]))
out = Path(sys.argv[2])
spec = SimpleNamespace(ctx_noise=True, max_num_reqs=4, max_model_len=64, num_query_per_req=8)
os.environ.pop("VLLM_DFLASH_AUDIT", None)
assert module._J0Audit.from_env(spec) is None  # not asked for: no audit
os.environ["VLLM_DFLASH_AUDIT"] = str(out)
try:
    module._J0Audit.from_env(spec)
except RuntimeError as exc:
    print("OUTSIDE:", exc)

def init_speculator(vllm_config, device, req_states):  # vLLM's name and parameter
    return module._J0Audit.from_env(spec)

store = SimpleNamespace(all_token_ids=SimpleNamespace(gpu="the store"))
audit = init_speculator(None, "cpu", store)
print("INSIDE:", audit.req_states is store, Path(audit.path).parent == out)
"""


@pytest.mark.slow
def test_the_audit_finds_request_states_in_init_speculators_frame(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """The audited file's own lookup (as `DFlashSpeculator.__init__` calls it): vLLM's
    RequestState from the init_speculator call that builds the speculator; asked for outside such
    a call it refuses to start rather than audit nothing."""
    audited = tmp_path / "audited.py"
    from j0.selfcheck.audit_run import audited_copy

    shutil.copy(audited_copy(files["prefix-safe"], tmp_path), audited)
    text = audited.read_text()
    assert "self.j0_audit = _J0Audit.from_env(self) if self.ctx_noise else None" in text
    assert "if self.j0_audit is not None and not dummy_run and not is_profile:" in text
    env = {**os.environ, **selfcheck.INTERPRETER_ENV, "VLLM_LOGGING_LEVEL": "ERROR"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "scripts"), os.environ.get("PYTHONPATH")) if p
    )
    cmd = [sys.executable, "-c", FRAME_CHECK, str(audited), str(tmp_path / "records")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OUTSIDE: VLLM_DFLASH_AUDIT (J0 audit): no RequestState found" in proc.stdout
    assert "INSIDE: True True" in proc.stdout
    start = json.loads(next((tmp_path / "records").glob("audit-*.jsonl")).read_text())
    assert start["record"] == "start" and start["prefix_safe_fill"] is True
