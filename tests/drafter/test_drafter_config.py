"""`j0 drafter patch-config` and `j0 drafter check`: the config.json change, and only it.

Expected results are computed here independently of j0's merge-patch code: parse the original,
set dflash_config["causal"] = True, compare as data (key order included).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from j0.cli import main
from j0.drafter import config as drafter_config
from j0.engine.source import causality as drafter_causality

ROOT = Path(__file__).resolve().parents[2]

BASE_CONFIG: dict[str, Any] = {
    "architectures": ["DFlashDraftModel"],
    "model_type": "qwen3",
    "hidden_size": 5120,
    "num_hidden_layers": 5,
    "num_attention_heads": 40,
    "rope_theta": 1000000,
    "dflash_config": {
        "mask_token_id": 151669,
        "target_layer_ids": [1, 16, 31, 46, 61],
        "causal_head": True,
    },
    "torch_dtype": "bfloat16",
}


def expected_after(original: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(json.dumps(original))
    result["dflash_config"]["causal"] = True
    return result


def as_pairs(text: str) -> Any:
    """Parsed JSON in which object key order counts."""
    return json.loads(text, object_pairs_hook=lambda pairs: ("obj", pairs))


def write_config(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_bytes(text.encode("utf-8"))
    return path


def only_inserted(old: str, new: str) -> bool:
    """True if `new` is `old` with one contiguous piece of text inserted (or replaced in place
    of a `null`)."""
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    removed = old[prefix : len(old) - suffix]
    return removed in ("", "null")


LAYOUTS = {
    "indent2": json.dumps(BASE_CONFIG, indent=2) + "\n",
    "indent4": json.dumps(BASE_CONFIG, indent=4),
    "tabs_crlf": json.dumps(BASE_CONFIG, indent="\t").replace("\n", "\r\n") + "\r\n",
    "minified": json.dumps(BASE_CONFIG, separators=(",", ":")),
    "one_line": json.dumps(BASE_CONFIG),
    "sorted": json.dumps(BASE_CONFIG, indent=2, sort_keys=True),
    "dflash_first": json.dumps(
        {"dflash_config": BASE_CONFIG["dflash_config"], "num_hidden_layers": 5}, indent=2
    ),
    "unicode": json.dumps({**BASE_CONFIG, "note": "Qwen3.8 — 27B ✓"}, indent=2, ensure_ascii=False),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_patch_adds_causal_and_nothing_else(
    layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = LAYOUTS[layout]
    config = write_config(tmp_path / "d", text)
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    out = capsys.readouterr().out
    new_text = config.read_bytes().decode("utf-8")
    assert as_pairs(new_text) == as_pairs(json.dumps(expected_after(json.loads(text))))
    assert only_inserted(text, new_text), (text, new_text)
    assert (config.parent / "config.json.orig").read_bytes() == text.encode()
    assert "all 5 draft layers causal" in out
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.json", "config.json.orig"]


def test_indentation_follows_the_file(tmp_path: Path) -> None:
    config = write_config(tmp_path / "d", LAYOUTS["indent4"])
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    assert (
        '        "causal_head": true,\n        "causal": true\n    }'
        in config.read_bytes().decode("utf-8")
    )
    config = write_config(tmp_path / "t", LAYOUTS["tabs_crlf"])
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    assert '\t\t"causal_head": true,\r\n\t\t"causal": true\r\n\t}' in config.read_bytes().decode(
        "utf-8"
    )


@pytest.mark.parametrize(
    "dflash, inserted",
    [
        ("{}", '{"causal": true}'),
        ("{\n  }", '{\n    "causal": true\n  }'),
        ('{"causal": null, "causal_head": true}', '{"causal": true, "causal_head": true}'),
    ],
)
def test_empty_and_null(dflash: str, inserted: str, tmp_path: Path) -> None:
    text = '{\n  "num_hidden_layers": 2,\n  "dflash_config": ' + dflash + "\n}\n"
    config = write_config(tmp_path / "d", text)
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    assert config.read_bytes().decode("utf-8") == text.replace(dflash, inserted)


def test_random_layouts(tmp_path: Path) -> None:
    """Many random configs, formatted many ways: always the original plus causal, as data."""
    rng = random.Random(20261031)
    for case in range(60):
        dflash: dict[str, Any] = {}
        for i in range(rng.randint(0, 4)):
            dflash[f"k{i}"] = rng.choice([1, 2.5, 'x"y', [1, {"a": None}], {"b": [True]}, None])
        if rng.random() < 0.7:
            dflash["causal_head"] = True
        if rng.random() < 0.2:
            dflash["causal"] = rng.choice([True, None])
        keys = [f"top{i}" for i in range(rng.randint(0, 5))]
        config: dict[str, Any] = {k: rng.choice([0, "s", [], {}]) for k in keys}
        position = rng.randint(0, len(config))
        items = list(config.items())
        items.insert(position, ("dflash_config", dflash))
        config = dict(items)
        config["num_hidden_layers"] = rng.randint(1, 8)
        indent = rng.choice([None, 0, 1, 2, 4, "\t"])
        separators = rng.choice([None, (",", ":"), (", ", ": ")])
        text = json.dumps(config, indent=indent, separators=separators, ensure_ascii=False)
        folder = tmp_path / f"c{case}"
        write_config(folder, text)
        assert main(["drafter", "patch-config", str(folder)]) == 0, text
        new_text = (folder / "config.json").read_bytes().decode("utf-8")
        assert as_pairs(new_text) == as_pairs(json.dumps(expected_after(config))), text
        assert only_inserted(text, new_text), (text, new_text)


def test_second_run_is_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "d", LAYOUTS["indent2"])
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    first = config.read_bytes()
    orig = config.parent / "config.json.orig"
    orig_stat = orig.stat()
    capsys.readouterr()
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    assert "unchanged" in capsys.readouterr().out
    assert config.read_bytes() == first
    assert orig.stat().st_mtime_ns == orig_stat.st_mtime_ns
    assert orig.read_bytes() == LAYOUTS["indent2"].encode()


def test_already_causal_config_is_left_alone(tmp_path: Path) -> None:
    text = json.dumps(expected_after(BASE_CONFIG), indent=2)
    config = write_config(tmp_path / "d", text)
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    assert config.read_bytes().decode("utf-8") == text
    assert not (config.parent / "config.json.orig").exists()


def test_symlink_into_a_cache_is_replaced_and_the_cache_kept(tmp_path: Path) -> None:
    blob = tmp_path / "hub" / "blobs" / "0123abcd"
    blob.parent.mkdir(parents=True)
    blob.write_text(LAYOUTS["indent2"])
    folder = tmp_path / "snapshot"
    folder.mkdir()
    (folder / "config.json").symlink_to(blob)
    assert main(["drafter", "patch-config", str(folder)]) == 0
    assert not (folder / "config.json").is_symlink()
    assert blob.read_bytes().decode("utf-8") == LAYOUTS["indent2"]
    assert (folder / "config.json.orig").read_bytes().decode("utf-8") == LAYOUTS["indent2"]
    assert not (folder / "config.json.orig").is_symlink()
    assert json.loads((folder / "config.json").read_bytes().decode("utf-8")) == expected_after(
        BASE_CONFIG
    )


REFUSED = {
    "top-level is_causal false": ({**BASE_CONFIG, "is_causal": False}, 1, "is_causal"),
    "top-level is_causal 0": ({**BASE_CONFIG, "is_causal": 0}, 1, "is_causal"),
    "causal already false": (
        {**BASE_CONFIG, "dflash_config": {**BASE_CONFIG["dflash_config"], "causal": False}},
        1,
        "dflash_config.causal",
    ),
    "causal a string": (
        {**BASE_CONFIG, "dflash_config": {"causal": "true", "causal_head": True}},
        1,
        "dflash_config.causal",
    ),
    "no dflash_config": (
        {k: v for k, v in BASE_CONFIG.items() if k != "dflash_config"},
        2,
        "dflash_config",
    ),
    "dflash_config null": ({**BASE_CONFIG, "dflash_config": None}, 2, "dflash_config"),
    "dflash_config a list": ({**BASE_CONFIG, "dflash_config": [1]}, 2, "dflash_config"),
    "top level a list": ([BASE_CONFIG], 2, "JSON object"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_contradictions_and_gaps_are_refused(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, code, key = REFUSED[name]
    text = json.dumps(data, indent=2)
    config = write_config(tmp_path / "d", text)
    assert main(["drafter", "patch-config", str(config.parent)]) == code
    err = capsys.readouterr().err
    assert str(config) in err and key in err
    assert config.read_bytes().decode("utf-8") == text
    assert not (config.parent / "config.json.orig").exists()


def test_a_false_top_level_is_causal_is_refused_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before anything else, with the reason: vLLM reads it first (the causality check
    after the patch would refuse it too, without saying why)."""
    config = write_config(tmp_path / "d", json.dumps({**BASE_CONFIG, "is_causal": False}))
    assert main(["drafter", "patch-config", str(config.parent)]) == 1
    err = capsys.readouterr().err
    assert 'top-level key "is_causal" is false: vLLM 0.33.0 reads it before' in err


@pytest.mark.parametrize(
    ("key", "value", "reads"),
    [
        ("dflash_config.causal", "true", "makes it causal"),
        ("dflash_config.causal", "false", "makes it causal"),
        ("dflash_config.causal", 0, "makes it not causal"),
        ("is_causal", "true", "makes it causal"),
        ("is_causal", 1, "makes it causal"),
    ],
)
def test_a_causality_key_that_is_not_a_boolean_is_named_as_such(
    key: str, value: object, reads: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`"causal": "true"` is not a config that "says its draft is not causal": say what it is."""
    data = json.loads(json.dumps(BASE_CONFIG))
    if key == "is_causal":
        data["is_causal"] = value
    else:
        data["dflash_config"]["causal"] = value
    config = write_config(tmp_path / "d", json.dumps(data, indent=2))
    assert main(["drafter", "patch-config", str(config.parent)]) == 1
    err = capsys.readouterr().err
    assert f'key "{key}" is {json.dumps(value)}' in err and "not a JSON boolean" in err
    assert reads in err and "says its draft is not causal" not in err


@pytest.mark.parametrize(
    "text, why",
    [
        (None, "no such file"),
        ('{"dflash_config": {', "not JSON"),
        ('{"dflash_config": {}, "dflash_config": {}}', "twice"),
        ("\ufeff{}", "not JSON"),
    ],
)
def test_missing_or_invalid_config(
    text: str | None, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    if text is not None:
        (folder / "config.json").write_text(text, encoding="utf-8")
    assert main(["drafter", "patch-config", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "config.json" in err and why in err


def test_missing_dir_and_dangling_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drafter", "patch-config", str(tmp_path / "nope")]) == 2
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "config.json").symlink_to(tmp_path / "gone.json")
    assert main(["drafter", "patch-config", str(folder)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_causal_head_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for head, expected in ((None, 'no "causal_head"'), (False, "causal_head is false")):
        dflash = {"mask_token_id": 5} if head is None else {"causal_head": head}
        config = write_config(
            tmp_path / str(head), json.dumps({**BASE_CONFIG, "dflash_config": dflash})
        )
        assert main(["drafter", "patch-config", str(config.parent)]) == 0
        captured = capsys.readouterr()
        assert "warning" in captured.err and expected in captured.err
    config = write_config(tmp_path / "ok", json.dumps(BASE_CONFIG))
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_top_level_is_causal_true_is_accepted(tmp_path: Path) -> None:
    data = {**BASE_CONFIG, "is_causal": True}
    config = write_config(tmp_path / "d", json.dumps(data, indent=2))
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    assert json.loads(config.read_bytes().decode("utf-8")) == expected_after(data)


def test_stale_orig_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "d", LAYOUTS["indent2"])
    orig = config.parent / "config.json.orig"
    orig.write_text("{}\n")
    assert main(["drafter", "patch-config", str(config.parent)]) == 1
    assert "never overwritten" in capsys.readouterr().err
    assert orig.read_bytes().decode("utf-8") == "{}\n"
    assert config.read_bytes().decode("utf-8") == LAYOUTS["indent2"]


def test_the_merge_patch_is_data() -> None:
    patch = json.loads(
        (ROOT / "drafter-config" / "causal.merge-patch.json").read_bytes().decode("utf-8")
    )
    assert patch == {"dflash_config": {"causal": True}}
    assert (
        drafter_config.default_patch_path() == ROOT / "drafter-config" / "causal.merge-patch.json"
    )
    assert (ROOT / "drafter-config" / "README.md").is_file()


def test_merge_patch_rfc7386_examples() -> None:
    """Examples from RFC 7386's appendix A."""
    cases = [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ]
    for target, patch, result in cases:
        assert drafter_config.merge_patch(target, patch) == result
    # The textual applier agrees with the data one, deletions and nested objects included.
    text = '{\n  "a": {"b": "c", "x": 1},\n  "e": null,\n  "k": [1]\n}'
    for patch in ({"a": {"b": "d", "c": None}}, {"e": None}, {"k": {"n": 1}}, {"a": None}):
        new_text = drafter_config.apply_merge_patch_text(text, patch)
        assert json.loads(new_text) == drafter_config.merge_patch(json.loads(text), patch)


def test_check_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "d", json.dumps(BASE_CONFIG))
    assert main(["drafter", "check", str(config.parent)]) == 1
    assert "5 of 5 draft layers NOT causal" in capsys.readouterr().out
    assert main(["drafter", "patch-config", str(config.parent)]) == 0
    capsys.readouterr()
    assert main(["drafter", "check", str(config.parent)]) == 0
    assert "all 5 draft layers causal" in capsys.readouterr().out


def test_check_and_patch_config_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json: the verdict as one object with the text form's exit code; the layers counted from
    config.json's own num_hidden_layers, the change read back from the file on disk."""
    config = write_config(tmp_path / "d", json.dumps(BASE_CONFIG))
    layers = BASE_CONFIG["num_hidden_layers"]
    assert main(["drafter", "check", str(config.parent), "--json"]) == 1
    said = json.loads(capsys.readouterr().out)
    assert (said["config"], said["all_causal"]) == (str(config), False)
    assert said["causal"] == [False] * layers
    out = tmp_path / "patched.json"
    assert main(["drafter", "patch-config", str(config.parent), "--json", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f'{config}: added "causal": true to dflash_config')
    patched = json.loads(out.read_text())
    assert patched["changed"] is True
    assert Path(patched["orig"]).read_text() == json.dumps(BASE_CONFIG)
    assert json.loads(config.read_text())["dflash_config"]["causal"] is True
    assert patched["causality"]["causal"] == [True] * layers
    assert main(["drafter", "check", str(config.parent), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["all_causal"] is True


CAUSALITY_CASES: list[dict[str, Any]] = [
    {"num_hidden_layers": 3},
    {"num_hidden_layers": 3, "dflash_config": {"causal": True}},
    {"num_hidden_layers": 3, "dflash_config": {"causal": False}},
    {"num_hidden_layers": 3, "is_causal": False, "dflash_config": {"causal": True}},
    {"num_hidden_layers": 3, "is_causal": True, "dflash_config": {"causal": False}},
    {"num_hidden_layers": 3, "is_causal": None, "dflash_config": {"causal": True}},
    {"num_hidden_layers": 3, "dflash_config": {"causal": None}},
    {
        "num_hidden_layers": 4,
        "layer_types": ["sliding_attention", "full_attention"] * 2,
        "dflash_config": {},
    },
    {"num_hidden_layers": 4, "use_sliding_window": True, "max_window_layers": 2},
    {"num_hidden_layers": 4, "use_sliding_window": True, "max_window_layers": 0},
    {"num_hidden_layers": 2, "layer_types": ["sliding_attention"] * 2},
]


@pytest.mark.slow  # 8.3 s alone: vLLM's own config classes imported
def test_causality_rule_matches_vllm_0_33(monkeypatch: pytest.MonkeyPatch) -> None:
    """j0's reimplementation against vLLM 0.33.0's own `_dflash_layer_causal` (the real module),
    on configs loaded by transformers' Qwen3Config as vLLM loads them. The GPU is hidden from
    vLLM's import for this test only (monkeypatch): left set, CUDA_VISIBLE_DEVICES= told every
    later test of the worker that this host has no GPU. vLLM's platform is named (the CPU), as
    tests/serve/vllm_parser.py names it: the import resolves vLLM's platform once per process,
    and without a name it found none here, so that a later test of the same worker could not
    build vLLM's own parser ("Failed to infer device type": a fresh .ci/run failed so)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("VLLM_TARGET_DEVICE", "cpu")
    qwen3_dflash = pytest.importorskip("vllm.model_executor.models.qwen3_dflash")
    from transformers import Qwen3Config

    for case in CAUSALITY_CASES:
        hf_config = Qwen3Config.from_dict(json.loads(json.dumps(case)))
        theirs = [
            qwen3_dflash._dflash_layer_causal(hf_config, i)
            for i in range(hf_config.num_hidden_layers)
        ]
        ours = drafter_causality.resolve(case)
        assert list(ours.causal) == theirs, case


def test_causality_summary() -> None:
    result = drafter_causality.resolve({"num_hidden_layers": 5, "dflash_config": {"causal": True}})
    assert result.all_causal and result.summary().startswith("all 5 draft layers causal")
    result = drafter_causality.resolve(
        {"num_hidden_layers": 2, "is_causal": False, "dflash_config": {"causal": True}}
    )
    assert not result.all_causal and "is_causal" in result.summary()


def test_missing_merge_patch_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """j0 run without drafter-config/ beside its pins: refused by name, config.json untouched."""
    home = tmp_path / "home"
    (home / "overlay").mkdir(parents=True)
    (home / "overlay" / "pins.env").write_bytes((ROOT / "overlay" / "pins.env").read_bytes())
    monkeypatch.setenv("J0_HOME", str(home))
    config = write_config(tmp_path / "d", LAYOUTS["indent2"])
    assert main(["drafter", "patch-config", str(config.parent)]) == 2
    assert "causal.merge-patch.json: no such file" in capsys.readouterr().err
    assert config.read_bytes().decode("utf-8") == LAYOUTS["indent2"]


def test_patch_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    patch = tmp_path / "p.json"
    patch.write_text('{"dflash_config": {"causal": true, "note": "x"}}')
    config = write_config(tmp_path / "d", LAYOUTS["one_line"])
    assert main(["drafter", "patch-config", str(config.parent), "--patch", str(patch)]) == 0
    assert json.loads(config.read_bytes())["dflash_config"]["note"] == "x"
    assert main(["drafter", "patch-config", str(tmp_path / "d"), "--patch", str(tmp_path)]) == 2
    assert "the merge patch" in (err := capsys.readouterr().err) and "a folder" in err
