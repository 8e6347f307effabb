"""Whether a wheel's `Requires-Dist` lines are met by the distributions a Python has installed.

The wheel route replaces the base image's vllm package with another commit's wheel, installed with
`--no-deps` so that the image's torch and CUDA stack stays as it is; this module says which of the
new wheel's requirements that stack does not satisfy. Standard library only (it runs inside the
build on the base image's python3, which need not have `packaging`): a small reader of PEP 508
requirements (name, extras, version specifiers, a URL, an environment marker) and of PEP 440
versions, enough for what wheels' METADATA holds. A requirement whose marker is false here (or
that only an extra asks for) is not needed; one that cannot be parsed is reported as unmet,
never skipped.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*")
_VERSION = re.compile(
    r"^\s*v?(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>[0-9]+)?)?"
    r"(?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_SPEC = re.compile(r"^\s*(===|~=|==|!=|<=|>=|<|>)\s*([^\s,;]+)\s*$")
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


class RequirementError(ValueError):
    """A requirement, version or marker this reader cannot parse."""


def canonical_name(name: str) -> str:
    """PEP 503's normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True, order=False)
class Version:
    """A PEP 440 version, ordered as PEP 440 orders them."""

    text: str
    epoch: int
    release: tuple[int, ...]
    pre: tuple[int, int] | None
    post: int | None
    dev: int | None
    local: tuple[int | str, ...]

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _VERSION.match(text)
        if match is None:
            raise RequirementError(f"{text!r} is not a PEP 440 version")
        pre = None
        if match["pre_l"]:
            pre = (_PRE[match["pre_l"].lower()], int(match["pre_n"] or 0))
        post_n = match["post_n1"] or match["post_n2"]
        post = int(post_n or 0) if (match["post_n1"] or match["post_l"]) else None
        dev = int(match["dev_n"] or 0) if match["dev_l"] else None
        local: tuple[int | str, ...] = ()
        if match["local"]:
            local = tuple(
                int(part) if part.isdigit() else part.lower()
                for part in re.split(r"[-_.]", match["local"])
            )
        release = tuple(int(part) for part in match["release"].split("."))
        return cls(text, int(match["epoch"] or 0), release, pre, post, dev, local)

    @property
    def public(self) -> Version:
        return Version(self.text, self.epoch, self.release, self.pre, self.post, self.dev, ())

    @property
    def is_prerelease(self) -> bool:
        return self.pre is not None or self.dev is not None

    def _key(self) -> tuple[object, ...]:
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        inf, neg = (3, 0), (-1, 0)  # after / before every (kind, number)
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[int, int] = neg  # 1.0.dev0 sorts before 1.0a0
        else:
            pre = self.pre if self.pre is not None else inf
        post = (0, self.post) if self.post is not None else (-1, 0)
        dev = (0, self.dev) if self.dev is not None else (1, 0)
        local = tuple((1, p, "") if isinstance(p, int) else (0, 0, p) for p in self.local)
        return (self.epoch, tuple(release), pre, post, dev, (len(self.local) > 0, local))

    def __lt__(self, other: Version) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Version) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: Version) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: Version) -> bool:
        return self._key() >= other._key()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _prefix_match(version: Version, pattern: str) -> bool:
    """`==X.Y.*`: the version's release starts with X.Y (padded with zeros), same epoch."""
    wanted = Version.parse(pattern)
    if wanted.epoch != version.epoch:
        return False
    head = list(version.release[: len(wanted.release)])
    head += [0] * (len(wanted.release) - len(head))
    return tuple(head) == wanted.release


def specifier_allows(op: str, spec: str, version: Version, text: str) -> bool:
    """Whether `version` (written `text`) satisfies the one specifier `op spec`."""
    if op == "===":
        return text.strip().lower() == spec.lower()
    if op in ("==", "!=") and spec.endswith(".*"):
        matched = _prefix_match(version, spec[:-2])
        return matched if op == "==" else not matched
    wanted = Version.parse(spec)
    if op in ("==", "!="):
        candidate = version if wanted.local else version.public
        return (candidate == wanted) == (op == "==")
    if op == "~=":
        if len(wanted.release) < 2:
            raise RequirementError(f"~={spec}: needs at least two release parts")
        prefix = ".".join(str(part) for part in wanted.release[:-1])
        return version.public >= wanted and _prefix_match(version, f"{wanted.epoch}!{prefix}")
    public = version.public
    if op == "<=":
        return public <= wanted
    if op == ">=":
        return public >= wanted
    if op == "<":  # not a pre-release of the bound itself, unless the bound is one
        if public < wanted:
            own_pre = public.is_prerelease and _same_release(public, wanted)
            return wanted.is_prerelease or not own_pre
        return False
    if op == ">":  # not a post-release or local version of the bound itself
        if public > wanted:
            return wanted.post is not None or not (
                public.post is not None and _same_release(public, wanted)
            )
        return False
    raise RequirementError(f"{op}{spec}: unknown operator")


def _same_release(a: Version, b: Version) -> bool:
    """Same epoch and release, trailing zeros aside (3.0.0rc2 is a pre-release of 3.0)."""

    def trimmed(release: tuple[int, ...]) -> tuple[int, ...]:
        parts = list(release)
        while len(parts) > 1 and parts[-1] == 0:
            parts.pop()
        return tuple(parts)

    return (a.epoch, trimmed(a.release)) == (b.epoch, trimmed(b.release))


# --- environment markers -------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'[^']*'|\"[^\"]*\")|(?P<op>===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b)"
    r"|(?P<bool>and\b|or\b)|(?P<paren>[()])|(?P<var>[a-z_][a-z0-9_.]*))",
    re.IGNORECASE,
)
_VERSION_VARS = {"python_version", "python_full_version", "implementation_version"}


def marker_environment() -> dict[str, str]:
    """PEP 508's marker variables for this Python."""
    info = sys.implementation.version
    implementation = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        implementation += info.releaselevel[0] + str(info.serial)
    return {
        "os_name": os.name,
        "sys_platform": sys.platform,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "python_full_version": platform.python_version(),
        "implementation_name": sys.implementation.name,
        "implementation_version": implementation,
    }


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise RequirementError(f"marker {text!r}: cannot read {text[position:]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, re.sub(r"\s+", " ", match[kind])))
        position = match.end()
    return tokens


class _Marker:
    """A recursive-descent evaluator: or_expr := and_expr (or and_expr)*; and_expr := atom
    (and atom)*; atom := ( or_expr ) | value op value."""

    def __init__(self, text: str, env: Mapping[str, str]) -> None:
        self.text, self.env, self.tokens, self.at = text, env, _tokens(text), 0

    def _next(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise RequirementError(f"marker {self.text!r}: ends too early")
        self.at += 1
        return self.tokens[self.at - 1]

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("", "")

    def evaluate(self) -> bool:
        result = self._or()
        if self.at != len(self.tokens):
            raise RequirementError(f"marker {self.text!r}: unexpected {self._peek()[1]!r}")
        return result

    def _or(self) -> bool:
        result = self._and()
        while self._peek() == ("bool", "or"):
            self._next()
            right = self._and()
            result = result or right
        return result

    def _and(self) -> bool:
        result = self._atom()
        while self._peek() == ("bool", "and"):
            self._next()
            right = self._atom()
            result = result and right
        return result

    def _value(self) -> tuple[str, str]:
        kind, value = self._next()
        if kind == "str":
            return "", value[1:-1]
        if kind == "var" and (value in self.env or value == "extra"):
            return value, self.env.get(value, "")
        raise RequirementError(f"marker {self.text!r}: {value!r} is not a marker value")

    def _atom(self) -> bool:
        if self._peek() == ("paren", "("):
            self._next()
            result = self._or()
            if self._next() != ("paren", ")"):
                raise RequirementError(f"marker {self.text!r}: missing ')'")
            return result
        left_var, left = self._value()
        kind, op = self._next()
        if kind != "op":
            raise RequirementError(f"marker {self.text!r}: {op!r} is not an operator")
        right_var, right = self._value()
        return _compare(left_var or right_var, left, op, right)


def _compare(var: str, left: str, op: str, right: str) -> bool:
    if var == "extra":  # no extra is installed: `extra == "x"` is false
        return False if op in ("==", "===", "in") else op in ("!=", "not in")
    if op == "in":
        return left in right
    if op == "not in":
        return left not in right
    if var in _VERSION_VARS and op != "===":
        try:
            return specifier_allows(op, right, Version.parse(left), left)
        except RequirementError:
            pass
    if op == "==" or op == "===":
        return left == right
    if op == "!=":
        return left != right
    raise RequirementError(f"marker: {left!r} {op} {right!r} compares strings with {op}")


def marker_holds(marker: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether a PEP 508 environment marker is true here (no extras installed)."""
    return _Marker(marker, marker_environment() if env is None else env).evaluate()


# --- requirements ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """One `Requires-Dist` value: name, extras, specifiers (op, version), URL, marker."""

    text: str
    name: str
    extras: tuple[str, ...]
    specifiers: tuple[tuple[str, str], ...]
    url: str
    marker: str

    @classmethod
    def parse(cls, text: str) -> Requirement:
        body, _, marker = text.partition(";")
        match = _NAME.match(body)
        if match is None:
            raise RequirementError(f"{text!r}: no project name")
        rest = body[match.end() :]
        extras: tuple[str, ...] = ()
        if rest.startswith("["):
            inside, sep, rest = rest[1:].partition("]")
            if not sep:
                raise RequirementError(f"{text!r}: unclosed extras")
            extras = tuple(e.strip() for e in inside.split(",") if e.strip())
        rest = rest.strip()
        url = ""
        specifiers: list[tuple[str, str]] = []
        if rest.startswith("@"):
            url = rest[1:].strip()
        else:
            if rest.startswith("(") and rest.endswith(")"):
                rest = rest[1:-1]
            for part in filter(None, (p.strip() for p in rest.split(","))):
                spec = _SPEC.match(part)
                if spec is None:
                    raise RequirementError(f"{text!r}: {part!r} is not a version specifier")
                specifiers.append((spec[1], spec[2]))
        return cls(text.strip(), match[1], extras, tuple(specifiers), url, marker.strip())

    def allows(self, version_text: str) -> bool:
        version = Version.parse(version_text)
        return all(specifier_allows(op, v, version, version_text) for op, v in self.specifiers)


def installed_distributions(paths: Sequence[str] | None = None) -> dict[str, str]:
    """Canonical name -> version of what is installed on `paths` (default sys.path); the first
    one found on the path wins, as for imports."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions(path=list(sys.path if paths is None else paths)):
        name = dist.metadata["Name"] if dist.metadata else None
        if name:
            found.setdefault(canonical_name(name), dist.version)
    return found


def unmet_requirements(
    requires_dist: Iterable[str],
    installed: Mapping[str, str],
    skip: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """The `Requires-Dist` values that `installed` (canonical name -> version) does not satisfy,
    each with what is installed: `torch==2.14.0 (installed: 2.13.0)`, `xgrammar (not installed)`.
    Projects in `skip` (the wheel's own name) and requirements whose marker is false here are
    left out; a line this reader cannot parse is reported, never taken as met."""
    skipped = {canonical_name(name) for name in skip}
    environment = marker_environment() if env is None else env
    unmet = []
    for text in requires_dist:
        try:
            requirement = Requirement.parse(text)
            if requirement.marker and not marker_holds(requirement.marker, environment):
                continue
            name = canonical_name(requirement.name)
            if name in skipped:
                continue
            have = installed.get(name)
            if have is None:
                unmet.append(f"{requirement.text} (not installed)")
            elif requirement.url:
                unmet.append(f"{requirement.text} (installed: {have}, not from that URL)")
            elif not requirement.allows(have):
                unmet.append(f"{requirement.text} (installed: {have})")
        except RequirementError as exc:
            unmet.append(f"{text.strip()} (cannot be read: {exc})")
    return unmet
