"""`j0 status` judges the logged speculative config and request slots by the server setting's
problems (ServerSetting.problems): the same settings, logged as vLLM logs them and given to
problems() as typed values, give the same findings, in the words `j0 status` has always reported
(typed here, not produced by the code under test).
"""

from __future__ import annotations

import pytest

from j0.article.server_setting import ServerSetting
from j0.article.spec_config import SpecConfig
from j0.engine.server import server_log
from j0.status import log_checks


def logged(spec: SpecConfig, seqs: int | None) -> str:
    """vLLM's `non-default args` line for a server of this config and request slots (none: not
    listed, vLLM's default)."""
    args = {"model_tag": "/models/target", "speculative_config": spec.to_dict()}
    if seqs is not None:
        args["max_num_seqs"] = seqs
    return f"(APIServer pid=3577) INFO 11-30 12:00:31 [startup.py:96] non-default args: {args!r}\n"


CASES = [
    (SpecConfig.article("/d", 15), 4, []),
    (SpecConfig.article("/d", 9), 4, ["num_speculative_tokens=9: the article ran 15 and 7"]),
    (SpecConfig("ngram", 7, None, None), None, ["speculative method 'ngram'"]),
    (
        SpecConfig.article("/d", 7),
        8,
        ["--max-num-seqs 8, the article ran 4"],
    ),
]


@pytest.mark.parametrize(("spec", "seqs", "said"), CASES)
def test_j0_status_finds_what_problems_finds(
    spec: SpecConfig, seqs: int | None, said: list[str]
) -> None:
    log = server_log.parse(logged(spec, seqs), "server.log")
    found = [log_checks.spec_config(log), log_checks.max_num_seqs(log)]
    reasons = [f.reason for f in found if f is not None and f.reason]
    setting = ServerSetting("/models/target", spec, None, None, None, max_num_seqs=seqs)
    assert reasons == said
    assert [p.status for p in setting.problems() if p.status is not None] == said
