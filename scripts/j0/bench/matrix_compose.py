"""The compose backend of `j0 bench matrix`: one setting after another on this machine's GPU.

For each setting: render the project with the setting's switches (`docker compose config`) and
check that the server gets them; `docker compose up -d`; wait for /health, failing at once (with
the server's log) when the server container has exited, and after a bound otherwise; run
`j0 bench run` on the matrix's prompts; keep `docker compose logs server` as server.log; then
`docker compose down`. The compose files are the user's: compose.yaml, or what COMPOSE_FILE
names, with .env and the environment as `docker compose` reads them; the switches
(NUM_SPEC_TOKENS, VLLM_DFLASH_CTX_NOISE, ENABLE_PREFIX_CACHING) are set over them.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.article.serving import option_value, parse_speculative_config
from j0.atomic import write_text_atomic
from j0.bench.matrix_layout import SERVER_LOG, SettingRun, now, result_name
from j0.bench.matrix_server import compose_switches
from j0.bench.matrix_settings import Setting
from j0.errors import CHECK_FAILED, INPUT_LACKS, J0Error

UP_TIMEOUT_S = 7200.0  # image build and the first drafter download
HEALTH_TIMEOUT_S = 3600.0  # a 27B target: download (the first time) and load
POLL_S = 2.0
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # `docker compose logs` erases lines even untold


@dataclass
class Compose:
    """`docker compose` in the project folder, with `environ` (the user's plus the switches)."""

    root: Path
    environ: Mapping[str, str]

    def __call__(self, args: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                ["docker", "compose", "--ansi", "never", *args],
                cwd=self.root,
                env=dict(self.environ),
                capture_output=True,
                text=True,
                check=False,
                timeout=timeout,
            )
        except FileNotFoundError:
            raise J0Error(
                "docker: not found; the compose backend needs Docker Compose", 2
            ) from None
        except subprocess.TimeoutExpired:
            raise J0Error(
                f"docker compose {' '.join(args)}: still running after {timeout:.0f} s"
            ) from None


def url_of(environ: Mapping[str, str]) -> str:
    """Where compose.serve.yaml publishes the server: 127.0.0.1:${PORT:-8000}."""
    return f"http://127.0.0.1:{environ.get('PORT') or 8000}"


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def rendered_setting(project: dict[str, Any]) -> tuple[Setting, list[str], dict[str, str]]:
    """What the rendered project's server runs: the setting, its command and its J0 switches."""
    server = project.get("services", {}).get("server")
    if not isinstance(server, dict):
        raise J0Error("docker compose config: no `server` service", INPUT_LACKS)
    command = [str(x) for x in server.get("command") or []]
    environment = {str(k): str(v or "") for k, v in (server.get("environment") or {}).items()}
    raw = option_value(command, "--speculative-config")
    if raw is None:
        raise J0Error("docker compose config: the server has no --speculative-config", INPUT_LACKS)
    spec = parse_speculative_config(raw)
    noise = environment.get("VLLM_DFLASH_CTX_NOISE")
    if noise not in ("0", "1"):
        raise J0Error(f"docker compose config: VLLM_DFLASH_CTX_NOISE={noise!r}", INPUT_LACKS)
    caching = prefix_caching_of(command, environment)
    setting = Setting(spec.num_speculative_tokens, noise == "1", caching)
    switches = {k: v for k, v in environment.items() if k.startswith("VLLM_") or "PREFIX" in k}
    return setting, command, switches


def prefix_caching_of(command: list[str], environment: Mapping[str, str]) -> bool:
    """Prefix caching as the server will run it, decided as `j0 serve` does: ENABLE_PREFIX_CACHING
    (1 or 0) where set, else the last --(no-)enable-prefix-caching flag, else vLLM's default
    (on)."""
    knob = (environment.get("ENABLE_PREFIX_CACHING") or "").strip()
    if knob in ("0", "1"):
        return knob == "1"
    state = True
    for arg in command:
        if arg == "--enable-prefix-caching":
            state = True
        elif arg == "--no-enable-prefix-caching":
            state = False
    return state


def _server_state(compose: Compose) -> tuple[str, int | None]:
    ps = compose(["ps", "--all", "--format", "json", "server"], timeout=60)
    for line in ps.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows = json.loads(line)
        except json.JSONDecodeError:
            continue
        for row in rows if isinstance(rows, list) else [rows]:
            if row.get("Service") == "server":
                return str(row.get("State", "")), row.get("ExitCode")
    return "absent", None


def wait_healthy(
    compose: Compose, url: str, timeout: float, log: Callable[[], str], poll: float = POLL_S
) -> float:
    """Seconds until GET /health answered 200; J0Error at once when the server has exited."""
    started = time.monotonic()
    while True:
        if answers(url):
            return time.monotonic() - started
        state, code = _server_state(compose)
        if state in ("exited", "dead", "absent"):
            raise J0Error(
                f"the server container is {state}"
                + (f" (exit code {code})" if code is not None else "")
                + f" before {url}/health answered; its log:\n{_tail(log())}"
            )
        if time.monotonic() - started > timeout:
            raise J0Error(
                f"{url}/health did not answer within {timeout:.0f} s (server {state}); its log:\n"
                f"{_tail(log())}"
            )
        time.sleep(poll)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


@dataclass
class ComposeBackend:
    root: Path
    out: Path
    prompts_file: Path
    requests: int
    max_tokens: int | None
    environ: Mapping[str, str]
    say: Callable[[str], None]
    bench: Callable[[list[str]], int]
    up_timeout: float = UP_TIMEOUT_S
    health_timeout: float = HEALTH_TIMEOUT_S

    def run_setting(self, run: SettingRun) -> None:
        setting = run.setting
        switches = compose_switches(setting)
        compose = Compose(self.root, {**self.environ, **switches})
        url = url_of(self.environ)
        run.started = now()
        started = time.monotonic()
        setting_dir = self.out / setting.name
        setting_dir.mkdir(parents=True, exist_ok=True)
        run.server_log = f"{setting.name}/{SERVER_LOG}"

        config = compose(["config", "--format", "json"], timeout=120)
        if config.returncode != 0:
            raise J0Error(f"docker compose config failed:\n{config.stderr.strip()}", INPUT_LACKS)
        seen, command, env = rendered_setting(json.loads(config.stdout))
        run.server_args, run.server_env = command, env
        if seen != setting:
            raise J0Error(
                f"{setting.name}: the compose project renders {seen} for the switches "
                f"{switches} (is ENABLE_PREFIX_CACHING a knob of your compose.yaml?)",
                CHECK_FAILED,
            )
        if answers(url):
            raise J0Error(
                f"{url}/health answers before the server of {setting.name} started: another "
                "server holds the port (`docker compose down`, or set PORT)",
                CHECK_FAILED,
            )

        def server_log() -> str:
            logs = compose(["logs", "--no-color", "--no-log-prefix", "server"], timeout=120)
            return ANSI.sub("", logs.stdout + logs.stderr)

        try:
            shown = " ".join(f"{k}={v}" for k, v in switches.items())
            self.say(f"{setting.name}: docker compose up -d ({shown})")
            up = compose(["up", "-d"], timeout=self.up_timeout)
            if up.returncode != 0:
                raise J0Error(
                    f"{setting.name}: docker compose up -d failed:\n{_tail(up.stdout + up.stderr)}"
                )
            took = wait_healthy(compose, url, self.health_timeout, server_log)
            self.say(f"{setting.name}: {url} healthy after {took:.0f} s; j0 bench run")
            out = setting_dir / result_name(None)
            args = ["bench", "run", "--url", url, "--out", str(out), "--label", setting.name]
            args += ["--j0", "on" if setting.j0 else "off"]
            args += ["--dataset", str(self.prompts_file), "--requests", str(self.requests)]
            if self.max_tokens is not None:
                args += ["--max-tokens", str(self.max_tokens)]
            code = self.bench(args)
            if out.is_file():
                run.results = [f"{setting.name}/{result_name(None)}"]
            if code != 0:
                raise J0Error(f"{setting.name}: j0 bench run exited {code}")
        finally:
            write_text_atomic(setting_dir / SERVER_LOG, server_log())
            down = compose(["down"], timeout=600)
            if down.returncode != 0:
                self.say(f"{setting.name}: docker compose down: {down.stderr.strip()}")
            run.finished = now()
            run.seconds = round(time.monotonic() - started, 1)
