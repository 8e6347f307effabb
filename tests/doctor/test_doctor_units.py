"""The pieces of `j0 doctor`: nvidia-smi's CSV, compose's knobs, what a config needs, free disk."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from j0.compose import switches as settings
from j0.doctor import disk, gpu, needs
from j0.doctor.docker_checks import parse_version
from j0.pins import Pins

MIB = 1 << 20


def test_nvidia_smi_csv() -> None:
    """`--format=csv,noheader,nounits` as nvidia-smi documents it (", " between fields, MiB)."""
    text = (
        "0, NVIDIA H200, 143771, 589, 143182, 570.124.06\n"
        "1, NVIDIA H200, 143771, 0, 143771, 570.124.06\n"
    )
    first, second = gpu.parse_query(text)
    assert first == gpu.Gpu(0, "NVIDIA H200", 143771 * MIB, 589 * MIB, 143182 * MIB, "570.124.06")
    assert second.index == 1
    with pytest.raises(ValueError, match="expected 6 fields"):
        gpu.parse_query("0, NVIDIA H200, 143771 MiB\n")


def test_compose_versions() -> None:
    assert parse_version("2.26.1-4") == (2, 26, 1)
    assert parse_version("v2.29.7-desktop.1") == (2, 29, 7)
    assert parse_version("2.20") == (2, 20, 0)
    assert parse_version("unknown") is None


def test_knob_precedence_as_compose_has_it(pins: Pins, tmp_path: Path) -> None:
    """The environment, then .env, then overlay/pins.env, then compose.serve.yaml's defaults; an
    empty value counts as unset; relative paths are the project folder's."""
    root = tmp_path / "j0"
    (root / "overlay").mkdir(parents=True)
    shutil.copy(pins.pins_path, root / "overlay" / "pins.env")
    shutil.copy(pins.root / "compose.serve.yaml", root / "compose.serve.yaml")
    (root / ".env").write_text("MAX_MODEL_LEN=8192\nPORT=9000\nTARGET_MODEL=my/model\n")
    local = Pins(**{**pins.__dict__, "root": root})
    found = settings.resolve(local, {"PORT": "9100", "KV_CACHE_DTYPE": "", "DRAFTER_DIR": "d"})
    assert (found.get("PORT"), found.source("PORT")) == ("9100", "the environment")
    assert (found.get("MAX_MODEL_LEN"), found.source("MAX_MODEL_LEN")) == ("8192", ".env")
    assert found.get("TARGET_MODEL") == "my/model"
    assert found.source("VLLM_IMAGE") == "overlay/pins.env"
    assert found.get("KV_CACHE_DTYPE") == "auto"  # empty in the environment: compose's default
    assert found.source("GPU_MEMORY_UTILIZATION") == "compose.serve.yaml's default"
    assert found.get("GPU_MEMORY_UTILIZATION") == "0.90"
    assert found.path("DRAFTER_DIR") == root / "d"
    assert found.hub_cache() == Path("~/.cache/huggingface").expanduser() / "hub"


def test_compose_interpolation() -> None:
    values = {"A": "1", "EMPTY": ""}
    assert settings.interpolate("${A}-${B:-x}-${EMPTY:-y}-${A:+z}-${B:+w}", values) == "1-x-y-z-"
    assert settings.interpolate("${HF_HUB_CACHE:-${HF_HOME:-~/hf}/hub}", {}) == "~/hf/hub"
    assert settings.interpolate("./drafter/${R}", {"R": "3147a351"}) == "./drafter/3147a351"


def test_a_default_that_names_another_knob(pins: Pins, tmp_path: Path) -> None:
    root = tmp_path / "j0"
    (root / "overlay").mkdir(parents=True)
    shutil.copy(pins.pins_path, root / "overlay" / "pins.env")
    (root / "compose.serve.yaml").write_text(
        "# ${NOT_A_KNOB:-from a comment}\n"
        "source: ${DRAFTER_DIR:-./drafter/${DRAFTER_REVISION}}\n"
        "cache: ${HF_HUB_CACHE:-${HF_HOME:-~/.cache/huggingface}/hub}\n"
    )
    assert settings.compose_defaults(root) == {
        "DRAFTER_DIR": "./drafter/${DRAFTER_REVISION}",
        "HF_HUB_CACHE": "${HF_HOME:-~/.cache/huggingface}/hub",
        "HF_HOME": "~/.cache/huggingface",
    }
    local = Pins(**{**pins.__dict__, "root": root})
    found = settings.resolve(local, {})
    assert found.path("DRAFTER_DIR") == root / "drafter" / pins.drafter_revision
    found = settings.resolve(local, {"DRAFTER_REVISION": "abc"})
    assert found.get("DRAFTER_DIR") == "./drafter/abc"


def test_attention_of_a_hybrid_multimodal_config() -> None:
    """Layers that keep a per-request state (linear attention) carry no per-token KV; a
    multimodal config keeps the language model in text_config."""
    config = {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "text_config": {
            "num_hidden_layers": 8,
            "num_attention_heads": 24,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "layer_types": ["linear_attention"] * 3
            + ["full_attention"]
            + ["linear_attention"] * 3
            + ["full_attention"],
            "max_position_embeddings": 262144,
            "dtype": "bfloat16",
        },
    }
    shape = needs.attention_from_config(config, "c")
    assert (shape.full_layers, shape.kv_heads, shape.head_dim) == (2, 4, 256)
    assert shape.max_len == 262144
    assert shape.per_token(2, 1000) == 2 * 4 * 256 * 2 * 2
    assert shape.notes == ("6 of 8 layers keep a per-request state (not counted)",)


def test_sliding_layers_count_at_most_their_window() -> None:
    config = {
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "hidden_size": 1024,  # head_dim 128
        "sliding_window": 1000,
        "layer_types": ["sliding_attention", "full_attention"] * 2,
    }
    shape = needs.attention_from_config(config, "c")
    vector = 2 * 8 * 128 * 2
    assert shape.per_token(2, 4000) == vector * (2 + 2 * 1000 / 4000)
    with pytest.raises(ValueError, match="num_hidden_layers"):
        needs.attention_from_config({"hidden_size": 1}, "c")


def test_model_size_and_max_model_len() -> None:
    assert needs.params_from_name("Qwen/Qwen3.8-27B") == 27e9
    assert needs.params_from_name("meta-llama/Llama-3.1-8B-Instruct") == 8e9
    assert needs.params_from_name("org/no-size") is None
    shape = needs.assumed_attention()
    assert needs.max_model_len("auto", shape)[0] == 32768
    assert needs.max_model_len("32k", shape)[0] == 32000
    assert needs.max_model_len("32K", shape)[0] == 32768
    assert needs.max_model_len("2048", shape)[0] == 2048
    with pytest.raises(ValueError, match="expected auto or a number"):
        needs.max_model_len("lots", shape)


def test_the_27b_estimate_as_stated() -> None:
    """No config, no sizes: 27B x 2 bytes, the stated layout, 32768 tokens, 4 requests."""
    shape = needs.assumed_attention()
    need = needs.Needs(
        needs.Sized(54 * 10**9, "estimate"),
        needs.Sized(2 << 30, "estimate"),
        shape,
        needs.assumed_drafter(shape),
        "auto",
        32768,
        "auto",
        4,
    )
    per_token = 2 * 8 * 128 * 2 * (64 + 5)  # 64 target layers + 5 draft layers
    assert need.kv_per_token() == per_token
    assert need.kv_cache(4) == per_token * 32768 * 4
    assert need.j0_history == 4 * 32768 * 4
    assert need.fixed == 54 * 10**9 + (2 << 30) + (4 << 30) + 4 * 32768 * 4
    assert needs.gib(need.kv_cache(4)) == "34.5 GiB"
    fp8 = needs.Needs(**{**need.__dict__, "kv_dtype": "fp8"})
    assert fp8.kv_per_token() == 2 * 8 * 128 * (64 * 1 + 5 * 2)  # the draft's stays BF16


def test_disk_fails_when_the_download_does_not_fit(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    fits = disk.check([disk.Download("a", tmp_path / "new" / "dir", 1, False)])
    assert fits.status == "ok" and str(tmp_path / "new" / "dir") in fits.detail
    # Each three quarters of what is free: together 1.5 times it, so other tests freeing or
    # filling the disk between the two readings of free space cannot change the verdict (with
    # halves plus one byte, a fresh .ci/run once read more free space the second time: warn).
    too_big = disk.check(
        [
            disk.Download("target", tmp_path / "a", free * 3 // 4, False),
            disk.Download("drafter", tmp_path / "b", free * 3 // 4, True),
        ]
    )
    assert too_big.status == "fail"  # the same filesystem: the two add up
    assert "(estimate)" in too_big.detail and "HF_HUB_CACHE" in too_big.fix


def test_a_config_without_layer_types_is_an_upper_bound() -> None:
    """No layer_types, no full_attention_interval: every layer is counted as full attention, and
    the estimate says that this is an upper bound (a hybrid model holds less)."""
    config = {"num_hidden_layers": 4, "num_attention_heads": 8, "head_dim": 128}
    shape = needs.attention_from_config(config, "target/config.json")
    assert shape.full_layers == 4
    assert len(shape.notes) == 1 and "upper bound" in shape.notes[0]
    assert "target/config.json names no layer types" in shape.notes[0]
    assert "upper bound" in needs.assumed_attention().source
