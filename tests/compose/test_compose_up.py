"""`docker compose up` of compose.yaml + compose.ci.yaml, the whole wiring on the stand-in image
without a GPU: needs an engine (tests/standin/build.py makes the base image locally) and runs
the drafter service against our Hub stand-in (tests/servers/hub/server.py) on 127.0.0.1, with
compose.ci.yaml putting a check (tests/compose/bin/vllm) in the place of `vllm serve`. Without the
compose plugin or an engine these tests skip, except with J0_REQUIRE_DOCKER=1 (CI), where they
fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from compose_cli import SPEC_7, SPEC_15, after, compose, compose_env, require_compose, sha256_of

from conftest import OwnImages
from j0.pins import Pins
from servers.local import HubProcess

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
LOG_LINE = re.compile(r"^(drafter|server)-1\s+\| ?(.*)$")
ARTICLE_SHA = "0f0a4d209568e41ee28389b33bd30803babee67cea28730e3475680cc1343974"
BASE_SHA = "27368c98791397625603ba45782119e4d306880841900a9d07587a6d6757d3ee"


@dataclass
class Up:
    """One `docker compose up`: exit codes of the services and their log lines."""

    exit_codes: dict[str, int]
    logs: dict[str, list[str]]
    output: str

    def seen(self) -> dict[str, Any]:
        """What tests/compose/bin/vllm (in the place of `vllm serve`) printed."""
        lines = [x for x in self.logs["server"] if x.startswith("j0-ci-vllm: {")]
        assert len(lines) == 1, self.output
        return json.loads(lines[0].removeprefix("j0-ci-vllm: "))

    def line(self, service: str, prefix: str) -> str:
        found = [x for x in self.logs[service] if x.startswith(prefix)]
        assert len(found) == 1, (prefix, self.logs[service])
        return found[0]


@pytest.fixture(scope="module")
def ci_stack(
    pins: Pins, tmp_path_factory: pytest.TempPathFactory, own_images: OwnImages
) -> Iterator[Callable[..., Up]]:
    """up(**knobs) runs compose.yaml + compose.ci.yaml on stand-in B (python3, the vllm wheel and
    huggingface_hub; no GPU); the project and the images it builds (each `up` may rebuild and move
    the tag) are removed at the end, nothing else."""
    from conftest import RUN_ID, require_docker, standin_images

    require_docker()
    require_compose()
    from standin import build as standin

    (base,) = standin_images(lambda: standin.image_b(pins))
    project = f"j0-compose-test-{RUN_ID}"
    tag = own_images.tag("compose")
    home = tmp_path_factory.mktemp("home")
    files = ("compose.yaml", "compose.ci.yaml")

    def up(table: bool = False, **knobs: str) -> Up:
        # The image route on stand-in B (the wheel route's own compose build is in
        # tests/image/test_wheel_route.py: it needs the wheel index on 127.0.0.1). table: ARGS
        # read by j0's table (tests/compose/compose.args-table.yaml says why).
        env = compose_env(
            home,
            VLLM_ENGINE="image",
            VLLM_IMAGE=base,
            J0_IMAGE=tag,
            HF_HOME=str(home / "hf"),
            **knobs,
        )
        result = compose(
            ["--ansi", "never", "-p", project, "up", "--build", "--no-color"],
            env,
            (*files, "tests/compose/compose.args-table.yaml") if table else files,
            timeout=1200,
        )
        output = ANSI.sub("", result.stdout + result.stderr)
        own_images.record_output(output)
        own_images.record_tag(tag)
        assert result.returncode == 0, output
        ps = compose(["-p", project, "ps", "--all", "--format", "json"], env, files)
        assert ps.returncode == 0, ps.stderr
        rows = [json.loads(x) for x in ps.stdout.splitlines() if x.strip()]
        logs: dict[str, list[str]] = {"drafter": [], "server": []}
        for raw in output.splitlines():
            match = LOG_LINE.match(raw.strip())
            if match:
                logs[match.group(1)].append(match.group(2))
        return Up({row["Service"]: row["ExitCode"] for row in rows}, logs, output)

    try:
        yield up
    finally:
        env = compose_env(home, VLLM_ENGINE="image", VLLM_IMAGE=base, J0_IMAGE=tag)
        compose(["-p", project, "down", "--remove-orphans"], env, files)


@pytest.mark.docker
@pytest.mark.slow
def test_up_serves_the_articles_run(
    ci_stack: Callable[..., Up], pins: Pins, tmp_path: Path
) -> None:
    """Default switches: the drafter is fetched from our Hub and patched, the server sees it."""
    hub = HubProcess()
    drafter_dir = tmp_path / "drafter"
    try:
        run = ci_stack(HF_ENDPOINT=hub.url, DRAFTER_DIR=str(drafter_dir))
    finally:
        hub.stop()
    assert run.exit_codes == {"drafter": 0, "server": 0}, run.output
    assert run.line("drafter", "all ").startswith("all 5 draft layers causal")
    config = json.loads((drafter_dir / "config.json").read_text())
    assert config["dflash_config"]["causal"] is True
    assert (drafter_dir / "config.json.orig").is_file()

    entry = run.line("server", "j0-entrypoint: ")
    assert entry.endswith(
        f"speculator.py sha256={ARTICLE_SHA} identity=article (the article's J0 file)"
    )
    seen = run.seen()
    assert seen["args"][0] == pins.target_model
    assert seen["speculative_config"] == SPEC_15
    assert after(seen["args"], "--max-num-seqs") == "4"
    assert seen["dflash_config"]["causal"] is True
    assert seen["env"]["VLLM_DFLASH_CTX_NOISE"] == "1"
    assert seen["env"]["VLLM_DFLASH_DUMP"] == "" and seen["dump_probe"] is None
    assert seen["env"]["HF_ENDPOINT"] == hub.url
    assert seen["env"]["PYTHONPATH"] is None  # j0's launcher path is not handed on to vLLM
    assert seen["speculator"]["sha256"] == ARTICLE_SHA and not seen["speculator"]["is_link"]
    assert not seen["api_key_set"] and not seen["hf_token_in_env"]
    assert run.line("server", "j0 serve: VLLM_DFLASH_CTX_NOISE=1").endswith(
        "J0 on (/usr/local/lib/python3.11/dist-packages/vllm/v1/worker/gpu/spec_decode/dflash/"
        "speculator.py is the article's J0 file)"
    )
    # vLLM's parser is not built without a GPU (it would import torch, then fail to infer a
    # device): j0's table, said so
    reader = run.line("server", "j0 serve: arguments read by")
    assert "j0's table" in reader and "no GPU is visible here" in reader, reader
    assert "--per-request-spec-decode-metrics" in seen["args"]
    assert "--enable-prompt-tokens-details" in seen["args"]
    assert seen["args"][-1] == "--enable-prefix-caching"
    # the one warning: J0 on with prefix caching on (vLLM's default)
    warnings = [x for x in run.logs["server"] if "warning" in x]
    assert len(warnings) == 1 and "prefix caching is on with J0 on" in warnings[0], warnings


@pytest.mark.docker
@pytest.mark.slow
def test_up_with_seven_tokens_j0_off_dumps_swap_and_secrets(
    ci_stack: Callable[..., Up], base_file: Path, tmp_path: Path
) -> None:
    """The switches, a swapped overlay (the unpatched base, bind-mounted, no rebuild), an API key
    and a Hub that requires a token: the token reaches huggingface_hub only as a secret file."""
    token, key = "hf_TestTokenFromSecret42", "api-key-from-secret-17"
    (tmp_path / "hf_token").write_text(token + "\n")
    (tmp_path / "api_key").write_text(key + "\n")
    hub = HubProcess("--token-file", str(tmp_path / "hf_token"))
    dumps = tmp_path / "dumps"
    try:
        run = ci_stack(
            table=True,
            HF_ENDPOINT=hub.url,
            DRAFTER_DIR=str(tmp_path / "drafter"),
            HF_TOKEN_FILE=str(tmp_path / "hf_token"),
            API_KEY_FILE=str(tmp_path / "api_key"),
            NUM_SPEC_TOKENS="7",
            VLLM_DFLASH_CTX_NOISE="0",
            VLLM_DFLASH_DUMP=str(dumps),
            VLLM_DFLASH_DUMP_STEPS="4",
            J0_OVERLAY=str(base_file),
        )
    finally:
        hub.stop()
    assert run.exit_codes == {"drafter": 0, "server": 0}, run.output
    assert token not in run.output and key not in run.output

    entry = run.line("server", "j0-entrypoint: ")
    assert entry.endswith(
        f"speculator.py sha256={BASE_SHA} identity=base (the unpatched vLLM base)"
    )
    assert run.line("server", "j0 serve: overlay swap: ").endswith(
        "-> /opt/j0/speculator.py (read-only bind mount)"
    )
    seen = run.seen()
    assert seen["speculative_config"] == SPEC_7
    assert seen["env"]["VLLM_DFLASH_CTX_NOISE"] == "0"
    assert seen["env"]["VLLM_DFLASH_DUMP"] == "/dumps"
    assert seen["env"]["VLLM_DFLASH_DUMP_STEPS"] == "4"
    assert (dumps / "j0-ci-probe").is_file()
    assert seen["speculator"]["sha256"] == BASE_SHA and seen["speculator"]["is_link"]
    assert seen["speculator"]["resolved"] == "/opt/j0/speculator.py"
    assert seen["api_key_set"] and not seen["hf_token_in_env"]
    assert "j0 serve: VLLM_DFLASH_CTX_NOISE=0: J0 off (baseline)" in run.logs["server"]
    assert (
        "j0 serve: API key: required on /v1 (read from /run/secrets/api_key)" in run.logs["server"]
    )
    assert "j0 serve: Hugging Face token: from /root/.cache/huggingface/token" in run.logs["server"]
    assert base_file.read_bytes() and sha256_of(base_file) == BASE_SHA  # the host file untouched


@pytest.mark.docker
@pytest.mark.slow
def test_up_offline_rerun_and_an_untested_token_count(
    ci_stack: Callable[..., Up], tmp_path: Path
) -> None:
    """A second `up` with HF_HUB_OFFLINE=1 (no Hub at all) works from the drafter folder; N=9
    runs, with the warning in the server's log."""
    hub = HubProcess()
    drafter_dir = tmp_path / "drafter"
    try:
        first = ci_stack(table=True, HF_ENDPOINT=hub.url, DRAFTER_DIR=str(drafter_dir))
    finally:
        hub.stop()
    assert first.exit_codes == {"drafter": 0, "server": 0}, first.output
    run = ci_stack(
        table=True,
        HF_ENDPOINT=hub.url,
        HF_HUB_OFFLINE="1",
        DRAFTER_DIR=str(drafter_dir),
        NUM_SPEC_TOKENS="9",
    )
    assert run.exit_codes == {"drafter": 0, "server": 0}, run.output
    assert any("unchanged" in x for x in run.logs["drafter"]), run.logs["drafter"]
    assert (
        "j0 serve: warning: num_speculative_tokens=9: the article tested 15 and 7 only "
        "(NUM_SPEC_TOKENS)" in run.logs["server"]
    )
    assert '"num_speculative_tokens":9,' in run.seen()["speculative_config"]
