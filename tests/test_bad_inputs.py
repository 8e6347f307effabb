"""Known bad inputs get their own message and the documented exit code (64 usage, 2 the input
lacks what is read), never exit 70 (an internal error) or a traceback: files that are not UTF-8,
folders where a file goes, result files with keys of other types, option values that are not
finite or out of range, URLs that cannot name a server, output paths that cannot be written.

The result files are made by a real `j0 bench run` against tests/servers/vllm/server.py (a vLLM
stand-in of ours on 127.0.0.1), then edited here; each case names the key it breaks.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from j0.cli import main
from servers.vllm.server import VllmStandIn

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "tests" / "data" / "engine-h200" / "j0-on"
CLOSED = "http://127.0.0.1:9"  # nothing listens on the discard port here


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def bad_file(tmp_path: Path, kind: str) -> Path:
    """A file (or folder) that is not what any command reads."""
    path = tmp_path / f"bad-{kind}"
    if kind == "folder":
        path.mkdir()
    elif kind == "not-utf8":
        path.write_bytes(b'{"j0": "\xff\xfe"}')
    return path


# --- files that cannot be read as text --------------------------------------------------------


@pytest.mark.parametrize("kind", ["folder", "not-utf8"])
@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "run", "--url", CLOSED, "--out", "{tmp}/o.json", "--status-json", "{bad}"],
        ["status", "--no-probe", "--url", CLOSED, "--api-key-file", "{bad}"],
    ],
    ids=["bench-run-status-json", "status-api-key-file"],
)
def test_an_unreadable_input_file_is_exit_2(
    argv: list[str], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = bad_file(tmp_path, kind)
    code, out = run(capsys, *(a.format(tmp=tmp_path, bad=bad) for a in argv))
    assert code == 2, out
    assert str(bad) in out and ("not UTF-8" in out or "a folder" in out), out


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda text: b"\xff\xfe" + text, "the pins file"),
        (lambda text: text.replace(b"J0_SEED=20261031", b"J0_SEED=abc"), "J0_SEED='abc'"),
        (lambda text: text.replace(b"J0_SEED=20261031", b"J0_SEED=-5"), "J0_SEED='-5'"),
    ],
    ids=["not-utf8", "seed-not-a-number", "seed-negative"],
)
@pytest.mark.parametrize(
    "argv", [["status", "--no-probe", "--url", CLOSED], ["dumps", "check", str(ENGINE)]]
)
def test_a_broken_pins_file_is_exit_2(
    edit: Callable[[bytes], bytes],
    message: str,
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "overlay").mkdir()
    pins = tmp_path / "overlay" / "pins.env"
    pins.write_bytes(edit((ROOT / "overlay" / "pins.env").read_bytes()))
    monkeypatch.setenv("J0_HOME", str(tmp_path))
    code, out = run(capsys, *argv)
    assert code == 2, out
    assert str(pins) in out and message in out, out


# --- option values -----------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["notaurl", "http://[::1", "http://a b", "ftp://x", "http://:80"])
def test_a_url_that_names_no_server_is_a_usage_error(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["status", "--no-probe", "--url", url],
        ["bench", "run", "--url", url, "--out", "/nonexistent/o.json"],
    ):
        code, out = run(capsys, *argv)
        assert code == 64, (argv, out)
        assert "not a server URL" in out and "--url" in out


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "1e400", "abc"])
@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "run", "--url", CLOSED, "--out", "o.json", "--temperature"],
        ["bench", "run", "--url", CLOSED, "--out", "o.json", "--timeout"],
        ["bench", "report", ".", "--bandwidth"],
        ["bench", "report", ".", "--weight-bytes"],
    ],
    ids=["temperature", "timeout", "bandwidth", "weight-bytes"],
)
def test_numbers_that_are_not_finite_or_out_of_range_are_usage_errors(
    argv: list[str], value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, *argv[:-1], f"{argv[-1]}={value}")  # "=": -inf is no option
    assert code == 64, out
    assert argv[-1] in out and repr(value) in out, out


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--seed", "-1"),
        ("--seed", str(1 << 64)),
        ("--mask-token", "-5"),
        ("--mask-token", str(1 << 40)),
    ],
)
def test_dumps_check_seed_and_mask_token_ranges(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: --seed -1 was masked to 64 bits and the check said FAIL, a wrong verdict."""
    code, out = run(capsys, "dumps", "check", str(ENGINE), flag, value)
    assert code == 64, out
    assert f"argument {flag}: '{value}': expected a whole number from 0 to " in out


@pytest.mark.parametrize("where", ["a-folder", "under-a-file"])
def test_an_output_path_that_cannot_be_a_file_is_a_usage_error(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("x")
    out_path = tmp_path if where == "a-folder" else tmp_path / "a-file" / "report.json"
    for command in ("check", "show"):
        code, out = run(capsys, "dumps", command, str(ENGINE), "--json", str(out_path))
        assert code == 64, out
        assert str(out_path) in out
    code, out = run(
        capsys, "dumps", "compare", str(ENGINE), str(ENGINE), "--plots", str(tmp_path / "a-file")
    )
    assert code == 64 and "--plots" in out, out


# --- result files with keys of other types -----------------------------------------------------


@pytest.fixture(scope="module")
def result_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real result file of three requests, measured from the stand-in."""
    folder = tmp_path_factory.mktemp("result")
    data = folder / "prompts.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"q{i}", "prompt": "w " * (30 + i)}) + "\n" for i in range(3))
    )
    with VllmStandIn(num_spec_tokens=5, seed=1, accept_prob=0.5) as server:
        argv = ["bench", "run", "--url", server.url, "--out", str(folder / "r.json")]
        argv += ["--dataset", str(data), "--max-tokens", "40", "--no-progress"]
        assert main(argv) == 0
    doc: dict[str, Any] = json.loads((folder / "r.json").read_text())
    assert doc["requests"][0]["speculative_decoding"]["num_spec_tokens"] == 5
    return doc


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value

    return edit


RESULT_EDITS = {
    "requests-a-string": (_set("requests", "x"), "'requests' is \"x\""),
    "request-a-number": (_set("requests.0", 5), "requests[0] is 5"),
    "ttft-a-string": (_set("requests.0.ttft_ms", "x"), "requests[0]: 'ttft_ms'"),
    "num-chunks-null": (_set("requests.0.num_chunks", None), "'num_chunks' is null"),
    "repeat-a-string": (_set("requests.0.repeat", "x"), "'repeat' is \"x\""),
    "flags-a-number": (_set("requests.0.flags", 1), "'flags' is 1"),
    "spec-a-string": (_set("requests.0.speculative_decoding", "x"), "'speculative_decoding'"),
    "spec-count-a-string": (
        _set("requests.0.speculative_decoding.num_draft_tokens", "x"),
        "num_draft_tokens is 'x'",
    ),
    # 10^9 draft tokens a step would size the per-position counters: refused, not allocated.
    "spec-width-huge": (
        _set("requests.0.speculative_decoding.num_spec_tokens", 10**9),
        "claims 1000000000 draft tokens a step",
    ),
    "steps-of-other-lengths": (
        _set("requests.0.per_step_context_length", []),
        "per-step arrays of different lengths",
    ),
    "steps-not-numbers": (_set("requests.0.per_step_drafted", ["x"]), "'per_step_drafted'"),
    "format-version-null": (_set("format_version", None), "'format_version' is null"),
    "summary-a-list": (_set("summary", [1]), "'summary' is [1]"),
}


@pytest.mark.parametrize("name", sorted(RESULT_EDITS))
def test_a_result_file_with_a_key_of_another_type_is_exit_2(
    name: str, result_doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, message = RESULT_EDITS[name]
    doc = copy.deepcopy(result_doc)
    edit(doc)
    for setting in ("k5-j0-off", "k5-j0-on"):
        (tmp_path / setting).mkdir()
    (tmp_path / "k5-j0-off" / "result.json").write_text(json.dumps(result_doc))
    bad = tmp_path / "k5-j0-on" / "result.json"
    bad.write_text(json.dumps(doc))
    code, out = run(capsys, "bench", "report", str(tmp_path))
    assert code == 2, out
    assert str(bad) in out and message in out, out


def test_the_unedited_result_file_reports(
    result_doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control for the edits above."""
    for setting in ("k5-j0-off", "k5-j0-on"):
        (tmp_path / setting).mkdir()
        (tmp_path / setting / "result.json").write_text(json.dumps(result_doc))
    code, out = run(capsys, "bench", "report", str(tmp_path))
    assert code == 0, out


def test_a_result_file_that_is_not_utf8_is_exit_2(
    result_doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "s").mkdir()
    bad = tmp_path / "s" / "result.json"
    bad.write_bytes(json.dumps(result_doc).encode().replace(b'"q0"', b'"q\xff"'))
    code, out = run(capsys, "bench", "report", str(tmp_path))
    assert code == 2 and str(bad) in out and "not UTF-8" in out, out


def test_a_dataset_that_is_not_utf8_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_bytes(b'{"prompt": "\xff"}\n')
    with VllmStandIn(num_spec_tokens=5) as server:
        argv = ["bench", "run", "--url", server.url, "--out", str(tmp_path / "r.json")]
        code, out = run(capsys, *argv, "--dataset", str(data), "--no-progress")
    assert code == 2 and str(data) in out and "not UTF-8" in out, out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "matrix", "--dry-run", "--out", "{file}"], "--out {file}: a file"),
        (
            ["dumps", "replay", str(ENGINE), "--drafter", "{file}", "--target", "{file}"],
            "--drafter {file}: not a folder",
        ),
    ],
    ids=["matrix-out-a-file", "replay-drafter-a-file"],
)
def test_a_file_where_a_folder_goes_is_a_usage_error(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    code, out = run(capsys, *(a.format(file=file) for a in argv))
    assert code == 64, out
    assert message.format(file=file) in out, out
