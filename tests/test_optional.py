"""A plain `pip install -e .` (no extras): commands that need docker or huggingface_hub stop with
one line naming the extra, exit 69 (UNAVAILABLE), not a ModuleNotFoundError traceback or exit 1.

The commands run in `python -S` (no site-packages at all: the standard library and j0 only), which
is what a plain install gives them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from j0.errors import J0Error, available, require

ROOT = Path(__file__).resolve().parents[1]
RUN_J0 = (
    "import sys; sys.path.insert(0, sys.argv[1]); from j0.cli import main; "
    "sys.exit(main(sys.argv[2:]))"
)


def j0_without_site_packages(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-S", "-c", RUN_J0, str(ROOT / "scripts"), *args]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "purpose", "package", "extra"),
    [
        (("image", "build"), "j0 image build", "docker", "docker"),
        (("image", "smoke", "some/image:1"), "j0 image smoke", "docker", "docker"),
        (("drafter", "fetch"), "j0 drafter fetch", "huggingface_hub", "hub"),
        (
            ("overlay", "build", "--from-image", "x:1", "-o", "out.py"),
            "j0 overlay build --from-image",
            "docker",
            "docker",
        ),
        (("status", "--url", "http://127.0.0.1:9"), "j0 status", "prometheus_client", "status"),
        (("dumps", "show", "."), "j0 dumps", "torch", "dumps"),
        (("dumps", "check", "."), "j0 dumps", "torch", "dumps"),
        (("dumps", "compare", ".", "."), "j0 dumps", "torch", "dumps"),
        (
            ("dumps", "replay", ".", "--drafter", ".", "--target", "."),
            "j0 dumps replay",
            "torch",
            "dumps",
        ),
        (
            ("bench", "run", "--url", "http://127.0.0.1:9", "--out", "r.json"),
            "j0 bench run",
            "aiohttp",
            "bench",
        ),
    ],
)
def test_a_plain_install_names_the_extra(
    tmp_path: Path, args: tuple[str, ...], purpose: str, package: str, extra: str
) -> None:
    result = j0_without_site_packages(tmp_path, *args)
    assert result.returncode == 69, result.stderr  # UNAVAILABLE, never 1 (a failed check)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert purpose in lines[0] and f"`{package}`" in lines[0]
    assert f"pip install -e '.[{extra}]'" in lines[0]


RECORDED_PAIR = ROOT / "docs/results/mini-h200/2026-12-01-loops/engine-k7/run-k7/drafter-j0"


def test_bench_report_on_a_core_install_names_the_bench_extra(tmp_path: Path) -> None:
    """`j0 bench report` of a real J0 on/off pair (two result files recorded on the H200) with
    the standard library only: numpy (the bootstrap) and matplotlib (the plots) are the bench
    extra's; one line naming it, exit 69, and nothing written; it was exit 70 (internal error)."""
    import shutil

    folder = tmp_path / "results"
    for setting in ("k7-j0-off", "k7-j0-on"):
        (folder / setting).mkdir(parents=True)
        shutil.copy(RECORDED_PAIR / setting / "result.json", folder / setting / "result.json")
    result = j0_without_site_packages(tmp_path, "bench", "report", "results")
    assert result.returncode == 69, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "j0 bench report" in line and "`numpy`" in line, line
    assert "pip install -e '.[bench]'" in line, line
    assert sorted(p.name for p in folder.iterdir()) == ["k7-j0-off", "k7-j0-on"]


def test_deploy_render_on_a_core_install_names_the_deploy_extra(tmp_path: Path) -> None:
    """`j0 deploy render DIR` writes YAML with PyYAML, which its own extra (`deploy`) brings:
    without it one line naming the extra, exit 69, and DIR left as it was (it was exit 70, and
    no extra declared PyYAML for deploy)."""
    result = j0_without_site_packages(tmp_path, "deploy", "render", "manifests")
    assert result.returncode == 69, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "j0 deploy render" in line and "`PyYAML`" in line, line
    assert "pip install -e '.[deploy]'" in line, line
    assert not (tmp_path / "manifests").exists()


def test_the_extras_named_exist_in_pyproject() -> None:
    import tomllib

    from j0.errors import DISTRIBUTION_OF, EXTRA_OF

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for module, extra in EXTRA_OF.items():
        assert extra in extras, extra
        names = [x.split(">")[0].split("=")[0].replace("-", "_").lower() for x in extras[extra]]
        package = DISTRIBUTION_OF.get(module, module).replace("-", "_").lower()
        if module != "requests":  # docker-py brings requests
            assert package in names, (module, extras[extra])


def test_doctor_with_a_dotenv_names_the_dotenv_extra(tmp_path: Path) -> None:
    """Without a .env, doctor needs nothing but the standard library; with one, python-dotenv
    (compose's .env rules), named in one line, exit 69."""
    import shutil

    root = tmp_path / "j0"
    (root / "overlay").mkdir(parents=True)
    shutil.copy(ROOT / "overlay" / "pins.env", root / "overlay" / "pins.env")
    (root / ".env").write_text("PORT=9000\n")
    cmd = [sys.executable, "-S", "-c", RUN_J0, str(ROOT / "scripts"), "doctor"]
    env = {"PATH": "/usr/bin:/bin", "J0_HOME": str(root), "HOME": str(tmp_path)}
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 69, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "`python-dotenv`" in line and "pip install -e '.[dotenv]'" in line


def test_require_returns_the_module_or_names_the_extra() -> None:
    assert require("json", "j0 test").dumps([1]) == "[1]"
    with pytest.raises(J0Error) as exc:
        require("j0_no_such_module_here", "j0 test", extra="bench")
    assert "j0 test needs the Python package `j0_no_such_module_here`" in str(exc.value)
    assert "pip install -e '.[bench]'" in str(exc.value)
    assert available("json") and not available("j0_no_such_module_here")


def test_require_keeps_a_broken_install_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed package that fails to import one of *its* dependencies is not "missing"."""
    (tmp_path / "j0_broken_pkg").mkdir()
    (tmp_path / "j0_broken_pkg" / "__init__.py").write_text("import j0_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as exc:
        require("j0_broken_pkg", "j0 test")
    assert exc.value.name == "j0_missing_dependency"


def test_every_extra_named_anywhere_exists() -> None:
    """Each `.[name]` that a help text, a doc, the README or the Makefile tells the user to install
    is an extra of pyproject.toml (an extra that does not exist installs nothing, silently)."""
    import re
    import tomllib

    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    places = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").rglob("*.md"))]
    places += sorted((ROOT / "scripts").rglob("*.py")) + sorted((ROOT / "scripts").glob("*-*"))
    named: dict[str, set[str]] = {}
    for place in places:
        if not place.is_file():
            continue
        for match in re.finditer(r"\.\[([a-z][a-z0-9,-]*)\]", place.read_text(errors="replace")):
            for extra in match.group(1).split(","):
                named.setdefault(extra, set()).add(str(place.relative_to(ROOT)))
    assert "docker" in named  # the search itself found what it looks for
    unknown = {extra: where for extra, where in named.items() if extra not in extras}
    assert not unknown, unknown
