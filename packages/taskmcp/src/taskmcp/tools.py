"""MCP tool definitions generated from the taskcore registry.

Two tool families exist. The queue family (served at ``/mcp``) offers the queue and done-gate
operations whose ``mcp`` flag is set; the workspace family (served at
``/v1/hub/workspace/mcp?repository=R&profile=P``) offers the workflow operations, answering
with the same ``{"capability", "schema_version", "operation", "result"}`` body as the HTTP
facade. Every tool is named by :attr:`taskcore.Operation.tool_name`, the one mapping rule
(``.`` -> ``_``: ``agenttask_reorder``, ``claim``), so every name matches
``^[a-zA-Z0-9_-]{1,64}$``. Input schemas come from :mod:`taskcore.schema`; descriptions from
the operation's own text. A listing for an actor shows only what its tier and autonomy reach
(:meth:`taskcore.Operation.admits`).

>>> from taskcore import Registry
>>> tools(Registry(), Family.QUEUE)
[]
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from taskcore import CAPABILITY, SCHEMA_VERSION, Actor, Operation, Registry, RiskClass, Service
from taskcore.schema import SchemaBuilder, input_schema, plain_text
from taskcore.service import WORKFLOW_PREFIX

from taskmcp.family import Family, tool_operations

__all__ = ["Family", "operation_for_tool", "tool_operations", "tools"]


def operation_for_tool(registry: Registry, family: Family, tool_name: str) -> str:
    """Return the registered operation name a tool name stands for.

    An unknown name comes back unchanged, so the front door refuses it (and audits it) as
    ``UNKNOWN_OPERATION``.

    >>> from taskcore.service import default_registry
    >>> operation_for_tool(default_registry(), Family.WORKSPACE, "claim")
    'workflow.claim'
    >>> operation_for_tool(default_registry(), Family.QUEUE, "agenttask_checkpoint_write")
    'agenttask.checkpoint.write'
    >>> operation_for_tool(default_registry(), Family.QUEUE, "agenttask.reorder")
    'agenttask.reorder'
    """
    op = registry.for_tool(tool_name, family.surfaces)
    if op is not None:
        return op.name
    return WORKFLOW_PREFIX + tool_name if family is Family.WORKSPACE else tool_name


def _output_schema(op: Operation[Any, Any], family: Family) -> dict[str, Any] | None:
    if family is Family.QUEUE:
        return input_schema(op.output_type) if op.output_type is not None else None
    builder = SchemaBuilder()
    result = builder.of(op.output_type) if op.output_type is not None else {"type": "object"}
    out: dict[str, Any] = {
        "type": "object",
        "properties": {
            "capability": {"const": CAPABILITY},
            "schema_version": {"const": SCHEMA_VERSION},
            "operation": {"const": op.local_name},
            "result": result,
        },
        "required": ["capability", "schema_version", "operation", "result"],
        "additionalProperties": False,
    }
    if builder.defs:
        out["$defs"] = builder.defs
    return out


def _tool(op: Operation[Any, Any], family: Family) -> types.Tool:
    read_only = op.risk is RiskClass.READ
    return types.Tool(
        name=op.tool_name,
        description=plain_text(op.description_text),
        input_schema=input_schema(op.input_type),
        output_schema=_output_schema(op, family),
        annotations=types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=None if read_only else op.risk is RiskClass.DESTRUCTIVE,
            idempotent_hint=op.idempotent,
            open_world_hint=False,
        ),
    )


def tools(
    registry: Registry,
    family: Family,
    actor: Actor | None = None,
    *,
    service: Service | None = None,
) -> list[types.Tool]:
    """Return the MCP tool list of ``family`` (as ``actor`` may call it, when given).

    With ``service``, a tool the service would refuse ``actor`` whatever the arguments is
    left out too (``session_gate`` on a server that answers no network caller about its
    sessions).
    """
    return [_tool(op, family) for op in tool_operations(registry, family, actor, service=service)]
