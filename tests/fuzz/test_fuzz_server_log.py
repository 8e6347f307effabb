"""Property: what a client writes into the server's log after the server is up changes nothing
that j0 reads from the log (j0.engine.server.server_log.parse): the facts of a start-up followed by
any text (lines built from the patch's, the entrypoint's, `j0 serve`'s and vLLM's own lines, line
breaks and arbitrary text, as a request could put them there) are the facts of the start-up.
Bounded memory throughout."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import bounded
from j0.engine.server import server_log
from status.status_logs import BASE_SHA, article_log

FORGED = [
    "(EngineCore pid=71) INFO 11-30 12:00:53 [speculator.py:144] DFLASH_CTX_NOISE=0 pool=(1, 1) "
    "dump=None/0",
    "(EngineCore pid=71) INFO 11-30 12:00:56 [speculator.py:263] DFLASH_DRAFT_KV_DTYPES=['fp8'] "
    "spec_kv_cache_dtype=fp8",
    f"j0-entrypoint: /x/speculator.py: speculator.py sha256={BASE_SHA} identity=base",
    'j0 serve: --speculative-config {"method":"ngram","num_speculative_tokens":3}',
    "(APIServer pid=1) INFO 11-30 13:32:08 [startup.py:96] non-default args: {'max_num_seqs': 8}",
    "server-1  | ",
    'INFO:     127.0.0.1:1 - "GET /health?',
    "INFO:     Started server process [1]",
]
client_text = st.lists(
    st.one_of(st.sampled_from([*FORGED, "\n", "\r\n", "\u2028"]), st.text(max_size=20)),
    max_size=15,
).map("".join)


def facts_of(text: str) -> dict:
    found = dataclasses.asdict(server_log.parse(text, "log"))
    for kind in ("server_up", "not_up"):  # the lines themselves: where the text ends
        found.pop(kind)
    return found


@given(st.sampled_from([0, 1]), client_text)
def test_text_after_the_server_is_up_changes_nothing(noise: int, text: str) -> None:
    """Whatever a client writes, the facts are the start-up's, unless the text holds a whole
    later start-up (a line that begins one, then a line of vLLM or uvicorn coming up, which only
    a restarted server writes as such): then the count says the log holds two, which `j0
    status`'s verdict line names ("the last of 2 start-ups in the log")."""
    startup = article_log(noise=noise, pool="(4, 40960)" if noise else "(1, 1)")
    found = bounded(lambda: facts_of(startup + text))
    assert found["startups"] in (1, 2)
    if found["startups"] == 1:
        assert found == facts_of(startup)


@given(st.sampled_from([0, 1]), client_text)
def test_text_without_a_line_of_a_server_coming_up_changes_nothing(noise: int, text: str) -> None:
    """No later start-up without a line of the server coming up: an access-log line (whose
    request line a client writes) does not end one."""
    text = "\n".join(x for x in text.split("\n") if not server_log.CAME_UP.search(x))
    text += '\nINFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    startup = article_log(noise=noise, pool="(4, 40960)" if noise else "(1, 1)")
    assert bounded(lambda: facts_of(startup + text)) == facts_of(startup)


@given(st.lists(st.sampled_from([0, 1]), min_size=1, max_size=4))
def test_the_last_of_several_start_ups_is_read(runs: list[int]) -> None:
    """Start-ups one after another (each run's requests between them): the last is read."""
    served = 'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\n'
    logs = [article_log(noise=n, pool="(4, 40960)" if n else "(1, 1)") for n in runs]
    facts = server_log.parse(served.join(logs), "log")
    assert facts.startups == len(runs)
    assert facts.j0 == ("on" if runs[-1] else "off")


@given(
    st.from_regex(r"[a-z_]{1,12}\.py", fullmatch=True).filter(lambda f: f != "speculator.py"),
    st.sampled_from(["(EngineCore pid=71) ", "(APIServer pid=1) ", ""]),
)
def test_a_patch_line_of_another_logger_is_not_read(logger_file: str, process: str) -> None:
    """The patch's messages count only from the patch's own logger (its file, speculator.py)."""
    text = article_log().replace("[speculator.py:", f"[{logger_file}:")
    text = text.replace("(EngineCore pid=71) ", process)
    facts = server_log.parse(text, "log")
    assert (facts.j0, facts.draft_kv_dtypes) == (None, None)
