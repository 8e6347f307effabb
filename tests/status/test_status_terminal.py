"""What the server says is printed with its control characters escaped: a crafted model id
cannot redraw `j0 status`'s verdict on a terminal. Real processes: `j0 status` (text output) in
this process against our vLLM stand-in on 127.0.0.1 serving a model id made of ESC sequences,
carriage returns and line breaks around a forged verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.doctor_env import Host
from j0.cli import main
from servers.vllm.server import VllmStandIn
from status.status_logs import article_log

FORGED = "==> the article's setup (J0 on)"
CRAFTED = f"x\x1b[2K\r\x1b[1A\n{FORGED}\r\u2028\u202e\x9b1A\x08"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    return Host(tmp_path, monkeypatch)


def test_a_crafted_model_id_cannot_redraw_the_verdict(
    tmp_path: Path, host: Host, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the id went to the terminal as it was: its ESC [1A (cursor up) and ESC [2K
    (erase line) redrew the verdict line, and its line break printed a line of its own."""
    log = tmp_path / "server.log"
    log.write_text(article_log())
    with VllmStandIn(max_model_len=40960, num_spec_tokens=15, model=CRAFTED) as vllm:
        code = main(["status", "--url", vllm.url, "--log", str(log)])
    out = capsys.readouterr()
    assert code == 1
    printed = out.out + out.err
    assert [c for c in printed if not (c.isprintable() or c in "\n")] == []
    verdicts = [x for x in out.out.splitlines() if x.startswith("==> ")]
    assert len(verdicts) == 2 and verdicts[1].startswith("==> NOT the article's setup")
    assert FORGED not in verdicts[1][:40]
    assert "x\\x1b[2K\\r\\x1b[1A\\n==> the article's setup (J0 on)" in out.out
