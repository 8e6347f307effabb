"""The `.env` cases of tests/doctor/dotenv_cases.py, read by the real `docker compose`: each
value that `docker compose config` renders is the one typed in the table, which
tests/doctor/test_compose_env.py holds j0's reader (j0.compose.dotenv) to. Rendering needs
the docker CLI with the compose plugin, not an engine; without it this skips, except with
J0_REQUIRE_DOCKER=1 (CI), where it fails.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from compose_cli import compose_env, require_compose

from doctor.dotenv_cases import CASES, ENVIRONMENT
from j0.compose import dotenv as j0_compose_env

# The second Docker worker (tests/worker_plan.py), beside stand-in B's chain.
pytestmark = pytest.mark.xdist_group("docker-w")

COMPOSE = ("docker", "compose")
CONFIG_JSON = ("config", "--format", "json")


def compose_reads(tmp_path: Path, text: str, keys: list[str]) -> dict[str, str]:
    """What `docker compose --env-file FILE config` gives `${KEY}` for each key, FILE holding
    `text`: a one-service project of ours whose environment names each key."""
    env_file = tmp_path / "case.env"
    env_file.write_text(text, encoding="utf-8")
    project = {
        "name": "dotenv-case",
        "services": {"probe": {"image": "busybox", "environment": {k: f"${{{k}}}" for k in keys}}},
    }
    compose_file = tmp_path / "compose.json"
    compose_file.write_text(json.dumps(project), encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**compose_env(home), **ENVIRONMENT}
    env.pop("UNSET_KNOB", None)
    result = subprocess.run(
        [*COMPOSE, "--env-file", str(env_file), "-f", str(compose_file), *CONFIG_JSON],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    rendered = json.loads(result.stdout)["services"]["probe"]["environment"]
    return {k: rendered[k] for k in keys}


@pytest.mark.docker
@pytest.mark.parametrize(("text", "expected"), CASES, ids=[next(iter(c[1])) for c in CASES])
def test_compose_reads_each_case_as_the_table_says(
    tmp_path: Path, text: str, expected: dict[str, str]
) -> None:
    require_compose()
    got = compose_reads(tmp_path, text, list(expected))
    for key, value in expected.items():
        # A variable of the environment beats the .env's own line in compose (and in j0's
        # settings, whose environment layer comes first).
        want = ENVIRONMENT.get(key, value)
        # `config` writes a literal `$` as `$$`, so that its output is a compose file again.
        assert got[key] in (want, want.replace("$", "$$")), (key, got[key], want)
        assert j0_compose_env.parse_dotenv(text, ENVIRONMENT)[key] == value


@pytest.mark.docker
@pytest.mark.parametrize("text", ["not a line\n", "B='unterminated\n"])
def test_compose_refuses_what_j0_refuses(tmp_path: Path, text: str) -> None:
    require_compose()
    env_file = tmp_path / "case.env"
    env_file.write_text(text, encoding="utf-8")
    compose_file = tmp_path / "compose.json"
    compose_file.write_text(json.dumps({"services": {"probe": {"image": "busybox"}}}))
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run(
        ["docker", "compose", "--env-file", str(env_file), "-f", str(compose_file), "config"],
        cwd=tmp_path,
        env=compose_env(home),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode != 0, result.stdout


# Lines python-dotenv reads otherwise than compose (j0 refuses them): compose's value, typed here
# from what compose 2.26 gives, and python-dotenv's.
DIFFERENCES = [
    ("SQ='a\\\\b'\n", "SQ", "a\\\\b", "a\\b"),
    ('DQ="it\\\'s"\n', "DQ", "it\\'s", "it's"),
    ('OCT="\\0101"\n', "OCT", "A", "\\0101"),
    ("TAB=a\t# c\n", "TAB", "a\t# c", "a"),
    ("GAP= # c\n", "GAP", "# c", ""),
]


@pytest.mark.docker
@pytest.mark.parametrize(("text", "key", "in_compose", "in_dotenv"), DIFFERENCES)
def test_where_python_dotenv_differs_from_compose_j0_refuses(
    tmp_path: Path, text: str, key: str, in_compose: str, in_dotenv: str
) -> None:
    from dotenv import dotenv_values

    from j0.errors import J0Error

    require_compose()
    assert compose_reads(tmp_path, text, [key])[key] == in_compose
    assert dotenv_values(tmp_path / "case.env", interpolate=False)[key] == in_dotenv
    with pytest.raises(J0Error, match="compose and python-dotenv would disagree"):
        j0_compose_env.parse_dotenv(text, ENVIRONMENT)
