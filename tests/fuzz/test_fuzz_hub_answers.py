"""Property: whatever JSON a Hub-like endpoint answers where model info or a file listing goes,
`j0 drafter fetch`'s readers of them (j0.drafter.revision.resolve_revision, j0.drafter.files.
list_files) give the Hub's facts of the Hub's types or a clear refusal (J0Error, exit 69 for an
answer that is not a Hub's), never another exception (exit 70 before, issue 53 item 4).

The real huggingface_hub client, in this process, against our Hub stand-in on 127.0.0.1 whose
answer for the route is the drawn JSON (tests/servers/hub/, raw_api).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.fuzzing import outcome
from j0.drafter.files import RepoEntry, list_files
from j0.drafter.hub import Token
from j0.drafter.revision import FULL_SHA, resolve_revision
from j0.errors import J0Error
from servers.hub.server import DEFAULT_REPO_ID, HubServer, article_repo

SHA = "3147a351" + "0" * 32
scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12)
values = st.recursive(
    scalars | st.sampled_from([SHA, "file", "directory", "config.json"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["id", "sha", "type", "path", "size", "oid", "lfs", "siblings", "x"]),
            inner,
            max_size=6,
        )
    ),
    max_leaves=12,
)
entries = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["file", "directory"])},
        optional={"path": values, "size": values, "oid": values, "lfs": values},
    )
    | values,
    max_size=4,
)


@pytest.fixture(scope="module")
def hub() -> Iterator[HubServer]:
    with HubServer([article_repo()]) as server:
        yield server


def api_of(hub: HubServer) -> Any:
    from huggingface_hub import HfApi

    return HfApi(endpoint=hub.url, library_name="j0")


def answer(hub: HubServer, kind: str, value: Any) -> None:
    hub.raw_api.clear()
    hub.raw_api[kind] = (200, json.dumps(value).encode(), {"Content-Type": "application/json"})


@given(values)
def test_any_model_info_is_a_commit_or_a_refusal(hub: HubServer, value: Any) -> None:
    answer(hub, "revision", value)
    found = outcome(
        lambda: resolve_revision(api_of(hub), DEFAULT_REPO_ID, SHA, Token(None, "none"), hub.url),
        J0Error,
    )
    if isinstance(found, J0Error):
        assert found.exit_code in (1, 2, 69), found
    else:
        assert FULL_SHA.fullmatch(found.sha)


@given(entries)
def test_any_listing_is_the_hubs_entries_or_a_refusal(hub: HubServer, value: Any) -> None:
    answer(hub, "tree", value)
    found = outcome(
        lambda: list_files(api_of(hub), DEFAULT_REPO_ID, SHA, Token(None, "none"), hub.url),
        J0Error,
    )
    if isinstance(found, J0Error):
        assert found.exit_code == 69 and hub.url in str(found), found
        return
    for entry in found:
        assert isinstance(entry, RepoEntry)
        assert isinstance(entry.path, str) and isinstance(entry.blob_id, str)
        assert isinstance(entry.size, int) and entry.size >= 0
