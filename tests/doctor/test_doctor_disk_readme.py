"""The README's disk figure is what `j0 doctor` counts on a host that has nothing yet: vLLM's
image, the target's weights and the drafter, each an estimate (no image, the Hub offline), all
added up. It said "about 100 GB" while doctor counted 82 GB. Docker and nvidia-smi are the
stand-ins of tests/doctor/doctor_env.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from doctor_env import H200, Host

from j0.cli import main

ROOT = Path(__file__).resolve().parents[2]
SIZE = re.compile(r" (\d+\.\d) GiB(?: \(estimate\))? into ")


def test_the_readme_states_doctors_disk_need(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    host = Host(tmp_path, monkeypatch)
    host.gpus(H200)
    host.docker(images={}, registry={})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("WHEEL_INDEX", "http://127.0.0.1:9/{commit}/")
    main(["doctor", "--json"])
    disk = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}["disk"]
    sizes = [float(x) for x in SIZE.findall(disk["detail"])]
    assert len(sizes) == 3, disk  # the image, the target, the drafter
    total_gb = round(sum(sizes) * 2**30 / 1e9)
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    (stated,) = re.findall(r"\*\*Disk\*\*: about (\d+) GB", readme)
    assert int(stated) == total_gb, (stated, total_gb, disk["detail"])
