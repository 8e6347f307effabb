"""`j0 drafter patch-config`: add `"causal": true` to a DFlash drafter's config.json, and only that.

The change is data: drafter-config/causal.merge-patch.json, a JSON merge patch (RFC 7386). It is
applied to the file's text as the smallest edit that keeps every other byte (key order, indentation,
line ends), and the edit is checked by parsing the result: it must equal the merge patch applied to
the parsed original, key order included. The original bytes are kept beside it as
config.json.orig (written once, never overwritten); a config.json beside it that is neither those
bytes nor what this command writes from them was edited by hand and is refused (exit 2); the new
file is written atomically; a config.json that is a symlink (into a Hub cache, say) is replaced by
a regular file and the link's target is left alone. A file that already holds the change is left
as it is ("unchanged").

Refused, naming the file and the key: a missing or invalid config.json or one without a
`dflash_config` object (exit 2); a top-level `is_causal` that is false, or a `dflash_config.causal`
that is already false (exit 1): vLLM 0.33.0 reads `is_causal` before `dflash_config.causal`
(see j0.engine.source.causality), so either would silently keep the draft non-causal.

Standard library only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from j0.edge.atomic import sha256_bytes, write_bytes_atomic
from j0.engine.source import causality as drafter_causality
from j0.errors import (
    CHECK_FAILED,
    INPUT_LACKS,
    InputLimit,
    J0Error,
    parse_json,
    read_input_bytes,
    read_json_file,
    require_input_folder,
)
from j0.terminal import sink

CONFIG_NAME = "config.json"
ORIG_SUFFIX = ".orig"
PATCH_RELPATH = Path("drafter-config") / "causal.merge-patch.json"


def default_patch_path() -> Path:
    """drafter-config/causal.merge-patch.json of the j0 checkout (found like the pins file; the
    image carries it at /opt/j0/drafter-config)."""
    from j0.pins import project_root

    return project_root() / PATCH_RELPATH


# ---------------------------------------------------------------------------------------------
# RFC 7386 on parsed data


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch(target, patch). Existing keys keep their place; new keys come last."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def ordered(value: Any) -> Any:
    """A comparable form of parsed JSON in which object key order counts."""
    if isinstance(value, dict):
        return [(key, ordered(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [ordered(item) for item in value]
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"key {key!r} appears twice in one object")
        seen[key] = value
    return seen


def parse_json_text(text: str, what: str) -> Any:
    """parse_json (bounded: size, depth) that also refuses duplicate keys (which readers resolve
    differently): a J0Error (exit 2) naming `what`."""
    return parse_json(text, what, object_pairs_hook=_no_duplicate_keys)


# ---------------------------------------------------------------------------------------------
# Where things are in the text: a small scanner over already-validated JSON


@dataclass
class _Node:
    start: int
    end: int  # exclusive
    members: list[_Member] | None = None  # objects only


@dataclass
class _Member:
    key: str
    key_start: int
    key_end: int
    value: _Node


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")


def _ws(text: str, i: int) -> int:
    match = _WS.match(text, i)
    assert match is not None
    return match.end()


def _scan_value(text: str, i: int) -> _Node:
    char = text[i]
    if char == "{":
        return _scan_object(text, i)
    if char == "[":
        j = _ws(text, i + 1)
        if text[j] == "]":
            return _Node(i, j + 1)
        while True:
            j = _ws(text, _scan_value(text, j).end)
            if text[j] == "]":
                return _Node(i, j + 1)
            j = _ws(text, j + 1)  # past ","
    if char == '"':
        _, end = scanstring(text, i + 1)
        return _Node(i, end)
    for literal in _LITERALS:
        if text.startswith(literal, i):
            return _Node(i, i + len(literal))
    match = _NUMBER.match(text, i)
    if match is None:
        raise ValueError(f"unexpected character {char!r} at offset {i}")
    return _Node(i, match.end())


def _scan_object(text: str, i: int) -> _Node:
    members: list[_Member] = []
    j = _ws(text, i + 1)
    if text[j] == "}":
        return _Node(i, j + 1, members)
    while True:
        key, key_end = scanstring(text, j + 1)
        value_start = _ws(text, _ws(text, key_end) + 1)  # past ":"
        value = _scan_value(text, value_start)
        members.append(_Member(key, j, key_end, value))
        j = _ws(text, value.end)
        if text[j] == "}":
            return _Node(i, j + 1, members)
        j = _ws(text, j + 1)  # past ","


def _scan_document(text: str) -> _Node:
    return _scan_value(text, _ws(text, 0))


# ---------------------------------------------------------------------------------------------
# The merge patch applied to the text, as the smallest edits


@dataclass
class _Style:
    newline: str
    colon: str  # between a key and its value, e.g. ": "
    unit: str  # one level of indentation


def _indent_before(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    prefix = text[line_start:pos]
    return prefix if prefix.strip() == "" else ""


def _style(text: str, root: _Node) -> _Style:
    newline = "\r\n" if "\r\n" in text else "\n"
    colon = ": "
    unit = "  "
    if root.members:
        first = root.members[0]
        colon = text[first.key_end : first.value.start]
        indent = _indent_before(text, first.key_start)
        if indent and "\n" in text[root.start : first.key_start]:
            unit = indent
    return _Style(newline, colon, unit)


def _render(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _object_edits(
    text: str, node: _Node, patch: dict[str, Any], style: _Style
) -> list[tuple[int, int, str]]:
    assert node.members is not None
    edits: list[tuple[int, int, str]] = []
    by_key = {member.key: member for member in node.members}
    new_members: list[tuple[str, Any]] = []
    for key, value in patch.items():
        member = by_key.get(key)
        if value is None:
            if member is not None:
                edits.append(_deletion(node, member))
        elif member is None:
            new_members.append((key, merge_patch(None, value)))
        elif isinstance(value, dict) and member.value.members is not None:
            edits.extend(_object_edits(text, member.value, value, style))
        else:
            new_value = merge_patch(None, value)
            old_value = parse_json_text(text[member.value.start : member.value.end], "a value")
            if ordered(old_value) != ordered(new_value):
                edits.append((member.value.start, member.value.end, _render(new_value)))
    if new_members:
        edits.append(_insertion(text, node, new_members, style))
    return edits


def _deletion(node: _Node, member: _Member) -> tuple[int, int, str]:
    assert node.members is not None
    index = node.members.index(member)
    if index + 1 < len(node.members):
        return (member.key_start, node.members[index + 1].key_start, "")
    if index > 0:
        return (node.members[index - 1].value.end, member.value.end, "")
    return (member.key_start, member.value.end, "")


def _insertion(
    text: str, node: _Node, new_members: list[tuple[str, Any]], style: _Style
) -> tuple[int, int, str]:
    assert node.members is not None
    members = node.members
    if members:
        last = members[-1]
        colon = text[last.key_end : last.value.start]
        if len(members) >= 2:
            separator = text[members[-2].value.end : members[-1].key_start]
        elif "\n" in text[node.start : last.key_start]:
            separator = "," + style.newline + _indent_before(text, last.key_start)
        else:
            separator = ", " if colon.endswith(" ") else ","
        added = "".join(
            f"{separator}{_render(key)}{colon}{_render(value)}" for key, value in new_members
        )
        return (last.value.end, last.value.end, added)
    # An empty object: "{}" stays on one line; "{\n  }" gets one member per line.
    inner = text[node.start + 1 : node.end - 1]
    if "\n" in inner:
        closing_indent = inner[inner.rfind("\n") + 1 :]
        lead = style.newline + closing_indent + style.unit
        body = ("," + lead).join(
            f"{_render(key)}{style.colon}{_render(value)}" for key, value in new_members
        )
        return (node.start + 1, node.end - 1, lead + body + style.newline + closing_indent)
    body = ", ".join(f"{_render(key)}{style.colon}{_render(value)}" for key, value in new_members)
    return (node.start + 1, node.end - 1, body)


def apply_merge_patch_text(text: str, patch: dict[str, Any]) -> str:
    """Apply `patch` to the JSON object in `text` as the smallest textual edit, and check it.

    Raises ValueError if the edited text does not parse to merge_patch(original, patch), key
    order included.
    """
    root = _scan_document(text)
    if root.members is None:
        raise ValueError("the top level is not a JSON object")
    edits = sorted(_object_edits(text, root, patch, _style(text, root)), reverse=True)
    result = text
    previous_start = len(text) + 1
    for start, end, replacement in edits:
        if end > previous_start:
            raise ValueError("the merge patch's edits overlap")
        result = result[:start] + replacement + result[end:]
        previous_start = start
    expected = merge_patch(parse_json_text(text, "the config"), patch)
    if ordered(parse_json_text(result, "the edited config")) != ordered(expected):
        raise ValueError("the edited text does not parse to the merge patch's result")
    return result


# ---------------------------------------------------------------------------------------------
# The checks and the write


@dataclass
class PatchResult:
    config: Path
    changed: bool
    orig: Path | None
    causality: drafter_causality.LayerCausality

    def lines(self) -> list[str]:
        if self.changed:
            head = f'{self.config}: added "causal": true to dflash_config'
            if self.orig is not None:
                head += f" (original bytes kept in {self.orig})"
        else:
            head = f'{self.config}: unchanged (dflash_config already has "causal": true)'
        return [head, *(f"note: {n}" for n in self.causality.notes), self.causality.summary()]

    def to_json(self) -> dict[str, Any]:
        return {
            "config": str(self.config),
            "changed": self.changed,
            "orig": None if self.orig is None else str(self.orig),
            "causality": self.causality.to_json(),
        }


def _warn(message: str) -> None:
    sink.warn(f"j0: warning: {message}")


def load_patch(path: Path) -> dict[str, Any]:
    patch = read_json_file(path, "the merge patch", object_pairs_hook=_no_duplicate_keys)
    if not isinstance(patch, dict):
        raise J0Error(f"{path}: a merge patch here must be a JSON object", INPUT_LACKS)
    return patch


def read_config(config: Path) -> tuple[bytes, dict[str, Any]]:
    """The bytes and the parsed object of a config.json, or a J0Error (exit 2) saying why not."""
    if config.is_symlink() and not config.exists():
        raise J0Error(
            f"{config}: a link to {os.readlink(config)}, which does not exist", INPUT_LACKS
        )
    # A regular file of at most InputLimit.SMALL bytes (a FIFO, /dev/zero, a 3 GB file: refused
    # unread), UTF-8, JSON nested at most JsonLimit.DEPTH deep, no key twice.
    data = read_input_bytes(config, "", text=True, limit=InputLimit.SMALL)
    parsed = parse_json_text(data.decode("utf-8"), str(config))
    if not isinstance(parsed, dict):
        raise J0Error(
            f"{config}: the top level is a {type(parsed).__name__}, expected a JSON object",
            INPUT_LACKS,
        )
    return data, parsed


def _not_a_boolean(config: Path, key: str, value: Any) -> J0Error:
    """A causality key that is not a JSON boolean ("true" as a string, 1, ...): refused, saying
    what vLLM 0.33.0 would make of it (it takes Python's bool() of the value)."""
    kind = {str: "a string", int: "a number", float: "a number", list: "an array"}.get(
        type(value), "an object"
    )
    reads = "causal" if bool(value) else "not causal"
    also = ' (so "false" would count as causal too)' if isinstance(value, str) else ""
    return J0Error(
        f'{config}: key "{key}" is {json.dumps(value)}, {kind}, not a JSON boolean: vLLM 0.33.0 '
        f"reads it with Python's bool(), which makes it {reads}{also}; write true or false "
        "without quotes and run again (refusing to change a value the file sets)",
        CHECK_FAILED,
    )


def check_config(config: Path, parsed: dict[str, Any], warn: Callable[[str], None]) -> None:
    """Refuse a config that lacks dflash_config or contradicts "causal": true; warn on
    causal_head."""
    dflash = parsed.get("dflash_config")
    if dflash is None:
        raise J0Error(
            f'{config}: no dflash_config object (key "dflash_config"): not a DFlash drafter\'s '
            "config, nothing to patch",
            INPUT_LACKS,
        )
    if not isinstance(dflash, dict):
        raise J0Error(
            f'{config}: key "dflash_config" is {json.dumps(dflash)}, expected a JSON object',
            INPUT_LACKS,
        )
    is_causal = parsed.get("is_causal")
    if is_causal is not None and not isinstance(is_causal, bool):
        raise _not_a_boolean(config, "is_causal", is_causal)
    if is_causal is False:
        raise J0Error(
            f'{config}: top-level key "is_causal" is {json.dumps(parsed["is_causal"])}: vLLM '
            "0.33.0 reads it before dflash_config.causal, so the draft would not be causal; "
            "remove it or set it to true (refusing to patch)",
            CHECK_FAILED,
        )
    causal = dflash.get("causal")
    if causal is not None and not isinstance(causal, bool):
        raise _not_a_boolean(config, "dflash_config.causal", causal)
    if causal is False:
        raise J0Error(
            f'{config}: key "dflash_config.causal" is already {json.dumps(causal)}: this config '
            'says its draft is not causal, which contradicts the article\'s "causal": true '
            "(refusing to overwrite it)",
            CHECK_FAILED,
        )
    head = dflash.get("causal_head")
    if head is None:
        warn(
            f'{config}: dflash_config has no "causal_head": JetSpec\'s causal drafter sets '
            '"causal_head": true; is this the right drafter?'
        )
    elif head is not True:
        warn(
            f"{config}: dflash_config.causal_head is {json.dumps(head)}: this drafter was not "
            "trained as a causal head; making vLLM run it causally may not be what you want"
        )


def patch_config(
    directory: Path,
    patch_path: Path | None = None,
    warn: Callable[[str], None] = _warn,
) -> PatchResult:
    """Patch DIRECTORY/config.json with the merge patch (default: drafter-config/'s)."""
    require_input_folder(directory, "the drafter's folder")
    config = directory / CONFIG_NAME
    data, parsed = read_config(config)
    check_config(config, parsed, warn)
    patch = load_patch(patch_path if patch_path is not None else default_patch_path())
    text = data.decode("utf-8")
    try:
        new_text = apply_merge_patch_text(text, patch)
    except ValueError as exc:
        raise J0Error(f"{config}: cannot apply the merge patch as a minimal edit: {exc}") from None
    result = parse_json_text(new_text, str(config))
    try:
        causality = drafter_causality.resolve(result)
    except ValueError as exc:  # num_hidden_layers -1, layer_types not a list: bad input, not a bug
        raise J0Error(f"{config}: {exc}", INPUT_LACKS) from None
    if not causality.all_causal:
        raise J0Error(f"{config}: after the patch, {causality.summary()}", CHECK_FAILED)
    new_data = new_text.encode("utf-8")
    orig = config.with_name(config.name + ORIG_SUFFIX)
    if new_data == data:
        _refuse_hand_edit(config, data, orig, patch)
        return PatchResult(config, False, None, causality)

    mode = config.stat().st_mode & 0o777
    try:
        if orig.exists():
            kept = read_input_bytes(orig, "", limit=InputLimit.SMALL)
            if kept != data:
                raise J0Error(
                    f"{orig} holds other bytes (sha256 {sha256_bytes(kept)[:12]}…) than the "
                    f"unpatched {config} (sha256 {sha256_bytes(data)[:12]}…); it is never "
                    "overwritten: if config.json is the new original, move the old .orig away "
                    "and run again",
                    CHECK_FAILED,
                )
        else:
            write_bytes_atomic(orig, data, mode=mode, replace_existing=False)
        # os.replace swaps the directory entry: a symlink is replaced, its target is not touched.
        write_bytes_atomic(config, new_data, mode=mode)
    except OSError as exc:
        raise J0Error(f"{config}: cannot write: {exc}", CHECK_FAILED) from None
    return PatchResult(config, True, orig, causality)


def _refuse_hand_edit(config: Path, data: bytes, orig: Path, patch: dict[str, Any]) -> None:
    """A config.json that already says "causal": true beside a config.json.orig must be exactly
    what this command writes from that original; anything else was edited by hand and is refused
    (exit 2), so that vLLM never serves an edit as the drafter's config."""
    if not orig.exists():
        return
    kept = read_input_bytes(orig, "", limit=InputLimit.SMALL)
    try:
        expected = apply_merge_patch_text(kept.decode("utf-8"), patch).encode("utf-8")
    except (ValueError, UnicodeDecodeError, J0Error):
        expected = None
    if data in (kept, expected):
        return
    raise J0Error(
        f"{config} was edited: it is neither {orig} (the original, sha256 "
        f"{sha256_bytes(kept)[:12]}…) nor what patch-config writes from it; refusing to take "
        "it for the drafter's config: restore it (cp config.json.orig config.json) and run again, "
        "or, if config.json is a new original, move config.json.orig away",
        INPUT_LACKS,
    )


def check_causality(directory: Path) -> drafter_causality.LayerCausality:
    """Read DIRECTORY/config.json and resolve its draft layers' causality as vLLM 0.33.0 does."""
    require_input_folder(directory, "the drafter's folder")
    config = directory / CONFIG_NAME
    _, parsed = read_config(config)
    try:
        return drafter_causality.resolve(parsed)
    except ValueError as exc:
        raise J0Error(f"{config}: {exc}", INPUT_LACKS) from None
