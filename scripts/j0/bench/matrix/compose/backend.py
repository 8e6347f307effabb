"""One setting of `j0 bench matrix` on this machine's GPU (the compose backend).

For each setting: render the project with the setting's switches (`docker compose config`) and
check that the server gets them; `docker compose up -d`; wait for /health, failing at once (with
the server's log) when the server container has exited, and after a bound otherwise; run
`j0 bench run` on the matrix's prompts; keep `docker compose logs server` as server.log; then
`docker compose down`. The compose files are the user's: compose.yaml, or what COMPOSE_FILE
names, with .env and the environment as `docker compose` reads them; the switches
(NUM_SPEC_TOKENS, VLLM_DFLASH_CTX_NOISE, ENABLE_PREFIX_CACHING) are set over them (project.py).
The baseline adds OUT/baseline/compose.baseline.yaml after them: the same server, run by `vllm
serve` without --speculative-config.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from j0.bench.matrix.compose.project import (
    ANSI,
    BASELINE_FILE,
    Compose,
    baseline_override,
    compose_files,
    rendered_setting,
    server_state,
    tail,
    url_of,
)
from j0.bench.matrix.layout import SERVER_LOG, PointRun, now, result_name
from j0.bench.matrix.settings import PointBench
from j0.bench.run import bench_exit_code
from j0.compose.server import compose_switches
from j0.edge.atomic import write_text_atomic
from j0.engine.server.endpoints import healthy, wait_for_health
from j0.errors import CHECK_FAILED, INPUT_LACKS, J0Error, parse_json

COMPOSE_CONFIG = "`docker compose config --format json`'s output"

UP_TIMEOUT_S = 7200.0  # image build and the first drafter download
HEALTH_TIMEOUT_S = 3600.0  # a 27B target: download (the first time) and load
POLL_S = 2.0


def wait_healthy(
    compose: Compose, url: str, timeout: float, log: Callable[[], str], poll: float = POLL_S
) -> float:
    """Seconds until GET /health answered 200; J0Error at once when the server has exited."""
    state = ""

    def exited() -> str | None:
        nonlocal state
        state, code = server_state(compose)
        if state not in ("exited", "dead", "absent"):
            return None
        return (
            f"the server container is {state}"
            + (f" (exit code {code})" if code is not None else "")
            + f" before {url}/health answered; its log:\n{tail(log())}"
        )

    def timed_out(_last: str) -> str:
        return (
            f"{url}/health did not answer within {timeout:.0f} s (server {state}); its log:\n"
            f"{tail(log())}"
        )

    return wait_for_health(url, timeout, exited=exited, timed_out=timed_out, poll=poll)


@dataclass
class ComposeBackend:
    root: Path
    out: Path
    prompts_file: Path
    requests: int
    max_tokens: int | None
    environ: Mapping[str, str]
    say: Callable[[str], None]
    up_timeout: float = UP_TIMEOUT_S
    health_timeout: float = HEALTH_TIMEOUT_S
    repeats: int = 1
    system_prompt: str | None = None
    system_prompt_file: str | None = None

    def project(self, folder: Path, environ: dict[str, str], baseline: bool) -> Compose:
        """The compose project of a setting; the baseline's with its override file added."""
        compose = Compose(self.root, environ)
        if not baseline:
            return compose
        config = compose(["config", "--format", "json"], timeout=120)
        if config.returncode != 0:
            raise J0Error(f"docker compose config failed:\n{config.stderr.strip()}", INPUT_LACKS)
        caching = environ.get("ENABLE_PREFIX_CACHING") == "1"
        folder.mkdir(parents=True, exist_ok=True)
        override = folder / BASELINE_FILE
        rendered = parse_json(config.stdout, COMPOSE_CONFIG)
        write_text_atomic(override, baseline_override(rendered, caching))
        files = compose_files(self.root, environ) + os.pathsep + str(override.resolve())
        return Compose(self.root, {**environ, "COMPOSE_FILE": files})

    def run_setting(self, run: PointRun) -> None:
        setting = run.setting
        switches = compose_switches(setting)
        url = url_of(self.environ)
        run.entry.started = now()
        started = time.monotonic()
        setting_dir = self.out / setting.name
        setting_dir.mkdir(parents=True, exist_ok=True)
        run.entry.server_log = f"{setting.name}/{SERVER_LOG}"
        compose = self.project(setting_dir, {**self.environ, **switches}, setting.baseline)

        config = compose(["config", "--format", "json"], timeout=120)
        if config.returncode != 0:
            raise J0Error(f"docker compose config failed:\n{config.stderr.strip()}", INPUT_LACKS)
        seen, command, env = rendered_setting(parse_json(config.stdout, COMPOSE_CONFIG))
        run.entry.server_args, run.entry.server_env = command, env
        if seen != setting:
            raise J0Error(
                f"{setting.name}: the compose project renders {seen} for the switches "
                f"{switches} (is ENABLE_PREFIX_CACHING a knob of your compose.yaml?)",
                CHECK_FAILED,
            )
        if healthy(url):
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
                    f"{setting.name}: docker compose up -d failed:\n{tail(up.stdout + up.stderr)}"
                )
            took = wait_healthy(compose, url, self.health_timeout, server_log)
            self.say(f"{setting.name}: {url} healthy after {took:.0f} s; j0 bench run")
            out = setting_dir / result_name(None)
            # The log so far (identity line, patch lines): the result's J0 label comes from it.
            write_text_atomic(setting_dir / SERVER_LOG, server_log())
            bench = PointBench(
                url=url,
                out=out,
                label=setting.name,
                j0=setting.j0,
                dataset=str(self.prompts_file),
                requests=self.requests,
                max_tokens=self.max_tokens,
                repeats=self.repeats,
                system_prompt=self.system_prompt,
                system_prompt_file=self.system_prompt_file,
                log=None if setting.baseline else setting_dir / SERVER_LOG,
            )
            code = bench_exit_code(bench.options())
            if out.is_file():
                run.entry.results = [f"{setting.name}/{result_name(None)}"]
            if code != 0:
                raise J0Error(f"{setting.name}: j0 bench run exited {code}")
        finally:
            write_text_atomic(setting_dir / SERVER_LOG, server_log())
            down = compose(["down"], timeout=600)
            if down.returncode != 0:
                self.say(f"{setting.name}: docker compose down: {down.stderr.strip()}")
            run.entry.finished = now()
            run.entry.seconds = round(time.monotonic() - started, 1)
