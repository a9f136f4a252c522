"""``/openapi.json``: every route and body, generated from the registry (OpenAPI 3.1).

Request bodies are the operations' wire types as JSON Schema (draft 2020-12, which OpenAPI
3.1 uses), so a generated client or a fuzzer such as schemathesis sends what the decoder
reads. Every operation documents the ``{error, code}`` body under each status the
ErrorCode -> status table can produce for a request.

>>> from taskcore import Registry
>>> doc = openapi_document(Registry())
>>> doc["openapi"], sorted(doc["paths"])[:4]
('3.1.0', ['/health', '/healthz', '/mcp', '/openapi.json'])
"""

from __future__ import annotations

from typing import Any

from taskcore import (
    CAPABILITY,
    SCHEMA_VERSION,
    Door,
    ErrorKind,
    Operation,
    Registry,
    Surface,
    __version__,
)
from taskcore.contract.common import REPOSITORY_ID
from taskcore.limits import COLLECTOR_ENVELOPE_MAX_BYTES
from taskcore.schema import SchemaBuilder, error_schema
from taskcore.service import WORKFLOW_OPERATION_PATTERN

__all__ = [
    "COLLECTOR_UPLOAD_PATH",
    "DEFAULT_SERVER",
    "EVENTS_PATH",
    "HEALTH_ALIASES",
    "HEALTH_PATH",
    "MCP_PATH",
    "OPENAPI_PATH",
    "VERB_SURFACES",
    "WORKFLOW_PATH",
    "WORKSPACE_MCP_PATH",
    "openapi_document",
]

HEALTH_PATH = "/v1/hub/health"
HEALTH_ALIASES = ("/health", "/healthz")
"""Paths that answer exactly as :data:`HEALTH_PATH` (what probes and newcomers try first)."""
EVENTS_PATH = "/v1/events"
OPENAPI_PATH = "/openapi.json"
MCP_PATH = "/mcp"
WORKSPACE_MCP_PATH = "/v1/hub/workspace/mcp"
WORKFLOW_PATH = "/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks"
COLLECTOR_UPLOAD_PATH = WORKFLOW_PATH + "/collector-upload"
VERB_SURFACES = frozenset({Surface.QUEUE, Surface.ADMIN})
"""The families ``POST /v/{verb}`` serves."""

_ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
_SEGMENT = r"^(?!\.\.?$)[A-Za-z0-9._-]{1,128}$"
_REPOSITORY = f"^{REPOSITORY_ID}$"
"""A repository: one identifier or ``OWNER/NAME`` (the contract's pattern, anchored)."""

DEFAULT_SERVER = "http://127.0.0.1:8787"
"""Where ``agent-task serve`` listens by default (the document's server when none is known)."""


def _errors(statuses: set[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ErrorKind:
        status = kind.http_status
        if status not in statuses:
            continue
        out[str(status)] = {
            "description": kind.name.replace("_", " ").lower(),
            "content": {"application/json": {"schema": _ERROR_REF}},
        }
    return out


def _call_errors() -> dict[str, Any]:
    # Every status an operation call can answer: decoding, auth, state, bounds, busy. (414 and
    # 431 are the transport's, answered before any route: see _MALFORMED_HTTP.)
    statuses = {k.http_status for k in ErrorKind} - {405, 414, 431, 500}
    return _errors(statuses)


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _ok(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ext(op: Operation[Any, Any]) -> dict[str, Any]:
    return {
        "operation": op.name,
        "surface": op.surface.value,
        "minTier": op.min_tier.wire,
        "risk": op.risk.value,
        "minAutonomy": op.min_autonomy,
        "idempotent": op.idempotent,
        "mcpTool": op.mcp_tool,
    }


def _output(builder: SchemaBuilder, op: Operation[Any, Any]) -> dict[str, Any]:
    return builder.of(op.output_type) if op.output_type is not None else {"type": "object"}


def _verb_paths(registry: Registry, builder: SchemaBuilder) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for op in registry.select(surfaces=VERB_SURFACES, door=Door.HTTP, raw_input=False):
        paths[f"/v/{op.name}"] = {
            "post": {
                "operationId": op.name,
                "summary": op.summary,
                "description": op.description_text,
                "tags": [op.surface.value],
                "requestBody": _json_body(builder.of(op.input_type)),
                "responses": {"200": _ok("the result", _output(builder, op)), **_call_errors()},
                "x-agent-task": _ext(op),
            }
        }
    return paths


def _route_params() -> list[dict[str, Any]]:
    return [
        {
            "name": "repository",
            "in": "path",
            "required": True,
            "description": "the repository: one identifier or OWNER/NAME (send the slash "
            "percent-encoded, %2F, or plain); never taken from the body",
            "schema": {"type": "string", "pattern": _REPOSITORY},
        },
        {
            "name": "profile",
            "in": "path",
            "required": True,
            "description": "the profile identifier (never taken from the body)",
            "schema": {"type": "string", "pattern": _SEGMENT},
        },
    ]


# One message of GET /v1/events. OpenAPI 3.1 leaves event streams unsaid; tools (Schemathesis,
# and OpenAPI 3.2's reading without ``itemSchema``) read a text/event-stream ``schema`` as one
# event: the SSE fields, ``data`` a JSON text (taskcore.events.log.event_data). A message with
# only ``retry`` (the first) carries no data.
_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
_SSE_EVENT_DATA: dict[str, Any] = {
    "type": "object",
    "required": [
        "id",
        "operation",
        "workspace",
        "actor",
        "at",
        "atMs",
        "taskId",
        "statusBefore",
        "statusAfter",
        "outcome",
        "errorCode",
        "calls",
        "traceparent",
    ],
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "operation": {"type": "string"},
        "workspace": {"type": "string"},
        "actor": {"type": "string"},
        "at": {"type": "string"},
        "atMs": {"type": "integer"},
        "taskId": _NULLABLE_STRING,
        "statusBefore": _NULLABLE_STRING,
        "statusAfter": _NULLABLE_STRING,
        "outcome": {"type": "string"},
        "errorCode": _NULLABLE_STRING,
        "calls": {"type": "integer", "minimum": 1},
        "traceparent": _NULLABLE_STRING,
    },
}
_SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {"type": "string"},
        "retry": {"type": "integer", "minimum": 0},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": _SSE_EVENT_DATA,
        },
    },
}


_MALFORMED_HTTP = {
    "4XX": {
        "description": "a request the HTTP server could not read is answered before any "
        "route: a request target over 8 KiB is 414 URI_TOO_LONG and a request line and headers "
        "over 16 KiB 431 HEADERS_TOO_LARGE (both with the {error, code} body); a malformed "
        "request line or headers 400, without it"
    }
}


def _workflow_paths(registry: Registry, builder: SchemaBuilder) -> dict[str, Any]:
    ops = registry.select(surfaces={Surface.WORKFLOW}, door=Door.HTTP, raw_input=False)
    requests: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for op in ops:
        requests.append(
            {
                "type": "object",
                "description": op.description_text,
                "properties": {
                    "operation": {"const": op.local_name},
                    "request": builder.of(op.input_type),
                },
                "required": ["operation", "request"],
                "additionalProperties": False,
            }
        )
        results.append(_envelope({"const": op.local_name}, _output(builder, op)))
    if requests:
        request_schema: dict[str, Any] = {"oneOf": requests}
        result_schema: dict[str, Any] = {"oneOf": results}
    else:
        request_schema = {
            "type": "object",
            "properties": {
                "operation": {"type": "string", "pattern": f"^(?:{WORKFLOW_OPERATION_PATTERN})$"},
                "request": {"type": "object"},
            },
            "required": ["operation", "request"],
            "additionalProperties": False,
        }
        result_schema = _envelope({"type": "string"}, {"type": "object"})
    upload = registry.select(surfaces={Surface.WORKFLOW}, door=Door.HTTP, raw_input=True)
    upload_limit = max((op.max_input_bytes for op in upload), default=COLLECTOR_ENVELOPE_MAX_BYTES)
    upload_result = (
        _envelope({"const": upload[0].local_name}, _output(builder, upload[0]))
        if upload
        else _envelope({"type": "string"}, {"type": "object"})
    )
    return {
        WORKFLOW_PATH: {
            "parameters": _route_params(),
            "post": {
                "operationId": "workflow",
                "summary": "Run one workflow task operation for this repository and profile.",
                "description": (
                    "The body names the operation and its request; the actor comes from the "
                    "bearer token and the repository and profile from the URL. Operations: "
                    + (", ".join(op.local_name for op in ops) or "none registered")
                ),
                "tags": ["workflow"],
                "requestBody": _json_body(request_schema),
                "responses": {"200": _ok("the result", result_schema), **_call_errors()},
            },
        },
        COLLECTOR_UPLOAD_PATH: {
            "parameters": _route_params(),
            "post": {
                "operationId": "collector_upload",
                "summary": "Upload one signed collector transfer (raw bytes).",
                "description": f"The body is the signed transfer, at most {upload_limit} bytes.",
                "tags": ["workflow"],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/octet-stream": {
                            "schema": {"type": "string", "format": "binary"}
                        }
                    },
                },
                "responses": {"200": _ok("the result", upload_result), **_call_errors()},
            },
        },
    }


def _envelope(operation: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "capability": {"const": CAPABILITY},
            "schema_version": {"const": SCHEMA_VERSION},
            "operation": operation,
            "result": result,
        },
        "required": ["capability", "schema_version", "operation", "result"],
        "additionalProperties": False,
    }


def _service_paths() -> dict[str, Any]:
    jsonrpc = {"type": "object", "description": "a JSON-RPC 2.0 message (MCP)"}
    mcp_responses = {
        "200": _ok("a JSON-RPC response", {"type": "object"}),
        "202": {"description": "a notification or response was accepted"},
        # Authentication, the body bound and the media type are checked before MCP reads the
        # message; their refusals are {error, code} bodies like every other route's.
        **_errors({400, 401, 403, 404, 413, 415}),
        "default": {"description": "a JSON-RPC error or an {error, code} body"},
    }
    health = {
        "operationId": "health",
        "summary": "Ping storage; say which backend and schema versions it holds "
        "(no authentication; not a readiness check).",
        "security": [],
        "responses": {
            "200": _ok(
                "storage answers",
                {
                    "type": "object",
                    "properties": {
                        "status": {"const": "ok"},
                        "backend": {"enum": ["sqlite", "postgresql"]},
                        "schema": {
                            "type": "object",
                            "additionalProperties": {"type": "integer", "minimum": 0},
                        },
                    },
                    "required": ["status", "backend", "schema"],
                    "additionalProperties": False,
                },
            ),
            **_errors({503}),
            **_MALFORMED_HTTP,
        },
    }
    aliases = {
        path: {
            "get": {
                **health,
                "operationId": "get" + path.strip("/").capitalize(),
                "summary": f"The same answer as GET {HEALTH_PATH}.",
            }
        }
        for path in HEALTH_ALIASES
    }
    return {
        HEALTH_PATH: {"get": health},
        **aliases,
        EVENTS_PATH: {
            "get": {
                "operationId": "events",
                "summary": "The workspace's events as server-sent events (observe.events opens it).",
                "description": "Each message: id (the event id), event (the operation), data "
                "(JSON: id, operation, workspace, actor, at, atMs, taskId, statusBefore, "
                "statusAfter, outcome, errorCode, calls, traceparent). Resume with the "
                "Last-Event-ID header (or lastEventId); a comment every 15 s when idle.",
                "parameters": [
                    {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}},
                    {"name": "lastEventId", "in": "query", "schema": {"type": "string"}},
                    {
                        "name": "operation",
                        "in": "query",
                        "schema": {"type": "array", "items": {"type": "string"}},
                        "style": "form",
                        "explode": True,
                    },
                    {"name": "task", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {
                        "description": "the stream",
                        "content": {"text/event-stream": {"schema": _SSE_EVENT}},
                    },
                    **_errors({400, 401, 403, 404, 410, 422, 429, 503}),
                    **_MALFORMED_HTTP,
                },
            }
        },
        OPENAPI_PATH: {
            "get": {
                "operationId": "openapi",
                "summary": "This document.",
                "security": [],
                "responses": {"200": _ok("OpenAPI 3.1", {"type": "object"}), **_MALFORMED_HTTP},
            }
        },
        MCP_PATH: {
            "post": {
                "operationId": "mcp",
                "summary": "MCP (streamable HTTP, stateless, JSON responses): queue tools.",
                "tags": ["mcp"],
                "requestBody": _json_body(jsonrpc),
                "responses": mcp_responses,
            }
        },
        WORKSPACE_MCP_PATH: {
            "post": {
                "operationId": "workspace_mcp",
                "summary": "MCP (streamable HTTP, stateless, JSON responses): workflow tools.",
                "tags": ["mcp"],
                "parameters": [
                    {
                        "name": name,
                        "in": "query",
                        "required": True,
                        "schema": {"type": "string", "pattern": pattern},
                    }
                    for name, pattern in (("repository", _REPOSITORY), ("profile", _SEGMENT))
                ],
                "requestBody": _json_body(jsonrpc),
                "responses": mcp_responses,
            }
        },
    }


def openapi_document(registry: Registry, *, server_url: str | None = None) -> dict[str, Any]:
    """Return the OpenAPI 3.1 document of the service for ``registry``.

    ``servers`` names ``server_url`` (the address the document was fetched from) or, without
    one, the default ``agent-task serve`` address.
    """
    builder = SchemaBuilder(ref_prefix="#/components/schemas/")
    paths = {**_service_paths(), **_verb_paths(registry, builder)}
    paths.update(_workflow_paths(registry, builder))
    schemas = {**builder.defs, "ErrorBody": error_schema()}
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "agent-task",
            "version": __version__,
            "description": (
                "Typed, leased tasks for coding agents. Every call is authenticated by a "
                "bearer token, checked (tier, autonomy, scope), strictly decoded and audited."
            ),
        },
        "servers": [
            {
                "url": (server_url or DEFAULT_SERVER).rstrip("/"),
                "description": "this agent-task service"
                if server_url
                else "the default 'agent-task serve' address",
            }
        ],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
