"""The `j0 mini numbers` kinds of issue 54's measurements (j0.mini.numbers_more): positions,
throughput, ceiling, speed and sets. Each block is made from data the project's own code wrote
(the session's smoke training, the committed runs and model sets, the ceiling and speed records
made by j0.mini.run.ceiling and j0.mini.run.speed), equals the table of the command that made
that data, and changes when the data changes; each refuses data without what it reads (a folder
trained or run before issue 54) naming the file and the key (exit 2)."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from j0.cli import main
from j0.errors import CHECK_FAILED, INPUT_LACKS, OK
from j0.mini import numbers

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
PROBE = RESULTS / "mini-h100-probe"  # a model set kept flat: mini.json, mini-run.json
H200 = RESULTS / "mini-h200"  # train/mini.json, run-summary/mini-run.json
LOOPS = H200 / "2026-12-01-loops" / "engine-k7" / "run-k7"  # four settings' result.json


def readme_of(folder: Path, spec: str) -> Path:
    """FOLDER/README.md holding one empty block of SPEC, written from the data (--write)."""
    readme = folder / "README.md"
    readme.write_text(f"# results\n\n<!-- numbers: {spec} -->\n<!-- /numbers -->\n")
    said: list[str] = []
    assert numbers.run(readme, write=True, say=said.append) == OK
    assert numbers.run(readme, say=said.append) == OK, said
    return readme


def body(readme: Path) -> str:
    return next(numbers.BLOCK.finditer(readme.read_text()))["body"]


def differs(readme: Path) -> str:
    said: list[str] = []
    assert numbers.run(readme, say=said.append) == CHECK_FAILED
    return said[0]


def refused(readme: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """What `j0 mini numbers README` says on stderr, its exit 2 asserted."""
    assert main(["mini", "numbers", str(readme)]) == INPUT_LACKS
    err = capsys.readouterr().err
    assert "internal error" not in err, err
    return err


def edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.fixture
def trained(smoke_out: Path, tmp_path: Path) -> Path:
    """The smoke training's records (mini.json, logs/), without its models: what these kinds
    read of a `j0 mini train` folder."""
    folder = tmp_path / "results" / "smoke"
    shutil.copytree(smoke_out / "logs", folder / "logs")
    shutil.copy(smoke_out / "mini.json", folder / "mini.json")
    return folder


def test_positions_are_the_trainings_and_follow_it(trained: Path) -> None:
    readme = readme_of(trained.parent, "positions smoke")
    doc = json.loads((trained / "mini.json").read_text())
    buckets = doc["target"]["heldout_by_position"]
    # as `j0 mini train` prints them: "held-out loss by position: 0-64: 5.506, ..."
    row = next(x for x in body(readme).splitlines() if x.startswith("| smoke |"))
    assert (
        row == "| smoke | " + " | ".join(f"{b['loss']:.3f} ({b['tokens']})" for b in buckets) + " |"
    )
    assert f"| {buckets[0]['from']}-{buckets[0]['to']} |" in body(readme)
    # without the manifest's copy, logs/target-positions.json gives the same table
    edit(trained / "mini.json", lambda d: d["target"].pop("heldout_by_position"))
    assert numbers.run(readme, say=lambda line: None) == OK
    edit(trained / "logs" / "target-positions.json", lambda d: d["buckets"][0].update(loss=9.25))
    assert f"+| smoke | 9.250 ({buckets[0]['tokens']}) |" in differs(readme)


def test_positions_of_a_training_before_them_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The H200 run's training (2026-12-01): its mini.json and logs/, no positions in either."""
    shutil.copytree(H200 / "train" / "logs", tmp_path / "train" / "logs")
    shutil.copy(H200 / "train" / "mini.json", tmp_path / "train" / "mini.json")
    readme = tmp_path / "README.md"
    readme.write_text("<!-- numbers: positions train -->\n<!-- /numbers -->\n")
    err = refused(readme, capsys)
    assert f"{tmp_path / 'train' / 'mini.json'}: no target.heldout_by_position" in err
    assert "target-positions.json" in err


def test_throughput_is_the_trainings_and_follows_it(trained: Path) -> None:
    readme = readme_of(trained.parent, "throughput smoke")
    doc = json.loads((trained / "mini.json").read_text())
    rate, mask = doc["target"]["throughput"], doc["drafters"]["mask"]
    text = body(readme)
    # the target's line as `j0 mini train` prints it: tokens/s, TFLOP/s (no MFU on the CPU)
    assert (
        f"| smoke | target | cpu | {rate['tokens_per_s']:,.0f} | {rate['tflops']} | n/a |" in text
    )
    assert f"| | generated rows | | - | - | - | {doc['generated']['rows_per_s']} |" in text
    assert (
        f"| | drafter-mask | | {mask['tokens_per_s']:,.0f} | - | - | {mask['rows_per_s']} | "
        f"{mask['rows_seen']} | {mask['passes']} |"
    ) in text
    edit(trained / "mini.json", lambda d: d["target"]["throughput"].update(mfu=0.4125))
    assert "+| smoke | target | cpu |" in differs(readme) and "| 41.2% |" in differs(readme)


def test_throughput_without_its_record_is_refused(
    trained: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = trained.parent / "README.md"
    readme.write_text("<!-- numbers: throughput smoke -->\n<!-- /numbers -->\n")
    edit(trained / "mini.json", lambda d: d["drafters"]["mask"].pop("tokens_per_s"))
    assert f"{trained / 'mini.json'}: drafters.mask: no tokens_per_s" in refused(readme, capsys)
    edit(trained / "mini.json", lambda d: d["target"].pop("throughput"))
    assert f"{trained / 'mini.json'}: no target.throughput" in refused(readme, capsys)


def with_ceiling(run: Path, q: list[float]) -> dict[str, Any]:
    """The probe's mini-run.json in RUN, its drafter-mask/k7-j0-off setting given the ceiling
    its cross-check records (j0.mini.run.ceiling over an output per prompt, kept with q)."""
    from j0.mini.run import ceiling

    run.mkdir(parents=True, exist_ok=True)
    doc = json.loads((PROBE / "mini-run.json").read_text())
    requests = []
    for number, context in enumerate(("512", "512", "2048", "4096")):
        kept = [min(1.0, x + 0.05 * number) for x in q]
        requests.append(
            {
                "prompt_id": f"ctx{context}-0{number}",
                "oracle": ceiling.oracle_acceptance(kept, 7),
                "measured": ceiling.measured_acceptance([*[2, 1, 0, 3][number:], 1]),
                "logp_argmax": [-0.5 * number, -0.25],
                "entropy": [1.0 + number, 0.5],
            }
        )
    doc["settings"]["drafter-mask/k7-j0-off"]["crosscheck"] = {
        "ceiling_by_context": ceiling.by_context(requests)
    }
    (run / "mini-run.json").write_text(json.dumps(doc))
    return doc


def test_the_ceiling_is_mini_run_mds_and_follows_the_run(tmp_path: Path) -> None:
    from j0.mini.run import compare
    from j0.mini.run.run_summary import RunSummary

    run = tmp_path / "results" / "run"
    with_ceiling(run, [0.9, 0.8, 0.7, 0.95, 0.6, 0.85, 0.9, 0.75, 0.8, 0.9])
    readme = readme_of(tmp_path / "results", "ceiling run")
    summary = RunSummary.read(run / "mini-run.json")
    text = body(readme)
    assert text == "\n".join(compare.ceiling_lines(summary)) + "\n"
    assert text.rstrip("\n") in compare.markdown(summary)  # the table mini-run.md shows
    assert text.count("| drafter-mask/k7-j0-off |") == 3  # contexts 512, 2048, 4096
    with_ceiling(run, [0.5] * 10)
    assert "+| drafter-mask/k7-j0-off | 512 | 2 |" in differs(readme)


def test_a_run_without_a_ceiling_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(PROBE / "mini-run.json", run / "mini-run.json")
    readme = tmp_path / "README.md"
    readme.write_text("<!-- numbers: ceiling run -->\n<!-- /numbers -->\n")
    err = refused(readme, capsys)
    assert f"{run / 'mini-run.json'}: no settings.*.crosscheck.ceiling_by_context" in err
    with_ceiling(run, [0.9] * 6)
    edit(
        run / "mini-run.json",
        lambda d: d["settings"]["drafter-mask/k7-j0-off"]["crosscheck"]["ceiling_by_context"][
            "512"
        ].update(oracle="high"),
    )
    err = refused(readme, capsys)
    assert "crosscheck.ceiling_by_context.512.oracle is 'high', expected a number" in err


def write_speed(run: Path, gpu: str) -> Any:
    """RUN/speed.json as `j0 mini speed` writes it (speed.totals, summarize and record), each of
    the recorded loops run's four settings one round (its result.json)."""
    from j0.mini.run import speed

    names = [p.parent.relative_to(LOOPS).as_posix() for p in sorted(LOOPS.rglob("result.json"))]
    rounds = {name: [speed.totals(LOOPS / name / "result.json")] for name in names}
    table = speed.summarize(rounds, names[0])
    options = speed.SpeedOptions(out=run.parent, repeats=1, max_tokens=256)
    doc = speed.record(options, names, 24, 0.7, table, speed.SpeedMachine(gpu, "570.133.20"))
    run.mkdir(parents=True, exist_ok=True)
    (run / "speed.json").write_text(json.dumps(doc.to_json(), indent=1) + "\n")
    return doc


def test_speed_is_the_speed_table_and_names_the_machine(tmp_path: Path) -> None:
    from j0.mini.run import speed

    run = tmp_path / "results" / "run"
    doc = write_speed(run, "NVIDIA H200")
    readme = readme_of(tmp_path / "results", "speed run")
    text = body(readme)
    assert "# j0 mini speed\n\n" + text == speed.markdown(doc)  # speed.md, less its heading
    assert text.startswith("On NVIDIA H200 (driver 570.133.20); CUDA graphs on;")
    assert text.count("| drafter-") == 4
    write_speed(run, "NVIDIA H100 80GB HBM3")
    assert "+On NVIDIA H100 80GB HBM3 (driver 570.133.20)" in differs(readme)
    edit(run / "speed.json", lambda d: d["table"]["drafter-j0/k7-j0-off"].update(speedup=1.5))
    assert "| 1.5 |" in differs(readme)


def test_speed_without_its_file_or_machine_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    readme = tmp_path / "README.md"
    readme.write_text("<!-- numbers: speed run -->\n<!-- /numbers -->\n")
    assert f"{run / 'speed.json'}: no such file" in refused(readme, capsys)
    write_speed(run, "NVIDIA H200")
    edit(run / "speed.json", lambda d: d.pop("machine"))
    assert f"{run / 'speed.json'}: no 'machine' (expected an object)" in refused(readme, capsys)
    write_speed(run, "NVIDIA H200")
    edit(run / "speed.json", lambda d: d["table"]["drafter-j0/k7-j0-off"].pop("ms_per_step"))
    said = refused(readme, capsys)
    assert f"{run / 'speed.json'}: table.drafter-j0/k7-j0-off: no 'ms_per_step'" in said


def kept_sets(folder: Path) -> tuple[Path, Path]:
    """The probe (flat) and the H200 run (train/, run-summary/) as model set folders."""
    probe, h200 = folder / "mini-h100-probe", folder / "mini-h200"
    probe.mkdir(parents=True)
    (h200 / "train").mkdir(parents=True)
    (h200 / "run-summary").mkdir()
    for name in ("mini.json", "mini-run.json"):
        shutil.copy(PROBE / name, probe / name)
    shutil.copy(H200 / "train" / "mini.json", h200 / "train" / "mini.json")
    shutil.copy(H200 / "run-summary" / "mini-run.json", h200 / "run-summary" / "mini-run.json")
    return probe, h200


def test_sets_are_the_sets_report_and_follow_the_runs(tmp_path: Path) -> None:
    from j0.mini import sets

    results = tmp_path / "results"
    probe, h200 = kept_sets(results)
    readme = readme_of(results, "sets mini-h100-probe mini-h200")
    doc = sets.report([sets.read_set(probe), sets.read_set(h200)])
    assert "# j0 mini sets\n\n" + body(readme) == sets.markdown(doc)  # what `j0 mini sets` prints
    assert "| mini-h100-probe (seed 0) | mini-h200 (other recipe) |" in body(readme)
    edit(
        probe / "mini-run.json",
        lambda d: d["comparisons"]["by_tokens"]["7"]["article"]["all"].update(effect=0.25),
    )
    assert "+| 7 | article | all | +0.250 [" in differs(readme)


def test_a_set_packed_by_mini_gpu_sh_is_read_from_its_archive(tmp_path: Path) -> None:
    """scripts/mini-gpu.sh packs ./models/ and ./run/ side by side (no one top folder): the
    block reads the set from what the archive unpacks into, labelled by the archive's name."""
    results = tmp_path / "results"
    probe, _ = kept_sets(results)
    raw = tmp_path / "packed"
    (raw / "models").mkdir(parents=True)
    (raw / "run").mkdir()
    shutil.copy(probe / "mini.json", raw / "models" / "mini.json")
    shutil.copy(probe / "mini-run.json", raw / "run" / "mini-run.json")
    with tarfile.open(results / "mini-gpu-seed0.tar.xz", "w:xz", preset=0) as archive:
        archive.add(raw, arcname=".")
    from_folder = body(readme_of(results, "sets mini-h100-probe mini-h200"))
    packed = body(readme_of(results, "sets mini-gpu-seed0.tar.xz mini-h200"))
    assert packed == from_folder.replace("mini-h100-probe", "mini-gpu-seed0")


def test_a_folder_that_is_no_set_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probe, _ = kept_sets(tmp_path)
    (probe / "mini-run.json").unlink()
    readme = tmp_path / "README.md"
    readme.write_text("<!-- numbers: sets mini-h100-probe mini-h200 -->\n<!-- /numbers -->\n")
    err = refused(readme, capsys)
    assert f"{probe}: no mini-run.json or run/mini-run.json" in err
