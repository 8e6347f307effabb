"""plan.json, the matrix's plan on Kubernetes, as a type owned by its writer
(j0.bench.matrix.k8s.plan.PlanDocument): what build_plan writes into the ConfigMap is what the pods
read back (pod.py's load_plan), part for part; and a
plan of another shape is refused where it is read, naming the file, the part, the key and the
value (exit 2), instead of a pod crashing on a key it guessed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from j0.bench.matrix.k8s import plan as plan_mod
from j0.bench.matrix.k8s.plan import BenchOptions, build_plan
from j0.bench.matrix.k8s.pod import bench_of, load_plan, server_command
from j0.bench.matrix.settings import matrix_settings
from j0.compose.server import ServerKnobs
from j0.errors import INPUT_LACKS, J0Error
from j0.pins import Pins


def _plan(pins: Pins, shards: int = 2, baseline: bool = True) -> plan_mod.Plan:
    knobs = ServerKnobs(target_model=pins.target_model)
    settings = matrix_settings("15,7", "off,on", prefix_caching=False, baseline=baseline)
    lines = [json.dumps({"id": f"p{i}", "prompt": f"prompt {i}"}) for i in range(5)]
    return build_plan("j0-matrix-t", settings, knobs, shards, BenchOptions("d", 5, 64), lines)


def test_what_the_configmap_holds_the_pods_read_back(pins: Pins, tmp_path: Path) -> None:
    plan = _plan(pins)
    (tmp_path / "plan.json").write_text(json.dumps(plan.value, indent=1) + "\n")
    read = load_plan(tmp_path)
    assert read == plan.document
    assert read.to_json() == plan.value
    assert [t.setting for t in read.indexes][:3] == ["baseline", "baseline", "k15-j0-off"]
    argv, env = server_command(read, 0)
    assert argv[:2] == ["vllm", "serve"] and "--speculative-config" not in argv
    argv, env = server_command(read, 5)
    assert argv[:3] == ["j0", "serve", "--"] and env["VLLM_DFLASH_CTX_NOISE"] == "1"
    run = bench_of(read, 3, "http://127.0.0.1:8000", "/results/r", "/tmp/shard.jsonl")
    assert run.requests == 2 and run.dataset == "/tmp/shard.jsonl" and run.j0 is False
    assert str(run.out) == "/results/r/k15-j0-off/result-shard-01.json"


def _broken(pins: Pins, change: str) -> dict[str, Any]:
    doc = copy.deepcopy(_plan(pins).value)
    if change == "no indexes":
        del doc["indexes"]
    elif change == "shard text":
        doc["indexes"][1]["shard"] = "1"
    elif change == "unknown setting":
        doc["indexes"][0]["setting"] = "k3-j0-on"
    elif change == "j0 as 1":
        doc["settings"]["k15-j0-on"]["j0"] = 1
    elif change == "name of another setting":
        doc["settings"]["k15-j0-on"]["num_speculative_tokens"] = 7
    elif change == "argument not text":
        doc["settings"]["k7-j0-off"]["server_args"].append(8000)
    elif change == "switch not text":
        doc["settings"]["k7-j0-off"]["server_env"]["X"] = 1
    elif change == "repeats null":
        doc["bench"]["repeats"] = None
    elif change == "settings a list":
        doc["settings"] = []
    return doc


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("no indexes", "no 'indexes' (expected a list)"),
        ("shard text", "indexes[1]: 'shard' is \"1\", expected a whole number"),
        ("unknown setting", "setting 'k3-j0-on' is not among the plan's settings"),
        ("j0 as 1", "settings['k15-j0-on']: 'j0' is 1, expected true or false"),
        (
            "name of another setting",
            "named 'k15-j0-on', but its draft tokens and J0 make 'k7-j0-on'",
        ),
        ("argument not text", "settings['k7-j0-off']: 'server_args' is ["),
        ("switch not text", "settings['k7-j0-off']: 'server_env' is {"),
        ("repeats null", "bench: 'repeats' is null, expected a whole number"),
        ("settings a list", "'settings' is [], expected an object"),
    ],
)
def test_a_plan_of_another_shape_is_refused_naming_part_key_and_value(
    pins: Pins, tmp_path: Path, change: str, words: str
) -> None:
    (tmp_path / "plan.json").write_text(json.dumps(_broken(pins, change)))
    with pytest.raises(J0Error) as caught:
        load_plan(tmp_path)
    assert caught.value.exit_code == INPUT_LACKS
    assert str(tmp_path / "plan.json") in str(caught.value)
    assert words in str(caught.value)


def test_a_plan_that_is_not_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text("{")
    with pytest.raises(J0Error, match=r"plan\.json: not JSON") as caught:
        load_plan(tmp_path)
    assert caught.value.exit_code == INPUT_LACKS
