"""The one reader and writer of the typed documents' files (j0.edge.fields.read_document and
write_document): a file that cannot be read, is not UTF-8 or is not JSON is refused naming the
file, why and what was expected (exit 2), never a traceback; what is written is read back as it
was, and a failed write leaves the file that was there."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from j0.edge.document import Document, KeyName, absent, attribute, written_unless
from j0.edge.fields import Rule, read_document, write_document
from j0.errors import INPUT_LACKS, J0Error

EXPECTED = "the setting.json of `j0 mini run`"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"{", "not JSON (Expecting property name enclosed in double quotes: line 1 column 2"),
        (b'{"a": 1} x', "not JSON (Extra data: line 1 column 10"),
        (b"\xff{}", "not UTF-8 text (byte 0 is 0xff)"),
        (b"[" * 100_000, "not JSON (nested more than 100 levels deep, the limit)"),
        (b"1" * 5000, "not JSON (an integer of more than 4,300 digits)"),
    ],
)
def test_a_file_that_is_not_json_is_named_with_why_and_what_was_expected(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = tmp_path / "setting.json"
    path.write_bytes(content)
    with pytest.raises(J0Error) as caught:
        read_document(path, EXPECTED)
    said = str(caught.value)
    assert said.startswith(f"{path}: {why}"), said
    assert said.endswith(f"; expected {EXPECTED}") and caught.value.exit_code == INPUT_LACKS


def test_no_file_and_a_folder_are_named(tmp_path: Path) -> None:
    for path, why in [
        (tmp_path / "none.json", "no such file"),
        (tmp_path, "a folder, expected a file"),
    ]:
        with pytest.raises(J0Error) as caught:
            read_document(path, EXPECTED)
        assert str(caught.value) == f"{path}: {why}; expected {EXPECTED}"
        assert caught.value.exit_code == INPUT_LACKS


def test_the_form_written_is_json_dumps_with_the_indent_and_a_newline(tmp_path: Path) -> None:
    value = {"b": [1, 2], "a": {"c": None}}
    written = write_document(tmp_path / "one.json", value)
    assert written == tmp_path / "one.json"
    assert written.read_text() == '{\n "b": [\n  1,\n  2\n ],\n "a": {\n  "c": null\n }\n}\n'
    write_document(tmp_path / "two.json", value, indent=2)
    assert (tmp_path / "two.json").read_text() == json.dumps(value, indent=2) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.json", "two.json"]


def test_a_failed_write_keeps_the_file_that_was_there(tmp_path: Path) -> None:
    path = tmp_path / "kept.json"
    path.write_text('{"kept": true}\n')
    with pytest.raises(TypeError):
        write_document(path, {"not json": object()})
    assert path.read_text() == '{"kept": true}\n' and os.listdir(tmp_path) == ["kept.json"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(), JSON_VALUES, max_size=6), st.sampled_from([1, 2]))
def test_what_is_written_is_read_back_as_it_was(
    tmp_path_factory: pytest.TempPathFactory, value: dict[str, object], indent: int
) -> None:
    path = tmp_path_factory.mktemp("doc") / "doc.json"
    write_document(path, value, indent)
    back = read_document(path, EXPECTED)
    assert back == value and list(back) == list(value)


# A typed document declared once (j0.edge.document): the checks come from the annotations.


@dataclass(frozen=True)
class _Inner(Document):
    n: int


@dataclass(frozen=True)
class _Doc(Document):
    name: str
    share: float | None = None
    tags: list[str] = field(default_factory=list)
    word: Literal["on", "off"] | None = None
    rule: Annotated[int, Rule("an even number", lambda v: v % 2 == 0)] = 0
    left_out: str | None = absent()
    flag: bool = written_unless(False)
    inner: _Inner | None = None
    inners: list[_Inner] = field(default_factory=list)
    free: Any = None
    seen: str = attribute(default="not a key")


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({}, "doc: no 'name' (expected a string)"),
        ({"name": 1}, "doc: 'name' is 1, expected a string"),
        ({"name": "a", "share": True}, "doc: 'share' is true, expected a number or null"),
        ({"name": "a", "tags": ["x", 2]}, "doc: 'tags' is [\"x\", 2], expected a list of strings"),
        ({"name": "a", "word": "maybe"}, 'doc: \'word\' is "maybe", expected "on", "off" or null'),
        ({"name": "a", "rule": 3}, "doc: 'rule' is 3, expected an even number"),
        ({"name": "a", "left_out": None}, "doc: 'left_out' is null, expected a string"),
        ({"name": "a", "inner": {"n": "1"}}, "doc: inner: 'n' is \"1\", expected a whole number"),
        ({"name": "a", "inners": [{"n": 1}, {}]}, "doc: inners[1]: no 'n' (expected a whole"),
        ([], "doc: [], expected an object"),
    ],
)
def test_a_document_is_checked_by_its_annotations_naming_key_value_and_expected(
    value: object, said: str
) -> None:
    with pytest.raises(J0Error) as caught:
        _Doc.from_json(value, "doc")
    assert str(caught.value).startswith(said), str(caught.value)
    assert caught.value.exit_code == INPUT_LACKS


def test_a_document_is_written_in_its_order_and_read_back_as_it_was() -> None:
    doc = _Doc("a", share=2, tags=["t"], inner=_Inner(1), inners=[_Inner(2)], free={"x": [1]})
    written = doc.to_json()
    assert json.dumps(written) == (
        '{"name": "a", "share": 2, "tags": ["t"], "word": null, "rule": 0, '
        '"inner": {"n": 1}, "inners": [{"n": 2}], "free": {"x": [1]}}'
    )
    assert _Doc.from_json(json.loads(json.dumps(written)), "doc") == doc
    flagged = _Doc("b", left_out="here", flag=True).to_json()
    assert (flagged["left_out"], flagged["flag"]) == ("here", True)
    assert _Doc.from_json({"name": "c", "unknown": 1}, "doc") == _Doc("c")


@dataclass(frozen=True)
class _Span(Document):
    start: Annotated[int, KeyName("from")]
    to: int
    label: Annotated[str | None, KeyName("class")] = absent()


def test_a_key_that_is_no_field_name_is_named_by_its_marker() -> None:
    """`from` and `class` are keys no field can be called: KeyName names them; the file has
    them, the reader reads them into the fields and names them where the value is wrong."""
    written = _Span(1, 2, "x").to_json()
    assert json.dumps(written) == '{"from": 1, "to": 2, "class": "x"}'
    assert _Span.from_json({"from": 1, "to": 2, "class": "x"}, "doc") == _Span(1, 2, "x")
    assert _Span(3, 4).to_json() == {"from": 3, "to": 4}
    for value, said in [
        ({"to": 2}, "doc: no 'from' (expected a whole number)"),
        ({"from": "1", "to": 2}, "doc: 'from' is \"1\", expected a whole number"),
        ({"from": 1, "to": 2, "class": None}, "doc: 'class' is null, expected a string"),
    ]:
        with pytest.raises(J0Error) as caught:
            _Span.from_json(value, "doc")
        assert str(caught.value).startswith(said), str(caught.value)


def test_no_module_writes_a_field_table_by_hand() -> None:
    """A document is declared once, as its type: a table of its keys beside it (`X: FieldTable =
    {...}`, or a dict literal of (kinds, needed) pairs) is a second description that can drift."""
    import ast

    root = Path(__file__).resolve().parents[1] / "scripts" / "j0"
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            annotated = isinstance(node, ast.AnnAssign) and "FieldTable" in ast.unparse(
                node.annotation
            )
            pairs = isinstance(node, ast.Dict) and any(
                isinstance(v, ast.Tuple)
                and len(v.elts) == 2
                and isinstance(v.elts[1], ast.Constant)
                and isinstance(v.elts[1].value, bool)
                for v in node.values
            )
            if (annotated and getattr(node, "value", None) is not None) or pairs:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []
