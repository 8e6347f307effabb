"""`j0 overlay ...`: arguments for building and verifying the overlay file."""

from __future__ import annotations

import argparse
from pathlib import Path

from j0.article.variants import ARTICLE_VARIANT, VARIANTS
from j0.commands import (
    FILE,
    add_command,
    add_json_option,
    check_json_output,
    reads,
    writes,
)
from j0.terminal import sink

BUILD_HELP = """\
Make the article's speculator.py: take vLLM's unpatched file from one source, check its sha256
against BASE_SHA256, apply overlay/jetspec-j0.patch (git apply, else GNU patch; no fuzz), check
the result against PATCHED_SHA256 and write it atomically. An existing different OUT is kept
as OUT.orig. With no source option the pinned vllm wheel is used (downloaded once and cached in
$J0_WHEEL_CACHE, default ~/.cache/j0/wheels).

--variant prefix-safe builds the article's file first (checked as above), then applies
overlay/jetspec-j0-prefix-safe.patch on top with the same rules and checks the result against
PREFIX_SAFE_SHA256: J0 made safe under prefix caching (docs/overlay.md). Without -o it is written
to overlay/prefix-safe/<the vLLM path>; the article's file stays the default.

--audit then applies overlay/jetspec-j0-audit.patch on top (AUDIT_PATCH_SHA256) and checks the
result (AUDIT_ARTICLE_SHA256 or AUDIT_PREFIX_SAFE_SHA256): a test instrument that, with J0 on and
VLLM_DFLASH_AUDIT=DIR, checks every request's J0 history row and draws against vLLM's own copy of
its committed tokens at every draft step and writes DIR/audit-<pid>.jsonl (`j0 dumps audit DIR`
judges it). Without -o: overlay/audit/<variant>/<the vLLM path>. `verify` refuses it (exit 6).

--vllm 0.34.0 does the same for vLLM 0.34.0, whose speculator.py is not c50aca14's: its base
(V0340_BASE_SHA256; the vllm==0.34.0 wheel without a source option), the patches cut by hand for
it under overlay/vllm-0.34.0/ and their results, each checked against its V0340_* pin. Without -o
it writes overlay/vllm-0.34.0/<variant>/<the vLLM path> (--audit: overlay/vllm-0.34.0/audit/
<variant>/...). The article's release (c50aca14 = 0.33.0) stays the default.
"""

VERIFY_HELP = """\
Say what a speculator.py is. Exit 0: the article's file; 5: the prefix-safe variant of it
(PREFIX_SAFE_SHA256); 3: the unpatched base; 6: a J0 audit instrument (identity=audit: the audit
patch on either file, or any file holding the audit); 4: anything else, with the J0 pieces
present or missing and a short diff against the article's file. FILE may be a directory: its
speculator.py, or the one below it where vLLM keeps it (a vLLM checkout, site-packages or the
vllm package directory).

A pinned file of vLLM 0.34.0 is named too (identity base-0.34.0, article-0.34.0,
prefix-safe-0.34.0, or audit); the exit codes above are for the article's release unless --vllm
0.34.0 asks for that release's (0: article-0.34.0, 5: prefix-safe-0.34.0, 3: base-0.34.0);
another release's file exits 4, naming the option that judges it.
"""

VLLM_HELP = (
    "the vLLM release whose files to make or judge: the article's (c50aca14 = 0.33.0, the "
    "default) or one j0 has patches cut for (0.34.0; V0340_* in overlay/pins.env)"
)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    group = add_command(
        subparsers,
        "overlay",
        "build or verify the patched speculator.py",
        "The article's speculator.py: `build` patches the base file, `verify` says which file a "
        "speculator.py is.",
    )
    commands = group.add_subparsers(dest="overlay_command", metavar="SUBCOMMAND")
    commands.required = True

    build = add_command(
        commands,
        "build",
        "patch the base file into the article's file",
        BUILD_HELP,
    )
    source = build.add_mutually_exclusive_group()
    source.add_argument("--base", type=Path, metavar="FILE", help="an unpatched speculator.py")
    source.add_argument(
        "--site-packages", type=Path, metavar="DIR", help="a directory holding the vllm package"
    )
    source.add_argument(
        "--installed",
        action="store_true",
        help="the vLLM installed for this Python (found without importing it)",
    )
    source.add_argument(
        "--from-wheel", action="store_true", help="the pinned vllm wheel from PyPI (the default)"
    )
    source.add_argument(
        "--from-image",
        metavar="IMAGE",
        help="a Docker image, pulled first when absent (docker-py; its python3 finds vLLM)",
    )
    build.add_argument(
        "-o",
        "--out",
        "--output",
        dest="output",
        type=Path,
        metavar="OUT",
        help="where to write (default: overlay/vllm/v1/.../speculator.py)",
    )
    build.add_argument(
        "--allow-base-drift",
        action="store_true",
        help="patch a base whose sha256 differs; the patch must still apply cleanly",
    )
    build.add_argument(
        "--variant",
        choices=VARIANTS,
        default=ARTICLE_VARIANT,
        help="article (default): the article's file; prefix-safe: that file with the "
        "prefix-safe patch on top",
    )
    build.add_argument(
        "--audit",
        action="store_true",
        help="then the audit patch on top: the J0 audit instrument (tests only; docs/overlay.md)",
    )
    build.add_argument(
        "--tool",
        choices=("git", "patch", "python"),
        help="patch tool (default: git if installed, else GNU patch, else python: j0's own exact "
        "applier)",
    )
    build.add_argument("--vllm", metavar="RELEASE", help=VLLM_HELP)
    add_json_option(
        build, "what was built (file, sha256, identity, variant, audit, the base and its sha256)"
    )
    reads(build, "--base", "--site-packages")
    writes(build, "-o", FILE)
    build.set_defaults(func=run_build)

    verify = add_command(
        commands,
        "verify",
        "say whether a file is the article's, the base or other",
        VERIFY_HELP,
    )
    verify.add_argument("file", type=Path, metavar="FILE", help="a speculator.py, or a directory")
    verify.add_argument("--vllm", metavar="RELEASE", help=VLLM_HELP)
    add_json_option(verify, "the verdict (file, sha256, identity, exit code, what it said)")
    reads(verify, "file")
    verify.set_defaults(func=run_verify)


def run_build(args: argparse.Namespace) -> int:
    import json

    from j0.overlay.run import BuildOptions
    from j0.overlay.run import run_build as build

    check_json_output(args.json)
    built = build(
        BuildOptions(
            base=args.base,
            site_packages=args.site_packages,
            installed=args.installed,
            from_image=args.from_image,
            variant=args.variant,
            allow_base_drift=args.allow_base_drift,
            tool=args.tool,
            audit=args.audit,
            output=args.output,
            vllm=args.vllm,
        )
    )
    sink.result(built.text(), json.dumps(built.to_json(), indent=1))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    import json

    from j0.overlay.run import VerifyOptions
    from j0.overlay.run import run_verify as verify

    check_json_output(args.json)
    verdict = verify(VerifyOptions(args.file, args.vllm))
    sink.result("\n".join(verdict.lines), json.dumps(verdict.to_json(), indent=1))
    return verdict.exit_code
