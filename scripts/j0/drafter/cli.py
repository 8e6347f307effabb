"""`j0 drafter ...`: fetch the JetSpec++ drafter, patch its config.json, check its causality.

Standard library only at module level; huggingface_hub is imported by `fetch` when it runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.commands import (
    FOLDER,
    add_command,
    add_json_option,
    check_json_output,
    reads,
    writes,
)
from j0.errors import J0Error
from j0.terminal import sink

FETCH_HELP = """\
Download the JetSpec++ drafter for Qwen3.8-27B at one full commit and patch its config.json.

The revision (default: DRAFTER_REVISION in overlay/pins.env, a short commit) is resolved on the
Hub to its full 40-hex commit; an unknown prefix is refused (exit 2), an ambiguous one too, with
the candidates listed (exit 1); a full commit asked that the endpoint answers as another commit
is refused, naming both (exit 1). The full commit is written to DRAFTER_COMMIT in the pins file for
the pinned repo and revision; a warning instead where the record would not last or not be the
Hub's: in an image's copy of the pins, with HF_ENDPOINT set (a mirror, a test server) when the
pins file is tracked by git, or where the file cannot be written. Then
snapshot_download(local_dir=DIR, revision=<full commit>) fetches only what vLLM reads for a DFlash
draft: config.json, *.safetensors, *.safetensors.index.json, and mask_embedding.pt and
hf_quant_config.json where the repo has them. Files are checked against the Hub's sha256 / git
blob ids, and `j0 drafter patch-config DIR` runs last.

Resume: a dropped connection is resumed (HTTP Range) within the run; after an interrupted run,
running the same command again fetches only the files still missing.

Environment: HF_ENDPOINT (the Hub), HF_TOKEN or HF_TOKEN_PATH (a file holding the token; the token
is never printed), HF_HUB_OFFLINE=1 (no requests: check and patch an existing DIR).

The default DIR is ./drafter/REV (./drafter/3147a351 for the pinned drafter), the folder that
`docker compose up` uses too (DRAFTER_DIR). A DIR holding an earlier download of another commit is
refused (exit 1); so is a DIR whose path holds another speculative method's name (eagle, mtp,
medusa, ...; exit 64), because vLLM guesses the method from such names (vLLM issue 47486).
"""

PATCH_HELP = """\
Make DIR/config.json the original plus "causal": true inside dflash_config, and nothing else.

The change is drafter-config/causal.merge-patch.json (a JSON merge patch, RFC 7386), applied as
the smallest textual edit (key order, indentation and line ends kept) and checked by parsing the
result. The original bytes are kept as DIR/config.json.orig (never overwritten); a config.json
beside it that is neither those bytes nor this command's output from them (a hand edit) is
refused (exit 2) and left alone; the write is atomic; a config.json that is a symlink (into a
Hub cache) is replaced by a file and the cache is left alone. Run twice, the second run changes
nothing ("unchanged", exit 0). Afterwards the draft layers' causality is resolved as vLLM 0.33.0
does and reported ("all N draft layers causal").

Refused, naming the file and key: no or invalid config.json, no dflash_config (exit 2); a
top-level "is_causal" that is false, which vLLM 0.33 reads first, or a dflash_config.causal that
is already false, or either key set to something other than a JSON boolean ("true" in quotes,
1, ...: vLLM takes bool() of it) (exit 1). A warning when dflash_config.causal_head is absent or
false.
"""

CHECK_HELP = """\
Resolve each draft layer's causality from DIR/config.json the way vLLM 0.33.0 does (a top-level
is_causal first, then dflash_config.causal, then per-layer defaults from layer_types) and say
whether all are causal. Exit 0: all causal; 1: some are not; 2: no readable config.json.
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    group = add_command(
        subparsers,
        "drafter",
        "fetch the JetSpec++ drafter and make its config.json causal",
        "The drafter: `fetch` downloads it at a full commit and runs `patch-config`, "
        'which adds "causal": true to its config.json; `check` says how vLLM 0.33 will run it.',
    )
    commands = group.add_subparsers(dest="drafter_command", metavar="SUBCOMMAND")
    commands.required = True

    def add(name: str, summary: str, text: str) -> argparse.ArgumentParser:
        return add_command(commands, name, summary, text)

    fetch = add("fetch", "download the drafter at a full commit, then patch-config", FETCH_HELP)
    fetch.add_argument(
        "--repo-id", metavar="REPO", help="Hub model repo (default: DRAFTER_REPO from the pins)"
    )
    fetch.add_argument(
        "--revision",
        metavar="REV",
        help="commit (prefix), branch or tag (default: DRAFTER_REVISION from the pins)",
    )
    fetch.add_argument(
        "--out",
        "--dir",
        dest="dir",
        type=Path,
        metavar="DIR",
        help="where to put the files (default: ./drafter/REV, as compose's DRAFTER_DIR; --dir is "
        "the older spelling, which compose's drafter service uses)",
    )
    add_json_option(fetch, "what was fetched (repo, the full commit, the folder, the patch)")
    writes(fetch, "--out", FOLDER)
    fetch.set_defaults(func=run_fetch)

    patch = add(
        "patch-config", 'add "causal": true to DIR/config.json\'s dflash_config', PATCH_HELP
    )
    patch.add_argument("dir", type=Path, metavar="DIR", help="the drafter's folder")
    patch.add_argument(
        "--patch",
        type=Path,
        metavar="FILE",
        help="the merge patch (default: drafter-config/causal.merge-patch.json)",
    )
    add_json_option(patch, "the result (config, changed, orig, each layer's causality)")
    reads(patch, "dir", "--patch")
    patch.set_defaults(func=run_patch_config)

    check = add("check", "say whether vLLM 0.33 runs every draft layer causally", CHECK_HELP)
    check.add_argument("dir", type=Path, metavar="DIR", help="the drafter's folder")
    add_json_option(check, "the verdict (config, each layer's causality, what decided it)")
    reads(check, "dir")
    check.set_defaults(func=run_check)


def run_fetch(args: argparse.Namespace) -> int:
    from j0.drafter.run import FetchOptions
    from j0.drafter.run import run_fetch as fetch

    check_json_output(args.json)
    fetched = fetch(FetchOptions(args.repo_id, args.revision, args.dir))
    for line in fetched.lines():
        sink.say(line)
    sink.emit_json(fetched.to_json())
    return 0


def run_patch_config(args: argparse.Namespace) -> int:
    import json

    from j0.drafter.run import PatchOptions
    from j0.drafter.run import run_patch_config as patch_config

    check_json_output(args.json)
    result = patch_config(PatchOptions(args.dir, args.patch))
    sink.result("\n".join(result.lines()), json.dumps(result.to_json(), indent=1))
    return 0


def run_check(args: argparse.Namespace) -> int:
    import json

    from j0.drafter.run import DrafterCheckOptions
    from j0.drafter.run import run_check as check

    check_json_output(args.json)
    checked = check(DrafterCheckOptions(args.dir))
    sink.result("\n".join(checked.lines()), json.dumps(checked.to_json(), indent=1))
    if not checked.causality.all_causal:
        raise J0Error("the draft is not causal everywhere", 1)
    return 0
