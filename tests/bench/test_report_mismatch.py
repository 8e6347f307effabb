"""`j0 bench report` refuses to pair J0 on/off runs measured under different setups.

The runs are real: `j0 bench run` against tests/servers/vllm/server.py (a vLLM stand-in of ours on
127.0.0.1, since no GPU server is here), once with --j0 off and once with --j0 on, on the same
prompts. Each test copies them and edits one manifest field (or the prompts) as a run under
another setup would have recorded it, then asks for the report.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from j0.cli import main
from j0.errors import INPUT_LACKS
from servers.vllm.server import VllmStandIn

SPEC = {"method": "dflash", "model": "/drafter", "num_speculative_tokens": 5}
Doc = dict[str, Any]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("measured")
    data = root / "prompts.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": " ".join(f"w{i}x{j}" for j in range(40 + 9 * i))})
            + "\n"
            for i in range(4)
        )
    )
    for j0 in ("off", "on"):
        (root / f"k5-j0-{j0}").mkdir()
        with VllmStandIn(num_spec_tokens=5, seed=3, accept_prob=0.6) as server:
            code = main(
                [
                    "bench",
                    "run",
                    "--url",
                    server.url,
                    "--out",
                    str(root / f"k5-j0-{j0}" / "result.json"),
                    "--dataset",
                    str(data),
                    "--max-tokens",
                    "48",
                    "--j0",
                    j0,
                    "--no-progress",
                ]
            )
        assert code == 0
    # as a run with --status-json records them: the server's speculative config and commit
    for j0 in ("off", "on"):
        edit(root, j0, _set(None, "speculative_config", dict(SPEC)))
        edit(root, j0, _set("server", "vllm_commit", "c50aca14"))
    return root


def edit(root: Path, j0: str, change: Callable[[Doc], None], name: str = "result.json") -> None:
    path = root / f"k5-j0-{j0}" / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.fixture
def results(measured: Path, tmp_path: Path) -> Path:
    shutil.copytree(measured, tmp_path / "results", ignore=shutil.ignore_patterns("*.jsonl"))
    return tmp_path / "results"


def report(root: Path, *extra: str) -> int:
    return main(["bench", "report", str(root), *extra])


def test_runs_of_one_setup_pair_without_warning(results: Path) -> None:
    assert report(results) == 0
    summary = json.loads((results / "report.json").read_text())
    assert summary["warnings"] == []
    (pair,) = summary["j0_on_minus_off"]
    assert pair["mismatch"] == [] and pair["acceptance_length"]["n"] == 4
    assert "Warning" not in (results / "report.md").read_text()


def _set(block: str | None, key: str, value: Any) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        target = doc["manifest"] if block is None else doc["manifest"][block]
        target[key] = value

    return change


def _get(root: Path, j0: str, block: str | None, key: str) -> Any:
    manifest = json.loads((root / f"k5-j0-{j0}" / "result.json").read_text())["manifest"]
    return (manifest if block is None else manifest[block])[key]


# the field named in the message; where the manifest holds it; the J0 on run's other value
CASES = [
    ("model", None, "model", "Qwen/Qwen3-8B"),
    ("vllm_version", "server", "vllm_version", "0.32.0"),
    ("vllm_commit", "server", "vllm_commit", "4ba787ec9"),
    ("temperature", "options", "temperature", 0.7),
    ("max_tokens", "options", "max_tokens", 2048),
    ("dataset_name", "dataset", "name", "gsm8k"),
    ("speculative_method", "speculative_config", "method", "eagle3"),
    ("speculative_drafter", "speculative_config", "model", "/other"),
    ("num_speculative_tokens", "speculative_config", "num_speculative_tokens", 7),
]


def _refused(results: Path, err: str, field: str) -> str:
    line = next(x for x in err.splitlines() if f"differs in {field}:" in x)
    assert "k5-j0-on" in line and "k5-j0-off" in line
    assert str(results / "k5-j0-on" / "result.json") in line
    assert str(results / "k5-j0-off" / "result.json") in line
    assert "--allow-mismatch" in err
    assert not (results / "report.md").exists() and not (results / "report.json").exists()
    return line


@pytest.mark.parametrize(("field", "block", "key", "value"), CASES, ids=[c[0] for c in CASES])
def test_a_pair_of_different_setups_is_refused(
    results: Path,
    capsys: pytest.CaptureFixture[str],
    field: str,
    block: str | None,
    key: str,
    value: Any,
) -> None:
    if field == "dataset_name":  # named sets (a JSONL file's name is not compared)
        for j0 in ("off", "on"):
            edit(results, j0, _set("dataset", "kind", "named"))
    off_value = _get(results, "off", block, key)
    assert off_value is not None and off_value != value
    edit(results, "on", _set(block, key, value))
    assert report(results) == INPUT_LACKS
    line = _refused(results, capsys.readouterr().err, field)
    assert f"k5-j0-on {json.dumps(value)} (" in line
    assert f"k5-j0-off {json.dumps(off_value)} (" in line


def test_another_prompt_set_is_refused(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(results, "on", lambda doc: doc["requests"][0].__setitem__("prompt_sha256", "0" * 64))
    assert report(results) == INPUT_LACKS
    line = _refused(results, capsys.readouterr().err, "prompt set")
    assert '"4 prompts, 1 of them not in k5-j0-off"' in line


def test_allow_mismatch_keeps_the_pair_and_warns(results: Path) -> None:
    edit(results, "on", _set("options", "temperature", 0.7))
    edit(results, "on", _set("options", "max_tokens", 2048))
    assert report(results, "--allow-mismatch") == 0
    summary = json.loads((results / "report.json").read_text())
    (pair,) = summary["j0_on_minus_off"]
    assert pair["acceptance_length"]["n"] == 4
    assert [d["field"] for d in pair["mismatch"]] == ["temperature", "max_tokens"]
    temperature = pair["mismatch"][0]
    assert temperature["k5-j0-on"]["values"] == [0.7]
    assert temperature["k5-j0-off"]["values"] == [0.0]
    assert len(summary["warnings"]) == 2
    text = (results / "report.md").read_text()
    assert text.splitlines()[2].startswith("**Warning: runs measured under different setups")
    assert "differs in temperature: k5-j0-on 0.7" in text
    assert "differs in max_tokens: k5-j0-on 2048" in text
    assert "**Warning: measured under different setups (see the top): k5-j0-on vs k5-j0-off" in text


def test_a_field_one_side_does_not_know_is_not_a_difference(results: Path) -> None:
    """No --status-json on one side: its speculative config is "unknown", not another one."""
    edit(results, "on", _set(None, "speculative_config", "unknown"))
    assert report(results) == 0


def test_an_unfinished_run_may_hold_fewer_prompts(results: Path) -> None:
    def stopped(doc: Doc) -> None:
        doc["requests"] = doc["requests"][:2]
        doc["complete"] = False

    edit(results, "on", stopped)
    assert report(results) == 0
    (pair,) = json.loads((results / "report.json").read_text())["j0_on_minus_off"]
    assert pair["acceptance_length"]["n"] == 2


def test_shards_of_a_setting_that_disagree_are_a_difference(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on = results / "k5-j0-on"
    doc = json.loads((on / "result.json").read_text())
    (on / "result.json").unlink()
    first, second = dict(doc), dict(doc)
    first["requests"], second["requests"] = doc["requests"][:2], doc["requests"][2:]
    second["manifest"] = {**doc["manifest"], "options": {**doc["manifest"]["options"]}}
    second["manifest"]["options"]["temperature"] = 1.0
    (on / "result-shard-00.json").write_text(json.dumps(first))
    (on / "result-shard-01.json").write_text(json.dumps(second))
    assert report(results) == INPUT_LACKS
    err = capsys.readouterr().err
    assert "differs in temperature: k5-j0-on 0.0 | 1.0" in err
    assert "result-shard-01.json" in err


def _baseline(results: Path, change: Callable[[Doc], None] | None = None) -> None:
    """A `baseline` setting: the off run's file as a server without speculation records it."""
    shutil.copytree(results / "k5-j0-off", results / "baseline")
    path = results / "baseline" / "result.json"
    doc = json.loads(path.read_text())
    doc["manifest"]["speculative_config"] = "unknown"
    doc["manifest"]["num_speculative_tokens_seen"] = []
    if change is not None:
        change(doc)
    path.write_text(json.dumps(doc))


def test_a_baseline_of_the_same_setup_is_compared(results: Path) -> None:
    _baseline(results)
    assert report(results) == 0
    block = json.loads((results / "report.json").read_text())["baseline"]
    assert block["setting"] == "baseline"
    assert {name: c["mismatch"] for name, c in block["settings"].items()} == {
        "k5-j0-off": [],
        "k5-j0-on": [],
    }


def test_a_baseline_of_another_setup_is_refused(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _baseline(results, _set("options", "max_tokens", 4096))
    assert report(results) == INPUT_LACKS
    err = capsys.readouterr().err
    for name in ("k5-j0-on", "k5-j0-off"):
        assert f"{name} against the baseline baseline differs in max_tokens: {name} 48 (" in err
    assert "baseline 4096 (" in err and str(results / "baseline" / "result.json") in err
    assert not (results / "report.md").exists()
    assert report(results, "--allow-mismatch") == 0
    block = json.loads((results / "report.json").read_text())["baseline"]
    (found,) = block["settings"]["k5-j0-on"]["mismatch"]
    assert found["field"] == "max_tokens" and found["baseline"]["values"] == [4096]
