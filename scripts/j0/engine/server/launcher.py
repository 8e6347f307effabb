"""Start and stop the server under check: vLLM of this Python (`--here`) or a container of the image
with the GPU (`--image`), J0 on or off, with its log in a file; wait for /health with a bound.

`--here` logs the identity line first exactly as the image's entrypoint does (`j0 image identity
--prefix j0-entrypoint`; here its module, j0.engine.server.speculator_identity, not the command),
then runs `python -m vllm.entrypoints.cli.main serve ARGS`. docker-py is imported only for
`--image`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from j0.article.server_setting import ARTICLE_MAX_NUM_SEQS, ServerSetting
from j0.article.spec_config import SpecConfig
from j0.edge.processes import start_owned, stop_group
from j0.engine.server.endpoints import wait_for_health
from j0.errors import CHECK_FAILED

MAX_MODEL_LEN = 2048
IDENTITY_MODULE = "j0.engine.server.speculator_identity"
CONTAINER_WORK = "/j0-engine-check"


@dataclass(frozen=True)
class ServerStart:
    """One server start: the models, the speculative config (its drafter the host's path of
    `draft`; None: the baseline), CUDA graphs or eager, J0 on or off, the dumps; as the route's
    server sees its paths, the ServerSetting of j0.article.server_setting (server())."""

    target: Path
    draft: Path
    spec: SpecConfig | None
    graphs: bool
    j0: bool
    dumps: Path
    dump_steps: int
    port: int
    extra_env: dict[str, str] = field(default_factory=dict)
    max_model_len: int = MAX_MODEL_LEN
    max_num_seqs: int = ARTICLE_MAX_NUM_SEQS  # the request slots: the article's
    # What the serving scenarios force (None / False: vLLM's default, prefix caching off)
    max_num_batched_tokens: int | None = None  # chunked prefill of longer prompts
    num_gpu_blocks_override: int | None = None  # a KV cache small enough to preempt
    prefix_caching: bool = False
    # Several servers on one GPU (j0 mini run --servers): each a share of its memory and a KV
    # cache of a fixed size (no memory profiling that servers starting together would upset)
    gpu_memory_utilization: float = 0.3
    kv_cache_memory_bytes: int | None = None

    @property
    def name(self) -> str:
        return f"j0-{'on' if self.j0 else 'off'}"

    def server(self, target: str, draft: str, dumps: str) -> ServerSetting:
        """The server with paths as it sees them: `vllm serve`'s arguments (args()) and its
        environment's switches (env())."""
        spec = self.spec
        if spec is not None and spec.drafter is not None:
            spec = replace(spec, drafter=draft)
        return ServerSetting(
            model=target,
            spec=spec,
            max_num_seqs=self.max_num_seqs,
            max_model_len=str(self.max_model_len),
            gpu_memory_utilization=str(self.gpu_memory_utilization),
            host="127.0.0.1",
            port=self.port,
            # J0's history is not written for cached positions: on only where a scenario asks
            prefix_caching=self.prefix_caching,
            max_num_batched_tokens=self.max_num_batched_tokens,
            kv_cache_memory_bytes=self.kv_cache_memory_bytes,
            num_gpu_blocks_override=self.num_gpu_blocks_override,
            eager=not self.graphs,
            j0=self.j0,
            dump_dir=dumps,
            dump_steps=self.dump_steps,
            extra_env=self.extra_env,
        )

    def here(self) -> ServerSetting:
        """The server with this machine's paths (`--here`)."""
        return self.server(str(self.target), str(self.draft), str(self.dumps))


class Server(Protocol):
    url: str
    log: Path

    def alive(self) -> bool: ...
    def log_text(self) -> str: ...
    def stop(self) -> None: ...


class LocalServer:
    """vLLM of this Python in a process of its own; its output goes to LOG."""

    def __init__(self, setting: ServerStart, log: Path, command: list[str] | None = None) -> None:
        self.url = f"http://127.0.0.1:{setting.port}"
        self.log = log
        server = setting.here()
        env = {**os.environ, **server.env()}
        serve = command or [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve"]
        # The identity line as the image's entrypoint logs it, from the server's Python and
        # environment (j0.engine.server.speculator_identity: the floor's module, not the `j0`
        # command).
        identity = [sys.executable, "-m", IDENTITY_MODULE, "--prefix", "j0-entrypoint"]
        with log.open("wb") as out:
            subprocess.run(identity, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
        self._out = log.open("ab")
        args = server.args()
        # Its own process group, owned: stopped with the command (j0.edge.processes).
        self._process = start_owned(
            [*serve, *args], stdout=self._out, stderr=subprocess.STDOUT, env=env
        )

    def alive(self) -> bool:
        return self._process.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM to the server's whole process group (vLLM's engine core is a child), then
        SIGKILL after 60 s; the GPU is free when this returns."""
        stop_group(self._process, grace_s=60.0)
        self._out.close()


class ContainerServer:
    """A container of IMAGE running its own entrypoint (identity line, then `vllm serve ARGS`),
    with every GPU, the work folder mounted, on the host's network (the server listens on
    127.0.0.1:PORT, as `--here` does). `gpus=False` and `mounts` (read-only) exist for tests that
    put a stand-in in the place of vLLM inside the image."""

    MODELS = "/j0-engine-check-models"

    def __init__(
        self,
        setting: ServerStart,
        log: Path,
        image: str,
        work: Path,
        *,
        gpus: bool = True,
        mounts: dict[str, str] | None = None,
    ) -> None:
        from j0.errors import require

        docker = require("docker", "j0 engine-check --image")
        self.url = f"http://127.0.0.1:{setting.port}"
        self.log = log
        volumes = {str(work.resolve()): {"bind": CONTAINER_WORK, "mode": "rw"}}
        models = Path(os.path.commonpath([setting.target.resolve(), setting.draft.resolve()]))

        def inside(path: Path) -> str:
            path = path.resolve()
            if path.is_relative_to(work.resolve()):
                return f"{CONTAINER_WORK}/{path.relative_to(work.resolve()).as_posix()}"
            return f"{self.MODELS}/{path.relative_to(models).as_posix()}"

        if not setting.target.resolve().is_relative_to(work.resolve()):
            volumes[str(models)] = {"bind": self.MODELS, "mode": "ro"}
        for source, target in (mounts or {}).items():
            volumes[source] = {"bind": target, "mode": "ro"}
        gpu = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])] if gpus else None
        server = setting.server(
            inside(setting.target), inside(setting.draft), inside(setting.dumps)
        )
        client = docker.from_env()
        self._container = client.containers.run(
            image,
            command=server.args(),
            environment=server.env(),
            volumes=volumes,
            network_mode="host",
            device_requests=gpu,
            # As compose.serve.yaml: shared memory of its own instead of the host's IPC namespace,
            # no capability but DAC_OVERRIDE (root writing the dumps into the user's folder).
            shm_size="16g",
            cap_drop=["ALL"],
            cap_add=["DAC_OVERRIDE"],
            security_opt=["no-new-privileges:true"],
            detach=True,
        )

    def alive(self) -> bool:
        self._container.reload()
        return bool(self._container.status in ("created", "running"))

    def log_text(self) -> str:
        text = self._container.logs().decode(errors="replace")
        self.log.write_text(text)
        return str(text)

    def stop(self) -> None:
        self.log_text()
        try:
            self._container.stop(timeout=60)
        finally:
            self._container.remove(force=True)


def wait_healthy(server: Server, timeout: float, poll: float = 1.0) -> float:
    """Seconds until /health answered 200; fail at once when the server has exited."""

    def exited() -> str | None:
        if server.alive():
            return None
        return f"the server exited before it was healthy; its log ends:\n{tail(server.log_text())}"

    def timed_out(last: str) -> str:
        return (
            f"{server.url}/health did not answer within {timeout:.0f} s; the log ends:\n"
            f"{tail(server.log_text())}"
        )

    return wait_for_health(
        server.url, timeout, exited=exited, timed_out=timed_out, poll=poll, exit_code=CHECK_FAILED
    )


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])
