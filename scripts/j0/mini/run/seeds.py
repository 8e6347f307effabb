"""J0 with another seed, for `j0 mini run --j0-seeds`: J0's random numbers are
`tl.randint(J0_SEED, req_state_idx * 64 + k)`, the seed a literal of the article's kernel
(overlay/pins.env J0_SEED, 20261031). Within one seed a request's draws depend on its request
slot only, so the run spreads its requests over the slots (--slots) and repeats J0 with other
seeds, so that J0's own randomness is measured rather than one fixed set of draws.

For a seed other than the pinned one: the article's speculator.py (this Python's vLLM's, checked
by its sha256 against PATCHED_SHA256; or the installed base file with the article's patch
applied) with the one literal changed, written into a folder with a `sitecustomize.py` that makes
Python import it in the place of vLLM's module in every process that starts with that folder on
PYTHONPATH (the server and its engine core). `j0 dumps check --seed` on the setting's dumps then
shows whether the server drew with that seed. Standard library only.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from j0.edge.atomic import write_text_atomic
from j0.errors import INPUT_LACKS, J0Error
from j0.pins import Pins

ENV_FILE = "J0_MINI_SPECULATOR"

SITECUSTOMIZE = '''"""Made by `j0 mini run` (j0/mini/run/seeds.py): import ${env} in the
place of vLLM's {module}, then whatever sitecustomize comes after this folder on sys.path."""
import importlib.abc
import importlib.util
import os
import sys

_NAME = "{module}"
_FILE = os.environ.get("{env}")


class _J0SeedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == _NAME and _FILE:
            return importlib.util.spec_from_file_location(name, _FILE)
        return None


if _FILE:
    sys.meta_path.insert(0, _J0SeedFinder())

_HERE = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    _other = os.path.join(_entry or ".", "sitecustomize.py")
    if os.path.abspath(_entry or ".") != _HERE and os.path.isfile(_other):
        with open(_other) as _f:
            exec(compile(_f.read(), _other, "exec"))
        break
'''


def literal(seed: int) -> str:
    return f"tl.randint({seed},"


def variant_text(article: str, pinned: int, seed: int) -> str:
    """The article's file with J0's seed changed: exactly one literal, else refused."""
    found = article.count(literal(pinned))
    if found != 1:
        raise J0Error(
            f"the article's speculator.py holds `{literal(pinned)}` {found} times; expected once "
            "(J0's seed): cannot make the seed variant",
            INPUT_LACKS,
        )
    return article.replace(literal(pinned), literal(seed))


def article_text(pins: Pins) -> str:
    """This Python's vLLM's speculator.py when it is the article's file; the article's file made
    from it when it is the pinned base; else refused."""
    from j0.engine.source.base_sources import installed_speculator

    path = installed_speculator(pins)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest == pins.patched_sha256:
        return data.decode()
    if digest == pins.base_sha256:
        from j0.article.build import patch_base

        return patch_base(data, str(path), pins).decode()
    raise J0Error(
        f"{path}: sha256 {digest} is neither the article's file ({pins.patched_sha256}) nor its "
        f"base ({pins.base_sha256}): cannot make J0's seed variants from it",
        INPUT_LACKS,
    )


def prepare(folder: Path, seed: int, pins: Pins, article: str | None = None) -> dict[str, str]:
    """Write FOLDER/speculator.py (seed `seed`) and FOLDER/sitecustomize.py; the environment
    that makes a server import it. The pinned seed needs nothing: {}."""
    if seed == pins.j0_seed:
        return {}
    text = variant_text(article if article is not None else article_text(pins), pins.j0_seed, seed)
    folder.mkdir(parents=True, exist_ok=True)
    speculator = folder / "speculator.py"
    write_text_atomic(speculator, text)
    write_text_atomic(
        folder / "sitecustomize.py",
        SITECUSTOMIZE.replace("{module}", pins.speculator_module).replace("{env}", ENV_FILE),
    )
    path = os.environ.get("PYTHONPATH")
    return {
        ENV_FILE: str(speculator.resolve()),
        "PYTHONPATH": str(folder.resolve()) + (os.pathsep + path if path else ""),
    }


def sha256_of(env: dict[str, str]) -> str | None:
    file = env.get(ENV_FILE)
    return hashlib.sha256(Path(file).read_bytes()).hexdigest() if file else None
