"""Which commit `j0 drafter fetch` downloads: a revision (a full commit, a hex prefix such as
3147a351, a branch or a tag) resolved to its full 40-hex commit on the Hub, a prefix
cross-checked against the commits of the repo's branches and tags (fetch.py's docstring, step 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from j0.drafter.hub import Token, hub_error, shown_endpoint, transport_errors
from j0.edge.hub_bounds import hub_answers, listed
from j0.errors import CHECK_FAILED, INPUT_LACKS, J0Error

FULL_SHA = re.compile(r"[0-9a-f]{40}")


HEX_PREFIX = re.compile(r"[0-9a-f]{4,39}")


@dataclass(frozen=True)
class Resolution:
    sha: str
    how: str


def _commits_by_prefix(
    api: Any, repo_id: str, prefix: str, token: Token, where: str
) -> dict[str, str]:
    """Commits of every branch and tag whose id starts with `prefix`: {sha: title}."""
    refs = api.list_repo_refs(repo_id, token=token.value)
    found: dict[str, str] = {}
    seen: set[str] = set()
    for ref in listed([*refs.branches, *refs.tags], where, f"the refs of {repo_id}"):
        if ref.target_commit in seen:
            continue  # that history has been read already
        commits = api.list_repo_commits(repo_id, revision=ref.ref, token=token.value)
        for commit in listed(commits, where, f"the commits of {repo_id}"):
            if not (isinstance(commit.commit_id, str) and isinstance(commit.title, str)):
                raise TypeError(f"a commit of id {commit.commit_id!r}, title {commit.title!r}")
            seen.add(commit.commit_id)
            if commit.commit_id.startswith(prefix):
                found[commit.commit_id] = commit.title
    return found


def resolve_revision(
    api: Any, repo_id: str, revision: str, token: Token, endpoint: str | None
) -> Resolution:
    """The full commit that `revision` names on the Hub (see the module's docstring)."""
    transport = transport_errors()
    from huggingface_hub.errors import BadRequestError, HfHubHTTPError, RevisionNotFoundError

    sha: str | None = None
    where = shown_endpoint(endpoint)
    try:
        with hub_answers(where, f"model info of {repo_id}@{revision}", "a JSON object with id"):
            sha = api.model_info(repo_id, revision=revision, token=token.value).sha
    except (RevisionNotFoundError, BadRequestError):
        sha = None  # a prefix the server does not resolve; the commit list below says why
    except (HfHubHTTPError, *transport) as exc:
        raise hub_error(exc, repo_id, revision, token, endpoint) from None
    if sha is not None and not (isinstance(sha, str) and FULL_SHA.fullmatch(sha)):
        raise J0Error(f"{shown_endpoint(endpoint)} gave {sha!r} as the commit of {revision!r}")
    if FULL_SHA.fullmatch(revision):
        if sha is None:
            raise J0Error(f"{repo_id}: no commit {revision}", INPUT_LACKS)
        if sha != revision:
            # A full commit names itself: an endpoint that answers another one (a mirror out of
            # step, a proxy that rewrites) is refused, never recorded beside the one asked.
            raise J0Error(
                f"{repo_id}: commit {revision} was asked, but {shown_endpoint(endpoint)} answered "
                f"commit {sha}: refused (a full commit names itself)",
                CHECK_FAILED,
            )
        return Resolution(sha, "a full commit id")
    if not HEX_PREFIX.fullmatch(revision):
        if sha is None:
            raise J0Error(f"{repo_id}: no branch, tag or commit {revision!r}", INPUT_LACKS)
        return Resolution(sha, f"branch or tag {revision!r} (a moving name, now pinned)")

    try:
        with hub_answers(where, f"the refs and commits of {repo_id}", "the Hub's lists of them"):
            candidates = _commits_by_prefix(api, repo_id, revision, token, where)
    except (HfHubHTTPError, *transport) as exc:
        if sha is None:
            raise hub_error(exc, repo_id, revision, token, endpoint) from None
        candidates = None
    if candidates is not None and len(candidates) > 1:
        listed = "; ".join(f"{c} ({title})" for c, title in sorted(candidates.items()))
        raise J0Error(
            f"{repo_id}: revision {revision!r} is ambiguous: {len(candidates)} commits start with "
            f"it: {listed}; pass a longer prefix or the full commit",
            CHECK_FAILED,
        )
    if sha is None:
        if not candidates:
            raise J0Error(
                f"{repo_id}: no commit starts with {revision!r} on {shown_endpoint(endpoint)}",
                INPUT_LACKS,
            )
        (sha,) = candidates
        return Resolution(sha, "the only commit with that prefix in the repo's history")
    if not sha.startswith(revision):
        raise J0Error(
            f"{repo_id}: {revision!r} is the name of a branch or tag pointing to {sha}, not a "
            "prefix of that commit; pass the full commit you mean",
            CHECK_FAILED,
        )
    if candidates is None:
        return Resolution(
            sha,
            "the Hub's answer (the commit list could not be read to rule out an ambiguous prefix)",
        )
    return Resolution(sha, "the only commit with that prefix")
