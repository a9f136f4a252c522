"""MCP Inspector's tool-schema portability check, ported rule for rule (test support).

The source is ``core/json/schemaLint.ts`` of ``@modelcontextprotocol/inspector`` 2.12.0 (the
version tests/harness/install.py pins; ``mcp-inspector --cli --method tools/list`` runs it
and prints "Schema portability: N errors, M warnings", ``--strict`` for the details). It
walks every subschema of a tool's ``inputSchema`` and ``outputSchema`` and reports:

* ``boolean-schema`` (error): a bare ``true``/``false`` where a schema object is expected
  (allowed only under ``additionalProperties``, ``unevaluatedProperties``,
  ``additionalItems``, ``unevaluatedItems``);
* ``type-union`` (warning): ``type`` written as an array of type names;
* ``remote-ref`` (warning): a ``$ref`` outside the document (unless the schema declares an
  ``$id`` somewhere);
* ``untyped-schema`` (warning): a schema with no keyword that constrains a value (except
  directly under ``not``), the object spelling of ``true``.

``test_tools.py`` runs this over every tool of both families; ``test_inspector.py`` runs the
real Inspector CLI against a live server, so a new rule upstream shows there first.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["Finding", "lint_tool"]

Finding = tuple[str, str, str]
"""(rule, severity, path) of one finding."""

_BOOLEAN_VALUED = {
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
}
_SUBSCHEMA = [
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
]
_SUBSCHEMA_ARRAY = ["allOf", "anyOf", "oneOf", "prefixItems"]
_SUBSCHEMA_MAP = [
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
]
_CONSTRAINING = {
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "contentMediaType",
    "contentEncoding", "contentSchema", "maxItems", "minItems", "uniqueItems", "maxContains",
    "minContains", "maxProperties", "minProperties", "required", "dependentRequired", "allOf",
    "anyOf", "oneOf", "not", "items", "prefixItems", "contains", "additionalItems",
    "unevaluatedItems", "properties", "patternProperties", "additionalProperties",
    "unevaluatedProperties", "propertyNames", "dependentSchemas", "dependencies", "$ref",
    "$dynamicRef", "$recursiveRef",
}  # fmt: skip
_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
_MAX_DEPTH = 64
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def _child(parent: str, key: str) -> str:
    if _IDENT.match(key):
        return key if parent == "" else f"{parent}.{key}"
    return f'{parent}["{key}"]'


def _each_subschema(node: dict[str, Any], path: str) -> list[tuple[Any, str, str]]:
    out: list[tuple[Any, str, str]] = []
    for key in _SUBSCHEMA_MAP:
        if isinstance(node.get(key), dict):
            for name, sub in node[key].items():
                out.append((sub, _child(_child(path, key), name), key))
    for key in _SUBSCHEMA_ARRAY:
        if isinstance(node.get(key), list):
            out.extend((sub, f"{_child(path, key)}[{i}]", key) for i, sub in enumerate(node[key]))
    for key in _SUBSCHEMA:
        if key not in node:
            continue
        if key == "items" and isinstance(node[key], list):
            out.extend((sub, f"{_child(path, key)}[{i}]", key) for i, sub in enumerate(node[key]))
            continue
        out.append((node[key], _child(path, key), key))
    return out


def _declares_id(node: Any, depth: int = 0) -> bool:
    if depth > _MAX_DEPTH or not isinstance(node, dict):
        return False
    if isinstance(node.get("$id"), str) and node["$id"]:
        return True
    return any(_declares_id(sub, depth + 1) for sub, _, _ in _each_subschema(node, ""))


def _constrains(node: dict[str, Any]) -> bool:
    return any(key in _CONSTRAINING for key in node) or (
        "if" in node and ("then" in node or "else" in node)
    )


def _walk(
    node: Any, path: str, keyword: str | None, depth: int, ids: bool, out: list[Finding]
) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, bool):
        if keyword is None or keyword not in _BOOLEAN_VALUED:
            out.append(("boolean-schema", "error", path))
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if (
        isinstance(kind, list)
        and kind
        and all(isinstance(t, str) and t in _TYPES for t in kind)
        and len(set(kind)) == len(kind)
    ):
        out.append(("type-union", "warning", path))
    ref = node.get("$ref")
    if isinstance(ref, str) and ref and not ref.startswith("#") and not ids:
        out.append(("remote-ref", "warning", path))
    if not _constrains(node) and keyword != "not":
        out.append(("untyped-schema", "warning", path))
    for sub, sub_path, sub_keyword in _each_subschema(node, path):
        _walk(sub, sub_path, sub_keyword, depth + 1, ids, out)


def lint_tool(tool: dict[str, Any]) -> list[Finding]:
    """Every finding of one tool (its wire form: ``inputSchema`` / ``outputSchema``)."""
    out: list[Finding] = []
    for kind in ("inputSchema", "outputSchema"):
        schema = tool.get(kind)
        if schema is None:
            continue
        found: list[Finding] = []
        _walk(schema, "", None, 0, _declares_id(schema), found)
        out.extend((rule, sev, kind if p == "" else f"{kind}.{p}") for rule, sev, p in found)
    return out
