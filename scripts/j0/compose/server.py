"""The server of one setting (draft tokens, J0 off/on, prefix caching; or the baseline without
speculative decoding): the ServerSetting (j0.article.server_setting) that compose.yaml renders for
it, written once here for `j0 bench matrix` and the Kubernetes manifests (j0.kube; a test holds
them equal to compose's).

Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from j0.article.server_setting import ServerSetting
from j0.article.spec_config import SpecConfig
from j0.pins import Pins

# Where compose.yaml (and the manifests) put things inside the server container.
DRAFTER_MOUNT = "/drafter"
SERVER_PORT = 8000
HF_HOME = "/root/.cache/huggingface"
BASELINE = "baseline"


@dataclass(frozen=True)
class MatrixPoint:
    """One server configuration of the matrix; `tokens` (draft tokens) 0 is the baseline: no
    speculative decoding (and so no J0). "Point" names one measured point of the matrix or of
    `j0 mini run` in code (MatrixPoint, PointRun, PointEntry, PointBench, PointPlan,
    PointOutcome, PointRecord, PointResults); "setting" stays the word in files, options and
    output (setting.json, matrix.json's settings), and ServerSetting is a server's settings."""

    tokens: int
    j0: bool
    prefix_caching: bool = False

    @property
    def baseline(self) -> bool:
        return self.tokens == 0

    @property
    def name(self) -> str:
        if self.baseline:
            return BASELINE
        return f"k{self.tokens}-j0-{'on' if self.j0 else 'off'}"

    def to_json(self) -> dict[str, Any]:
        value = {
            "name": self.name,
            "num_speculative_tokens": self.tokens,
            "j0": self.j0,
            "prefix_caching": self.prefix_caching,
        }
        if self.baseline:
            value["baseline"] = True
        return value


@dataclass(frozen=True)
class ServerKnobs:
    """compose.yaml's server knobs other than the matrix switches, with compose's defaults."""

    target_model: str
    max_model_len: str = "auto"
    kv_cache_dtype: str = "auto"
    gpu_memory_utilization: str = "0.90"

    @classmethod
    def from_env(cls, pins: Pins, environ: Mapping[str, str] | None = None) -> ServerKnobs:
        """The knobs as compose reads them: the environment (TARGET_MODEL, MAX_MODEL_LEN,
        KV_CACHE_DTYPE, GPU_MEMORY_UTILIZATION), else compose's defaults and the pins."""
        env = os.environ if environ is None else environ
        return cls(
            target_model=env.get("TARGET_MODEL") or pins.target_model,
            max_model_len=env.get("MAX_MODEL_LEN") or cls.max_model_len,
            kv_cache_dtype=env.get("KV_CACHE_DTYPE") or cls.kv_cache_dtype,
            gpu_memory_utilization=env.get("GPU_MEMORY_UTILIZATION") or cls.gpu_memory_utilization,
        )


def server_setting(
    setting: MatrixPoint, knobs: ServerKnobs, drafter_dir: str = DRAFTER_MOUNT
) -> ServerSetting:
    """The server compose.serve.yaml runs for `setting`: its `vllm serve` arguments (args(), in
    compose's order) and switches (env(), its environment). The baseline's arguments are the
    same without --speculative-config and the per-request spec-decode metrics (vLLM 0.33 refuses
    those without speculative decoding: "--per-request-spec-decode-metrics requires speculative
    decoding to be enabled", vllm/config/vllm.py), and with the prefix-caching flag that
    `j0 serve` would have made from ENABLE_PREFIX_CACHING (the baseline runs `vllm serve`
    itself: `j0 serve` serves the article's drafter only)."""
    return ServerSetting(
        model=knobs.target_model,
        spec=None if setting.baseline else SpecConfig.article(drafter_dir, setting.tokens),
        max_model_len=knobs.max_model_len,
        kv_cache_dtype=knobs.kv_cache_dtype,
        gpu_memory_utilization=knobs.gpu_memory_utilization,
        port=SERVER_PORT,
        prefix_caching=setting.prefix_caching if setting.baseline else None,
        j0=setting.j0,
        prefix_caching_knob=setting.prefix_caching,
        hf_home=HF_HOME,
    )


def compose_switches(setting: MatrixPoint) -> dict[str, str]:
    """The compose variables that select `setting` (.env.example documents them)."""
    return {
        "NUM_SPEC_TOKENS": str(setting.tokens),
        "VLLM_DFLASH_CTX_NOISE": "1" if setting.j0 else "0",
        "ENABLE_PREFIX_CACHING": "1" if setting.prefix_caching else "0",
    }
