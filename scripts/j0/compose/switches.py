"""The knobs of compose.yaml as `docker compose up` would resolve them, without Docker.

Precedence as compose's: the environment, then the project's .env (read by compose's rules:
j0.compose.dotenv), then overlay/pins.env (which
compose.yaml includes as the services' env_file), then the `${NAME:-default}` defaults written in
compose.serve.yaml (read from that file, so that no default is typed twice). As in compose, an
empty value counts as unset where a default exists. Paths are taken relative to the project folder.

Standard library only, but for a .env file (python-dotenv, the `dotenv` extra).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from j0.compose.dotenv import braced_end, interpolate, read_dotenv
from j0.pins import Pins

__all__ = ["Knobs", "compose_defaults", "interpolate", "resolve"]

COMPOSE_SERVICES = "compose.serve.yaml"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _expressions(text: str) -> list[tuple[int, int, str, str, str]]:
    """Each top-level `${NAME}`, `${NAME:-default}`, `${NAME:+alt}` in text: (start, end, name,
    operator, argument)."""
    found, i = [], 0
    while (start := text.find("${", i)) >= 0:
        end = braced_end(text, start)
        end = len(text) if end < 0 else end
        body = text[start + 2 : end - 1]
        name = _NAME.match(body)
        if name is not None:
            rest = body[name.end() :]
            operator = rest[:2] if rest[:2] in (":-", ":+") else ""
            found.append((start, end, name.group(), operator, rest[len(operator) :]))
        i = end
    return found


def compose_defaults(root: Path) -> dict[str, str]:
    """`${NAME:-default}` defaults written in compose.serve.yaml (comments skipped), unexpanded:
    a default may name other knobs (`./drafter/${DRAFTER_REVISION}`)."""
    try:
        text = (root / COMPOSE_SERVICES).read_text(encoding="utf-8")
    except OSError:
        return {}
    code = "\n".join(x for x in text.splitlines() if not x.lstrip().startswith("#"))
    defaults: dict[str, str] = {}
    pending = [code]
    while pending:
        for _, _, name, operator, argument in _expressions(pending.pop()):
            if operator == ":-":
                defaults.setdefault(name, argument)
                pending.append(argument)
    return defaults


@dataclass
class Knobs:
    """The resolved knobs and where each came from."""

    root: Path
    values: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def get(self, key: str, default: str = "") -> str:
        return self.values.get(key, default)

    def source(self, key: str) -> str:
        return self.sources.get(key, "unset")

    def path(self, key: str) -> Path | None:
        """A knob naming a folder or file: ~ expanded, relative to the project folder."""
        value = self.get(key)
        if not value:
            return None
        path = Path(os.path.expanduser(value))
        return path if path.is_absolute() else self.root / path

    def hub_cache(self) -> Path:
        """What compose mounts as the Hub cache: HF_HUB_CACHE, else $HF_HOME/hub, else
        ~/.cache/huggingface/hub (huggingface_hub's own rule too)."""
        cache = self.path("HF_HUB_CACHE")
        if cache is not None:
            return cache
        home = self.path("HF_HOME")
        if home is not None:
            return home / "hub"
        return Path.home() / ".cache" / "huggingface" / "hub"


def resolve(pins: Pins, environ: Mapping[str, str] | None = None) -> Knobs:
    environ = os.environ if environ is None else environ
    root = pins.root
    layers: list[tuple[str, Mapping[str, str]]] = [
        ("the environment", environ),
        (".env", read_dotenv(root / ".env", environ)),
        ("overlay/pins.env", pins.values),
        (f"{COMPOSE_SERVICES}'s default", compose_defaults(root)),
    ]
    settings = Knobs(root)
    keys = {key for _, layer in layers for key in layer}
    for key in keys:
        for name, layer in layers:
            value = layer.get(key)
            if value:  # compose's ${NAME:-default}: empty means unset
                settings.values[key] = value
                settings.sources[key] = name
                break
    for key, source in settings.sources.items():  # defaults that name other knobs
        if source == layers[-1][0]:
            settings.values[key] = interpolate(settings.values[key], settings.values)
    return settings
