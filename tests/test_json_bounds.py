"""Every JSON from outside is read by one bounded reader (issue 53, items 5 and 6): nesting past
j0.errors.JsonLimit.DEPTH levels, or deeper than the interpreter's stack, is "not JSON (nested
more than 100 levels deep...)", exit 2, naming the input, never RecursionError's exit 70; and
the drafter's config.json, a file a user or the Hub gives, is read only where it is a regular
file under its limit (a FIFO is refused at once, not waited on; a 3 GB file is refused unread).

Before the fix each command line below ended in exit 70 ("internal error: RecursionError") or,
for the FIFO, never ended. No network is reached (the Hub offline, a closed port), no GPU.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from j0.cli import main
from j0.errors import INPUT_LACKS, J0Error, JsonLimit, parse_json

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scripts" / "j0"
ENGINE = str(ROOT / "tests" / "data" / "engine-h200" / "j0-on")
DEEP = "[" * 5000 + "]" * 5000  # deeper than the stack: json.loads raises RecursionError
SPEC = '{"method":"dflash","model":"{drafter}","num_speculative_tokens":7}'


def deep_object(levels: int) -> str:
    """A JSON object whose "dflash_config" holds arrays `levels` deep."""
    return '{"architectures": ["DFlashDraftModel"], "dflash_config": ' + (
        "[" * levels + "]" * levels + "}"
    )


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_text(deep_object(5000))
    plain = tmp_path / "plain"  # a config that is fine, for the patch's case
    plain.mkdir()
    (plain / "config.json").write_text('{"dflash_config": {"causal": true}}')
    target = tmp_path / "target"
    target.mkdir()
    (target / "model.safetensors.index.json").write_text('{"weight_map": ' + DEEP + "}")
    (target / "config.json").write_text(DEEP)
    (tmp_path / "patch.json").write_text(DEEP)
    matrix = tmp_path / "matrix"
    matrix.mkdir()
    (matrix / "matrix.json").write_text(DEEP)
    return {
        "drafter": str(drafter),
        "target": str(target),
        "plain": str(plain),
        "tmp": str(tmp_path),
    }


# (the command line, what its one error line must name)
CASES: list[tuple[list[str], str]] = [
    (["drafter", "check", "{drafter}"], "{drafter}/config.json"),
    (["drafter", "patch-config", "{drafter}"], "{drafter}/config.json"),
    (["drafter", "patch-config", "{plain}", "--patch", "{tmp}/patch.json"], "{tmp}/patch.json"),
    (["bench", "matrix", "--dry-run", "--out", "{tmp}/matrix"], "{tmp}/matrix/matrix.json"),
    (["serve", "--dry-run", "--", "/m", "--speculative-config", SPEC,
      "--speculative-config.extra", DEEP], "--speculative-config.extra"),
    (["serve", "--dry-run", "--", "/m", "--speculative-config", SPEC], "{drafter}/config.json"),
]  # fmt: skip


def run_main(line: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("J0_SERVE_ARGS_READER", "table")  # serve: our table, not vLLM's parser
    monkeypatch.delenv("J0_DEBUG", raising=False)
    try:
        return main(line)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(
    ("argv", "named"), CASES, ids=[f"{a[0]} {a[1]} {n.rsplit('/', 1)[-1]}" for a, n in CASES]
)
def test_json_nested_past_the_limit_is_bad_input_naming_it(
    argv: list[str],
    named: str,
    places: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = run_main([fill(a, places) for a in argv], monkeypatch)
    text = capsys.readouterr().err
    assert "internal error" not in text and "Traceback" not in text, text
    assert code in (INPUT_LACKS, 64), text
    errors = [line for line in text.splitlines() if line.startswith("j0: error:")]
    assert len(errors) == 1 and fill(named, places) in errors[0], text
    assert "nested" in errors[0], errors[0]


def fill(arg: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


@pytest.mark.slow
def test_dumps_replay_deep_configs_are_bad_input(
    places: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`j0 dumps replay`'s two JSON inputs: the target's weight index and the drafter's config."""
    pytest.importorskip("torch")
    line = ["dumps", "replay", ENGINE, "--drafter", places["drafter"], "--target"]
    code = run_main([*line, places["target"], "--out", places["tmp"] + "/r"], monkeypatch)
    text = capsys.readouterr().err
    assert code == INPUT_LACKS and "nested" in text and "internal error" not in text, text


def test_the_limit_is_the_bound_not_the_stack() -> None:
    """JsonLimit.DEPTH levels read; one more is refused, far above the stack's reach of our own
    recursive walks (the drafter config's ordered(), serve's merge of dotted options)."""
    at_limit = "[" * JsonLimit.DEPTH + "]" * JsonLimit.DEPTH
    assert parse_json(at_limit, "x") == parse_json(at_limit, "x")  # read
    over = "[" + at_limit + "]"
    with pytest.raises(J0Error) as refused:
        parse_json(over, "the file F")
    assert refused.value.exit_code == INPUT_LACKS
    assert str(refused.value).startswith("the file F: not JSON (nested more than")


def test_a_text_over_the_size_limit_is_refused_unparsed() -> None:
    with pytest.raises(J0Error, match="over the limit of 10 bytes"):
        parse_json('["' + "x" * 20 + '"]', "the answer", max_bytes=10)


def test_the_drafters_config_json_as_a_fifo_is_refused_at_once(
    places: dict[str, str], tmp_path: Path
) -> None:
    """A FIFO with no writer: a plain open() waits forever. Run as a real process with a timeout
    far above what a refusal takes, so that a hang fails here rather than holding the suite."""
    config = Path(places["drafter"]) / "config.json"
    config.unlink()
    os.mkfifo(config)
    for verb in ("check", "patch-config"):
        done = subprocess.run(
            [sys.executable, "-m", "j0", "drafter", verb, places["drafter"]],
            env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == INPUT_LACKS, done.stderr
        assert f"{config}: a FIFO, expected a regular file" in done.stderr, done.stderr


def test_a_3_gb_config_json_is_refused_unread(
    places: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sparse file of 3 GB (no disk used): read whole, it was exit 70 (MemoryError) or worse."""
    config = Path(places["drafter"]) / "config.json"
    with config.open("wb") as handle:
        handle.truncate(3 * 1024**3)
    code = run_main(["drafter", "check", places["drafter"]], monkeypatch)
    text = capsys.readouterr().err
    assert code == INPUT_LACKS, text
    assert f"{config}: 3,221,225,472 bytes, over the limit" in text, text


def test_a_config_json_just_over_its_limit_is_refused_unread(
    places: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """16 MiB and one byte (sparse): refused by its size, before a byte is parsed (read whole,
    it was "not JSON")."""
    config = Path(places["drafter"]) / "config.json"
    with config.open("wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)
    assert run_main(["drafter", "check", places["drafter"]], monkeypatch) == INPUT_LACKS
    assert f"{config}: 16,777,217 bytes, over the limit" in capsys.readouterr().err


# --- the rule that keeps it so: no bare json.loads in the package ------------------------------


def bare_json_loads(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line` of every json.loads / json.load call (or an import of either) in `path`, a
    module of the checkout at `root` (scripts/j0/...), but inside j0.errors' one bounded reader."""
    tree = ast.parse(path.read_text(), filename=str(path))
    allowed: set[int] = set()
    if path == root / "scripts" / "j0" / "errors.py":
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "parse_json":
                allowed |= {n.lineno for n in ast.walk(node) if hasattr(n, "lineno")}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "json":
            if {a.name for a in node.names} & {"loads", "load"}:
                found.append(f"{path.relative_to(root)}:{node.lineno}: from json import load(s)")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("loads", "load")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "json"
            and node.lineno not in allowed
        ):
            found.append(f"{path.relative_to(root)}:{node.lineno}: json.{node.func.attr}")
    return found


def test_the_finder_finds_a_planted_bare_json_loads(tmp_path: Path) -> None:
    """Planted in a checkout of the test's own (tmp_path/scripts/j0), never in scripts/j0: other
    pytest-xdist workers scan and copy the real package while this runs (test_output_sink.py's
    planted module failed them so, fast-subset runs of 2026-12-07). errors.py's parse_json is
    allowed its json.loads, in the checkout and in the test's own copy alike."""
    package = tmp_path / "scripts" / "j0"
    (package / "bench").mkdir(parents=True)
    planted = package / "bench" / "_planted_json.py"
    planted.write_text(
        "import json\nfrom json import loads\n"
        "def f(t, h):\n    return json.loads(t), json.load(h), loads(t)\n"
    )
    assert bare_json_loads(planted, tmp_path) == [
        "scripts/j0/bench/_planted_json.py:2: from json import load(s)",
        "scripts/j0/bench/_planted_json.py:4: json.loads",
        "scripts/j0/bench/_planted_json.py:4: json.load",
    ]
    assert bare_json_loads(PACKAGE / "errors.py") == []
    (package / "errors.py").write_text((PACKAGE / "errors.py").read_text())
    assert bare_json_loads(package / "errors.py", tmp_path) == []


def test_no_bare_json_loads_in_j0() -> None:
    """Every JSON j0 reads goes through j0.errors.parse_json (its size and depth bounds, its one
    error): a json.loads anywhere else in the package fails here."""
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts
        for hit in bare_json_loads(path)
    ]
    assert not found, found
