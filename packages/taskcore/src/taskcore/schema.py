"""JSON Schema (draft 2020-12) generated from attrs wire types and their ``wire_field`` rules.

The schema says exactly what :class:`~taskcore.codec.Codec` accepts: wire names, required
fields (a field without a default is required even when it may be ``null``), string and
array lengths, anchored patterns, integer ranges, enums, nullable values and no unknown keys.
MCP tool schemas and ``/openapi.json`` are built from it, so a client can check a request
before sending it and a server answer is documented by the same rules that decode it.

Two behaviours of the decoder have no JSON Schema spelling and stay server-side checks: lone
UTF-16 surrogates in strings are refused, and ``pattern`` is a Python regular expression
(the patterns used on the wire are written in the common subset of Python and ECMA-262).

>>> import attrs, enum
>>> from taskcore.codec import wire_field
>>> class Colour(enum.Enum):
...     RED = "red"
>>> @attrs.frozen(kw_only=True)
... class Paint:
...     task_id: str = wire_field(wire="taskId", max_len=8, pattern=r"[a-z]+")
...     colour: Colour = wire_field()
...     coats: int = wire_field(default=1, lo=1, hi=3)
>>> _ = attrs.resolve_types(Paint, globals())  # doctest classes live outside the module
>>> schema = input_schema(Paint)
>>> schema["required"], schema["additionalProperties"]
(['taskId', 'colour'], False)
>>> schema["properties"]["taskId"]
{'type': 'string', 'maxLength': 8, 'pattern': '^(?:[a-z]+)$'}
>>> schema["properties"]["coats"]
{'type': 'integer', 'minimum': 1, 'maximum': 3, 'default': 1}
"""

from __future__ import annotations

import copy
import enum
import inspect
import re
import types
import typing
from typing import Any, Literal, get_args, get_origin

import attrs

from taskcore.codec import SCHEMA_VERSION, FieldRules, field_rules, wire_name

__all__ = [
    "ANY_JSON",
    "DIALECT",
    "SchemaBuilder",
    "error_schema",
    "input_schema",
    "json_schema",
    "plain_text",
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema dialect every generated schema uses."""

_NONE = type(None)


def _anchor(pattern: str) -> str:
    # The decoder uses re.fullmatch; JSON Schema patterns are unanchored searches.
    return f"^(?:{pattern})$"


_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_LITERAL = re.compile(r"``(.+?)``|`([^`]+)`")

ANY_JSON: dict[str, Any] = {
    "anyOf": [
        {"type": "object"},
        {"type": "array"},
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
    ]
}
"""The schema of a value that may be any JSON: every type, one ``anyOf`` branch each.

The empty schema ``{}`` says the same, but clients that map tool schemas onto a dialect
with one ``type`` per schema (MCP Inspector's portability check, Gemini's OpenAPI subset)
drop or refuse a schema that constrains nothing."""


def plain_text(doc: str) -> str:
    """``doc`` without reStructuredText or Markdown inline markup (what tools and schemas show).

    Roles (``:class:`~pkg.Name```) become the name, literals (````x````, ```x```) their text.

    >>> plain_text("``agenttask.feed``: one task (``taskId``); see :class:`~taskcore.Task`.")
    'agenttask.feed: one task (taskId); see Task.'
    >>> plain_text("pass `fence` back")
    'pass fence back'
    """

    def role(match: re.Match[str]) -> str:
        return match.group(1).rsplit(".", 1)[-1] if "." in match.group(1) else match.group(1)

    text = _ROLE.sub(role, doc)
    return _LITERAL.sub(lambda m: m.group(1) or m.group(2), text)


def _doc(cls: type[Any]) -> str | None:
    doc = inspect.getdoc(cls)
    if not doc or cls.__doc__ is None:
        return None
    return plain_text(doc.split("\n\n", 1)[0].replace("\n", " ").strip()) or None


def _json_default(value: Any) -> tuple[bool, Any]:
    """Return ``(True, json_value)`` when ``value`` has a plain JSON spelling."""
    if value is None or isinstance(value, bool | int | float | str):
        return True, value
    if isinstance(value, enum.Enum):
        return _json_default(value.value)
    if isinstance(value, tuple) and not value:
        return True, []
    return False, None


class SchemaBuilder:
    """Builds schemas for wire types, collecting named classes as shared definitions.

    ``ref_prefix`` is where references point: ``#/$defs/`` for a self-contained document,
    ``#/components/schemas/`` inside an OpenAPI document. Class names that collide get a
    numeric suffix in registration order, so output is deterministic.

    >>> import attrs
    >>> @attrs.frozen(kw_only=True)
    ... class Leaf:
    ...     n: int
    >>> @attrs.frozen(kw_only=True)
    ... class Tree:
    ...     leaves: tuple[Leaf, ...]
    >>> _ = attrs.resolve_types(Tree, globals())
    >>> builder = SchemaBuilder()
    >>> builder.of(Tree)
    {'$ref': '#/$defs/Tree'}
    >>> sorted(builder.defs)
    ['Leaf', 'Tree']
    """

    def __init__(self, ref_prefix: str = "#/$defs/") -> None:
        self.ref_prefix = ref_prefix
        self.defs: dict[str, dict[str, Any]] = {}
        self._names: dict[type[Any], str] = {}

    # -- classes ------------------------------------------------------------------------------
    def _name_for(self, cls: type[Any]) -> str:
        if cls in self._names:
            return self._names[cls]
        base = cls.__name__
        name, n = base, 1
        taken = set(self._names.values())
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        self._names[cls] = name
        return name

    def object_schema(self, cls: type[Any]) -> dict[str, Any]:
        """Return the inline object schema of attrs class ``cls`` (nested classes by reference)."""
        if not attrs.has(cls):
            raise TypeError(f"{cls!r} is not an attrs class")
        attrs.resolve_types(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            rules = field_rules(field)
            key = wire_name(field)
            schema = self.field(field.type, rules)
            if field.default is attrs.NOTHING:
                required.append(key)
            elif not isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
                known, value = _json_default(field.default)
                if known:
                    schema = {**schema, "default": value}
            properties[key] = schema
        out: dict[str, Any] = {"type": "object"}
        doc = _doc(cls)
        if doc:
            out["description"] = doc
        out["properties"] = properties
        out["required"] = required
        out["additionalProperties"] = False
        return out

    def ref(self, cls: type[Any]) -> dict[str, Any]:
        """Return a reference to ``cls``, defining it on first use."""
        known = cls in self._names
        name = self._name_for(cls)
        if not known:
            self.defs[name] = {}  # reserve first: recursive types refer to themselves
            self.defs[name] = self.object_schema(cls)
        return {"$ref": f"{self.ref_prefix}{name}"}

    # -- types --------------------------------------------------------------------------------
    def of(self, tp: Any) -> dict[str, Any]:
        """Return the schema of type ``tp`` with no field rules."""
        return self.field(tp, FieldRules(lo=None, hi=None))

    def field(self, tp: Any, rules: FieldRules) -> dict[str, Any]:
        """Return the schema of one field of type ``tp`` checked by ``rules``."""
        if rules.version:
            return {"type": "integer", "const": SCHEMA_VERSION}
        schema = self._type(tp, rules)
        if rules.doc:
            schema = {**schema, "description": plain_text(rules.doc)}
        return schema

    def _type(self, tp: Any, rules: FieldRules) -> dict[str, Any]:
        origin = get_origin(tp)
        if origin is typing.Union or origin is types.UnionType:
            options = [a for a in get_args(tp) if a is not _NONE]
            nullable = len(options) != len(get_args(tp))
            if len(options) == 1:
                inner = self._type(options[0], rules)
            else:
                inner = {"anyOf": [self._type(a, rules) for a in options]}
            return {"anyOf": [inner, {"type": "null"}]} if nullable else inner
        if tp is Any:
            return copy.deepcopy(ANY_JSON)
        if tp is _NONE:
            return {"type": "null"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            out: dict[str, Any] = {"type": "integer"}
            if rules.lo is not None:
                out["minimum"] = rules.lo
            if rules.hi is not None:
                out["maximum"] = rules.hi
            return out
        if tp is float:
            return {"type": "number"}
        if tp is str:
            return self._string(rules.min_len, rules.max_len, rules.pattern)
        if tp is bytes:
            return {"type": "string", "contentMediaType": "application/octet-stream"}
        if origin is Literal:
            values = list(get_args(tp))
            return {"const": values[0]} if len(values) == 1 else {"enum": values}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            values = [m.value for m in tp]
            out = {"enum": values}
            if all(isinstance(v, str) for v in values):
                out = {"type": "string", **out}
            return out
        if origin is tuple:
            args = get_args(tp)
            if len(args) != 2 or args[1] is not Ellipsis:
                raise TypeError(f"only variable-length tuples are wire types, not {tp!r}")
            item_rules = FieldRules(
                min_len=rules.item_min_len, max_len=rules.item_max_len, pattern=rules.item_pattern
            )
            out = {"type": "array", "items": self._type(args[0], item_rules)}
            if rules.min_len is not None:
                out["minItems"] = rules.min_len
            if rules.max_len is not None:
                out["maxItems"] = rules.max_len
            return out
        if tp is dict or origin is dict:
            args = get_args(tp)
            out = {"type": "object"}
            if len(args) == 2 and args[1] is not Any:
                out["additionalProperties"] = self.of(args[1])
            return out
        if isinstance(tp, type) and attrs.has(tp):
            return self.ref(tp)
        raise TypeError(f"{tp!r} has no wire schema")

    @staticmethod
    def _string(min_len: int | None, max_len: int | None, pattern: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if min_len is not None:
            out["minLength"] = min_len
        if max_len is not None:
            out["maxLength"] = max_len
        if pattern is not None:
            out["pattern"] = _anchor(pattern)
        return out


def input_schema(cls: type[Any]) -> dict[str, Any]:
    """Return a self-contained object schema for attrs class ``cls`` (an MCP ``inputSchema``).

    The root is the class's own object schema (``type: object`` as MCP requires) and nested
    classes live under ``$defs``.
    """
    builder = SchemaBuilder()
    root = builder.object_schema(cls)
    if builder.defs:
        root["$defs"] = builder.defs
    return root


def json_schema(cls: Any) -> dict[str, Any]:
    """Return a complete draft 2020-12 document for ``cls`` (``$schema`` plus :func:`input_schema`).

    ``cls`` may also be a union of attrs classes (an output that is one of several shapes); its
    schema is then an ``anyOf`` with every class under ``$defs``.

    >>> import attrs
    >>> @attrs.frozen(kw_only=True)
    ... class Empty:
    ...     pass
    >>> json_schema(Empty)["$schema"]
    'https://json-schema.org/draft/2020-12/schema'
    """
    if attrs.has(cls):
        return {"$schema": DIALECT, **input_schema(cls)}
    builder = SchemaBuilder()
    root = builder.of(cls)
    if builder.defs:
        root["$defs"] = builder.defs
    return {"$schema": DIALECT, **root}


def error_schema() -> dict[str, Any]:
    """Return the schema of the ``{error, code}`` body every transport sends on failure.

    >>> "UNKNOWN_FIELD" in error_schema()["properties"]["code"]["enum"]
    True
    """
    from taskcore.errors import ErrorCode

    return {
        "type": "object",
        "description": "A refused or failed call: a message for people and a stable code.",
        "properties": {
            "error": {"type": "string"},
            "code": {"type": "string", "enum": [c.value for c in ErrorCode]},
            "path": {"type": "string"},
            "details": {"type": "object"},
        },
        "required": ["error", "code"],
        "additionalProperties": False,
    }
