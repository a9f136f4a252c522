"""The two MCP tool families and what the HTTP app needs of them before the SDK is loaded.

Nothing here imports the ``mcp`` SDK (its pydantic models take about 0.6 s to import), so
``agent-task serve`` can answer its first request before loading it: :mod:`taskhttp` builds
the MCP endpoints on the first request to an MCP path (:class:`taskhttp.app` ``LazyMcp``).

>>> from taskcore.service import default_registry
>>> max_body(default_registry(), Family.QUEUE) > MCP_ENVELOPE_OVERHEAD_BYTES
True
"""

from __future__ import annotations

import enum
from typing import Any

from starlette.responses import JSONResponse
from taskcore import Actor, Door, Operation, Registry, Service, Surface, TaskError

__all__ = [
    "MCP_ENVELOPE_OVERHEAD_BYTES",
    "SCOPE_ACTOR_KEY",
    "SCOPE_CHALLENGE_KEY",
    "SCOPE_RESOURCE_KEY",
    "SCOPE_STREAM_KEY",
    "Family",
    "error_response",
    "max_body",
    "tool_operations",
    "traceparent_of",
    "wants_stream",
]

SCOPE_ACTOR_KEY = "agent_task.actor"
"""Key under the ASGI scope's ``state`` where the HTTP endpoint leaves the authenticated actor."""
SCOPE_RESOURCE_KEY = "agent_task.resource"
"""Key under the ASGI scope's ``state``: the protected resource URL the request came to (an
OAuth access token is accepted there only), set by the HTTP door in front."""
SCOPE_CHALLENGE_KEY = "agent_task.challenge"
"""Key under the ASGI scope's ``state``: the ``WWW-Authenticate`` value a 401 carries."""

MCP_ENVELOPE_OVERHEAD_BYTES = 64 * 1024
"""Room for the JSON-RPC envelope around the largest tool input (ours)."""


class Family(enum.Enum):
    """Which MCP endpoint: the queue tools or the workspace (workflow) tools."""

    QUEUE = "queue"
    WORKSPACE = "workspace"

    @property
    def surfaces(self) -> frozenset[Surface]:
        """The operation families this endpoint serves."""
        if self is Family.QUEUE:
            return frozenset({Surface.QUEUE, Surface.GATE})
        return frozenset({Surface.WORKFLOW})


def tool_operations(
    registry: Registry,
    family: Family,
    actor: Actor | None = None,
    *,
    service: Service | None = None,
) -> tuple[Operation[Any, Any], ...]:
    """Return the operations ``family`` offers as tools (to ``actor``), sorted by tool name.

    With ``actor``, only what its tier and autonomy reach; with ``service`` too, only what
    the service would answer it over MCP (:meth:`taskcore.Operation.offers`).
    """

    def offered(op: Operation[Any, Any]) -> bool:
        if actor is None:
            return True
        if service is None:
            return op.admits(actor)
        return op.offers(service, actor, Door.MCP)

    ops = [op for op in registry.select(surfaces=family.surfaces) if op.mcp_tool and offered(op)]
    return tuple(sorted(ops, key=lambda op: op.tool_name))


def max_body(registry: Registry, family: Family) -> int:
    """The default body bound of a family's endpoint: its largest tool input plus the envelope."""
    bounds = [op.max_input_bytes for op in tool_operations(registry, family)]
    return max(bounds, default=0) + MCP_ENVELOPE_OVERHEAD_BYTES


def error_response(err: TaskError) -> JSONResponse:
    """The ``{error, code}`` response with the status of the error's kind.

    It carries the headers the error asks for (``WWW-Authenticate`` on 401, ``Retry-After``
    on 429 and 503).
    """
    return JSONResponse(
        err.to_json(),
        status_code=err.code.kind.http_status,
        headers=err.transport_headers() or None,
    )


SCOPE_STREAM_KEY = "agent_task.stream"
"""Key under the ASGI scope's ``state``: answer this POST as an event stream (JSON otherwise)."""


def wants_stream(message: Any, accept: str | None) -> bool:
    """Whether a POSTed JSON-RPC message should be answered as an event stream.

    A request whose ``_meta`` carries a ``progressToken`` (the client asked for
    ``notifications/progress``, which only an event stream can carry before the answer),
    from a client that accepts ``text/event-stream``. Everything else is answered with one
    JSON body, as before.

    >>> wants_stream({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
    ...     "params": {"name": "t", "_meta": {"progressToken": 7}}}, "application/json, text/event-stream")
    True
    >>> wants_stream({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, None)
    False
    """
    if (
        not isinstance(message, dict)
        or "id" not in message
        or "text/event-stream" not in (accept or "")
    ):
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get("progressToken") is not None


def traceparent_of(ctx: Any) -> str | None:
    """The W3C trace context an MCP request carries in ``params._meta.traceparent``.

    MCP's convention for OpenTelemetry context propagation; the front door ignores a value
    that is not a valid ``traceparent``.

    >>> class Ctx: meta = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    >>> traceparent_of(Ctx())[:5], traceparent_of(object())
    ('00-4b', None)
    """
    meta = getattr(ctx, "meta", None) or {}
    value = meta.get("traceparent") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None
