"""A typed document declared once: a dataclass whose fields are its keys, in the file's order,
and whose annotations say what each key's value may be. `Document` derives the field table
(j0.edge.fields) from them where it is first needed, never at import (so `j0 --help` evaluates
no annotation), reads a document checked against it (`from_json`: J0Error naming where, the key,
the value and what was expected) and writes one (`to_json`: the keys in their order).

What an annotation says:
    str, int, bool                  that kind (true and false are no numbers)
    float                           a number (a whole number too)
    X | None                        X or null; with `absent()` as the default, null is refused
                                    and None stands for a key left out
    list[X], tuple[X, ...]          a list whose every item is X (list[Any]: any list)
    dict[str, Any], Any             an object, any JSON value
    Literal["a", "b"]               one of those strings
    Annotated[X, Rule(...)]         the Rule in place of X's (a test the kinds cannot say)
    Annotated[X, KeyName("from")]   X, under the key "from" in the file (a key no field can be
                                    called: a Python keyword); not for a KeptKeys
    a Document, list[a Document]    an object (each item) read by that type, `where` naming it

A field without a default is a key the document must have (so is one whose default is
`needed(...)`, and every key where the class says EVERY_KEY_NEEDED); `attribute()` declares a
field that is no key (a path, a value derived where it is read); `written_unless(v)` a key
written only where its value is not `v`. Standard library only.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from j0.edge.fields import ANY_VALUE, NULL, NUMBER, FieldTable, Kinds, Rule, list_of, one_of

_KEY = "j0.document.key"  # False: an attribute, no key of the document
_ABSENT = "j0.document.absent"  # True: None stands for a key left out, null is refused
_UNLESS = "j0.document.unless"  # the value for which the key is not written
_NEEDED = "j0.document.needed"  # True: the reader needs the key, whatever its default

ALWAYS: Any = object()  # a Key's `unless` where it is written whatever its value
_SIMPLE: dict[Any, Kinds] = {
    str: (str,),
    int: (int,),
    bool: (bool,),
    float: NUMBER,
    NULL: (NULL,),
    dict: (dict,),
    list: (list,),
}


def attribute(**kwargs: Any) -> Any:
    """A dataclass field that is no key of the document (dataclasses.field's arguments)."""
    return dataclasses.field(metadata={_KEY: False}, **kwargs)


def needed(**kwargs: Any) -> Any:
    """The default (dataclasses.field's arguments) of a key a writer may leave to it but a
    reader needs in the file."""
    return dataclasses.field(metadata={_NEEDED: True}, **kwargs)


def absent() -> Any:
    """The default of a key that may be left out (None: not written) but, where it is there, is
    not null."""
    return dataclasses.field(default=None, metadata={_ABSENT: True, _UNLESS: None})


def written_unless(value: Any) -> Any:
    """The default of a key written only where its value is not `value` (a flag written when
    true)."""
    return dataclasses.field(default=value, metadata={_UNLESS: value})


@dataclasses.dataclass(frozen=True)
class KeyName:
    """`Annotated[X, KeyName("from")]`: the field's key in the file, where it cannot be the
    field's name."""

    name: str


@dataclasses.dataclass(frozen=True)
class Key:
    """One key of a document: its name, what its value may be, whether it must be there, the
    Document that reads it (or each of its items, `many`), the value it is not written at and
    the field that holds it (`field`, where the key is no field name: KeyName)."""

    name: str
    kinds: Kinds | Rule
    required: bool
    reader: type[Document] | None = None
    many: bool = False  # a list of `reader`'s documents (a tuple, where `tuple_` says so)
    tuple_: bool = False
    unless: Any = ALWAYS
    field: str = ""

    @property
    def attr(self) -> str:
        """The field that holds the key's value."""
        return self.field or self.name


def _kinds(hint: Any, absent_is_none: bool) -> tuple[Kinds | Rule, type[Document] | None, bool]:
    """What `hint` allows, the Document that reads the value (each item, where a list) and
    whether it is a list of them."""
    if typing.get_origin(hint) is typing.Annotated:
        rule = next((m for m in hint.__metadata__ if isinstance(m, Rule)), None)
        if rule is None:  # KeyName alone: the kinds of the type it annotates
            return _kinds(typing.get_args(hint)[0], absent_is_none)
        return rule, None, False
    if hint is Any:
        return ANY_VALUE, None, False
    if typing.get_origin(hint) not in (types.UnionType, typing.Union):
        return _one(hint, or_null=False)
    args = typing.get_args(hint)
    or_null = NULL in args and not absent_is_none
    rest = [a for a in args if a is not NULL]
    if len(rest) == 1:
        return _one(rest[0], or_null)
    kinds = dict.fromkeys(k for a in args if a is not NULL or or_null for k in _bare(a))
    return tuple(kinds), None, False


def _bare(hint: Any) -> Kinds:
    return _SIMPLE[typing.get_origin(hint) or hint]


def _one(hint: Any, or_null: bool) -> tuple[Kinds | Rule, type[Document] | None, bool]:
    null = (NULL,) if or_null else ()
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, Document):
        return (dict, *null), hint, False
    if origin is typing.Literal:
        return one_of(args, or_null), None, False
    if origin not in (list, tuple):
        return (*_bare(hint), *null), None, False
    item = args[0] if args else Any  # list[X] or tuple[X, ...]: a JSON list either way
    if item is Any:
        return (list, *null), None, False
    if isinstance(item, type) and issubclass(item, Document):
        return (list, *null), item, True
    return list_of(_bare(item), or_null), None, False


@functools.cache
def keys_of(cls: type[Document]) -> tuple[Key, ...]:
    """The keys `cls` declares, in its order, from its annotations (evaluated here, once)."""
    found = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.metadata.get(_KEY, True) is False:
            continue
        kinds, reader, many = _kinds(hint := _hint(cls, f), bool(f.metadata.get(_ABSENT)))
        required = (
            cls.EVERY_KEY_NEEDED
            or f.metadata.get(_NEEDED)
            or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        )
        unless = f.metadata.get(_UNLESS, ALWAYS)
        bare = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
        tuple_ = typing.get_origin(bare) is tuple
        named = [m.name for m in getattr(hint, "__metadata__", ()) if isinstance(m, KeyName)]
        name, field = (named[0], f.name) if named else (f.name, "")
        found.append(Key(name, kinds, required, reader, many, tuple_, unless, field))
    return tuple(found)


def _hint(cls: type, f: dataclasses.Field[Any]) -> Any:
    """The field's annotation, evaluated where it was written (the module of the class that
    declares it): only a key's, so a name imported for type checking alone may annotate an
    attribute."""
    if not isinstance(f.type, str):
        return f.type
    owner = next(c for c in cls.__mro__ if f.name in inspect.get_annotations(c))
    return eval(f.type, vars(sys.modules[owner.__module__]), dict(vars(owner)))


@functools.cache
def table_of(cls: type[Document]) -> FieldTable:
    """`cls`'s field table: key -> (what its value may be, whether it must be there)."""
    return types.MappingProxyType({key.name: (key.kinds, key.required) for key in keys_of(cls)})


class Document:
    """The base of a typed document (a dataclass): `from_json` and `to_json` from its keys."""

    # True: a reader needs every key, whatever its default (the defaults are the writer's).
    EVERY_KEY_NEEDED: ClassVar[bool] = False

    @classmethod
    def check(cls, value: Any, where: str) -> dict[str, Any]:
        """`value` where it is an object whose keys are as the type says; else J0Error (exit 2)
        naming `where`, the key, the value and what was expected."""
        from j0.edge.fields import checked_object

        return checked_object(value, table_of(cls), where)

    @classmethod
    def from_json(cls, value: Any, where: str) -> Self:
        """The document in `value`, checked (Document.check); a key it lacks takes its
        default, a key the type does not know is left."""
        checked = cls.check(value, where)
        kept: dict[str, Any] = {}
        for key in keys_of(cls):
            if key.name not in checked:
                continue
            item = checked[key.name]
            if key.reader is not None and key.many and item is not None:
                items = (
                    key.reader.from_json(x, f"{where}: {key.name}[{i}]") for i, x in enumerate(item)
                )
                item = tuple(items) if key.tuple_ else list(items)
            elif key.reader is not None and item is not None:
                item = key.reader.from_json(item, f"{where}: {key.name}")
            kept[key.attr] = item
        return cls(**kept)

    def to_json(self) -> dict[str, Any]:
        """The document: its keys in their declared order, a Document within as its to_json."""
        written: dict[str, Any] = {}
        for key in keys_of(type(self)):
            value = getattr(self, key.attr)
            if key.unless is not ALWAYS and value == key.unless:
                continue
            written[key.name] = _json(value)
        return written


def _json(value: Any) -> Any:
    if isinstance(value, Document):
        return value.to_json()
    if isinstance(value, list | tuple) and value and isinstance(value[0], Document):
        return [_json(item) for item in value]
    return value


def by_key(mapping: Mapping[str, Any], cls: type[Document]) -> dict[str, Any]:
    """The items of `mapping` whose keys `cls` declares (a reader's constructor arguments)."""
    names = {key.name for key in keys_of(cls)}
    return {name: value for name, value in mapping.items() if name in names}


class KeptKeys(Document):
    """A typed document whose file keeps what it had: `keys` (the keys the object had, in its
    order: to_json writes those only, so a document read back is written as it was) and `extra`
    (keys the type does not know, kept as they were), each declared `attribute()` by the
    dataclass. `made(**values)` is a writer's: the keys given, in their order."""

    keys: tuple[str, ...]
    extra: dict[str, Any]

    @classmethod
    def made(cls, **values: Any) -> Self:
        """The document of `values` (keys the type declares), its keys in their order."""
        return cls(**values, keys=tuple(values))

    def has(self, key: str) -> bool:
        """Whether the object held `key` (null included)."""
        return key in self.keys

    def to_json(self) -> dict[str, Any]:
        """The object: its keys in its order."""
        return {k: self.extra[k] if k in self.extra else getattr(self, k) for k in self.keys}

    @classmethod
    def from_json(cls, value: Mapping[str, Any], where: str | None = None) -> Self:
        """The document in `value`, checked (Document.check) where `where` names it, else
        taken as it is (a reader that checked it, or judges each entry, before)."""
        if where is not None:
            cls.check(value, where)
        names = table_of(cls)
        known = {key: item for key, item in value.items() if key in names}
        extra = {key: item for key, item in value.items() if key not in names}
        return cls(**known, keys=tuple(value), extra=extra)
