"""`j0 drafter`: the DFlash drafter fetched from the Hub at a full commit sha, verified file by
file, and its config.json made causal (`fetch`, `patch-config`, `causality`).

run.py holds each subcommand's run function (typed options in, typed outcome out; cli.py parses
and prints); fetch runs `j0 drafter fetch` step by step; revision resolves the commit,
pin_record records it in the pins, files chooses and checks the files, download fetches them,
folder names and guards the drafter's folder, hub holds the endpoint, token and the Hub's
errors, console the messages; config patches config.json and reports the draft layers'
causality.
"""

from typing import Any

# The face other commands use (issue 32), resolved on first use: patch_config (a drafter's
# config.json made the one vLLM 0.33 serves).
FACE = ("patch_config",)


def __getattr__(name: str) -> Any:
    if name == "patch_config":
        from j0.drafter.config import patch_config

        return patch_config
    raise AttributeError(f"module 'j0.drafter' has no attribute {name!r}")
