"""`j0 selfcheck ...`: placeholder until its issue lands."""

from __future__ import annotations

import argparse

from j0.errors import J0Error


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("selfcheck", help="(not built yet)")
    parser.set_defaults(func=_not_yet)


def _not_yet(args: argparse.Namespace) -> int:
    raise J0Error("j0 selfcheck is not built yet")
