"""A small look-alike of the vLLM source the prefix-safe variant's engine contract is about
(j0.engine.source.contract): four files written by the tests, shaped like vLLM 0.33.0's but holding
only what the contract reads, each with a switch that breaks one clause. Never vLLM's own text."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "vllm/v1/worker/gpu/spec_decode/__init__.py": """\
def init_speculator(vllm_config, device, req_states):
    if vllm_config == "ngram":
        return NgramSpeculator(vllm_config, device, req_states)
    from speculator import DFlashSpeculator

    return DFlashSpeculator(vllm_config, device)
""",
    "vllm/v1/worker/gpu/model_runner.py": """\
class ModelRunner:
    def __init__(self, config, device):
        self.req_states = RequestState(max_num_reqs=4, max_model_len=64)
        self.speculator = init_speculator(config, device, self.req_states)
""",
    "vllm/v1/worker/gpu/states.py": """\
class RequestState:
    def __init__(self, max_num_reqs, max_model_len):
        self.all_token_ids = StagedWriteTensor((max_num_reqs, max_model_len))

    def add_request(self, req_id, all_token_ids):
        self.all_token_ids.stage_write(0, 0, all_token_ids)
""",
    "vllm/v1/worker/gpu/buffer_utils.py": """\
class StagedWriteTensor:
    def __init__(self, shape):
        self.gpu = make(shape)
""",
}

# One way each clause can break: (file, text in the look-alike, what replaces it).
BREAKS = {
    "parameter renamed": (
        "vllm/v1/worker/gpu/spec_decode/__init__.py",
        "device, req_states):",
        "device, request_states):",
    ),
    "built elsewhere": (
        "vllm/v1/worker/gpu/spec_decode/__init__.py",
        "    return DFlashSpeculator(vllm_config, device)\n",
        "    return build_dflash(vllm_config, device)\n",
    ),
    "not passed": (
        "vllm/v1/worker/gpu/model_runner.py",
        "init_speculator(config, device, self.req_states)",
        "init_speculator(config, device)",
    ),
    "token store renamed": (
        "vllm/v1/worker/gpu/states.py",
        "self.all_token_ids = StagedWriteTensor",
        "self.token_ids = StagedWriteTensor",
    ),
    "no gpu view": ("vllm/v1/worker/gpu/buffer_utils.py", "self.gpu = ", "self.device_view = "),
}


def write_lookalike(site: Path, broken: str | None = None) -> Path:
    """The four files under `site`, with the clause `broken` (a BREAKS key) broken."""
    for relpath, text in FILES.items():
        if broken is not None and BREAKS[broken][0] == relpath:
            _, old, new = BREAKS[broken]
            assert text.count(old) == 1, broken
            text = text.replace(old, new)
        path = site / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return site
