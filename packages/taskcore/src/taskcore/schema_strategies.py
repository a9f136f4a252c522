"""Hypothesis strategies generated from the JSON Schemas that :mod:`taskcore.schema` writes.

Test support, like :mod:`taskcore.testing` (it needs ``hypothesis``, which the service does not
install; nothing in taskcore or an adapter imports it). :func:`from_schema` turns a generated
schema into a strategy for JSON documents the schema accepts, and :func:`wire_values` turns a
wire type into a strategy for its decoded values, so a property test starts from exactly what
the published schema promises instead of a hand-written copy of the same rules.

Only the keywords :mod:`taskcore.schema` emits are understood (``type``, ``properties``,
``required``, ``additionalProperties: false``, ``items``, ``minItems``/``maxItems``,
``minLength``/``maxLength``, anchored ``pattern``, ``minimum``/``maximum``, ``enum``,
``const``, ``anyOf``, ``$ref`` into ``$defs``, and a schema with no assertion (any JSON
value, or any object for a bare ``{"type": "object"}``); ``description``, ``default`` and ``$schema``
are annotations). Any other keyword raises :class:`UnsupportedSchemaError` rather than being
ignored, so a rule added to the schemas can never be silently left out of the tests.

Why not ``hypothesis-jsonschema``: its last release (0.23.1) fails on every object schema with
the Hypothesis this workspace pins (6.170: ``'many' object has no attribute 'more'``), and it
has no release since; the subset above is all the schemas need (docs/architecture.md).

>>> from hypothesis import given, settings
>>> seen = []
>>> @settings(max_examples=20, database=None)
... @given(from_schema({"type": "object", "properties": {"n": {"type": "integer",
...     "minimum": 1, "maximum": 3}}, "required": ["n"], "additionalProperties": False}))
... def collect(doc):
...     seen.append(doc)
>>> collect()
>>> all(set(d) == {"n"} and 1 <= d["n"] <= 3 for d in seen)
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from taskcore.codec import decode
from taskcore.schema import ANY_JSON, json_schema

__all__ = ["UnsupportedSchemaError", "from_schema", "wire_values"]

_ANNOTATIONS = frozenset({"description", "default", "$schema", "title", "examples"})
_UNDERSTOOD = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
    }
)

# Any Unicode scalar value: the decoder refuses lone surrogates (no JSON Schema spelling).
_TEXT_CHARS = st.characters(exclude_categories=["Cs"])


# A schema with no assertion at all (a free JSON field): any JSON value, bounded in size.
_ANY_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_TEXT_CHARS, max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(_TEXT_CHARS, max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


class UnsupportedSchemaError(ValueError):
    """A schema uses a keyword or form this generator does not understand."""


def from_schema(
    schema: Mapping[str, Any], *, fields: Mapping[str, st.SearchStrategy[Any]] | None = None
) -> st.SearchStrategy[Any]:
    """A strategy for JSON documents (dicts, lists, str, int, bool, None) ``schema`` accepts.

    ``$ref`` resolves against the root's ``$defs``. ``fields`` replaces the strategy of every
    object property of that name, at any depth: for a value the decoder checks beyond what
    the schema can say (a canonical path, a constant capability), so the documents drawn are
    ones the decoder accepts. Raises :class:`UnsupportedSchemaError` for a keyword outside the
    documented subset.
    """
    overrides: Mapping[str, st.SearchStrategy[Any]] = fields or {}
    defs: Mapping[str, Any] = schema.get("$defs", {})
    built: dict[str, st.SearchStrategy[Any]] = {}

    def ref(target: str) -> st.SearchStrategy[Any]:
        prefix = "#/$defs/"
        if not target.startswith(prefix) or target[len(prefix) :] not in defs:
            raise UnsupportedSchemaError(f"$ref {target!r} does not name an entry of $defs")
        name = target[len(prefix) :]
        if name not in built:
            # deferred: a definition may refer to itself (or to one that refers back).
            built[name] = st.deferred(lambda: build(defs[name]))
        return built[name]

    def build(node: Mapping[str, Any]) -> st.SearchStrategy[Any]:
        unknown = set(node) - _UNDERSTOOD - _ANNOTATIONS
        if unknown:
            raise UnsupportedSchemaError(f"keywords not understood: {sorted(unknown)}")
        if "$ref" in node:
            return ref(node["$ref"])
        if node.get("anyOf") == ANY_JSON["anyOf"]:
            return _ANY_JSON  # any JSON value, spelled portably (taskcore.schema.ANY_JSON)
        if "anyOf" in node:
            return st.one_of([build(branch) for branch in node["anyOf"]])
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            return st.sampled_from(list(node["enum"]))
        kind = node.get("type")
        if kind is None and not set(node) - _ANNOTATIONS:
            return _ANY_JSON
        if isinstance(kind, list):
            return st.one_of([build({**node, "type": one}) for one in kind])
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "integer":
            return st.integers(node.get("minimum"), node.get("maximum"))
        if kind == "number":
            return st.floats(
                node.get("minimum"), node.get("maximum"), allow_nan=False, allow_infinity=False
            ) | st.integers(node.get("minimum"), node.get("maximum"))
        if kind == "string":
            return _string(node)
        if kind == "array":
            if "items" not in node:
                raise UnsupportedSchemaError("an array schema without items")
            return st.lists(
                build(node["items"]),
                min_size=node.get("minItems", 0),
                max_size=node.get("maxItems"),
            )
        if kind == "object":
            return _object(node, build, overrides)
        raise UnsupportedSchemaError(f"type {kind!r} is not understood")

    return build(schema)


def _string(node: Mapping[str, Any]) -> st.SearchStrategy[str]:
    low: int = node.get("minLength", 0)
    high: int | None = node.get("maxLength")
    if "pattern" not in node:
        return st.text(_TEXT_CHARS, min_size=low, max_size=high)
    pattern: str = node["pattern"]
    if not (pattern.startswith("^") and pattern.endswith("$")):
        # An unanchored pattern is a search: the generator would have to invent the rest.
        raise UnsupportedSchemaError(f"pattern {pattern!r} is not anchored")
    # The schema's patterns end in "$"; a fullmatch never adds the newline "$" allows.
    strings = st.from_regex(pattern, fullmatch=True)
    if low or high is not None:
        strings = strings.filter(lambda s: low <= len(s) and (high is None or len(s) <= high))
    return strings


def _object(
    node: Mapping[str, Any],
    build: Callable[[Mapping[str, Any]], st.SearchStrategy[Any]],
    overrides: Mapping[str, st.SearchStrategy[Any]],
) -> st.SearchStrategy[dict[str, Any]]:
    if not {"properties", "required", "additionalProperties"} & set(node):
        # A free JSON object field (``{"type": "object"}``).
        return st.dictionaries(st.text(_TEXT_CHARS, max_size=8), _ANY_JSON, max_size=4)
    if node.get("additionalProperties", True) is not False:
        raise UnsupportedSchemaError("an object schema must say additionalProperties: false")
    properties: Mapping[str, Any] = node.get("properties", {})
    required = list(node.get("required", ()))
    missing = [name for name in required if name not in properties]
    if missing:
        raise UnsupportedSchemaError(f"required but not in properties: {missing}")

    def one(name: str) -> st.SearchStrategy[Any]:
        return overrides[name] if name in overrides else build(properties[name])

    return st.fixed_dictionaries(
        {name: one(name) for name in required},
        optional={name: one(name) for name in properties if name not in required},
    )


def wire_values(
    cls: type[Any], *, fields: Mapping[str, st.SearchStrategy[Any]] | None = None
) -> st.SearchStrategy[Any]:
    """Decoded values of wire type ``cls``, drawn from the documents its schema accepts.

    For types whose decoder checks nothing beyond the schema except the properties named in
    ``fields`` (see :func:`from_schema`); ``tests/taskcore/test_schema_strategies.py`` lists
    every rule the decoder keeps to itself and holds it to every other generated document.
    """
    return from_schema(json_schema(cls), fields=fields).map(lambda doc: decode(cls, doc))
