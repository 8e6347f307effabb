"""tests/standin/build.py's lock per stand-in: .ci/run builds the stand-ins in the background
(`build.py all`) while the Docker tests run, and a test that asks for an image being made must
wait for it and then take it, not build it a second time beside it. Real locks (flock on files in
a state directory of the test's own), two threads as the two processes; whether the image exists
is read from a set here instead of from a Docker engine, which this test does not need."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from standin import build

TAG = "j0-standin/x:0123456789abcdef"


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> set[str]:
    monkeypatch.setenv("J0_CI_STATE", str(tmp_path))
    images: set[str] = set()
    monkeypatch.setattr(build, "image_exists", lambda tag: tag in images)
    return images


def test_a_second_asker_waits_for_the_first_and_takes_its_image(made: set[str]) -> None:
    inside = threading.Event()
    events: list[str] = []
    answers: dict[str, bool] = {}

    def first() -> None:
        with build.building(TAG) as needed:
            answers["first"] = needed
            inside.set()
            time.sleep(0.5)  # the build
            made.add(TAG)
            events.append("first made it")

    def second() -> None:
        inside.wait()
        with build.building(TAG) as needed:
            answers["second"] = needed
            events.append("second in")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert events == ["first made it", "second in"]
    assert answers == {"first": True, "second": False}


def test_an_image_already_made_takes_no_lock(made: set[str], tmp_path: Path) -> None:
    made.add(TAG)
    with build.building(TAG) as needed:
        assert needed is False
    assert not list((tmp_path / "standin").glob("*.lock"))


def test_other_stand_ins_do_not_wait_on_each_other(made: set[str]) -> None:
    with build.building(TAG) as first:
        done = threading.Event()

        def other() -> None:
            with build.building("j0-standin/y:0123456789abcdef") as needed:
                assert needed
                done.set()

        thread = threading.Thread(target=other)
        thread.start()
        assert done.wait(timeout=10), "a build of another stand-in waited for this one"
        thread.join()
        assert first
