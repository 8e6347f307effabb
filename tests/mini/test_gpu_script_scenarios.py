"""scripts/mini-gpu.sh's serving scenarios with a trained set (issue 54, item 7): the `scenarios`
stage hands the set's target and J0-trained drafter to scripts/engine-scenarios-h200.sh with
ROOMY=1 (checked through the real script's dry run, which starts nothing, and through a
recording script of ours in its place for the variables it is given); `--speed no` and
`--scenarios` of `run`; `pack` keeps the scenarios' folder without weights. No GPU: the
scenarios themselves run on one (docs/mini.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mini-gpu.sh"
SPECULATOR = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"


def stage(*args: str, script: Path = SCRIPT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OUT", "ROOMY", "TARGET", "DRAFT")}
    return subprocess.run(
        ["bash", str(script), *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def trained_set(tmp_path: Path) -> tuple[Path, Path]:
    """A WORK whose models/ has a mini.json (what the stages ask of a trained set) and a site
    with a speculator.py (what engine-scenarios-h200.sh asks of SITE before its dry run)."""
    work = tmp_path / "work"
    (work / "models").mkdir(parents=True)
    (work / "models" / "mini.json").write_text("{}\n")
    speculator = tmp_path / "site" / SPECULATOR
    speculator.parent.mkdir(parents=True)
    speculator.write_text("# a stand-in\n")
    return work, tmp_path / "site"


def test_the_scenarios_stage_plans_the_roomy_run(tmp_path: Path) -> None:
    work, site = trained_set(tmp_path)
    results = tmp_path / "scenarios"
    run = stage(
        "scenarios", "--seed", "3", "--work", str(work), "--site", str(site),
        "--scenarios", str(results), "--scenario-args", "--dry-run",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1].startswith("dry run: 8 servers, 8 at once"), lines[-1]
    roomy = next(line for line in lines if line.startswith("article-roomy:"))
    assert "--num-gpu-blocks-override 320" in roomy and "--only concurrency-4" in roomy
    assert any(line.startswith("j0off-graphs:") for line in lines)
    assert not results.exists()


def test_the_scenarios_stage_hands_over_the_sets_models(tmp_path: Path) -> None:
    """mini-gpu.sh beside a script of ours in engine-scenarios-h200.sh's place that writes down
    what it was given: the set's target and J0-trained drafter, ROOMY=1, SITE and a WORK of the
    set's own, the results folder and the extra words."""
    work, site = trained_set(tmp_path)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    shutil.copy(SCRIPT, scripts / "mini-gpu.sh")
    said = tmp_path / "said.txt"
    (scripts / "engine-scenarios-h200.sh").write_text(
        "#!/usr/bin/env bash\n"
        f'printf "%s\\n" "ROOMY=$ROOMY" "SITE=$SITE" "TARGET=$TARGET" "DRAFT=$DRAFT" '
        f'"WORK=$WORK" "$@" > {said}\n'
        "exit 3\n"
    )
    (scripts / "engine-scenarios-h200.sh").chmod(0o755)
    results = tmp_path / "r"
    run = stage(
        "scenarios", "--seed", "3", "--work", str(work), "--site", str(site),
        "--scenarios", str(results), "--scenario-args", "--dry-run",
        script=scripts / "mini-gpu.sh",
    )  # fmt: skip
    assert run.returncode == 3, run.stderr  # the scenarios' own exit status
    assert said.read_text().splitlines() == [
        "ROOMY=1",
        f"SITE={site}",
        f"TARGET={work}/models/target",
        f"DRAFT={work}/models/drafter-j0",
        f"WORK={work}/scenarios-work",
        str(results),
        "--dry-run",
    ]


def test_pack_keeps_the_scenarios_without_weights(tmp_path: Path) -> None:
    """The scenarios' folder packed apart without weights; the set's tar.xz leaves out the
    scenarios' WORK (WORK/scenarios-work: vLLM's speculator.py copies and links to its site)."""
    work, _ = trained_set(tmp_path)
    results = tmp_path / "scenarios"
    (results / "article-roomy" / "audit").mkdir(parents=True)
    (results / "table.md").write_text("| run |\n")
    (results / "article-roomy" / "audit" / "steps.jsonl").write_text("{}\n")
    (results / "article-roomy" / "draft.pt").write_bytes(b"weights")
    # the scenarios' own WORK inside the set's: its speculator.py copies are vLLM's files
    (work / "scenarios-work" / "files").mkdir(parents=True)
    (work / "scenarios-work" / "files" / "article.py").write_text("# vLLM's file\n")
    out = tmp_path / "out"
    packed = stage(
        "pack", "--seed", "3", "--work", str(work), "--scenarios", str(results), "--out", str(out)
    )
    assert packed.returncode == 0, packed.stderr
    with tarfile.open(out / "mini-gpu-seed3-scenarios.tar.xz") as archive:
        names = sorted(archive.getnames())
    assert names == [
        "scenarios",
        "scenarios/article-roomy",
        "scenarios/article-roomy/audit",
        "scenarios/article-roomy/audit/steps.jsonl",
        "scenarios/table.md",
    ]
    with tarfile.open(out / "mini-gpu-seed3.tar.xz") as archive:
        kept = archive.getnames()
    assert "./models/mini.json" in kept
    assert not [name for name in kept if "scenarios-work" in name]


def test_bad_scenario_and_speed_options_are_refused(tmp_path: Path) -> None:
    work, site = trained_set(tmp_path)
    common = ("--seed", "3", "--work", str(work), "--site", str(site))
    no_folder = stage("scenarios", *common)
    assert no_folder.returncode == 64 and "scenarios needs --scenarios DIR" in no_folder.stderr
    speed = stage("run", *common, "--speed", "maybe")
    assert speed.returncode == 64 and "--speed 'maybe': expected yes or no" in speed.stderr
    untrained = stage("scenarios", "--work", str(tmp_path / "none"), "--scenarios", "x")
    assert untrained.returncode == 64 and "has no mini.json" in untrained.stderr
